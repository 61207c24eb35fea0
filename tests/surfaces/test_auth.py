"""Bearer tokens: configuration, the 401s, and spaces that cannot see each other."""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from kairos.api import TokenConfigError, check_bind, create_app
from kairos.api.auth import parse_tokens, read_tokens_file, token_id
from kairos.mcp import ServiceRef, build_server
from kairos.service import Caller, Kairos
from tests.spec.seedkit import THREE_STEPS, shell_ok

BASE = "http://127.0.0.1:8765"
TOKENS = {"alpha-secret": "A", "beta-secret": "B"}
A = {"Authorization": "Bearer alpha-secret"}
B = {"Authorization": "Bearer beta-secret"}


def test_tokens_from_the_environment_and_from_a_file(tmp_path: Path) -> None:
    assert parse_tokens("t1:spaceA, t2:spaceB,") == {"t1": "spaceA", "t2": "spaceB"}
    assert parse_tokens("") == {}
    with pytest.raises(TokenConfigError, match="entry 1"):
        parse_tokens("no-space-here")
    with pytest.raises(TokenConfigError, match="entry 2"):
        parse_tokens("t1:a,t2:bad space")
    path = tmp_path / "tokens"
    path.write_text("# team tokens\nt1 spaceA\n\nt2 spaceB\n", "utf-8")
    assert read_tokens_file(path) == {"t1": "spaceA", "t2": "spaceB"}
    path.write_text("t1 spaceA extra\n", "utf-8")
    with pytest.raises(TokenConfigError, match=":1: expected"):
        read_tokens_file(path)
    with pytest.raises(TokenConfigError, match="Cannot read"):
        read_tokens_file(tmp_path / "absent")
    assert token_id("t1").startswith("tok-") and "t1" not in token_id("t1")[4:]


def test_without_tokens_only_loopback_is_allowed() -> None:
    assert check_bind("127.0.0.1", {}) is None
    assert check_bind("localhost", {}) is None
    assert check_bind("0.0.0.0", {"t": "A"}) is None
    message = check_bind("0.0.0.0", {})
    assert message is not None and "KAIROS_API_TOKENS" in message


@pytest.fixture
async def http(kairos: Kairos) -> AsyncIterator[httpx2.AsyncClient]:
    app = create_app(kairos.service, tokens=TOKENS,
                     mcp_factory=partial(build_server, ServiceRef.of(kairos.service)))
    async with app.router.lifespan_context(app), httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=app), base_url=BASE) as client:
        client.app = app  # type: ignore[attr-defined]
        yield client


