"""Smoke tests on a real port: MCP over streamable HTTP, two sessions at once, and the
``kairos mcp --server`` forwarder as a real subprocess."""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from kairos.api import create_app
from kairos.mcp import ServiceRef, build_server
from kairos.service import Caller, Kairos
from tests.spec.seedkit import THREE_STEPS, shell_ok
from tests.surfaces.conftest import live_server, run_three

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]
TOKENS = {"alpha-secret": "A"}


@pytest.fixture
async def url(kairos: Kairos) -> AsyncIterator[str]:
    app = create_app(kairos.service, tokens=TOKENS,
                     mcp_factory=partial(build_server, ServiceRef.of(kairos.service)))
    async with live_server(app) as base:
        yield base


def http_client(**headers: str) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(headers={"Authorization": "Bearer alpha-secret", **headers},
                              timeout=httpx2.Timeout(30, read=60))


async def tool(client: Client, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, args)
    assert not result.is_error, result.structured_content
    return dict(result.structured_content or {})


async def test_a_protocol_runs_over_streamable_http(url: str, kairos: Kairos) -> None:
    with anyio.fail_after(60):
        async with http_client(**{"X-CHL-Session": "http-agent"}) as http, Client(
                streamable_http_client(f"{url}/mcp", http_client=http)) as client:
            assert "kairos_begin" in (client.instructions or "")
            run = await run_three(partial(tool, client))
            health = await http.get(f"{url}/health", headers={"Authorization": ""})
            metrics = await http.get(f"{url}/metrics")
    assert run["final"]["run_id"]
    report = kairos.verify_run(run["final"]["run_id"], Caller("A"))
    assert report["valid"] and report["proofs"] == 3
    assert kairos.run_history(Caller("A"))[0]["caller"] == "http-agent"
    assert health.status_code == 200 and health.json()["status"] == "healthy"
    assert 'kairos_mcp_tool_calls_total{outcome="ok",tool="kairos_next"} 2.0' in metrics.text
    assert 'route="/mcp"' in metrics.text


