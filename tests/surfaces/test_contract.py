"""The request models are the contract on every surface: strict types, closed bodies and
query strings, the OpenAPI document that says so, and ``Allow`` headers that name what a
path really serves."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from mcp import Client

from kairos.domain.validation import json_schema
from kairos.mcp import REGISTRY, ServiceRef, build_server, local_identity
from kairos.service import Kairos
from tests.spec.seedkit import THREE_STEPS

pytestmark = pytest.mark.anyio
STEP = "kairos://mem/00000000-0000-0000-0000-00000000dead"


@pytest.mark.parametrize(("path", "allow"), [
    ("/api/v1/protocols/update", "POST"),
    ("/api/v1/protocols", "GET, POST"),
    ("/api/v1/entries", "GET, POST"),
    ("/api/v1/runs", "GET"),
    ("/api/v1/protocols/00000000-0000-0000-0000-00000000dead", "GET"),
])
async def test_allow_names_every_method_of_the_path(http: httpx2.AsyncClient, path: str,
                                                      allow: str) -> None:
    response = await http.options(path)
    assert response.status_code == 405
    assert response.headers["allow"] == allow
    assert response.json()["error_code"] == "METHOD_NOT_ALLOWED"


async def test_an_id_that_is_not_a_uuid_names_no_route(http: httpx2.AsyncClient) -> None:
    for path in ("/api/v1/protocols/update", "/api/v1/runs/not-a-run/proofs"):
        response = await http.get(path)
        assert response.status_code in (404, 405), response.text
        assert response.json()["error_code"] in ("NOT_FOUND", "METHOD_NOT_ALLOWED")


@pytest.mark.parametrize(("path", "body", "field"), [
    ("/api/v1/protocols/delete", {"uris": STEP, "protocol": 0}, "protocol"),
    ("/api/v1/protocols/search", {"query": "deploy", "limit": "5"}, "limit"),
    ("/api/v1/protocols/search", {"query": "deploy", "limit": True}, "limit"),
    ("/api/v1/search", {"query": "x", "hide_viewed": 1}, "hide_viewed"),
    ("/api/v1/runs/attest", {"uri": STEP, "outcome": "success", "message": "m",
                             "quality_bonus": "1"}, "quality_bonus"),
    ("/api/v1/protocols", {"markdown_doc": THREE_STEPS, "colour": "red"}, "colour"),
])
async def test_types_are_strict_and_bodies_closed(http: httpx2.AsyncClient, path: str,
                                                   body: dict[str, Any], field: str) -> None:
    response = await http.post(path, json=body)
    assert response.status_code == 422, response.text
    error = response.json()
    assert error["field"] == field and error["error_code"] == "INVALID_INPUT"
    assert error["expected"] and error["details"]["errors"][0]["field"] == field


async def test_a_whole_float_is_an_integer(http: httpx2.AsyncClient, kairos: Kairos) -> None:
    kairos.mint(THREE_STEPS)
    response = await http.post("/api/v1/protocols/search",
                               json={"query": "project setup", "limit": 2.0})
    assert response.status_code == 200, response.text
    half = await http.post("/api/v1/protocols/search",
                           json={"query": "project setup", "limit": 2.5})
    assert half.status_code == 422 and half.json()["field"] == "limit"


async def test_query_strings_are_closed(http: httpx2.AsyncClient) -> None:
    unknown = await http.get("/api/v1/runs", params={"limit": 5, "colour": "red"})
    assert unknown.status_code == 422 and unknown.json()["field"] == "colour"
    twice = await http.get("/api/v1/runs?limit=5&limit=6")
    assert twice.status_code == 422 and twice.json()["field"] == "limit"
    fine = await http.get("/api/v1/runs", params={"limit": 5})
    assert fine.status_code == 200


async def test_openapi_documents_bodies_errors_and_the_bearer_scheme(
        http: httpx2.AsyncClient) -> None:
    spec = (await http.get("/openapi.json")).json()
    assert spec["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    operations = [(path, method, op) for path, ops in spec["paths"].items()
                  if path.startswith("/api/") for method, op in ops.items()]
    assert len(operations) >= 25
    for path, method, op in operations:
        assert op["security"] == [{"bearer": []}], (path, method)
        statuses = set(op["responses"])
        assert {"401", "404", "413", "422", "503"} <= statuses, (path, method, statuses)
        success = next(s for s in statuses if s.startswith("2"))
        content = op["responses"][success]["content"]
        if "application/x-ndjson" in content:  # a stream: each line is one JSON object
            assert content["application/x-ndjson"]["schema"]["type"] == "object", path
            continue
        schema = content["application/json"]["schema"]
        assert schema != {} and ("$ref" in schema or "anyOf" in schema), (path, method)
    error = spec["components"]["schemas"]["ErrorBody"]
    assert set(error["required"]) == {"error_code", "message"}


async def test_tool_schemas_are_the_request_models(kairos: Kairos) -> None:
    server = build_server(ServiceRef.of(kairos.service), limits=kairos.limits,
                          identify=local_identity("default", None))
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        for name, spec in REGISTRY.items():
            assert tools[name].input_schema == json_schema(spec.model)
            assert "$ref" not in str(tools[name].input_schema)
        refused = await client.call_tool("kairos_delete", {"uris": STEP, "protocol": 0})
        assert refused.is_error
        body = refused.structured_content or {}
        assert body["field"] == "protocol" and "kairos_delete" in body["message"]
        unknown = await client.call_tool("kairos_search", {"query": "x", "colour": "red"})
        assert (unknown.structured_content or {})["field"] == "colour"


async def test_real_answers_fit_their_documented_bodies(http: httpx2.AsyncClient) -> None:
    """Every body of a whole run, a refused answer and a broken chain validates against
    the model that documents it."""
    from pydantic import TypeAdapter

    from kairos.domain import responses, views
    from tests.spec.seedkit import shell_ok

    def fits(shape: Any, body: Any) -> None:
        TypeAdapter(shape).validate_python(body)
    from tests.surfaces.conftest import run_three

    async def call(tool: str, args: dict[str, Any]) -> dict[str, Any]:
        path = {"kairos_mint": "/api/v1/protocols", "kairos_begin": "/api/v1/runs/begin",
                "kairos_next": "/api/v1/runs/next", "kairos_attest": "/api/v1/runs/attest"}
        return dict((await http.post(path[tool], json=args)).json())

    run = await run_three(call)
    for body in run["responses"]:
        fits(responses.StepResult, body)
    fits(responses.AttestResult, run["final"])
    begun = await call("kairos_begin", {"uri": run["steps"][0]})
    wrong = shell_ok(begun["challenge"]) | {"nonce": "not-the-nonce"}
    refused = await call("kairos_next", {"uri": run["steps"][1], "solution": wrong})
    assert refused["error_code"]
    fits(responses.StepResult, refused)
    run_id = run["final"]["run_id"]
    fits(views.ProofLog, (await http.get(f"/api/v1/runs/{run_id}/proofs")).json())
    fits(views.Verification, (await http.get(f"/api/v1/runs/{run_id}/verify")).json())
    fits(views.RunPage, (await http.get("/api/v1/runs")).json())
    fits(responses.StepDump, (await http.get(
        f"/api/v1/protocols/{run['steps'][0].removeprefix('kairos://mem/')}")).json())
    fits(responses.ProtocolDump, (await http.get(
        f"/api/v1/protocols/{run['steps'][0].removeprefix('kairos://mem/')}",
        params={"protocol": "true"})).json())
