"""Schemathesis against ``/openapi.json``: every REST operation, valid and invalid inputs
generated from the schema, the app in process (ASGI), a fixed seed and a bounded number of
examples. No response may be a 5xx."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from kairos.api import create_app
from kairos.mcp import ServiceRef, build_server
from kairos.service import Kairos
from tests.spec.seedkit import THREE_STEPS

BASE = "http://127.0.0.1:8765"
EXAMPLES = 40  # per operation and generation mode
SETTINGS = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
                    phases=[Phase.explicit, Phase.generate],
                    suppress_health_check=list(HealthCheck))


@pytest.mark.timeout(600)
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
                         ids=["positive", "negative"])
def test_no_operation_answers_a_server_error(kairos: Kairos, mode: GenerationMode) -> None:
    app = create_app(kairos, mcp_factory=partial(build_server, ServiceRef.of(kairos)))
    kairos.mint(THREE_STEPS)  # something to find, dump, run and change
    schema = schemathesis.openapi.from_asgi("/openapi.json", app,
                                            headers={"host": "127.0.0.1:8765"})
    calls: list[int] = []
    server_errors: list[str] = []
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 18

    for operation in operations:
        @SETTINGS
        @given(case=operation.as_strategy(generation_mode=mode))
        def check(case: Any) -> None:
            response = case.call(base_url=BASE)
            calls.append(response.status_code)
            if response.status_code >= 500:
                server_errors.append(f"{case.method} {case.formatted_path} "
                                     f"{response.status_code}: {response.text[:300]}\n"
                                     f"{case.as_curl_command()}")

        try:
            check()
        except Unsatisfiable:  # nothing invalid can be made of it (no parameters, no body)
            assert mode is GenerationMode.NEGATIVE
    print(f"schemathesis {mode.value}: {len(calls)} cases over {len(operations)} operations, "
          f"{len(server_errors)} server errors")
    assert server_errors == []
    assert len(calls) >= len(operations)
