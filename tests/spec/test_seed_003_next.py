"""Contract §4: kairos_next — continue, completed, recoverable error, max retries."""

from __future__ import annotations

import pytest

from kairos.domain.proof import canonical_json
from kairos.domain.texts import GENESIS_HASH
from kairos.service import Caller, Kairos

from .seedkit import AAA, BBB, CCC, assert_no_forbidden, assert_seed, mint_three, shell_ok

STEP2_CONTENT = (
    "Set up configuration files.\n\n```json\n{\"challenge\":{\"type\":\"shell\",\"shell\":"
    "{\"cmd\":\"echo config > project/config.json\",\"timeout_seconds\":5},\"required\":true}}"
    "\n```"
)
STEP3_CONTENT = (
    "Check that everything works.\n\n```json\n{\"challenge\":{\"type\":\"shell\",\"shell\":"
    "{\"cmd\":\"test -f project/config.json\",\"timeout_seconds\":5},\"required\":true}}\n```"
)
STEP2_CHALLENGE = {
    "type": "shell",
    "description": "Execute shell command: echo config > project/config.json",
    "shell": {"cmd": "echo config > project/config.json", "timeout_seconds": 5},
}
STEP1_CHALLENGE = {
    "type": "shell",
    "description": "Execute shell command: mkdir -p src",
    "shell": {"cmd": "mkdir -p src", "timeout_seconds": 30},
}
STEP1_CONTENT = (
    "Create the project directory structure.\n\n```json\n{\"challenge\":{\"type\":\"shell\","
    "\"shell\":{\"cmd\":\"mkdir -p src\",\"timeout_seconds\":30},\"required\":true}}\n```"
)


@pytest.mark.req("S003-1", "S003-2", "S003-3", "S003-4", "S003-5", "S003-7", "D3-1", "D4-3")
def test_scenario_1_continue(kairos: Kairos) -> None:
    steps, uri_map = mint_three(kairos)
    begun = kairos.begin(steps[0])
    response = kairos.next(steps[1], shell_ok(begun["challenge"]))
    assert_seed(response, {
        "must_obey": True,
        "current_step": {"uri": BBB, "content": STEP2_CONTENT, "mimeType": "text/markdown"},
        "challenge": dict(STEP2_CHALLENGE),
        "next_action": f"call kairos_next with {CCC} and solution matching challenge",
        "proof_hash": "7d2f8e3a1b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0",
    }, uri_map)
    # The hash to echo next is the hash of the proof just stored.
    assert response["challenge"]["proof_hash"] == response["proof_hash"] != GENESIS_HASH
    assert response["challenge"]["nonce"] != begun["challenge"]["nonce"]


@pytest.mark.req("S003-1", "S003-5", "S003-7", "D3-2", "D3-4", "D4-3")
def test_scenario_2_completed(kairos: Kairos) -> None:
    steps, uri_map = mint_three(kairos)
    first = kairos.begin(steps[0])
    second = kairos.next(steps[1], shell_ok(first["challenge"]))
    response = kairos.next(steps[2], shell_ok(second["challenge"], duration_seconds=0.2))
    # Contract R4: the last step shows the shell challenge it declares (the seed's
    # comment challenge there is a documented error).
    assert_seed(response, {
        "must_obey": True,
        "current_step": {"uri": CCC, "content": STEP3_CONTENT, "mimeType": "text/markdown"},
        "challenge": {
            "type": "shell",
            "description": "Execute shell command: test -f project/config.json",
            "shell": {"cmd": "test -f project/config.json", "timeout_seconds": 5},
        },
        "message": "Protocol completed. No further steps.",
        "next_action": f"Run complete. Optionally call kairos_attest with {CCC} to override "
                       "outcome or add a message.",
        "proof_hash": "9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0",
    }, uri_map)
    assert response["proof_hash"] != second["proof_hash"]
    # The last step's challenge is answered through kairos_attest and joins the chain.
    done = kairos.attest(steps[2], "success", "All 3 steps completed.",
                         solution=shell_ok(response["challenge"]))
    assert done["outcome"] == "success" and done["proofs"] == 3
    assert kairos.verify_run(done["run_id"])["valid"] is True


@pytest.mark.req("S003-1", "S003-6", "S003-7", "D3-5", "D3-11", "D4-5")
def test_scenario_3a_wrong_nonce_is_recoverable(kairos: Kairos) -> None:
    steps, uri_map = mint_three(kairos)
    begun = kairos.begin(steps[0])
    response = kairos.next(steps[1], {
        "type": "shell", "nonce": "wrong-nonce-value", "proof_hash": GENESIS_HASH,
        "shell": {"exit_code": 0}})
    # Contract R11: the refused step (step 1) is shown with a fresh challenge.
    assert_seed(response, {
        "must_obey": True,
        "current_step": {"uri": AAA, "content": STEP1_CONTENT, "mimeType": "text/markdown"},
        "challenge": {**STEP1_CHALLENGE, "proof_hash": GENESIS_HASH},
        "message": "Nonce mismatch. Use the nonce from this response's challenge.",
        "next_action": f"retry kairos_next with {BBB} -- use nonce and proof_hash from THIS "
                       "response's challenge",
        "error_code": "NONCE_MISMATCH",
        "retry_count": 1,
    }, uri_map)
    assert response["challenge"]["proof_hash"] == GENESIS_HASH
    assert response["challenge"]["nonce"] != begun["challenge"]["nonce"]
    assert "proof_hash" not in response  # nothing was stored


