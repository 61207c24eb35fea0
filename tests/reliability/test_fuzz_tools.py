"""Hypothesis over every MCP tool's arguments (the MCP server in memory) and the same
arguments as REST bodies: strings with NUL and lone surrogates, non-finite numbers, wrong
types, deep values, real and unknown URIs. No call may end in an internal error or a 5xx."""

from __future__ import annotations

import json
import os
import uuid
from functools import partial
from typing import Any

import httpx2
import pytest
from anyio.from_thread import start_blocking_portal
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from mcp import Client

from kairos.api import create_app
from kairos.mcp import TOOLS, ServiceRef, build_server, local_identity
from kairos.mcp.tools import ToolSpec
from kairos.service import Kairos
from tests.spec.seedkit import THREE_STEPS

EXAMPLES = int(os.environ.get("KAIROS_FUZZ_EXAMPLES", "60"))  # per tool
SETTINGS = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
                    phases=[Phase.explicit, Phase.generate],
                    suppress_health_check=list(HealthCheck))
BASE = "http://127.0.0.1:8765"
REST = {  # tool → REST operation taking the same JSON body
    "kairos_search": ("POST", "/api/v1/protocols/search"),
    "kairos_begin": ("POST", "/api/v1/runs/begin"),
    "kairos_next": ("POST", "/api/v1/runs/next"),
    "kairos_attest": ("POST", "/api/v1/runs/attest"),
    "kairos_mint": ("POST", "/api/v1/protocols"),
    "kairos_update": ("POST", "/api/v1/protocols/update"),
    "kairos_delete": ("POST", "/api/v1/protocols/delete"),
    "search_entries": ("POST", "/api/v1/search"),
    "read_entries": ("POST", "/api/v1/entries/read"),
    "write_entry": ("POST", "/api/v1/entries"),
    "update_entry": ("POST", "/api/v1/entries/update"),
}

TEXT = st.one_of(
    st.text(st.characters(exclude_categories=()), max_size=40),  # surrogates, NUL included
    st.sampled_from(["", " ", "\x00", "\ud800", "x\udfff", "# T\n\n## S\n\nx\n", "general",
                     "experience", "manual", "success", "failure", "shell", "comment",
                     "# T\n\n## \n", "# T\n\n## S\n\nPROOF OF WORK: timeout 9x y\n"]),
)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), TEXT)
JSON_VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(TEXT, inner, max_size=3), max_leaves=10)


DOCS = st.builds("# {}\n\n## {}\n\n{}\n".format, TEXT, TEXT, TEXT)
NAMED: dict[str, st.SearchStrategy[Any]] = {  # values that get past the first checks
    "markdown_doc": DOCS,
    "category": st.sampled_from(["general", "coding"]),
    "llm_model_id": st.text(max_size=300),
    "title": st.text(st.characters(exclude_categories=()), max_size=300),
}


def _value(schema: dict[str, Any], uris: list[str], name: str = ""
           ) -> st.SearchStrategy[Any]:
    """A value near the schema: usually its type, sometimes anything."""
    uri = st.sampled_from([*uris, f"kairos://mem/{uuid.uuid4()}", "kairos://mem/nope"])
    typed: st.SearchStrategy[Any]
    kind = schema.get("type")
    if name in NAMED:
        typed = NAMED[name]
    elif "enum" in schema:
        typed = st.sampled_from(schema["enum"])
    elif kind == "string":
        typed = st.one_of(TEXT, uri)
    elif kind == "integer":
        typed = st.integers(-5, 50)
    elif kind == "number":
        typed = st.floats()
    elif kind == "boolean":
        typed = st.booleans()
    elif kind == "array":
        typed = st.lists(st.one_of(TEXT, uri), max_size=3)
    elif kind == "object" and "nonce" in schema.get("properties", {}):
        typed = st.fixed_dictionaries(
            {"type": st.sampled_from(["shell", "mcp", "user_input", "comment"])},
            optional={"nonce": TEXT, "proof_hash": TEXT,
                      "shell": st.fixed_dictionaries({"exit_code": st.integers(-1, 2)},
                                                     optional={"stdout": TEXT}),
                      "comment": st.fixed_dictionaries({"text": TEXT}),
                      "user_input": st.fixed_dictionaries({"confirmation": TEXT}),
                      "mcp": st.fixed_dictionaries({"success": st.booleans()},
                                                   optional={"result": JSON_VALUES})})
    elif kind == "object":
        typed = st.dictionaries(TEXT, JSON_VALUES, max_size=3)
    else:
        typed = st.one_of(uri, st.lists(uri, max_size=2))
    return st.one_of(typed, typed, typed, JSON_VALUES)


def arguments(spec: ToolSpec, uris: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    props = spec.input_schema.get("properties", {})
    required = set(spec.input_schema.get("required", []))
    return st.fixed_dictionaries(
        {k: _value(v, uris, k) for k, v in props.items() if k in required},
        optional={**{k: _value(v, uris, k) for k, v in props.items() if k not in required},
                  "surprise": JSON_VALUES})


@pytest.mark.timeout(600)
def test_no_tool_call_is_an_internal_error(kairos: Kairos) -> None:
    minted = kairos.mint(THREE_STEPS)["items"][0]
    uris = [s["uri"] for s in minted["steps"]]
    server = build_server(ServiceRef.of(kairos.service), limits=kairos.limits,
                          identify=local_identity("default", "fuzz"))
    internal: list[str] = []
    calls = 0
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(
            Client(server)) as client:

        def checker(spec: ToolSpec) -> Any:
            @SETTINGS
            @given(args=arguments(spec, uris))
            def check(args: dict[str, Any]) -> None:
                nonlocal calls
                try:
                    result = portal.call(client.call_tool, spec.name, args)
                except UnicodeEncodeError:  # the client library cannot send it at all
                    return
                calls += 1
                body = result.structured_content or {}
                if result.is_error and body.get("error_code") in (None, "INTERNAL_ERROR"):
                    internal.append(f"{spec.name} {args!r}: {result.content}")
            return check

        for spec in TOOLS:
            checker(spec)()
    print(f"MCP fuzz: {calls} calls over {len(TOOLS)} tools, {len(internal)} internal errors")
    assert internal == []


@pytest.mark.timeout(600)
@pytest.mark.anyio
async def test_no_rest_body_is_a_server_error(kairos: Kairos) -> None:
    minted = kairos.mint(THREE_STEPS)["items"][0]
    uris = [s["uri"] for s in minted["steps"]]
    service = kairos.service
    app = create_app(service, mcp_factory=partial(build_server, ServiceRef.of(service)))
    bodies = [(t, arguments(t, uris)) for t in TOOLS if t.name in REST]
    examples: list[tuple[str, dict[str, Any]]] = []

    def collector(name: str, strategy: st.SearchStrategy[dict[str, Any]]) -> Any:
        @SETTINGS
        @given(args=strategy)
        def collect(args: dict[str, Any]) -> None:
            examples.append((name, args))
        return collect

    for spec, strategy in bodies:
        collector(spec.name, strategy)()
    errors: list[str] = []
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app),
                                 base_url=BASE) as http:
        for name, args in examples:
            method, path = REST[name]
            content = json.dumps(args, allow_nan=True)
            response = await http.request(method, path, content=content,
                                          headers={"content-type": "application/json"})
            if response.status_code >= 500:
                errors.append(f"{method} {path} {content[:300]}: {response.text[:300]}")
    print(f"REST fuzz: {len(examples)} bodies, {len(errors)} server errors")
    assert errors == []


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
