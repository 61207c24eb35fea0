"""The MCP server in memory (``Client(server)``): tools, a full run, and every error path."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client

from kairos.mcp import INSTRUCTIONS, TOOLS, ServiceRef, build_server, local_identity
from kairos.mcp.server import INTERNAL_BODY
from kairos.mcp.stdio import process_session_id
from kairos.service import Caller, Kairos
from tests.spec.seedkit import THREE_STEPS, shell_ok
from tests.surfaces.conftest import run_three

pytestmark = pytest.mark.anyio

SESSION = "conversation-1"
EXPECTED_TOOLS = ["kairos_search", "kairos_begin", "kairos_next", "kairos_attest",
                  "kairos_mint", "kairos_update", "kairos_delete", "kairos_dump",
                  "search_entries", "read_entries", "write_entry", "update_entry",
                  "list_categories"]


class Observed(list[tuple[str, str]]):
    def __call__(self, tool: str, seconds: float, outcome: str) -> None:
        assert seconds >= 0
        self.append((tool, outcome))


@pytest.fixture
def observed() -> Observed:
    return Observed()


@pytest.fixture
async def client(kairos: Kairos, observed: Observed) -> AsyncIterator[Client]:
    server = build_server(ServiceRef.of(kairos.service), limits=kairos.limits,
                          identify=local_identity("default", SESSION),
                          observe=observed)
    async with Client(server) as c:
        yield c


async def call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """A successful call's body; text and structured content must carry the same JSON."""
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.structured_content
    assert json.loads(result.content[0].text) == result.structured_content
    return dict(result.structured_content or {})


