"""Spaces cannot reach each other's runs — built-in protocols included — by a session id,
an MCP session or a nonce; built-in statistics are kept per space; a spent nonce changes
nothing; a credential holds a bounded number of MCP sessions."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from kairos.domain.errors import KairosError
from kairos.domain.texts import CREATE_PROTOCOL_URI
from kairos.service import Caller, Kairos
from tests.conftest import RACE_TRIALS, in_process, make_kairos
from tests.service.test_races import _together
from tests.spec.seedkit import mint_three, shell_ok
from tests.surfaces.test_auth import TOKENS, A, B

A_SPACE, B_SPACE = Caller(space="A", id="agent-1"), Caller(space="B", id="agent-1")
MCP = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "t", "version": "1"}}}


def _run(kairos: Kairos, space: str) -> dict[str, Any]:
    runs = kairos.run_history(Caller(space=space))
    assert len(runs) == 1
    return runs[0]


def _builtin_steps(kairos: Kairos) -> list[str]:
    return [s["uri"] for s in kairos.dump(CREATE_PROTOCOL_URI, protocol=True)["steps"]]


# --- the service: runs, nonces and statistics stay in their space ---------------------------

def test_a_built_in_run_belongs_to_the_space_that_began_it(kairos: Kairos) -> None:
    steps = _builtin_steps(kairos)
    begun = kairos.begin(CREATE_PROTOCOL_URI, A_SPACE)
    before = _run(kairos, "A")
    # Space B, the same caller id: no run of its own, and A's is out of its reach.
    for call in (lambda: kairos.attest(CREATE_PROTOCOL_URI, "failure", "B says so", B_SPACE),
                 lambda: kairos.next(steps[1], {"type": "comment", "comment": {"text": "x"}},
                                     B_SPACE),
                 lambda: kairos.next(steps[1], shell_ok(begun["challenge"]), B_SPACE)):
        with pytest.raises(KairosError) as info:
            call()
        assert info.value.code == "NO_ACTIVE_RUN"
    assert _run(kairos, "A") == before
    assert kairos.run_history(Caller(space="B")) == []


def test_built_in_statistics_are_kept_per_space(kairos: Kairos) -> None:
    kairos.begin(CREATE_PROTOCOL_URI, A_SPACE)
    kairos.attest(CREATE_PROTOCOL_URI, "failure", "stopped", A_SPACE)
    kairos.begin(CREATE_PROTOCOL_URI, Caller(space="A", id="agent-2"))
    a, b = (kairos.metrics(CREATE_PROTOCOL_URI, Caller(space=s)) for s in ("A", "B"))
    assert (a["runs"], a["failures"], a["steps"][0]["failures"]) == (2, 1, 1)
    assert (b["runs"], b["failures"], b["steps"][0]["failures"]) == (0, 0, 0)
    listed = {s: {p["uri"]: p for p in kairos.list_protocols(
        Caller(space=s), builtin=True)["items"]}[CREATE_PROTOCOL_URI] for s in ("A", "B")}
    assert (listed["A"]["stats"]["runs"], listed["B"]["stats"]["runs"]) == (2, 0)
    for space, runs in (("A", 2), ("B", 0)):
        overview = kairos.protocol_overview(CREATE_PROTOCOL_URI, Caller(space=space))
        assert overview["stats"]["runs"] == runs
        quality = kairos.protocol_quality(CREATE_PROTOCOL_URI, Caller(space=space))
        assert sum(day["runs"] for day in quality["series"]) == runs


@pytest.mark.parametrize("trial", RACE_TRIALS)
def test_a_spent_nonce_is_inert(kairos: Kairos, trial: int) -> None:
    """An old nonce of a run (readable from its proof log) replayed with the step the run
    waits at, by anyone in the space, while its agent answers: the agent's answer always
    goes through, and the replays change nothing."""
    steps, _ = mint_three(kairos)
    agent = Caller(id="agent")
    begun = kairos.begin(steps[0], agent)
    waiting = kairos.next(steps[1], shell_ok(begun["challenge"]), agent)
    old = kairos.proof_log(_run(kairos, "default")["run_id"])["proofs"][0]["solution"]
    replay = {**shell_ok(waiting["challenge"]), "nonce": old["nonce"]}

    def call(i: int) -> Any:
        if i == 0:
            return kairos.next(steps[2], shell_ok(waiting["challenge"]), agent)
        return kairos.next(steps[2], replay, Caller(id=f"replayer-{i % 2}"))

    results = _together(8, call)
    assert isinstance(results[0], dict) and "error_code" not in results[0], results[0]
    assert all(isinstance(r, KairosError) and r.code == "NO_ACTIVE_RUN" for r in results[1:])
    run = _run(kairos, "default")
    assert (run["step"], run["retry_count"]) == (3, 0)
    assert kairos.metrics(steps[0])["steps"][1]["refused"] == 0


# --- HTTP: session ids and MCP sessions stay with their space and their transport ----------

@pytest.fixture
async def http(kairos: Kairos) -> AsyncIterator[httpx2.AsyncClient]:
    async with in_process(kairos, tokens=TOKENS) as client:
        yield client


async def _open(http: httpx2.AsyncClient, token: dict[str, str]) -> httpx2.Response:
    return await http.post("/mcp", json=INITIALIZE, headers={**token, **MCP})


def _sse(response: httpx2.Response) -> dict[str, Any]:
    """The one JSON-RPC message of an MCP response (JSON, or one SSE event)."""
    if response.headers.get("content-type", "").startswith("application/json"):
        return dict(response.json())
    data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    return dict(json.loads(data[0]))


async def _tool(http: httpx2.AsyncClient, token: dict[str, str], session: str, name: str,
                args: dict[str, Any]) -> httpx2.Response:
    await http.post("/mcp", headers={**token, **MCP, "mcp-session-id": session},
                    json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    return await http.post("/mcp", headers={**token, **MCP, "mcp-session-id": session},
                           json={"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                 "params": {"name": name, "arguments": args}})


@pytest.mark.anyio
async def test_session_headers_of_another_space_or_transport_reach_no_run(
        http: httpx2.AsyncClient, kairos: Kairos) -> None:
    opened = await _open(http, A)
    session = opened.headers["mcp-session-id"]
    begun = _sse(await _tool(http, A, session, "kairos_begin", {"uri": CREATE_PROTOCOL_URI}))
    assert "result" in begun, begun
    await http.post("/api/v1/runs/begin", headers={**A, "X-CHL-Session": "agent-1"},
                    json={"uri": CREATE_PROTOCOL_URI})
    before = kairos.run_history(Caller(space="A"))
    assert {r["caller"] for r in before} == {session, "agent-1"}
    attest = {"uri": CREATE_PROTOCOL_URI, "outcome": "failure", "message": "not mine"}
    for headers in ({**B, "X-CHL-Session": "agent-1"},   # another space, the same header
                    {**B, "mcp-session-id": session},    # another space, A's MCP session
                    {**A, "mcp-session-id": session}):   # REST is not the MCP session
        refused = await http.post("/api/v1/runs/attest", headers=headers, json=attest)
        assert refused.status_code == 400 and refused.json()["error_code"] == "NO_ACTIVE_RUN"
        assert "run_id" not in refused.text
    assert kairos.run_history(Caller(space="A")) == before
    # On the MCP endpoint A's session answers B exactly as a session that never existed.
    foreign = await _tool(http, B, session, "kairos_attest", attest)
    unknown = await _tool(http, B, "f" * 32, "kairos_attest", attest)
    assert foreign.status_code == unknown.status_code == 404
    assert foreign.json() == unknown.json()
    assert kairos.run_history(Caller(space="A")) == before


@pytest.mark.anyio
async def test_a_credential_holds_a_bounded_number_of_mcp_sessions(home: Path) -> None:
    kairos = make_kairos(home, KAIROS_MAX_MCP_SESSIONS="2")
    async with in_process(kairos, tokens=TOKENS) as http:
        sessions = [(await _open(http, A)).headers["mcp-session-id"] for _ in range(2)]
        refused = await _open(http, A)
        assert refused.status_code == 429
        assert refused.json()["error"]["data"]["error_code"] == "TOO_MANY_SESSIONS"
        assert (await _open(http, B)).status_code == 200  # another token is not held up
        ended = await http.delete("/mcp", headers={**A, "mcp-session-id": sessions[0]})
        assert ended.status_code == 200
        assert (await _open(http, A)).status_code == 200
        assert (await _open(http, A)).status_code == 429
