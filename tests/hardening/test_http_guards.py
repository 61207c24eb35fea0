"""The HTTP guards: body size before reading, UTF-8 and depth of REST bodies, the Host
check without tokens, and the bound on requests in flight — REST and MCP alike."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import httpx2
import pytest
import starlette.requests

from kairos.api import create_app
from kairos.domain import limits
from kairos.mcp import ServiceRef, build_server
from kairos.service import Kairos
from tests.conftest import BASE, make_kairos

pytestmark = pytest.mark.anyio
JSON = {"content-type": "application/json"}
MCP_HEADERS = {"content-type": "application/json",
               "accept": "application/json, text/event-stream"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "t", "version": "1"}}}


SMALL_BODY = 10_000
"""The body limit of the ``small`` server."""


def _app(kairos: Kairos, **kw: Any) -> Any:
    service = kairos.service
    return create_app(service, mcp_factory=partial(build_server, ServiceRef.of(service)), **kw)


@contextlib.asynccontextmanager
async def _client(app: Any, base: str = BASE) -> AsyncIterator[httpx2.AsyncClient]:
    async with app.router.lifespan_context(app), httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=app), base_url=base) as client:
        yield client


@pytest.fixture
async def http(kairos: Kairos) -> AsyncIterator[httpx2.AsyncClient]:
    async with _client(_app(kairos)) as client:
        yield client


@pytest.fixture
async def small(home: Path) -> AsyncIterator[httpx2.AsyncClient]:
    """A server whose request bodies may hold at most ``SMALL_BODY`` bytes."""
    kairos = make_kairos(home, KAIROS_MAX_BODY_BYTES=str(SMALL_BODY))
    async with _client(_app(kairos)) as client:
        yield client


# --- body size ---------------------------------------------------------------------------

async def test_an_oversize_body_is_a_413_before_it_is_read(small: httpx2.AsyncClient) -> None:
    http, small_body = small, SMALL_BODY
    declared = await http.post("/api/v1/protocols",
                               json={"markdown_doc": "# T\n\n## S\n\n" + "x" * small_body})
    assert declared.status_code == 413
    assert declared.json() == {
        "error_code": "REQUEST_TOO_LARGE",
        "message": f"The request body is larger than the limit of {small_body} bytes.",
        "field": "body", "expected": f"at most {small_body} bytes"}
    sent: list[int] = []

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it arrives
        for i in range(100):
            sent.append(i)
            yield b" " * 1000

    streamed = await http.post("/api/v1/protocols", content=chunks(), headers=JSON)
    assert streamed.status_code == 413
    assert len(sent) <= small_body // 1000 + 2  # it stopped reading


async def test_an_oversize_mcp_body_is_a_json_rpc_error(small: httpx2.AsyncClient) -> None:
    response = await small.post("/mcp", content=b" " * (SMALL_BODY + 1), headers=MCP_HEADERS)
    assert response.status_code == 413
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] is None
    assert body["error"]["data"]["error_code"] == "REQUEST_TOO_LARGE"


# --- error shapes of REST bodies ---------------------------------------------------------

async def test_a_body_that_is_not_utf8_is_a_422_naming_the_body(
        http: httpx2.AsyncClient) -> None:
    response = await http.post("/api/v1/protocols/search", content=b'{"query": "\xff\xfe"}',
                               headers=JSON)
    assert response.status_code == 422
    assert response.json()["field"] == "body" and "UTF-8" in response.json()["message"]


@pytest.mark.parametrize(("body", "expected"), [
    (b'{"markdown_doc": "x", "llm_model_id": [' + b"1," * 100_000 + b"1]}",
     "at most 100000 JSON values"),
    (b'{"markdown_doc": "x", "quality_bonus": ' + b"9" * (limits.NUMBER_DIGITS + 1) + b"}",
     f"JSON numbers of at most {limits.NUMBER_DIGITS} digits"),
    (b'{"a": ' + b"[" * 65 + b"]" * 65 + b"}", "JSON nested at most 64 levels deep"),
])
async def test_a_body_too_costly_to_parse_is_refused_before_parsing(
        http: httpx2.AsyncClient, body: bytes, expected: str) -> None:
    rest = await http.post("/api/v1/protocols", content=body, headers=JSON)
    assert rest.status_code == 422
    assert (rest.json()["field"], rest.json()["expected"]) == ("body", expected)
    mcp = await http.post("/mcp", content=body, headers=MCP_HEADERS)
    assert mcp.status_code == 422
    assert mcp.json()["error"]["data"]["expected"] == expected


async def pieces(items: list[bytes], sent: list[int]) -> AsyncIterator[bytes]:
    """A body sent as ``items``, each counted in ``sent`` as the server reads it."""
    for item in items:
        sent.append(len(item))
        yield item


async def test_a_body_is_checked_as_it_arrives_and_refused_once_the_rest_is_dropped(
        http: httpx2.AsyncClient, small: httpx2.AsyncClient) -> None:
    """The first piece that breaks a limit decides the answer (the rest is not checked:
    here it is not even UTF-8), given once the rest of the body is read and dropped, up to
    the body limit."""
    sent: list[int] = []
    number = b"9" * (limits.NUMBER_DIGITS + 1)
    digits = f"JSON numbers of at most {limits.NUMBER_DIGITS} digits"
    rest = [b"\xff" * 65_000] * 59  # 3.9 MB in all
    refused = await http.post("/api/v1/protocols", headers=JSON,
                              content=pieces([b'{"quality_bonus": ' + number, *rest], sent))
    assert refused.status_code == 422 and refused.json()["expected"] == digits
    assert len(sent) == 60
    sent.clear()
    cut = [b'{"quality_bonus": ' + number[:60], number[60:], *rest]  # across two pieces
    refused = await http.post("/api/v1/protocols", headers=JSON, content=pieces(cut, sent))
    assert refused.json()["expected"] == digits and len(sent) == 61
    sent.clear()
    endless = [b'{"quality_bonus": ' + number, *[b" " * 1_000] * 1_000]  # 1 MB, no length
    refused = await small.post("/api/v1/protocols", headers=JSON,
                               content=pieces(endless, sent))
    assert refused.json()["expected"] == digits
    assert len(sent) <= SMALL_BODY // 1_000 + 2  # dropped up to the limit, not 1,000 pieces

    e_acute = "é".encode()  # a character cut between two pieces is still UTF-8
    good = [b'{"query": "' + e_acute[:1], e_acute[1:] + b'", "limit": 3', b"}"]
    answer = await http.post("/api/v1/protocols/search", headers=JSON,
                             content=pieces(good, []))
    assert answer.status_code == 200
    bad = [good[0], e_acute[1:] + b'", "limit": 3, "x": "\xff"', b"}"]
    answer = await http.post("/api/v1/protocols/search", headers=JSON,
                             content=pieces(bad, []))
    offset = b"".join(bad).index(b"\xff")
    assert answer.status_code == 422
    assert answer.json()["message"] == f"Invalid body: not UTF-8 (byte {offset})."


async def test_a_body_that_is_certainly_not_json_is_answered_as_the_parser_would_unparsed(
        http: httpx2.AsyncClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """An unclosed string of escaped quotes (the costliest text to decode, 3.9 MB) gets
    the answer FastAPI gives any body it cannot parse, without being parsed."""
    parsed: list[int] = []
    loads = json.loads
    monkeypatch.setattr(starlette.requests, "json", SimpleNamespace(
        loads=lambda body: parsed.append(len(body)) or loads(body)))
    by_parser = await http.post("/api/v1/protocols", content=b'{"markdown_doc": "x",}',
                                headers=JSON)
    assert by_parser.status_code == 422 and parsed  # FastAPI parsed and refused it
    parsed.clear()
    crafted = b'{"markdown_doc": "' + b'\\"' * 1_950_000
    unparsed = await http.post("/api/v1/protocols", content=crafted, headers=JSON)
    assert (unparsed.status_code, unparsed.json()) == (422, by_parser.json())
    assert parsed == []
    unbalanced = await http.post("/api/v1/protocols", content=b'{"markdown_doc": ["x"}',
                                 headers=JSON)
    assert (unbalanced.status_code, unbalanced.json()) == (422, by_parser.json())
    assert parsed == []


async def test_citing_into_an_unknown_session_is_a_404_and_creates_nothing(
        http: httpx2.AsyncClient) -> None:
    cited = await http.post("/api/v1/search/session/cited",
                            json={"session_id": "never-searched", "ids": ["x"]})
    assert cited.status_code == 404 and cited.json()["field"] == "session_id"
    info = await http.get("/api/v1/search/session", params={"session_id": "never-searched"})
    assert info.status_code == 404


async def test_update_and_delete_of_unknown_uris_report_each_uri(
        http: httpx2.AsyncClient) -> None:
    uri = "kairos://mem/00000000-0000-0000-0000-00000000dead"
    deleted = await http.post("/api/v1/protocols/delete", json={"uris": [uri]})
    assert deleted.status_code == 200
    assert deleted.json()["total_failed"] == 1
    assert deleted.json()["results"][0]["error_code"] == "NOT_FOUND"
    updated = await http.post("/api/v1/protocols/update",
                              json={"uris": [uri], "updates": {"content": "x"}})
    assert updated.json()["results"][0]["error_code"] == "NOT_FOUND"


# --- Host check (DNS rebinding) ----------------------------------------------------------

@pytest.mark.parametrize("host", ["127.0.0.1:8765", "localhost:8765", "[::1]:8765",
                                  "localhost"])
async def test_loopback_hosts_are_served(kairos: Kairos, host: str) -> None:
    async with _client(_app(kairos)) as client:
        response = await client.post("/api/v1/protocols/search", json={"query": "deploy"},
                                      headers={"host": host})
        assert response.status_code == 200, response.text


async def test_other_hosts_are_refused_without_tokens(kairos: Kairos) -> None:
    async with _client(_app(kairos), "http://rebound.example:8765") as client:
        search = await client.post("/api/v1/protocols/search", json={"query": "deploy"})
        assert search.status_code == 421
        assert search.json()["error_code"] == "MISDIRECTED_REQUEST"
        assert search.json()["field"] == "host"
        mint = await client.post("/api/v1/protocols", json={"markdown_doc": "# T\n\n## S\n"})
        assert mint.status_code == 421
        assert (await client.get("/health")).status_code == 200  # open, like without tokens
        mcp = await client.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
        assert mcp.status_code == 421
        assert mcp.json()["error"]["data"]["error_code"] == "MISDIRECTED_REQUEST"


async def test_with_tokens_any_host_is_served(kairos: Kairos) -> None:
    app = _app(kairos, tokens={"secret": "default"}, host="0.0.0.0")
    async with _client(app, "http://kairos.example.com") as client:
        response = await client.post("/api/v1/protocols/search", json={"query": "deploy"},
                                     headers={"authorization": "Bearer secret"})
        assert response.status_code == 200


# --- admission: a bounded queue before a 503 ----------------------------------------------

@contextlib.asynccontextmanager
async def _one_slot_taken(client: httpx2.AsyncClient) -> AsyncIterator[dict[str, Any]]:
    """A search that holds the one slot until ``first["release"]()`` (or the block's
    end) lets its body arrive; ``first["r"]`` is its response, once answered."""
    admitted, gate = anyio.Event(), anyio.Event()

    async def slow_body() -> AsyncIterator[bytes]:
        yield b'{"query": '
        admitted.set()  # the server asked for more: the request holds its slot
        await gate.wait()
        yield b'"deploy"}'

    first: dict[str, Any] = {"release": gate.set}

    async def send_first() -> None:
        first["r"] = await client.post("/api/v1/protocols/search", content=slow_body(),
                                       headers=JSON)

    async with anyio.create_task_group() as tg:
        tg.start_soon(send_first)
        with anyio.fail_after(10):
            await admitted.wait()
        try:
            yield first
        finally:
            gate.set()


async def test_beyond_the_slots_requests_wait_their_turn_then_are_served(
        kairos: Kairos) -> None:
    async with _client(_app(kairos, max_inflight=1, max_queue=2)) as client:
        answers: list[httpx2.Response] = []
        async with _one_slot_taken(client) as first, anyio.create_task_group() as tg:
            async def search(query: str) -> None:
                answers.append(await client.post("/api/v1/protocols/search",
                                                 json={"query": query}))
            tg.start_soon(search, "first in line")
            tg.start_soon(search, "second in line")
            await _until_waiting(client, 2)
            assert (await client.get("/health")).status_code == 200  # not counted
            first["release"]()
        assert first["r"].status_code == 200
        assert [a.status_code for a in answers] == [200, 200]


async def test_a_full_queue_is_shed_with_503_and_retry_after(kairos: Kairos) -> None:
    async with _client(_app(kairos, max_inflight=1, max_queue=1)) as client:
        async with _one_slot_taken(client) as first, anyio.create_task_group() as tg:
            queued: list[httpx2.Response] = []

            async def wait_in_line() -> None:
                queued.append(await client.post("/api/v1/protocols/search",
                                                json={"query": "x"}))
            tg.start_soon(wait_in_line)
            await _until_waiting(client, 1)
            busy = await client.post("/api/v1/protocols/search", json={"query": "x"})
            assert busy.status_code == 503
            assert busy.headers["retry-after"] == "1"
            assert busy.json()["error_code"] == "OVERLOADED"
            mcp = await client.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
            assert mcp.status_code == 503 and mcp.json()["error"]["data"]["error_code"] == (
                "OVERLOADED")
            first["release"]()
        assert [q.status_code for q in queued] == [200]
        again = await client.post("/api/v1/protocols/search", json={"query": "x"})
        assert again.status_code == 200


async def test_a_wait_past_the_deadline_is_shed_with_503(kairos: Kairos) -> None:
    app = _app(kairos, max_inflight=1, max_queue=8, max_wait_ms=50)
    async with _client(app) as client, _one_slot_taken(client):
        late = await client.post("/api/v1/protocols/search", json={"query": "x"})
        assert late.status_code == 503 and late.headers["retry-after"] == "1"
        assert late.json()["error_code"] == "OVERLOADED"


async def _until_waiting(client: httpx2.AsyncClient, n: int) -> None:
    """Until ``n`` requests wait in the app's admission queue (bounded)."""
    gate = _gate(client)
    with anyio.fail_after(10):
        while gate.admission.waiting < n:
            await anyio.lowlevel.checkpoint()


def _gate(client: httpx2.AsyncClient) -> Any:
    """The app's Gate middleware, as built by Starlette."""
    app = client._transport.app  # type: ignore[attr-defined]
    stack = app.middleware_stack
    while stack is not None and type(stack).__name__ != "Gate":
        stack = getattr(stack, "app", None)
    assert stack is not None
    return stack
