"""Schemathesis against ``/openapi.json``: every REST operation, valid and invalid inputs
generated from the schema, the app in process (ASGI) with a bearer token, a fixed seed and a
bounded number of examples per operation (``KAIROS_FUZZ_EXAMPLES``, default 40).

Every response is checked against the document: no 5xx, every status documented, every
body in its documented shape, the right content type and ``Allow`` header, invalid input
refused, missing or wrong tokens refused. One check is left out where no schema can say
it: a schema-valid body that breaks a rule only the server knows (a markdown document's
grammar, the fields an experience or a manual needs) is rightly a 422."""

from __future__ import annotations

import os
from collections import Counter
from functools import partial
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import CheckFunction
from schemathesis.core.failures import FailureGroup
from schemathesis.core.parameters import ParameterLocation
from schemathesis.specs.openapi.checks import positive_data_acceptance

from kairos.api import create_app
from kairos.mcp import ServiceRef, build_server
from kairos.service import Kairos
from tests.spec.seedkit import THREE_STEPS

BASE = "http://127.0.0.1:8765"
TOKEN = "fuzz-token"
EXAMPLES = int(os.environ.get("KAIROS_FUZZ_EXAMPLES", "40"))
SETTINGS = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
                    phases=[Phase.explicit, Phase.generate],
                    suppress_health_check=list(HealthCheck))
# Requests whose validity depends on rules beyond the schema (document grammar, per-kind
# required fields, one markdown_doc per uri, a date range whose until follows its since).
BEYOND_SCHEMA = {"POST /api/v1/protocols", "POST /api/v1/protocols/update",
                 "POST /api/v1/entries", "PATCH /api/v1/entries/{entity_id}",
                 "POST /api/v1/entries/update", "GET /api/v1/datasets/{format}"}


@pytest.mark.timeout(3600)
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
                         ids=["positive", "negative"])
def test_every_response_is_the_documented_one(kairos: Kairos, mode: GenerationMode) -> None:
    app = create_app(kairos.service, tokens={TOKEN: "default"},
                     mcp_factory=partial(build_server, ServiceRef.of(kairos.service)))
    kairos.mint(THREE_STEPS)  # something to find, dump, run and change
    headers = {"host": "127.0.0.1:8765", "authorization": f"Bearer {TOKEN}"}
    schema = schemathesis.openapi.from_asgi("/openapi.json", app, headers=headers)
    # Text is valid UTF-8 without NUL: the hand-written bad-input tests cover the rest.
    schema.config.generation.update(codec="utf-8", allow_x00=False)
    statuses: Counter[int] = Counter()
    failures: Counter[str] = Counter()
    examples: dict[str, str] = {}
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 25

    def fuzz(operation: Any) -> None:
        name = f"{operation.method.upper()} {operation.path}"
        excluded: list[CheckFunction] = (
            [positive_data_acceptance] if name in BEYOND_SCHEMA else [])

        @SETTINGS
        @given(case=operation.as_strategy(generation_mode=mode))
        def check(case: Any) -> None:
            sent = dict(headers)
            if case.meta.is_negative_at(ParameterLocation.HEADER):
                sent.pop("authorization")  # a token made invalid on purpose is sent as it is
            response = case.call(base_url=BASE, headers=sent)
            statuses[response.status_code] += 1
            try:
                case.validate_response(response, excluded_checks=excluded, headers=sent)
            except FailureGroup as group:  # one entry per failed check
                for failure in group.exceptions:
                    key = f"{name}: {getattr(failure, 'title', type(failure).__name__)}"
                    failures[key] += 1
                    examples.setdefault(key, f"{response.status_code} {response.text[:300]}"
                                             f"\n{case.as_curl_command()}\n"
                                             f"{dict(response.request.headers)}")

        try:
            check()
        except Unsatisfiable:  # nothing invalid can be made of it (no parameters, no body)
            assert mode is GenerationMode.NEGATIVE

    for operation in operations:
        fuzz(operation)
    cases = sum(statuses.values())
    print(f"schemathesis {mode.value}: {cases} cases over {len(operations)} operations, "
          f"statuses {dict(sorted(statuses.items()))}, {sum(failures.values())} failed checks")
    for key, n in failures.items():
        print(f"{n} × {key}\n  {examples[key]}")
    assert not failures
    assert not any(status >= 500 for status in statuses)
    assert cases >= len(operations)
