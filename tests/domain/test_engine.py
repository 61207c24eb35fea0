"""The engine stepped directly: no store, no service."""

from __future__ import annotations

import pytest

from kairos.domain import engine
from kairos.domain.challenge import default_challenge, make_challenge
from kairos.domain.proof import chain_hash, verify_chain
from kairos.domain.texts import GENESIS_HASH

SHELL = make_challenge("shell", {"cmd": "true", "timeout_seconds": 5})
STEPS = [engine.StepView(f"kairos://mem/{i}", f"step {i}", c)
         for i, c in enumerate([SHELL, SHELL, default_challenge()])]


def _answer(state: engine.RunState, **shell: object) -> dict:
    assert state.challenge is not None
    return {"type": "shell", "nonce": state.challenge["nonce"], "proof_hash": state.head,
            "shell": {"exit_code": 0, **shell}}


def test_a_run_from_begin_to_attest() -> None:
    state, response = engine.begin(STEPS, 0, "run-1", "n1")
    assert response["challenge"]["proof_hash"] == GENESIS_HASH and state.nonce == "n1"
    out = engine.answer(STEPS, state, _answer(state), sent_uri=STEPS[1].uri, new_nonce="n2",
                        now="t1")
    assert isinstance(out, engine.Accepted)
    assert out.record["proof_hash"] == chain_hash(GENESIS_HASH, out.record)
    assert out.state.step_index == 1 and out.state.status == engine.ACTIVE
    out2 = engine.answer(STEPS, out.state, _answer(out.state), sent_uri=STEPS[2].uri,
                         new_nonce="n3", now="t2")
    assert isinstance(out2, engine.Accepted) and out2.state.status == engine.COMPLETED
    assert out2.response["message"] == "Protocol completed. No further steps."
    last = {"type": "comment", "nonce": "n3", "proof_hash": out2.state.head,
            "comment": {"text": "checked app.log twice: no errors since 09:00"}}
    out3 = engine.answer(STEPS, out2.state, last, sent_uri=STEPS[2].uri, new_nonce="n4",
                         now="t3", tool="kairos_attest")
    assert isinstance(out3, engine.Accepted) and out3.state.status == engine.FINISHED
    head, count, broken = verify_chain([out.record, out2.record, out3.record])
    assert (head, count, broken) == (out3.state.head, 3, None)


def test_refusals_count_and_escalate() -> None:
    state, _ = engine.begin(STEPS, 0, "run-1", "n1")
    seen = []
    for i in range(4):
        out = engine.answer(STEPS, state, _answer(state, exit_code=1), sent_uri=STEPS[1].uri,
                            new_nonce=f"r{i}", now="t")
        assert isinstance(out, engine.Refused)
        state = out.state
        seen.append((out.response["error_code"], out.response["retry_count"],
                     out.response["must_obey"], state.nonce))
    assert seen == [("COMMAND_FAILED", 1, True, "r0"), ("COMMAND_FAILED", 2, True, "r1"),
                    ("MAX_RETRIES_EXCEEDED", 3, False, "r2"),
                    ("MAX_RETRIES_EXCEEDED", 4, False, "r3")]
    out = engine.answer(STEPS, state, _answer(state), sent_uri=STEPS[1].uri, new_nonce="ok",
                        now="t")
    assert isinstance(out, engine.Accepted) and out.state.retry_count == 0


@pytest.mark.parametrize(("text", "refused"), [
    ("Step completed successfully as instructed.", True),
    ("Compiled step c with gcc 12; 0 warnings.", False),
])
def test_a_comment_must_report_its_step(text: str, refused: bool) -> None:
    steps = [engine.StepView("u0", "c", default_challenge(), "Compile"), STEPS[1]]
    state, _ = engine.begin(steps, 0, "r", "n")
    answer = {"type": "comment", "nonce": "n", "proof_hash": GENESIS_HASH,
              "comment": {"text": text}}
    out = engine.answer(steps, state, answer, sent_uri="u1", new_nonce="m", now="t")
    if refused:
        assert isinstance(out, engine.Refused)
        assert out.refusal.code == "COMMENT_IRRELEVANT"
    else:
        assert isinstance(out, engine.Accepted)


def test_chain_breaks_are_located() -> None:
    state, _ = engine.begin(STEPS, 0, "run-1", "n1")
    a = engine.answer(STEPS, state, _answer(state), sent_uri="x", new_nonce="n2", now="t")
    assert isinstance(a, engine.Accepted)
    b = engine.answer(STEPS, a.state, _answer(a.state), sent_uri="y", new_nonce="n3", now="t")
    assert isinstance(b, engine.Accepted)
    swapped = verify_chain([b.record, a.record])
    assert swapped[2] is not None and swapped[2].index == 0
    forged = dict(b.record, time="later")
    assert verify_chain([a.record, forged])[2].index == 1  # type: ignore[union-attr]
