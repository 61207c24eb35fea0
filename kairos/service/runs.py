"""Use cases for execution: begin, next, attest, verify — thin drivers of the pure engine.

Every change of a run is a compare-and-swap on its version (``Repo.swap_run``): an answer
or an outcome is recorded once, and a writer that lost the swap does the whole call again
on the run as the winner left it — then read under its lock (``Repo.locked_run``), so
writers of one run take turns and each one's swap succeeds (SQLite has one writer: its
swaps never lose). The statistics a call changes are gathered in one ``Counts`` and
written last, in one lock order (``store.counts``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, TypeVar

from ..domain import engine, errors, limits
from ..domain.caller import Caller
from ..domain.canonical import NEW_RUN_RULE
from ..domain.engine import RunState
from ..domain.errors import ConflictError, KairosError, NotFoundError, ValidationError
from ..domain.limits import Limits
from ..domain.requests import Attest
from ..domain.responses import AttestResult, Outcome, StepResult
from ..domain.uris import new_id, to_uri
from ..store.counts import Counts
from ..store.db import Store
from ..store.repo import Repo
from .clock import new_nonce, now
from .protocols import ProtocolService, RunContext, RunSteps
from .reads import own_run

_SWAP_ATTEMPTS = 5
_COUNTERS = {"success": "successes", "failure": "failures"}
T = TypeVar("T")

#: A run as the run loop reads it: a row of ``runs`` (a mapping of its columns).
RunRow = Mapping[Any, Any]


class _Judged(NamedTuple):
    """An answer judged and written: what to show, the run as the swap wrote it, and how
    many proofs it holds now (None: refused, no proof added)."""

    response: StepResult | None  # None: the last step's answer, proven
    run: RunRow
    proofs: int | None


class _Outcome(NamedTuple):
    """An outcome to record, attested at step ``step_id``."""

    step_id: str
    outcome: Outcome
    message: str
    bonus: float
    model: str | None

    def values(self) -> dict[str, Any]:
        """The run's columns it sets."""
        return {"status": engine.FINISHED, "outcome": self.outcome,
                "outcome_model": self.model, "failed_step_id": self.failed_step,
                "message": self.message, "quality_bonus": self.bonus}

    @property
    def failed_step(self) -> str | None:
        return self.step_id if self.outcome == "failure" else None


class _Lost(Exception):
    """Another writer changed the run between its read and this call's swap."""


def _retrying(call: Callable[[bool], T], doing: str) -> T:
    """``call(False)``: on the run as read. While it loses the run to another writer (its
    transaction rolled back, nothing of it written), ``call(True)``: on the run read under
    its lock."""
    for attempt in range(_SWAP_ATTEMPTS):
        try:
            return call(attempt > 0)
        except _Lost:
            continue
    raise KairosError(errors.CONFLICT, f"The run changed while {doing}; retry the call.")


def _nonce_of(solution: Any) -> str | None:
    """The nonce a solution names, when it names one."""
    nonce = solution.get("nonce") if isinstance(solution, dict) else None
    return nonce if isinstance(nonce, str) and nonce else None


def _counted(run: RunRow) -> str | None:
    """What a run counts as in its protocol's successes and failures: a failure always,
    a success only when proven (every step's challenge answered); else nothing."""
    outcome = run["outcome"]
    if outcome == "failure" or (outcome == "success" and run["proven"]):
        return outcome
    return None


def _waits(run: RunRow, protocol_id: str, step_index: int | None,
           statuses: tuple[str, ...]) -> bool:
    """Whether ``run`` is a run of ``protocol_id`` in one of ``statuses``, waiting at
    ``step_index`` (any step: None)."""
    return (run["protocol_id"] == protocol_id and run["status"] in statuses
            and (step_index is None or run["step_index"] == step_index))


def _counts(run: RunRow) -> Counts:
    """The statistics a write to ``run`` changes: its protocol's and its version's."""
    return Counts(run["protocol_id"], run["space"], run["protocol_version"])