async def error(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert result.is_error
    assert json.loads(result.content[0].text) == result.structured_content
    return dict(result.structured_content or {})


async def test_lists_every_tool_with_a_schema_and_a_teaching_description(
        client: Client) -> None:
    tools = (await client.list_tools()).tools
    assert [t.name for t in tools] == EXPECTED_TOOLS
    for tool in tools:
        assert tool.input_schema["type"] == "object"
        assert len(tool.description or "") > 80, tool.name
    begin = next(t for t in tools if t.name == "kairos_begin")
    assert begin.input_schema["required"] == ["uri"]
    assert begin.input_schema["additionalProperties"] is False


async def test_instructions_teach_the_loop(client: Client) -> None:
    assert client.instructions == INSTRUCTIONS
    text = INSTRUCTIONS
    positions = [text.index(name) for name in
                 ("kairos_search", "kairos_begin", "kairos_next", "kairos_attest")]
    assert positions == sorted(positions)
    assert len(text.splitlines()) <= 10


async def test_the_table_is_the_only_registry() -> None:
    assert len({t.name for t in TOOLS}) == len(TOOLS)
    assert all(callable(t.handler) for t in TOOLS)


async def test_runs_a_three_step_protocol_to_completion(client: Client, kairos: Kairos,
                                                        observed: Observed) -> None:
    run = await run_three(lambda tool, args: call(client, tool, args))
    first, second, third = run["responses"]
    assert first["must_obey"] is True and first["current_step"]["uri"] == run["steps"][0]
    assert "error_code" not in second and "error_code" not in third
    final = run["final"]
    report = kairos.verify_run(final["run_id"], Caller("default", SESSION))
    assert report["valid"] is True and report["proofs"] == 3
    # The run belongs to the process's session id.
    history = kairos.run_history(Caller("default", SESSION))
    assert history[0]["run_id"] == final["run_id"] and history[0]["caller"] == SESSION
    assert [t for t, _ in observed] == ["kairos_mint", "kairos_begin", "kairos_next",
                                        "kairos_next", "kairos_attest"]
    assert {o for _, o in observed} == {"ok"}


@pytest.mark.req("D3-12")
async def test_a_bad_uri_is_a_tool_error_with_the_structured_body(client: Client,
                                                                  observed: Observed) -> None:
    body = await error(client, "kairos_begin", {"uri": "kairos://mem/not-a-uuid"})
    assert body == {
        "error_code": "INVALID_URI",
        "message": "Invalid uri 'kairos://mem/not-a-uuid': expected a URI of the form "
                   "kairos://mem/<uuid>.",
        "field": "uri",
        "expected": "a URI of the form kairos://mem/<uuid>",
    }
    unknown = await error(client, "kairos_dump",
                          {"uri": "kairos://mem/00000000-0000-0000-0000-00000000dead"})
    assert unknown["error_code"] == "NOT_FOUND" and unknown["field"] == "uri"
    assert observed == [("kairos_begin", "error"), ("kairos_dump", "error")]


async def test_a_wrong_nonce_is_a_nonce_mismatch_response(client: Client) -> None:
    minted = await call(client, "kairos_mint", {"markdown_doc": THREE_STEPS})
    steps = [s["uri"] for s in minted["items"][0]["steps"]]
    begun = await call(client, "kairos_begin", {"uri": steps[0]})
    wrong = {**shell_ok(begun["challenge"]), "nonce": "0" * 32}
    refused = await call(client, "kairos_next", {"uri": steps[1], "solution": wrong})
    assert refused["error_code"] == "NONCE_MISMATCH"
    assert refused["must_obey"] is True and refused["retry_count"] == 1
    retried = await call(client, "kairos_next",
                         {"uri": steps[1], "solution": shell_ok(refused["challenge"])})
    assert "error_code" not in retried


@pytest.mark.req("D3-12")
@pytest.mark.parametrize(("tool", "args", "field", "code"), [
    ("kairos_next", {"uri": "kairos://mem/x"}, "solution", "INVALID_INPUT"),
    ("kairos_begin", {"uri": "kairos://mem/x", "url": "y"}, "url", "INVALID_INPUT"),
    ("kairos_begin", {"uri": 7}, "uri", "INVALID_INPUT"),
    ("kairos_attest", {"uri": "u", "outcome": "maybe", "message": "m"}, "outcome",
     "INVALID_INPUT"),
    ("kairos_mint", {"markdown_doc": ""}, "markdown_doc", "INVALID_INPUT"),
    ("kairos_search", {"query": "deploy", "limit": 0}, "limit", "INVALID_INPUT"),
    ("kairos_delete", {"uris": []}, "uris", "INVALID_INPUT"),
    ("read_entries", {"ids": ["x"], "fields": ["bogus"]}, "fields", "INVALID_INPUT"),
    ("write_entry", {"entity_type": "manual", "category": "nope", "title": "t"}, "category",
     "INVALID_INPUT"),
    ("no_such_tool", {}, "name", "NOT_FOUND"),
])
async def test_bad_arguments_name_the_field(client: Client, tool: str, args: dict[str, Any],
                                            field: str, code: str) -> None:
    body = await error(client, tool, args)
    assert body["error_code"] == code
    assert body["field"] == field
    assert body["message"]


async def test_an_unexpected_failure_is_a_generic_tool_error(
        client: Client, kairos: Kairos, observed: Observed,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr(kairos.service, "begin", broken)
    result = await client.call_tool("kairos_begin", {"uri": "kairos://mem/x"})
    assert result.is_error
    assert result.structured_content == INTERNAL_BODY
    assert "secret" not in result.content[0].text
    assert "Traceback" not in result.content[0].text
    assert "secret internal detail" in caplog.text  # logged on the server side
    assert observed == [("kairos_begin", "internal")]


async def test_entries_tools_use_the_process_session(client: Client, kairos: Kairos) -> None:
    categories = await call(client, "list_categories", {})
    code = categories["categories"][0]["code"]
    written = await call(client, "write_entry", {
        "entity_type": "experience", "category": code, "title": "Pin the database image",
        "playbook": "Pin the postgres image tag in compose files so upgrades are explicit.",
        "section": "useful"})
    entry_id = written["entity_id"]
    found = await call(client, "search_entries", {"query": "postgres image tag",
                                                  "min_score": 0.0})
    assert found["session_applied"] is True
    assert entry_id in [r["entity_id"] for r in found["results"]]
    read = await call(client, "read_entries", {"ids": [entry_id], "fields": ["preview"]})
    assert read["entries"][0]["entity_id"] == entry_id
    updated = await call(client, "update_entry", {"entity_id": entry_id,
                                                  "updates": {"title": "Pin image tags"}})
    assert updated["status"] == "updated"
    session = kairos.session_info(SESSION)
    assert entry_id in session["viewed_ids"]
    assert "postgres image tag" in session["last_queries"]


async def test_protocol_editing_tools(client: Client) -> None:
    minted = await call(client, "kairos_mint", {"markdown_doc": THREE_STEPS})
    steps = [s["uri"] for s in minted["items"][0]["steps"]]
    dumped = await call(client, "kairos_dump", {"uri": steps[0], "protocol": True})
    assert dumped["markdown_doc"].startswith("# Project Setup")
    changed = await call(client, "kairos_update", {
        "uris": [steps[1]], "updates": {"content": "Configure.\n\nPROOF OF WORK: comment "
                                                   "min_length=30"}})
    assert changed["total_updated"] == 1
    assert changed["results"][0]["challenge"]["type"] == "comment"
    found = await call(client, "kairos_search", {"query": "project setup"})
    assert found["choices"][0]["uri"] == steps[0]
    deleted = await call(client, "kairos_delete", {"uris": steps[0], "protocol": True})
    assert deleted["total_deleted"] == 1


def test_the_process_session_id_comes_from_the_environment() -> None:
    assert process_session_id({"KAIROS_SESSION_ID": "k1", "CHL_SESSION_ID": "c1"}) == "k1"
    assert process_session_id({"CHL_SESSION_ID": "c1"}) == "c1"
    assert process_session_id({"KAIROS_SESSION_ID": "bad id!", "CHL_SESSION_ID": "c1"}) == "c1"
    assert len(process_session_id({"KAIROS_SESSION_ID": "x" * 200})) == 32
    made = process_session_id({})
    assert len(made) == 32 and int(made, 16) >= 0
    assert process_session_id({}) != made


async def test_an_agent_search_then_a_proven_run_teaches_a_trigger(client: Client,
                                                                   kairos: Kairos) -> None:
    """Over MCP as an agent works: the front matter's triggers show in kairos_dump, and the
    search that led to a proven run becomes a learned trigger that kairos_dump lists."""
    doc = "---\ntriggers: [bootstrap a repository]\n---\n" + THREE_STEPS
    steps = [s["uri"] for s in (await call(client, "kairos_mint", {"markdown_doc": doc}))[
        "items"][0]["steps"]]
    dumped = await call(client, "kairos_dump", {"uri": steps[0], "protocol": True})
    assert dumped["triggers"] == ["bootstrap a repository"]
    assert dumped["markdown_doc"].startswith('---\ntriggers:\n  - "bootstrap a repository"')
    found = await call(client, "kairos_search", {"query": "start a fresh project folder"})
    assert found["choices"][0]["uri"] == steps[0]
    kairos.search_engine.learning.flush()
    response = await call(client, "kairos_begin", {"uri": steps[0]})
    for uri in steps[1:]:
        response = await call(client, "kairos_next", {
            "uri": uri, "solution": shell_ok(response["challenge"])})
    attested = await call(client, "kairos_attest", {
        "uri": steps[-1], "outcome": "success", "message": "done",
        "solution": shell_ok(response["challenge"])})
    assert attested["proven"] is True
    dumped = await call(client, "kairos_dump", {"uri": steps[0], "protocol": True})
    assert dumped["learned_triggers"] == ["start a fresh project folder"]
