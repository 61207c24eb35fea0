"""Runs made by the real engine, for the dataset tests: every accepted answer is a proof
record of a genuine chain, every refused one the engine's own refusal."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from kairos.domain import engine
from kairos.domain.challenge import from_issued, make_challenge
from kairos.domain.run_data import ProtocolData, RefusedAnswer, RunData, StepData

SHELL = make_challenge("shell", {"cmd": "pytest -q", "timeout_seconds": 30})
CONFIRM = make_challenge("user_input", {"prompt": "Deploy to staging?"})
BUILD = make_challenge("shell", {"cmd": "make dist", "timeout_seconds": 60})
MARKDOWN = """# Ship a release

## Run the tests
Run the whole suite.

PROOF OF WORK: timeout 30s pytest -q

## Approve the deployment
Ask the release owner.

PROOF OF WORK: user_input "Deploy to staging?"

## Build the packages
Build the wheel and the sdist.

PROOF OF WORK: timeout 60s make dist
"""


def _uri(n: int, tag: int = 0) -> str:
    return f"kairos://mem/00000000-0000-4000-8000-{tag:06d}{n:06d}"


def protocol(tag: int = 0, version: int = 1, markdown: str = MARKDOWN,
             title: str = "Ship a release") -> ProtocolData:
    steps = tuple(StepData(_uri(i, tag), label, body, c.to_dict()) for i, (label, body, c) in
                  enumerate([("Run the tests", "Run the whole suite.", SHELL),
                             ("Approve the deployment", "Ask the release owner.", CONFIRM),
                             ("Build the packages", "Build the wheel and the sdist.", BUILD)]))
    return ProtocolData(f"protocol-{tag}", title, version, markdown, steps)


def ok(step: int) -> dict[str, Any]:
    """An answer each step accepts."""
    answers: list[dict[str, Any]] = [
        {"exit_code": 0, "stdout": "42 passed", "stderr": "", "duration_seconds": 3.5},
        {"confirmation": "yes, go ahead", "timestamp": "2026-05-01T10:00:00Z"},
        {"exit_code": 0, "stdout": "dist/app-1.0.whl", "stderr": ""}]
    return answers[step]


def bad(step: int) -> dict[str, Any]:
    """An answer each step refuses."""
    answers: list[dict[str, Any]] = [
        {"exit_code": 1, "stdout": "2 failed, 40 passed", "stderr": "", "duration_seconds": 3},
        {"confirmation": "no, not today"},
        {"exit_code": 2, "stdout": "", "stderr": "make: *** No rule"}]
    return answers[step]


def _nonce(run_id: str, n: int) -> str:
    """Shaped like the server's (32 hex digits), the same for the same run every time."""
    return hashlib.sha256(f"{run_id}/{n}".encode()).hexdigest()[:32]


def play(run_id: str, bodies: list[dict[str, Any]], *, outcome: str | None,
         proto: ProtocolData | None = None, created_at: str = "2026-05-01T10:00:00+00:00",
         message: str | None = None, request: str | None = None,
         model: str | None = "model-a", keep_refused: bool = True) -> RunData:
    """Answer the pending challenge with each body in turn (the engine decides), then
    finish with ``outcome``."""
    proto = proto or protocol()
    views = [engine.StepView(s.uri, s.content, from_issued({**s.challenge}), s.label)
             for s in proto.steps]
    start = datetime.fromisoformat(created_at)
    state, _ = engine.begin(views, 0, run_id, _nonce(run_id, 0))
    proofs: list[dict[str, Any]] = []
    refusals: list[RefusedAnswer] = []
    for i, body in enumerate(bodies):
        assert state.challenge is not None, "every step is answered already"
        kind = state.challenge["type"]
        solution = {"type": kind, "nonce": state.challenge["nonce"],
                    "proof_hash": state.head, kind: body}
        stamp = (start + timedelta(seconds=20 * (i + 1))).isoformat()
        out = engine.answer(views, state, solution, sent_uri=proto.steps[0].uri,
                            new_nonce=_nonce(run_id, i + 1), now=stamp)
        if isinstance(out, engine.Accepted):
            proofs.append(out.record)
        else:
            refusals.append(RefusedAnswer(state.step_index, out.refusal.code,
                                          solution if keep_refused else None, stamp))
        state = out.state
    proven = state.challenge is None
    return RunData(run_id=run_id, space="team", caller=f"agent-{run_id}",
                   status=engine.FINISHED if outcome else state.status, outcome=outcome,
                   proven=proven, created_at=created_at, updated_at=created_at,
                   protocol=proto, proofs=tuple(proofs), head=state.head, message=message,
                   quality_bonus=0.0, llm_model_id=model,
                   attested_step=state.step_index if outcome == "failure" else None,
                   request=request, refusals=tuple(refusals))


def proven_success(run_id: str = "win", **kw: Any) -> RunData:
    return play(run_id, [ok(0), ok(1), ok(2)], outcome="success", **kw)


def unproven_success(run_id: str = "maybe", **kw: Any) -> RunData:
    """Reached the last step (a success is recorded) but never proved it."""
    return play(run_id, [ok(0), ok(1)], outcome="success", **kw)


def failure_with_retries(run_id: str = "lose", **kw: Any) -> RunData:
    """Step 1 refused once then accepted; step 2 refused three times; gave up there."""
    kw.setdefault("message", "The release owner said no three times.")
    return play(run_id, [bad(0), ok(0), bad(1), bad(1), bad(1)], outcome="failure", **kw)


def with_time(run: RunData, created_at: str) -> RunData:
    return replace(run, created_at=created_at, updated_at=created_at)