@pytest.mark.req("D4-5")
async def test_two_http_sessions_run_the_same_protocol_without_interfering(
        url: str, kairos: Kairos) -> None:
    with anyio.fail_after(60):
        async with AsyncExitStack() as stack:
            sessions = []
            for _ in range(2):
                http = await stack.enter_async_context(http_client())
                read, write = await stack.enter_async_context(
                    streamable_http_client(f"{url}/mcp", http_client=http))
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()  # stateful: each gets its own mcp-session-id
                sessions.append(session)

            async def call(i: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
                result = await sessions[i].call_tool(name, args)
                assert not result.is_error, result.structured_content
                return dict(result.structured_content or {})

            minted = await call(0, "kairos_mint", {"markdown_doc": THREE_STEPS})
            steps = [s["uri"] for s in minted["items"][0]["steps"]]
            # Both begin, then answer in lockstep: each answer must land in its own run.
            current = [await call(i, "kairos_begin", {"uri": steps[0]}) for i in (0, 1)]
            for uri in steps[1:]:
                async with anyio.create_task_group() as tg:
                    async def advance(i: int, uri: str = uri) -> None:
                        current[i] = await call(i, "kairos_next", {
                            "uri": uri, "solution": shell_ok(current[i]["challenge"])})
                    for i in (0, 1):
                        tg.start_soon(advance, i)
                assert all("error_code" not in c for c in current), current
            finals = [await call(i, "kairos_attest", {
                "uri": steps[-1], "outcome": "success", "message": f"agent {i} done",
                "solution": shell_ok(current[i]["challenge"])}) for i in (0, 1)]
    runs = {f["run_id"] for f in finals}
    assert len(runs) == 2
    history = kairos.run_history(Caller("A"))
    assert len({r["caller"] for r in history}) == 2
    for run_id in runs:
        report = kairos.verify_run(run_id, Caller("A"))
        assert report["valid"] and report["proofs"] == 3


async def _response(stream: Any) -> tuple[int, bytes]:
    """One HTTP/1.1 response read from ``stream`` (with a Content-Length): status, body."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += await stream.receive()
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    while len(body) < length:
        body += await stream.receive()
    return int(head.split()[1]), body


async def test_a_body_refused_as_it_arrives_is_answered_once_it_is_all_read(
        url: str) -> None:
    """Over a real socket: a body that breaks a limit in its first 200 KB gets no answer
    while the rest is still to come (its sender is paced as with any body), then the 422;
    the connection then serves the next request."""
    values = b"[" + b"1," * 150_000 + b"1]"  # past 100,000 values at 200 KB
    head = ("POST /api/v1/protocols HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "Authorization: Bearer alpha-secret\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(values)}\r\n\r\n").encode()
    host, port = url.removeprefix("http://").split(":")
    with anyio.fail_after(30):
        async with await anyio.connect_tcp(host, int(port)) as stream:
            await stream.send(head + values[:250_000])
            with anyio.move_on_after(0.5):
                early = await stream.receive()
                pytest.fail(f"answered before the body was all sent: {early[:60]!r}")
            await stream.send(values[250_000:])
            status, body = await _response(stream)
            assert status == 422
            assert json.loads(body)["expected"] == "at most 100000 JSON values"
            await stream.send(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            status, body = await _response(stream)
            assert status == 200 and json.loads(body)["status"] == "healthy"


def proxy_params(home: Path, url: str, token: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "kairos.cli.main", "mcp", "--server", f"{url}/mcp"],
        cwd=str(ROOT), env={"KAIROS_HOME": str(home / "unused"), "KAIROS_TOKEN": token,
                            "KAIROS_SESSION_ID": "proxied-conversation"})


async def test_the_stdio_forwarder_sends_its_session_and_token(url: str, kairos: Kairos,
                                                               home: Path) -> None:
    with anyio.fail_after(90):
        async with stdio_client(proxy_params(home, url, "alpha-secret")) as (r, w), \
                ClientSession(r, w) as session:
            await session.initialize()
            names = [t.name for t in (await session.list_tools()).tools]
            assert "kairos_attest" in names
            minted = await session.call_tool("kairos_mint", {"markdown_doc": THREE_STEPS})
            assert not minted.is_error, minted.structured_content
            first = (minted.structured_content or {})["items"][0]["uri"]
            begun = await session.call_tool("kairos_begin", {"uri": first})
            assert not begun.is_error
            bad = await session.call_tool("kairos_begin", {"uri": "nope"})
            assert bad.is_error
            assert (bad.structured_content or {})["error_code"] == "INVALID_URI"
    runs = kairos.run_history(Caller("A"))
    assert [r["caller"] for r in runs] == ["proxied-conversation"]
    assert not (home / "unused").exists()  # the forwarder never opens a local store


async def test_the_forwarder_explains_a_refused_token(url: str, home: Path) -> None:
    with anyio.fail_after(90):
        async with stdio_client(proxy_params(home, url, "wrong-token")) as (r, w), \
                ClientSession(r, w) as session:
            await session.initialize()
            result = await session.call_tool("kairos_search", {"query": "deploy"})
    assert result.is_error
    body = result.structured_content or {}
    assert body["error_code"] == "UNAUTHORIZED"
    assert body["details"] == {"status": 401}
    assert "KAIROS_TOKEN" in body["message"]


async def test_the_forwarder_explains_an_unreachable_server(home: Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    with anyio.fail_after(90):
        async with stdio_client(proxy_params(home, dead, "t")) as (r, w), \
                ClientSession(r, w) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools  # the local table answers
            result = await session.call_tool("kairos_search", {"query": "deploy"})
    assert len(tools) == 13
    assert result.is_error
    body = result.structured_content or {}
    assert body["error_code"] == "UPSTREAM_UNAVAILABLE"
    assert dead in body["message"]