@pytest.mark.anyio
@pytest.mark.parametrize(("path", "headers"), [
    ("/api/v1/runs", {}),
    ("/api/v1/runs", {"Authorization": "Bearer wrong"}),
    ("/api/v1/runs", {"Authorization": "Basic YWxwaGEtc2VjcmV0"}),
    ("/metrics", {}),
    ("/openapi.json", {}),
    ("/mcp", {}),
])
async def test_every_route_but_health_needs_a_token(http: httpx2.AsyncClient, path: str,
                                                    headers: dict[str, str]) -> None:
    response = await http.get(path, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    body = response.json()
    if path == "/mcp":  # MCP clients read a JSON-RPC error; its data is the same shape
        assert body["error"]["code"] == -32001
        body = body["error"]["data"]
    assert body["error_code"] == "UNAUTHORIZED"
    assert body["details"] == {"status": 401}
    assert (await http.get("/health")).status_code == 200
    assert (await http.get(path, headers=A)).status_code != 401


@pytest.mark.anyio
@pytest.mark.req("D4-5")
async def test_a_token_for_space_a_cannot_read_run_or_delete_space_b(
        http: httpx2.AsyncClient, kairos: Kairos) -> None:
    minted = await http.post("/api/v1/protocols", headers=B, json={"markdown_doc": THREE_STEPS})
    assert minted.status_code == 201
    steps = [s["uri"] for s in minted.json()["items"][0]["steps"]]
    step_id = steps[0].removeprefix("kairos://mem/")
    begun = await http.post("/api/v1/runs/begin", headers=B, json={"uri": steps[0]})
    run_id = (await http.get("/api/v1/runs", headers=B)).json()["items"][0]["run_id"]

    assert (await http.get(f"/api/v1/protocols/{step_id}", headers=A)).status_code == 404
    assert (await http.post("/api/v1/runs/begin", headers=A,
                            json={"uri": steps[0]})).status_code == 404
    answer = shell_ok(begun.json()["challenge"])
    assert (await http.post("/api/v1/runs/next", headers=A,
                            json={"uri": steps[1], "solution": answer})).status_code == 404
    assert (await http.get(f"/api/v1/runs/{run_id}/proofs", headers=A)).status_code == 404
    assert (await http.get(f"/api/v1/runs/{run_id}/verify", headers=A)).status_code == 404
    assert (await http.get("/api/v1/runs", headers=A)).json()["total"] == 0
    deleted = (await http.post("/api/v1/protocols/delete", headers=A,
                               json={"uris": steps, "protocol": True})).json()
    assert deleted["total_deleted"] == 0
    assert {r["error_code"] for r in deleted["results"]} == {"NOT_FOUND"}
    search = (await http.post("/api/v1/protocols/search", headers=A,
                              json={"query": "project setup"})).json()
    assert steps[0] not in [c["uri"] for c in search["choices"]]
    # Over MCP the token decides the space just the same.
    app = http.app  # type: ignore[attr-defined]
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE,
                                  headers=A) as raw, Client(streamable_http_client(
                                      f"{BASE}/mcp", http_client=raw)) as mcp:
        refused = await mcp.call_tool("kairos_dump", {"uri": steps[0]})
        assert refused.is_error and (refused.structured_content or {})["error_code"] == \
            "NOT_FOUND"
    # B still has its protocol and its run, which B can still continue.
    assert kairos.dump(steps[0], Caller("B"))["uri"] == steps[0]
    moved = await http.post("/api/v1/runs/next", headers=B,
                            json={"uri": steps[1], "solution": answer})
    assert moved.status_code == 200 and "error_code" not in moved.json()


@pytest.mark.anyio
async def test_the_callers_of_a_token_are_the_token_and_its_sessions(
        http: httpx2.AsyncClient) -> None:
    minted = await http.post("/api/v1/protocols", headers=A, json={"markdown_doc": THREE_STEPS})
    first = minted.json()["items"][0]["uri"]
    await http.post("/api/v1/runs/begin", headers=A, json={"uri": first})
    await http.post("/api/v1/runs/begin", headers={**A, "X-CHL-Session": "agent-9"},
                    json={"uri": first})
    callers: list[Any] = [r["caller"] for r in
                          (await http.get("/api/v1/runs", headers=A)).json()["items"]]
    assert sorted(callers) == sorted(["agent-9", token_id("alpha-secret")])


@pytest.mark.anyio
async def test_stateless_mcp_takes_identity_from_the_session_header(kairos: Kairos) -> None:
    """Replicas without sticky sessions: no transport session, the header names the caller."""
    app = create_app(kairos.service, tokens=TOKENS, mcp_stateless=True,
                     mcp_factory=partial(build_server, ServiceRef.of(kairos.service)))
    async with app.router.lifespan_context(app):
        for mode in ("auto", "legacy"):
            async with httpx2.AsyncClient(
                    transport=httpx2.ASGITransport(app=app), base_url=BASE,
                    headers={**A, "X-CHL-Session": f"replica-agent-{mode}"}) as raw, Client(
                    streamable_http_client(f"{BASE}/mcp", http_client=raw), mode=mode) as mcp:
                minted = await mcp.call_tool("kairos_mint", {"markdown_doc": THREE_STEPS,
                                                             "force_update": True})
                first = (minted.structured_content or {})["items"][0]["uri"]
                begun = await mcp.call_tool("kairos_begin", {"uri": first})
                assert not begun.is_error
    callers = {r["caller"] for r in kairos.run_history(Caller("A"))}
    assert callers == {"replica-agent-auto", "replica-agent-legacy"}
