"""The execution engine: a pure state machine over one run.

Drivers load a run's state and its protocol's steps, call ``begin`` or ``answer`` with the
fresh nonce and the time, and store what comes back. Nothing here touches I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, Literal, get_args

from . import texts
from .canonical import KAIROS_JSON_1
from .challenge import (
    Challenge,
    Refusal,
    check_outcome,
    check_relevance,
    check_shape,
    from_issued,
)
from .doctext import step_prose
from .proof import chain_hash
from .responses import CurrentStep, StepResult

ACTIVE = "active"          # steps remain to be proven through kairos_next
COMPLETED = "completed"    # the last step is shown; kairos_attest may add its proof
FINISHED = "finished"      # kairos_attest recorded the outcome
ABANDONED = "abandoned"    # left idle past the expiry (service.expiry): no outcome, closed
IMPORTED = "imported"      # read from an export: history of another store, takes no answers
RunStatus = Literal["active", "completed", "finished", "abandoned", "imported"]
RUN_STATUSES: tuple[str, ...] = get_args(RunStatus)


@dataclass(frozen=True)
class StepView:
    uri: str
    content: str
    challenge: Challenge
    label: str = ""

    @cached_property
    def prose(self) -> str:
        """What the step asks for in words (``doctext.step_prose``), which a comment
        answering it is judged against; made once per view."""
        return step_prose(self.label, self.content)


@dataclass(frozen=True)
class RunState:
    """Everything a replica needs to continue a run; the driver persists it as one row."""

    run_id: str
    step_index: int                 # the step whose challenge is pending
    challenge: dict[str, Any] | None  # the pending challenge as issued (nonce, proof_hash)
    head: str                       # hash of the latest accepted proof, GENESIS at first
    retry_count: int = 0
    attempt: int = 1
    status: str = ACTIVE

    @property
    def nonce(self) -> str | None:
        return self.challenge["nonce"] if self.challenge else None


def issue(challenge: Challenge, nonce: str, proof_hash: str) -> dict[str, Any]:
    """The challenge shown to the agent: type, description, nonce, proof_hash, parameters."""
    return {
        "type": challenge.type,
        "description": challenge.description,
        "nonce": nonce,
        "proof_hash": proof_hash,
        challenge.type: dict(challenge.params),
    }


def step_response(
    step: StepView,
    challenge: dict[str, Any],
    next_action: str,
    *,
    must_obey: bool = True,
    message: str | None = None,
    error_code: str | None = None,
    retry_count: int | None = None,
    proof_hash: str | None = None,
) -> StepResult:
    current: CurrentStep = {"uri": step.uri, "content": step.content,
                            "mimeType": texts.MIME_MARKDOWN}
    body: StepResult
    if message is None:
        body = {"must_obey": must_obey, "current_step": current, "challenge": challenge,
                "next_action": next_action}
    else:  # the message before next_action, as the contract shows it
        body = {"must_obey": must_obey, "current_step": current, "challenge": challenge,
                "message": message, "next_action": next_action}
    if error_code is not None and retry_count is not None:
        body["error_code"] = error_code
        body["retry_count"] = retry_count
    if proof_hash is not None:
        body["proof_hash"] = proof_hash
    return body


def begin(steps: list[StepView], requested: int, run_id: str, nonce: str
          ) -> tuple[RunState, StepResult]:
    """Start a run at step 1, whichever step was asked for (contract §4)."""
    first = steps[0]
    challenge = issue(first.challenge, nonce, texts.GENESIS_HASH)
    single = len(steps) == 1
    state = RunState(run_id, 0, challenge, texts.GENESIS_HASH,
                     status=COMPLETED if single else ACTIVE)
    if single:
        message: str | None = texts.MSG_SINGLE_STEP
        action = texts.next_action_attest_single(first.uri)
    else:
        message = texts.MSG_REDIRECTED if requested != 0 else None
        action = texts.next_action_next(steps[1].uri)
    return state, step_response(first, challenge, action, message=message)


@dataclass(frozen=True)
class Accepted:
    state: RunState
    record: dict[str, Any]   # the proof record, including its proof_hash
    response: StepResult | None  # the next step; None: the last step was proven


@dataclass(frozen=True)
class Refused:
    state: RunState
    refusal: Refusal
    response: StepResult


def answer(
    steps: list[StepView],
    state: RunState,
    solution: Any,
    *,
    sent_uri: str,
    new_nonce: str,
    now: str,
    tool: str = "kairos_next",
    rule: str = KAIROS_JSON_1,
) -> Accepted | Refused:
    """Judge an answer to the pending challenge; an accepted one's proof is hashed under
    the run's chain ``rule``."""
    if state.challenge is None:
        raise ValueError("run has no pending challenge")
    index, pending = state.step_index, from_issued(state.challenge)
    refusal = (check_shape(pending, solution, state.challenge["nonce"], state.head)
               or check_outcome(pending, solution))
    if refusal is None and state.challenge["type"] == "comment":
        refusal = check_relevance(solution["comment"]["text"], steps[index].prose)
    if refusal is not None:
        retries = state.retry_count + 1
        step = steps[index]
        fresh = issue(pending, new_nonce, state.head)
        new_state = replace(state, challenge=fresh, retry_count=retries,
                            attempt=state.attempt + 1)
        if retries >= texts.MAX_RETRIES:
            response = step_response(step, fresh, texts.next_action_max_retries(step.uri),
                                     must_obey=False, message=texts.MSG_MAX_RETRIES,
                                     error_code=texts.MAX_RETRIES_EXCEEDED,
                                     retry_count=retries)
        else:
            response = step_response(step, fresh, texts.next_action_retry(sent_uri, tool),
                                     message=refusal.message, error_code=refusal.code,
                                     retry_count=retries)
        return Refused(new_state, refusal, response)

    record: dict[str, Any] = {
        "run_id": state.run_id,
        "step_uri": steps[index].uri,
        "step_index": index,
        "challenge": state.challenge,
        "nonce": state.challenge["nonce"],
        "solution": solution,
        "previous_hash": state.head,
        "time": now,
    }
    proof_hash = chain_hash(state.head, record, rule)
    record["proof_hash"] = proof_hash
    shown = index + 1
    if shown >= len(steps):  # the last step's proof came through kairos_attest
        new_state = replace(state, step_index=shown, challenge=None, head=proof_hash,
                            retry_count=0, attempt=1, status=FINISHED)
        return Accepted(new_state, record, None)
    step = steps[shown]
    fresh = issue(step.challenge, new_nonce, proof_hash)
    last = shown == len(steps) - 1
    new_state = RunState(state.run_id, shown, fresh, proof_hash,
                         status=COMPLETED if last else ACTIVE)
    message, action = ((texts.MSG_COMPLETED, texts.next_action_run_complete(step.uri)) if last
                       else (None, texts.next_action_next(steps[shown + 1].uri)))
    response = step_response(step, fresh, action, message=message, proof_hash=proof_hash)
    return Accepted(new_state, record, response)
