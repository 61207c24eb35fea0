"""REST through ``httpx2.ASGITransport``: every route, status codes, the error shape, and
that bad input never reaches a 500."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from kairos.api.app import INTERNAL_BODY
from kairos.service import Caller, Kairos
from tests.spec.seedkit import THREE_STEPS, shell_ok
from tests.surfaces.conftest import run_three

pytestmark = pytest.mark.anyio
MISSING = "00000000-0000-0000-0000-00000000dead"

OPERATIONS = {  # MCP tool name → REST call, so the same driver runs both surfaces
    "kairos_mint": ("POST", "/api/v1/protocols"),
    "kairos_begin": ("POST", "/api/v1/runs/begin"),
    "kairos_next": ("POST", "/api/v1/runs/next"),
    "kairos_attest": ("POST", "/api/v1/runs/attest"),
}


def rest(http: httpx2.AsyncClient) -> Any:
    async def call(tool: str, args: dict[str, Any]) -> dict[str, Any]:
        method, path = OPERATIONS[tool]
        response = await http.request(method, path, json=args)
        assert response.status_code in (200, 201), response.text
        return dict(response.json())
    return call


async def test_a_run_from_mint_to_verified_proof_log(http: httpx2.AsyncClient) -> None:
    run = await run_three(rest(http))
    run_id = run["final"]["run_id"]
    proofs = await http.get(f"/api/v1/runs/{run_id}/proofs")
    assert proofs.status_code == 200
    log = proofs.json()
    assert log["run_id"] == run_id and len(log["proofs"]) == 3
    assert [p["step_uri"] for p in log["proofs"]] == run["steps"]
    assert log["proofs"][0]["previous_hash"] == run["responses"][0]["challenge"]["proof_hash"]
    verified = await http.get(f"/api/v1/runs/{run_id}/verify")
    assert verified.status_code == 200
    assert verified.json() == {"run_id": run_id, "valid": True, "proofs": 3, "proven": True,
                               "head": log["proofs"][-1]["proof_hash"], "first_broken": None}
    history = (await http.get("/api/v1/runs", params={"limit": 5})).json()
    assert history["total"] == 1 and history["items"][0]["run_id"] == run_id
    assert history["items"][0]["status"] == "finished"


async def test_protocol_routes(http: httpx2.AsyncClient) -> None:
    minted = await http.post("/api/v1/protocols", json={"markdown_doc": THREE_STEPS})
    assert minted.status_code == 201
    steps = [s["uri"] for s in minted.json()["items"][0]["steps"]]
    again = await http.post("/api/v1/protocols", json={"markdown_doc": THREE_STEPS})
    assert again.status_code == 409 and again.json()["error_code"] == "DUPLICATE_CHAIN"
    found = await http.post("/api/v1/protocols/search", json={"query": "project setup"})
    assert found.status_code == 200 and found.json()["choices"][0]["uri"] == steps[0]
    step_id = steps[1].removeprefix("kairos://mem/")
    step = await http.get(f"/api/v1/protocols/{step_id}")
    assert step.status_code == 200 and step.json()["uri"] == steps[1]
    whole = await http.get(f"/api/v1/protocols/{step_id}", params={"protocol": "true"})
    assert whole.json()["markdown_doc"].startswith("# Project Setup")
    updated = await http.post("/api/v1/protocols/update", json={
        "uris": [steps[2]], "updates": {"label": "Check it"}})
    assert updated.status_code == 200 and updated.json()["total_updated"] == 1
    deleted = await http.post("/api/v1/protocols/delete", json={"uris": [steps[2]]})
    assert deleted.json()["total_deleted"] == 1
    gone = await http.get(f"/api/v1/protocols/{steps[2].removeprefix('kairos://mem/')}")
    assert gone.status_code == 404


async def test_triggers_and_explain_over_rest(http: httpx2.AsyncClient, kairos: Kairos) -> None:
    doc = "---\ntriggers: [the site is down]\n---\n" + THREE_STEPS
    steps = [s["uri"] for s in (await http.post(
        "/api/v1/protocols", json={"markdown_doc": doc})).json()["items"][0]["steps"]]
    step_id = steps[0].removeprefix("kairos://mem/")
    await http.post("/api/v1/protocols/search", json={"query": "set the project up"},
                    headers={"X-CHL-Session": "rest-agent"})
    kairos.search_engine.learning.flush()
    agent = Caller(id="rest-agent")
    response = kairos.begin(steps[0], agent)
    for uri in steps[1:]:
        response = kairos.next(uri, shell_ok(response["challenge"]), agent)
    kairos.attest(steps[-1], "success", "done", agent,
                  solution=shell_ok(response["challenge"]))
    listed = await http.get(f"/api/v1/protocols/{step_id}/triggers")
    assert listed.status_code == 200
    body = listed.json()
    assert body["triggers"] == ["the site is down"]
    assert [x["text"] for x in body["learned"]] == ["set the project up"]
    trigger_id = body["learned"][0]["id"]
    gone = await http.delete(f"/api/v1/protocols/{step_id}/triggers/{trigger_id}")
    assert gone.status_code == 200 and gone.json()["removed"] == 1
    again = await http.delete(f"/api/v1/protocols/{step_id}/triggers/{trigger_id}")
    assert again.status_code == 404 and again.json()["field"] == "trigger_ids"
    assert (await http.delete(f"/api/v1/protocols/{step_id}/triggers")).json()["removed"] == 0
    explained = await http.post("/api/v1/search", json={
        "query": "project setup", "types": ["protocol"], "explain": True})
    assert explained.status_code == 200
    candidates = explained.json()["explain"]["candidates"]
    assert candidates[0]["uri"] == steps[0] and candidates[0]["listed"] is True
    assert set(candidates[0]["evidence"]["dense_by_role"]) == {"doc", "trigger", "learned"}
    bad = await http.post("/api/v1/search", json={"query": "x", "explain": "yes please"})
    assert bad.status_code == 422 and bad.json()["field"] == "explain"


async def test_the_error_shape_is_pinned(http: httpx2.AsyncClient) -> None:
    response = await http.post("/api/v1/runs/begin", json={"uri": "kairos://mem/nope"})
    assert response.status_code == 422
    assert response.json() == {
        "error_code": "INVALID_URI",
        "message": "Invalid uri 'kairos://mem/nope': expected a URI of the form "
                   "kairos://mem/<uuid>.",
        "field": "uri",
        "expected": "a URI of the form kairos://mem/<uuid>",
    }
    missing = await http.get("/api/v1/runs/begin")
    assert missing.status_code == 405
    unknown = await http.get("/api/v1/nothing/here")
    assert unknown.status_code == 404
    assert unknown.json() == {"error_code": "NOT_FOUND",
                              "message": "No route GET /api/v1/nothing/here."}


@pytest.mark.parametrize(("method", "path"), [
    ("GET", f"/api/v1/protocols/{MISSING}"),
    ("GET", "/api/v1/runs/no-such-run/proofs"),
    ("GET", "/api/v1/runs/no-such-run/verify"),
    ("GET", "/api/v1/search/session?session_id=never-seen"),
    ("POST", "/api/v1/runs/begin"),
])
async def test_unknown_things_are_404(http: httpx2.AsyncClient, method: str, path: str) -> None:
    body = {"uri": f"kairos://mem/{MISSING}"} if method == "POST" else None
    response = await http.request(method, path, json=body)
    assert response.status_code == 404
    assert response.json()["error_code"] == "NOT_FOUND"


BAD_INPUT = [
    # (method, path, json body or raw bytes, field the error must name)
    ("POST", "/api/v1/protocols", {}, "markdown_doc"),
    ("POST", "/api/v1/protocols", {"markdown_doc": 5}, "markdown_doc"),
    ("POST", "/api/v1/protocols", {"markdown_doc": "no heading at all"}, None),
    ("POST", "/api/v1/protocols", {"markdown_doc": "# T\n\n## S\n\nx", "extra": 1}, "extra"),
    ("POST", "/api/v1/protocols", b"{not json", "body"),
    ("POST", "/api/v1/protocols", [1, 2], "body"),
    ("POST", "/api/v1/protocols/search", {"query": ""}, "query"),
    ("POST", "/api/v1/protocols/search", {"query": "x", "limit": 0}, "limit"),
    ("POST", "/api/v1/runs/begin", {"uri": 123}, "uri"),
    ("POST", "/api/v1/runs/begin", {"uri": "https://example.com"}, "uri"),
    ("POST", "/api/v1/runs/next", {"uri": f"kairos://mem/{MISSING}", "solution": "x"},
     "uri"),  # any solution is judged by the run engine, once the step is found
    ("POST", "/api/v1/runs/next", {"uri": f"kairos://mem/{MISSING}"}, "solution"),
    ("POST", "/api/v1/runs/attest", {"uri": "kairos://mem/x", "outcome": "meh",
                                     "message": "m"}, "outcome"),
    ("POST", "/api/v1/protocols/update", {"uris": []}, "uris"),
    ("POST", "/api/v1/protocols/update", {"uris": "kairos://mem/x", "updates": {"x": 1}},
     "updates"),
    ("POST", "/api/v1/protocols/delete", {"uris": 5}, "uris"),
    ("GET", "/api/v1/runs?limit=0", None, "limit"),
    ("GET", "/api/v1/runs?limit=abc", None, "limit"),
    ("GET", "/api/v1/runs/%20/verify", None, None),
    ("POST", "/api/v1/search", {"query": "x", "limit": 99}, "limit"),
    ("POST", "/api/v1/search", {"query": "x", "bogus": 1}, "bogus"),
    ("POST", "/api/v1/search", {"query": "x", "types": ["spell"]}, "types"),
    ("POST", "/api/v1/entries/read", {"ids": ["a"], "fields": ["bogus"]}, "fields"),
    ("POST", "/api/v1/entries/read", {"ids": "a"}, "ids"),
    ("POST", "/api/v1/entries", {"entity_type": "manual", "title": "t"}, "category"),
    ("POST", "/api/v1/entries", {"entity_type": "spell"}, "entity_type"),
    ("POST", "/api/v1/entries/update", {"entity_id": "x"}, "updates"),
    ("GET", "/api/v1/search/session", None, "session_id"),
    ("POST", "/api/v1/search/session/cited", {"session_id": "s", "ids": "x"}, "ids"),
    ("POST", "/api/v1/search/session/cited", {"session_id": "not valid!", "ids": []},
     "session_id"),
]


@pytest.mark.req("D3-12")
@pytest.mark.parametrize(("method", "path", "body", "field"), BAD_INPUT)
async def test_bad_input_is_a_structured_4xx_never_a_500(
        http: httpx2.AsyncClient, method: str, path: str, body: Any, field: str | None) -> None:
    if isinstance(body, bytes):
        response = await http.request(method, path, content=body,
                                      headers={"content-type": "application/json"})
    else:
        response = await http.request(method, path, json=body)
    assert 400 <= response.status_code < 500, response.text
    error = response.json()
    assert set(error) >= {"error_code", "message"}
    assert "Traceback" not in response.text
    if field is not None:
        assert error.get("field", "").split(".")[0] == field, error


async def test_an_unexpected_failure_is_a_generic_500(http: httpx2.AsyncClient, kairos: Kairos,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr(kairos.service, "list_runs", broken)
    response = await http.get("/api/v1/runs")
    assert response.status_code == 500
    assert response.json() == INTERNAL_BODY
    assert "secret" not in response.text
    assert "secret internal detail" in caplog.text


async def test_entries_and_the_session_header_over_the_body(http: httpx2.AsyncClient) -> None:
    categories = (await http.get("/api/v1/categories")).json()["categories"]
    code = categories[0]["code"]
    written = await http.post("/api/v1/entries", json={
        "entity_type": "manual", "category": code, "title": "Release checklist",
        "content": "Tag the release, build the wheel, publish to the index, announce it."})
    assert written.status_code == 201
    entry_id = written.json()["entity_id"]
    patched = await http.patch(f"/api/v1/entries/{entry_id}",
                               json={"summary": "How to release"})
    assert patched.status_code == 200 and patched.json()["entry"]["summary"] == "How to release"
    moved = await http.post("/api/v1/entries/update", json={
        "entity_id": entry_id, "updates": {"title": "Release checklist v2"}})
    assert moved.status_code == 200
    found = await http.post("/api/v1/search", headers={"X-CHL-Session": "from-header"},
                            json={"query": "release wheel", "session_id": "from-body",
                                  "min_score": 0.0})
    assert found.status_code == 200 and found.json()["session_applied"] is True
    assert entry_id in [r["entity_id"] for r in found.json()["results"]]
    read = await http.post("/api/v1/entries/read", headers={"X-Kairos-Session": "kairos-hdr"},
                           json={"ids": [entry_id, "missing-id"]})
    assert read.json()["count"] == 1 and read.json()["missing"] == ["missing-id"]
    header = await http.get("/api/v1/search/session", params={"session_id": "from-header"})
    assert header.status_code == 200 and entry_id in header.json()["viewed_ids"]
    assert "release wheel" in header.json()["last_queries"]
    body = await http.get("/api/v1/search/session", params={"session_id": "from-body"})
    assert body.status_code == 404
    viewed = await http.get("/api/v1/search/session",
                            headers={"X-Kairos-Session": "kairos-hdr"})
    assert viewed.status_code == 200 and viewed.json()["viewed_ids"] == [entry_id]
    cited = await http.post("/api/v1/search/session/cited",
                            json={"session_id": "from-header", "ids": [entry_id]})
    assert cited.status_code == 200
    after = await http.get("/api/v1/search/session", params={"session_id": "from-header"})
    assert after.json()["cited_ids"] == [entry_id]


async def test_health_metrics_and_openapi(http: httpx2.AsyncClient) -> None:
    health = await http.get("/health")
    assert health.status_code == 200
    assert health.json()["status"] == "healthy"
    assert {"store", "embedder", "index"} <= set(health.json())
    await http.post("/api/v1/runs/begin", json={"uri": "bad"})
    metrics = await http.get("/metrics")
    assert metrics.status_code == 200
    assert metrics.headers["content-type"].startswith("text/plain")
    assert ('kairos_http_requests_total{method="POST",route="/api/v1/runs/begin",'
            'status="422"} 1.0') in metrics.text
    assert 'kairos_http_request_duration_seconds_count{method="GET",route="/health"}' \
        in metrics.text
    for odd in ("BREW", "PROPFIND", "X-ODD"):  # methods clients invent share one label
        await http.request(odd, "/health")
    text = (await http.get("/metrics")).text
    assert 'method="OTHER",route="/health",status="405"} 3.0' in text
    assert "BREW" not in text and "PROPFIND" not in text
    spec = (await http.get("/openapi.json")).json()
    paths = set(spec["paths"])
    assert {"/api/v1/search", "/api/v1/entries/read", "/api/v1/entries",
            "/api/v1/entries/{entity_id}", "/api/v1/entries/update", "/api/v1/categories",
            "/api/v1/search/session", "/api/v1/search/session/cited", "/api/v1/protocols",
            "/api/v1/protocols/search", "/api/v1/protocols/{step_id}",
            "/api/v1/protocols/update", "/api/v1/protocols/delete", "/api/v1/runs/begin",
            "/api/v1/runs/next", "/api/v1/runs/attest", "/api/v1/runs",
            "/api/v1/runs/{run_id}/proofs", "/api/v1/runs/{run_id}/verify",
            "/health", "/metrics"} <= paths
    assert "/mcp" not in paths
    next_body = spec["paths"]["/api/v1/runs/next"]["post"]["requestBody"]
    assert next_body["content"]["application/json"]["schema"]["$ref"].endswith("Next")


async def test_a_refused_answer_over_rest(http: httpx2.AsyncClient) -> None:
    minted = (await http.post("/api/v1/protocols", json={"markdown_doc": THREE_STEPS})).json()
    steps = [s["uri"] for s in minted["items"][0]["steps"]]
    begun = (await http.post("/api/v1/runs/begin", json={"uri": steps[0]})).json()
    wrong = {**shell_ok(begun["challenge"]), "nonce": "f" * 32}
    refused = await http.post("/api/v1/runs/next", json={"uri": steps[1], "solution": wrong})
    assert refused.status_code == 200
    assert refused.json()["error_code"] == "NONCE_MISMATCH"
