"""Contract §2: every challenge form — the step markdown, the challenge shown, and the
success and failure solutions — driven through the service."""

from __future__ import annotations

from typing import Any

import pytest

from kairos.domain.texts import GENESIS_HASH
from kairos.service import Kairos

from .seedkit import NONCE_RE, assert_no_forbidden

STEPS = {
    "shell": ("## Step 1: Setup\n\nCreate the project directory.\n\n"
              "PROOF OF WORK: timeout 30s mkdir -p src\n"),
    "mcp": ("## Step 2: Call API\n\nInvoke the external MCP tool.\n\n"
            "PROOF OF WORK: mcp my_tool_name\n"),
    "user_input": ("## Step 3: Confirm\n\nGet user approval before proceeding.\n\n"
                   "PROOF OF WORK: user_input \"Approve deployment?\"\n"),
    "comment": ("## Step 4: Review\n\nSummarize what you learned from this step.\n\n"
                "PROOF OF WORK: comment min_length=20\n"),
}
CHALLENGES = {
    "shell": {"type": "shell", "description": "Execute shell command: mkdir -p src",
              "shell": {"cmd": "mkdir -p src", "timeout_seconds": 30}},
    "mcp": {"type": "mcp", "description": "Call MCP tool: my_tool_name",
            "mcp": {"tool_name": "my_tool_name", "expected_result": None}},
    "user_input": {"type": "user_input", "description": "User confirmation: Approve deployment?",
                   "user_input": {"prompt": "Approve deployment?"}},
    "comment": {"type": "comment",
                "description": "Provide a verification comment (minimum 20 characters)",
                "comment": {"min_length": 20}},
}
SUCCESS = {
    "shell": {"exit_code": 0, "stdout": "", "stderr": "", "duration_seconds": 0.1},
    "mcp": {"tool_name": "my_tool_name", "arguments": {"param": "value"},
            "result": {"ok": True}, "success": True},
    "user_input": {"confirmation": "yes", "timestamp": "2025-02-13T12:00:00.000Z"},
    "comment": {"text": "I reviewed the security checklist and verified all three items."},
}
FAILURE = {
    "shell": ({"exit_code": 1, "stdout": "", "stderr": "mkdir: permission denied",
               "duration_seconds": 0.05}, "COMMAND_FAILED"),
    "mcp": ({"tool_name": "my_tool_name", "arguments": {}, "result": {"error": "timeout"},
             "success": False}, "COMMAND_FAILED"),
    "user_input": ({"confirmation": "no", "timestamp": "2025-02-13T12:00:00.000Z"},
                   "USER_DECLINED"),
    "comment": ({"text": "too short"}, "COMMENT_TOO_SHORT"),
}


def _protocol(kairos: Kairos, kind: str) -> list[str]:
    doc = f"# Seed 001 {kind}\n\n{STEPS[kind]}\n## Wrap up\n\nDone.\n"
    return [s["uri"] for s in kairos.mint(doc)["items"][0]["steps"]]


def _solution(kind: str, challenge: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "nonce": challenge["nonce"], "proof_hash": challenge["proof_hash"],
            kind: body}


@pytest.mark.req("D3-4", "D3-5", "S004-3")
@pytest.mark.parametrize("kind", list(STEPS))
def test_markdown_declares_the_challenge_shown(kairos: Kairos, kind: str) -> None:
    uris = _protocol(kairos, kind)
    response = kairos.begin(uris[0])
    challenge = dict(response["challenge"])
    assert NONCE_RE.match(challenge.pop("nonce"))
    assert challenge.pop("proof_hash") == GENESIS_HASH
    assert challenge == CHALLENGES[kind]
    assert response["current_step"]["content"] == STEPS[kind].split("\n\n", 1)[1].strip()
    assert_no_forbidden(response)


@pytest.mark.req("D3-1", "S003-5")
@pytest.mark.parametrize("kind", list(STEPS))
def test_success_solution_is_accepted(kairos: Kairos, kind: str) -> None:
    uris = _protocol(kairos, kind)
    challenge = kairos.begin(uris[0])["challenge"]
    response = kairos.next(uris[1], _solution(kind, challenge, SUCCESS[kind]))
    assert "error_code" not in response
    assert response["current_step"]["uri"] == uris[1]
    assert response["message"] == "Protocol completed. No further steps."


@pytest.mark.req("S003-6", "D3-6")
@pytest.mark.parametrize("kind", list(STEPS))
def test_failure_solution_is_refused(kairos: Kairos, kind: str) -> None:
    uris = _protocol(kairos, kind)
    challenge = kairos.begin(uris[0])["challenge"]
    body, code = FAILURE[kind]
    response = kairos.next(uris[1], _solution(kind, challenge, body))
    assert (response["error_code"], response["retry_count"], response["must_obey"]) == (
        code, 1, True)
    assert response["current_step"]["uri"] == uris[0]


@pytest.mark.parametrize("confirmation", ["yes", "Yes, go ahead", "approved", "OK", True])
def test_affirmative_confirmations(kairos: Kairos, confirmation: Any) -> None:
    uris = _protocol(kairos, "user_input")
    challenge = kairos.begin(uris[0])["challenge"]
    body = {"confirmation": confirmation}
    assert "error_code" not in kairos.next(uris[1], _solution("user_input", challenge, body))


@pytest.mark.parametrize("confirmation", ["no", "not now", "cancel", "", False])
def test_declined_confirmations(kairos: Kairos, confirmation: Any) -> None:
    uris = _protocol(kairos, "user_input")
    challenge = kairos.begin(uris[0])["challenge"]
    body = {"confirmation": confirmation}
    response = kairos.next(uris[1], _solution("user_input", challenge, body))
    assert response["error_code"] == "USER_DECLINED"


def test_mcp_tool_name_and_expected_result_are_checked(kairos: Kairos) -> None:
    doc = ('# Expect\n\n## Call\n\n```json\n{"challenge": {"type": "mcp", "mcp": '
           '{"tool_name": "t", "expected_result": {"ok": true}}}}\n```\n\n## End\n\nx\n')
    uris = [s["uri"] for s in kairos.mint(doc)["items"][0]["steps"]]
    challenge = kairos.begin(uris[0])["challenge"]
    wrong_tool = kairos.next(uris[1], _solution("mcp", challenge, {
        "tool_name": "other", "success": True, "result": {"ok": True}}))
    assert wrong_tool["error_code"] == "COMMAND_FAILED"
    wrong_result = kairos.next(uris[1], _solution("mcp", wrong_tool["challenge"], {
        "tool_name": "t", "success": True, "result": {"ok": False}}))
    assert wrong_result["error_code"] == "COMMAND_FAILED"
    good = kairos.next(uris[1], _solution("mcp", wrong_result["challenge"], {
        "tool_name": "t", "success": True, "result": {"ok": True}}))
    assert "error_code" not in good
