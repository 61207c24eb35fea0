"""Hand-written bad inputs over REST and MCP: each gets a structured error naming the
field — never a 500, never an internal error, never a half-written record."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from mcp import Client

from kairos.service import Kairos
from tests.hardening.conftest import tool
from tests.spec.seedkit import THREE_STEPS

pytestmark = pytest.mark.anyio
SURROGATE = "\ud800"
STEP = "kairos://mem/00000000-0000-0000-0000-00000000dead"
JSON_HEADERS = {"content-type": "application/json"}

# (method, path, body with a lone surrogate, the field the error must name)
SURROGATE_BODIES: list[tuple[str, str, dict[str, Any], str]] = [
    ("POST", "/api/v1/protocols", {"markdown_doc": f"# T{SURROGATE}\n\n## S\n\nx\n"},
     "markdown_doc"),
    ("POST", "/api/v1/protocols/search", {"query": f"deploy {SURROGATE}"}, "query"),
    ("POST", "/api/v1/search", {"query": SURROGATE}, "query"),
    ("POST", "/api/v1/entries", {"entity_type": "experience", "category": "general",
                                 "title": "t", "playbook": f"p{SURROGATE}"}, "playbook"),
    ("POST", "/api/v1/entries/read", {"ids": [SURROGATE]}, "ids[0]"),
    ("POST", "/api/v1/entries/update", {"entity_id": "x", "updates": {"title": SURROGATE}},
     "updates.title"),
    ("POST", "/api/v1/search/session/cited", {"session_id": "s1", "ids": ["a", SURROGATE]},
     "ids[1]"),
    ("POST", "/api/v1/runs/next", {"uri": STEP, "solution": {"type": "shell",
                                                             "nonce": SURROGATE}},
     "solution.nonce"),
    ("POST", "/api/v1/runs/next", {"uri": STEP, "solution": {
        "type": "shell", "nonce": "n", "proof_hash": "h",
        "shell": {"exit_code": 0, "stdout": f"ok {SURROGATE}"}}}, "solution.shell.stdout"),
    ("POST", "/api/v1/protocols/update", {"uris": [STEP], "markdown_doc": SURROGATE},
     "markdown_doc"),
    ("POST", "/api/v1/protocols/delete", {"uris": [SURROGATE]}, "uris[0]"),
    ("POST", "/api/v1/runs/attest", {"uri": STEP, "outcome": "success",
                                     "message": SURROGATE}, "message"),
    ("PATCH", "/api/v1/entries/x", {"title": SURROGATE}, "title"),
]


@pytest.mark.parametrize(("method", "path", "body", "field"), SURROGATE_BODIES)
async def test_a_lone_surrogate_is_a_422_naming_the_field(
        http: httpx2.AsyncClient, method: str, path: str, body: dict[str, Any],
        field: str) -> None:
    response = await http.request(method, path, content=json.dumps(body),
                                  headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text
    error = response.json()
    assert error["error_code"] == "INVALID_INPUT"
    assert error["field"] == field
    assert "surrogate" in error["message"]


async def test_a_surrogate_pair_is_text(http: httpx2.AsyncClient) -> None:
    doc = "# Ship it \U0001f680\n\n## Build\n\nPROOF OF WORK: make\n"
    response = await http.post("/api/v1/protocols", content=json.dumps({"markdown_doc": doc}),
                               headers={"content-type": "application/json"})
    assert response.status_code == 201, response.text
    assert response.json()["items"][0]["chain_label"] == "Ship it \U0001f680"


@pytest.mark.parametrize(("name", "args", "field"), [
    ("kairos_mint", {"markdown_doc": f"# T\n\n## S{SURROGATE}\n"}, "markdown_doc"),
    ("kairos_search", {"query": SURROGATE}, "query"),
    ("search_entries", {"query": SURROGATE}, "query"),
    ("write_entry", {"entity_type": "manual", "category": "general", "title": SURROGATE},
     "title"),
    ("kairos_next", {"uri": STEP, "solution": {"type": "comment", "nonce": SURROGATE}},
     "solution.nonce"),
    ("kairos_delete", {"uris": [STEP, SURROGATE]}, "uris[1]"),
])
async def test_a_lone_surrogate_over_mcp_is_a_tool_error_naming_the_field(
        mcp: Client, name: str, args: dict[str, Any], field: str) -> None:
    is_error, body = await tool(mcp, name, args)
    assert is_error
    assert body["error_code"] == "INVALID_INPUT" and body["field"] == field


async def test_the_three_step_seed_still_mints(http: httpx2.AsyncClient,
                                               kairos: Kairos) -> None:
    response = await http.post("/api/v1/protocols", json={"markdown_doc": THREE_STEPS})
    assert response.status_code == 201, response.text


# --- item: a challenge block nested thousands deep --------------------------------------

DEEP_BLOCK = ("# Deep\n\n## S\n\n```json\n{\"challenge\": " + "[" * 5000 + "]" * 5000
              + "}\n```\n")


async def test_a_deeply_nested_challenge_block_is_refused_with_its_line(
        http: httpx2.AsyncClient, mcp: Client) -> None:
    response = await http.post("/api/v1/protocols", json={"markdown_doc": DEEP_BLOCK})
    assert response.status_code == 422, response.text
    error = response.json()
    assert (error["error_code"], error["field"], error["line"]) == (
        "INVALID_CHALLENGE_JSON", "challenge", 6)
    is_error, body = await tool(mcp, "kairos_mint", {"markdown_doc": DEEP_BLOCK})
    assert is_error and body["error_code"] == "INVALID_CHALLENGE_JSON"


@pytest.mark.parametrize("depth", [70, 5000])
async def test_a_deeply_nested_request_body_is_a_422_naming_the_body(
        http: httpx2.AsyncClient, depth: int) -> None:
    raw = '{"query": "x", "filters": ' + '{"a": ' * depth + "1" + "}" * depth + "}"
    response = await http.post("/api/v1/search", content=raw,
                               headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.json()["field"] == "body"
    assert "levels deep" in response.json()["message"]


# --- NUL characters and lengths the database cannot hold -------------------------------

NUL_BODIES: list[tuple[str, dict[str, Any], str]] = [
    ("/api/v1/protocols", {"markdown_doc": "# T\n\n## S\n\nnul \x00 here\n"}, "markdown_doc"),
    ("/api/v1/entries", {"entity_type": "manual", "category": "general", "title": "t",
                         "content": "a\x00b"}, "content"),
    ("/api/v1/runs/attest", {"uri": STEP, "outcome": "failure", "message": "m\x00"},
     "message"),
]


@pytest.mark.parametrize(("path", "body", "field"), NUL_BODIES)
async def test_a_nul_character_is_a_422_naming_the_field(
        http: httpx2.AsyncClient, mcp: Client, path: str, body: dict[str, Any],
        field: str) -> None:
    response = await http.post(path, json=body)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field and "NUL" in response.json()["message"]
    name = {"/api/v1/protocols": "kairos_mint", "/api/v1/entries": "write_entry",
            "/api/v1/runs/attest": "kairos_attest"}[path]
    is_error, error = await tool(mcp, name, {**body, "entity_type": "manual"}
                                 if name == "write_entry" else body)
    assert is_error and error["field"] == field


async def _begun(http: httpx2.AsyncClient) -> list[str]:
    minted = await http.post("/api/v1/protocols", json={"markdown_doc": THREE_STEPS})
    steps = [s["uri"] for s in minted.json()["items"][0]["steps"]]
    assert (await http.post("/api/v1/runs/begin", json={"uri": steps[0]})).status_code == 200
    return steps


@pytest.mark.parametrize(("path", "extra"), [
    ("/api/v1/protocols", {"markdown_doc": "# Model\n\n## S\n\nx\n"}),
    ("/api/v1/runs/attest", {"outcome": "failure", "message": "stopped"}),
])
async def test_a_long_llm_model_id_is_refused_before_the_database(
        http: httpx2.AsyncClient, mcp: Client, path: str, extra: dict[str, Any]) -> None:
    steps = await _begun(http)
    body = {**extra, "llm_model_id": "m" * 200}
    if path.endswith("attest"):
        body["uri"] = steps[0]
    response = await http.post(path, json=body)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == "llm_model_id"
    is_error, error = await tool(mcp, "kairos_mint" if "markdown_doc" in body
                                 else "kairos_attest", body)
    assert is_error and error["field"] == "llm_model_id"


async def test_attest_message_and_entry_title_have_limits(
        http: httpx2.AsyncClient, kairos: Kairos) -> None:
    steps = await _begun(http)
    long_message = await http.post("/api/v1/runs/attest", json={
        "uri": steps[0], "outcome": "failure", "message": "m" * 10_001})
    assert long_message.status_code == 422
    assert long_message.json()["field"] == "message"
    huge = await http.post("/api/v1/runs/attest", json={
        "uri": steps[0], "outcome": "failure", "message": "m" * 5_000_000})
    assert huge.status_code == 413
    assert huge.json()["error_code"] == "REQUEST_TOO_LARGE"
    title = await http.post("/api/v1/entries", json={
        "entity_type": "manual", "category": "general", "title": "t" * 100_000,
        "content": "c"})
    assert title.status_code == 422 and title.json()["field"] == "title"
    protocol = await http.post("/api/v1/protocols",
                               json={"markdown_doc": "# " + "t" * 100_000 + "\n\n## S\n\nx\n"})
    assert protocol.status_code == 422 and protocol.json()["line"] == 1
    runs = (await http.get("/api/v1/runs")).json()["items"]
    assert [r["outcome"] for r in runs] == [None]  # nothing was attested


# --- NUL in a path or a query string ------------------------------------------------------

@pytest.mark.parametrize(("method", "url", "field"), [
    ("GET", "/api/v1/runs/%00/verify", "path"),
    ("GET", "/api/v1/runs/a%00/proofs", "path"),
    ("PATCH", "/api/v1/entries/%00", "path"),
    ("GET", "/api/v1/protocols/%00", "path"),
    ("GET", "/api/v1/search/session?session_id=%00", "query"),
])
async def test_a_nul_in_the_path_or_query_is_a_422(http: httpx2.AsyncClient, method: str,
                                                   url: str, field: str) -> None:
    response = await http.request(method, url, json={"title": "x"} if method == "PATCH"
                                  else None)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field


def test_ids_with_a_nul_name_nothing_in_the_service(kairos: Kairos) -> None:
    from kairos.domain.errors import KairosError

    for call in (lambda: kairos.verify_run("run\x00"), lambda: kairos.proof_log("\x00"),
                 lambda: kairos.update_entry({"entity_id": "e\x00", "updates": {"title": "t"}})):
        with pytest.raises(KairosError) as info:
            call()
        assert info.value.status == 404


# --- numbers no store or proof can hold ---------------------------------------------------

async def test_non_finite_and_overlong_numbers_are_422s(http: httpx2.AsyncClient) -> None:
    steps = await _begun(http)
    overflow = json.dumps({"uri": steps[1], "solution": {
        "type": "shell", "nonce": "n", "proof_hash": "h",
        "shell": {"exit_code": 0, "duration_seconds": 1.5}}}).replace("1.5", "1e999")
    response = await http.post("/api/v1/runs/next", content=overflow, headers=JSON_HEADERS)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == "solution.shell.duration_seconds"
    digits = '{"query": "x", "limit": 1' + "0" * 5000 + "}"
    response = await http.post("/api/v1/protocols/search", content=digits,
                               headers=JSON_HEADERS)
    assert response.status_code == 422 and response.json()["field"] == "body"
    nan = json.dumps({"uri": steps[0], "outcome": "success", "message": "m",
                      "quality_bonus": float("nan")})
    response = await http.post("/api/v1/runs/attest", content=nan, headers=JSON_HEADERS)
    assert response.status_code == 422 and response.json()["field"] == "quality_bonus"


def test_the_value_check_names_the_first_bad_field() -> None:
    from kairos.domain import limits
    from kairos.domain.errors import ValidationError

    for value, field in ((
            {"solution": {"shell": {"duration_seconds": float("inf")}}},
            "solution.shell.duration_seconds"),
            ({"uris": ["ok", "bad\x00"]}, "uris[1]"),
            ({"a": [[[[1]]]]}, "a[0][0]"),
            ({"k\ud800": 1}, "body")):
        with pytest.raises(ValidationError) as info:
            limits.check_value(value, 3)
        assert info.value.field == field
    limits.check_value({"fine": ["text \U0001f680", 1.5, None, True]}, 3)