@pytest.mark.req("S003-1", "S003-4", "S003-6", "D3-6", "D3-11")
def test_scenario_3b_max_retries(kairos: Kairos) -> None:
    steps, uri_map = mint_three(kairos)
    challenge = kairos.begin(steps[0])["challenge"]
    codes = []
    for _ in range(3):
        response = kairos.next(steps[1], shell_ok(challenge, exit_code=1,
                                                  stderr="mkdir: permission denied"))
        codes.append((response["error_code"], response["retry_count"], response["must_obey"]))
        challenge = response["challenge"]
    assert codes[:2] == [("COMMAND_FAILED", 1, True), ("COMMAND_FAILED", 2, True)]
    assert_seed(response, {
        "must_obey": False,
        "current_step": {"uri": AAA, "content": STEP1_CONTENT, "mimeType": "text/markdown"},
        "challenge": {**STEP1_CHALLENGE, "proof_hash": GENESIS_HASH},
        "message": "Step failed 3 times. Use your judgment to recover.",
        "next_action": f"Options: (1) call kairos_update with {AAA} to fix the step for future "
                       f"executions (2) call kairos_attest with {AAA} and outcome failure to "
                       "abort (3) ask the user for help",
        "error_code": "MAX_RETRIES_EXCEEDED",
        "retry_count": 3,
    }, uri_map)
    # A correct answer after that is still accepted, and resets the count.
    accepted = kairos.next(steps[1], shell_ok(response["challenge"]))
    assert accepted["must_obey"] is True and "error_code" not in accepted
    failed = kairos.next(steps[2], shell_ok(accepted["challenge"], exit_code=2))
    assert failed["retry_count"] == 1


@pytest.mark.req("S003-6", "D3-6")
def test_fourth_failure_stays_max_retries(kairos: Kairos) -> None:
    steps, _ = mint_three(kairos)
    challenge = kairos.begin(steps[0])["challenge"]
    for expected in (1, 2, 3, 4):
        response = kairos.next(steps[1], shell_ok(challenge, exit_code=1))
        challenge = response["challenge"]
        assert response["retry_count"] == expected
    assert response["error_code"] == "MAX_RETRIES_EXCEEDED" and response["must_obey"] is False


@pytest.mark.req("S003-6", "S003-4", "S003-2", "S003-3", "D3-11", "D3-12")
@pytest.mark.parametrize(("mutate", "code", "message"), [
    (lambda s: s | {"proof_hash": "0" * 64}, "PROOF_HASH_MISMATCH",
     "Proof hash mismatch. Use the proof_hash from this response's challenge."),
    (lambda s: s | {"type": "comment"}, "TYPE_MISMATCH",
     "Solution type 'comment' does not match challenge type 'shell'."),
    (lambda s: {k: v for k, v in s.items() if k != "shell"}, "MISSING_FIELD",
     "Missing required field: solution.shell (object)."),
    (lambda s: s | {"shell": {"stdout": ""}}, "MISSING_FIELD",
     "Missing required field: solution.shell.exit_code (integer)."),
    (lambda s: s | {"shell": {"exit_code": "0"}}, "MISSING_FIELD",
     "Missing required field: solution.shell.exit_code (integer)."),
    (lambda s: s | {"shell": {"exit_code": 127}}, "COMMAND_FAILED",
     "Command failed with exit code 127."),
    (lambda s: {k: v for k, v in s.items() if k != "nonce"}, "MISSING_FIELD",
     "Missing required field: solution.nonce (string from the challenge)."),
    (lambda s: "not an object", "MISSING_FIELD",
     "Missing required field: solution (an object with type, nonce, proof_hash and the "
     "challenge's fields)."),
])
def test_every_shell_error_code(kairos: Kairos, mutate, code: str, message: str) -> None:
    steps, _ = mint_three(kairos)
    challenge = kairos.begin(steps[0])["challenge"]
    response = kairos.next(steps[1], mutate(shell_ok(challenge)))
    assert (response["error_code"], response["message"], response["retry_count"]) == (
        code, message, 1)
    assert response["must_obey"] is True
    assert response["current_step"]["uri"] == steps[0]
    assert response["next_action"] == (
        f"retry kairos_next with {steps[1]} -- use nonce and proof_hash from THIS response's "
        "challenge")
    assert set(response["current_step"]) == {"uri", "content", "mimeType"}
    assert {"type", "description", "nonce", "proof_hash"} <= set(response["challenge"])
    assert_no_forbidden(response)


@pytest.mark.req("D4-2")
def test_proof_hash_is_recomputable_offline(kairos: Kairos) -> None:
    import hashlib

    steps, _ = mint_three(kairos)
    first = kairos.begin(steps[0])
    second = kairos.next(steps[1], shell_ok(first["challenge"]))
    log = kairos.proof_log(kairos.run_history(Caller())[0]["run_id"])["proofs"]
    record = {k: v for k, v in log[0].items() if k != "proof_hash"}
    expected = hashlib.sha256(
        (GENESIS_HASH + canonical_json(record)).encode("utf-8")).hexdigest()
    assert expected == second["proof_hash"] == log[0]["proof_hash"]
    assert record["previous_hash"] == GENESIS_HASH
    assert record["challenge"] == first["challenge"]
    assert set(record) == {"run_id", "step_uri", "step_index", "challenge", "nonce",
                           "solution", "previous_hash", "time"}