def _state_values(state: RunState, stamp: str) -> dict[str, Any]:
    return {"step_index": state.step_index, "challenge": state.challenge,
            "nonce": state.nonce, "head": state.head, "retry_count": state.retry_count,
            "attempt": state.attempt, "status": state.status, "updated_at": stamp}


class RunService:
    def __init__(self, store: Store, protocols: ProtocolService, limits: Limits) -> None:
        self.store = store
        self.protocols = protocols
        self.limits = limits

    # --- begin -----------------------------------------------------------------------------

    def begin(self, uri: str, caller: Caller) -> StepResult:
        with self.store.write() as repo:
            ctx = self.protocols.run_context(repo, uri, caller)
            run_id, nonce, stamp = new_id(), new_nonce(), now()
            state, response = engine.begin(ctx.steps.views, ctx.step["position"], run_id, nonce)
            repo.insert_run(id=run_id, space=caller.space, protocol_id=ctx.protocol_id,
                            caller=caller.id, created_at=stamp,
                            protocol_version=ctx.steps.version, chain_rule=NEW_RUN_RULE,
                            **_state_values(state, stamp))
            repo.insert_nonce(nonce, run_id, 0, 1, stamp)
            counts = Counts(ctx.protocol_id, caller.space, ctx.steps.version)
            counts.add(runs=1, last_run_at=stamp)
            counts.apply(repo.conn)
        return response

    # --- next ------------------------------------------------------------------------------

    def next(self, uri: str, solution: Any, caller: Caller) -> StepResult:
        nonce = _nonce_of(solution)

        def answer(locked: bool) -> StepResult:
            with self.store.write() as repo:
                ctx = self.protocols.run_context(repo, uri, caller, nonce)
                if ctx.step["position"] == 0:
                    raise ValidationError(
                        "uri", "the URI of step 2 or later, as named by next_action",
                        message=f"{uri} is step 1: call kairos_begin with it to start a run; "
                                "kairos_next takes the URI that next_action names.")
                refused_at = ctx.step["position"] - 1
                run = self._find_run(repo, ctx, caller, nonce, refused_at, (engine.ACTIVE,),
                                     locked)
                if run is None:
                    raise KairosError(
                        errors.NO_ACTIVE_RUN,
                        f"No active run of this protocol is waiting for the answer to step "
                        f"{refused_at + 1}. Call kairos_begin with {to_uri(ctx.steps.ids[0])} "
                        "to start one.", field="uri")
                counts = _counts(run)
                judged = self._judge(repo, run, self._steps(repo, ctx, run), solution, uri,
                                     "kairos_next", counts)
                counts.apply(repo.conn)
                assert judged.response is not None  # the step after the one answered: never
                return judged.response              # past the last

        return _retrying(answer, "answering")

    # --- attest ----------------------------------------------------------------------------

    def attest(self, req: Attest, caller: Caller) -> AttestResult | StepResult:
        """The outcome of the caller's run at ``req.uri`` (and the last step's proof, with
        ``req.solution``); a refused solution answers as ``kairos_next`` would. The
        message's length limit is a setting."""
        limits.check_length(req.message, "message", self.limits.message_chars)
        uri, solution = req.uri, req.solution
        nonce = _nonce_of(solution)

        def record(locked: bool) -> AttestResult | StepResult:
            with self.store.write() as repo:
                ctx = self.protocols.run_context(repo, uri, caller, nonce)
                statuses = (engine.ACTIVE, engine.COMPLETED, engine.FINISHED)
                run = self._find_run(repo, ctx, caller, nonce, None, statuses, locked)
                if run is None:
                    raise KairosError(
                        errors.NO_ACTIVE_RUN,
                        f"No run of this protocol to attest for this caller. Call kairos_begin "
                        f"with {to_uri(ctx.steps.ids[0])} first.", field="uri")
                counts, judged = _counts(run), None
                done = _Outcome(ctx.step["id"], req.outcome, req.message, req.quality_bonus,
                                req.llm_model_id)
                if solution is not None:
                    if run["challenge"] is None:
                        raise ValidationError(
                            "solution", "no solution: every step of this run is already proven")
                    judged = self._judge(repo, run, self._steps(repo, ctx, run), solution,
                                         uri, "kairos_attest", counts, done)
                    if judged.proofs is None:  # refused: answered as kairos_next would
                        assert judged.response is not None
                        counts.apply(repo.conn)
                        return judged.response
                return self._finish(repo, run, done, counts, judged)

        return _retrying(record, "attesting")

    def abort(self, run_id: str, caller: Caller, reason: str) -> AttestResult:

        def record(locked: bool) -> AttestResult:
            with self.store.write() as repo:
                own = own_run(repo, run_id, caller)
                run = repo.locked_run(own) if locked else own
                if run is None:
                    raise _Lost
                closed = {engine.FINISHED: f"is already finished (outcome {run['outcome']})",
                          engine.ABANDONED: f"was abandoned ({run['message']})",
                          engine.IMPORTED: "is imported history"}.get(run["status"])
                if closed is not None:
                    raise ConflictError(errors.CONFLICT, f"Run {run['id']} {closed}; there is "
                                        "nothing to abort.", field="run_id")
                try:  # the step ids of the version it follows, cached as the run loop's
                    ids = self.protocols.version_steps(repo, run["protocol_id"],
                                                       run["protocol_version"]).ids
                except NotFoundError:
                    raise NotFoundError(f"The protocol of run {run['id']} no longer exists.",
                                        field="run_id") from None
                step_id = ids[min(run["step_index"], len(ids) - 1)]
                return self._finish(repo, run, _Outcome(step_id, "failure", reason, 0.0, None),
                                    _counts(run))

        return _retrying(record, "aborting")

    def _finish(self, repo: Repo, run: RunRow, done: _Outcome, counts: Counts,
                judged: _Judged | None = None) -> AttestResult:
        """Record the outcome ``done`` of ``run`` (as read in this write) if the run is still
        as read; else raise ``_Lost``. ``judged``: the last step's answer, whose swap
        already wrote the outcome. The protocol's counters move from what the run counted
        as before to what it counts as now (see ``_counted``); ``counts`` is written."""
        swapped = judged.run if judged else repo.swap_run(run, **done.values(), updated_at=now())
        if swapped is None:
            raise _Lost
        stamp, proven = swapped["updated_at"], bool(swapped["proven"])
        proofs = judged.proofs if judged else None
        counted_before, counted = _counted(run), _counted(swapped)
        counts.add(last_outcome=done.outcome, last_run_at=stamp,
                   quality_bonus=done.bonus - (run["quality_bonus"] or 0.0))
        if counted != counted_before:
            if counted is not None:
                counts.add(**{_COUNTERS[counted]: 1})
            if counted_before is not None:
                counts.add(**{_COUNTERS[counted_before]: -1})
        if run["outcome_model"] and counted_before:
            counts.model(run["outcome_model"], counted_before, -1)
        if done.model and counted:
            counts.model(done.model, counted, 1)
        if run["failed_step_id"] != done.failed_step:
            if run["failed_step_id"]:
                counts.step(run["failed_step_id"], failures=-1)
            if done.failed_step:
                counts.step(done.failed_step, failures=1)
        repo.insert_attestation(run_id=run["id"], space=run["space"],
                                protocol_id=run["protocol_id"], step_uri=to_uri(done.step_id),
                                outcome=done.outcome, message=done.message,
                                quality_bonus=done.bonus, llm_model_id=done.model,
                                proven=proven, created_at=stamp)
        counts.apply(repo.conn)  # first: its lock on the protocol's statistics row makes the
        # attests of one protocol learn in turn (two learning one trigger would collide)
        if done.outcome == "success" and proven:
            self.protocols.search.learning.learn(repo, swapped)  # the searches that led here
        return {
            "uri": to_uri(done.step_id),
            "run_id": run["id"],
            "outcome": done.outcome,
            "proven": proven,
            "message": done.message,
            "quality_bonus": done.bonus,
            "llm_model_id": done.model,
            "proof_hash": swapped["head"],
            "proofs": repo.proof_count(run["id"]) if proofs is None else proofs,
            "rated_at": stamp,
            "next_action": "Run finished. Report the outcome to the user.",
        }

    # --- shared ----------------------------------------------------------------------------

    def _steps(self, repo: Repo, ctx: RunContext, run: RunRow) -> RunSteps:
        """The steps of the version ``run`` follows, whatever the protocol's now."""
        if ctx.steps.version == run["protocol_version"]:
            return ctx.steps
        return self.protocols.version_steps(repo, run["protocol_id"], run["protocol_version"])

    @staticmethod
    def _find_run(repo: Repo, ctx: RunContext, caller: Caller, nonce: str | None,
                  step_index: int | None, statuses: tuple[str, ...],
                  locked: bool) -> RunRow | None:
        """The run an answer is for (read under its lock when ``locked``): the one that
        issued the solution's nonce (``ctx.run``); failing that, the caller's most recent
        run of this protocol in its space that waits at ``step_index`` (contract §6).

        A nonce names a run of the caller's space only. A nonce that its run no longer
        waits for (answered, or superseded by a refusal) is spent: it changes nothing
        and is refused, so an old nonce read from a proof log cannot rotate the live one."""
        protocol_id = ctx.protocol_id
        if ctx.run is not None and ctx.run["space"] == caller.space:
            run = repo.locked_run(ctx.run) if locked else ctx.run
            if run is None:
                raise _Lost
            if run["nonce"] != nonce:
                raise KairosError(
                    errors.NO_ACTIVE_RUN,
                    f"The nonce {nonce} was already answered or replaced by a newer one: no "
                    "run waits for it. Answer with the nonce and proof_hash of the latest "
                    "challenge you were shown.", field="solution")
            if _waits(run, protocol_id, step_index, statuses):
                return run
        found = repo.latest_run(caller.space, caller.id, protocol_id, statuses, step_index)
        if found is None or not locked:
            return found
        run = repo.locked_run(found)
        if run is None or not _waits(run, protocol_id, step_index, statuses):
            raise _Lost  # it moved on before it was locked: find the run again
        return run

    def _judge(self, repo: Repo, run: RunRow, loaded: RunSteps, solution: Any, sent_uri: str,
               tool: str, counts: Counts, done: _Outcome | None = None) -> _Judged:
        """Answer the run's pending challenge: the step to show next (a refusal: the
        same step, with a fresh challenge; the last step's answer: what the engine says of
        it); ``_Lost`` when another writer won the run. An accepted answer's swap also
        writes the outcome ``done`` (an attest's)."""
        steps = loaded.views
        state = RunState(run["id"], run["step_index"], run["challenge"], run["head"],
                         run["retry_count"], run["attempt"], run["status"])
        if state.challenge is None or state.step_index >= len(steps):
            raise ValidationError("solution", "no pending challenge for this run")
        nonce, stamp = new_nonce(), now()
        decision = engine.answer(steps, state, solution, sent_uri=sent_uri, new_nonce=nonce,
                                 now=stamp, tool=tool, rule=run["chain_rule"])
        values = _state_values(decision.state, stamp)
        accepted = isinstance(decision, engine.Accepted)
        if accepted and decision.state.challenge is None:
            values["proven"] = True  # the last step's answer: every step is proven
        # Reaching the last step records a success, unproven until the last step's answer
        # comes through kairos_attest; unproven successes are not counted.
        completes = (accepted and decision.state.status == engine.COMPLETED
                     and run["status"] == engine.ACTIVE and run["outcome"] is None)
        if completes:
            values["outcome"] = "success"
        if accepted and done is not None:
            values.update(done.values())
        swapped = repo.swap_run(run, **values)
        if swapped is None:
            raise _Lost
        step_id = loaded.ids[state.step_index]
        if decision.state.challenge is not None:
            repo.insert_nonce(nonce, run["id"], decision.state.step_index,
                              decision.state.attempt, stamp)
        if isinstance(decision, engine.Refused):
            counts.step(step_id, refused=1)
            return _Judged(decision.response, swapped, None)
        proofs = repo.append_proof(run["id"], decision.record, stamp)
        counts.step(step_id, accepted=1)
        if completes:
            counts.add(last_outcome="success", last_run_at=stamp)
        return _Judged(decision.response, swapped, proofs)
