"""Use cases for execution: begin, next, attest, verify — thin drivers of the pure engine."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..domain import engine, errors, limits
from ..domain.engine import RunState
from ..domain.errors import KairosError, NotFoundError, ValidationError
from ..domain.proof import verify_chain
from ..domain.uris import new_id, to_uri
from ..store.db import Store
from ..store.repo import Repo, Row
from .clock import new_nonce, now
from .protocols import Caller, ProtocolService, RunContext, RunSteps

_SWAP_ATTEMPTS = 5


_COUNTERS = {"success": "successes", "failure": "failures"}
_FROM_RUN: Any = object()

#: A run as the run loop reads it: a row of ``runs`` (a mapping of its columns).
RunRow = Mapping[Any, Any]


def _nonce_of(solution: Any) -> str | None:
    """The nonce a solution names, when it names one."""
    nonce = solution.get("nonce") if isinstance(solution, dict) else None
    return nonce if isinstance(nonce, str) and nonce else None


def _counted(run: RunRow, outcome: str | None = None) -> str | None:
    """What a run counts as in its protocol's successes and failures: a failure always,
    a success only when proven (every step's challenge answered); else nothing.
    ``outcome`` overrides the run's recorded one."""
    outcome = run["outcome"] if outcome is None else outcome
    if outcome == "failure" or (outcome == "success" and run["proven"]):
        return outcome
    return None


def _state(row: RunRow) -> RunState:
    return RunState(row["id"], row["step_index"], row["challenge"], row["head"],
                    row["retry_count"], row["attempt"], row["status"])


def _state_values(state: RunState, stamp: str) -> dict[str, Any]:
    return {"step_index": state.step_index, "challenge": state.challenge,
            "nonce": state.nonce, "head": state.head, "retry_count": state.retry_count,
            "attempt": state.attempt, "status": state.status, "updated_at": stamp}


class RunService:
    def __init__(self, store: Store, protocols: ProtocolService) -> None:
        self.store = store
        self.protocols = protocols

    # --- begin -----------------------------------------------------------------------------

    def begin(self, uri: Any, caller: Caller) -> dict[str, Any]:
        with self.store.write() as repo:
            ctx = self.protocols.run_context(repo, uri, caller)
            proto = ctx.protocol
            run_id, nonce, stamp = new_id(), new_nonce(), now()
            state, response = engine.begin(ctx.steps.views, ctx.step["position"], run_id, nonce)
            repo.insert_run(id=run_id, space=caller.space, protocol_id=proto["id"],
                            caller=caller.id, created_at=stamp, **_state_values(state, stamp))
            repo.insert_nonce(nonce, run_id, 0, 1, stamp)
            repo.bump_protocol(proto["id"], runs=1, last_run_at=stamp)
        return response

    # --- next ------------------------------------------------------------------------------

    def next(self, uri: Any, solution: Any, caller: Caller) -> dict[str, Any]:
        nonce = _nonce_of(solution)
        for _ in range(_SWAP_ATTEMPTS):
            with self.store.write() as repo:
                ctx = self.protocols.run_context(repo, uri, caller, nonce)
                if ctx.step["position"] == 0:
                    raise ValidationError(
                        "uri", "the URI of step 2 or later, as named by next_action",
                        message=f"{uri} is step 1: call kairos_begin with it to start a run; "
                                "kairos_next takes the URI that next_action names.")
                refused_at = ctx.step["position"] - 1
                run = self._find_run(repo, ctx, caller, refused_at, (engine.ACTIVE,))
                if run is None:
                    raise KairosError(
                        errors.NO_ACTIVE_RUN,
                        f"No active run of this protocol is waiting for the answer to step "
                        f"{refused_at + 1}. Call kairos_begin with {to_uri(ctx.steps.ids[0])} "
                        "to start one.", field="uri")
                result = self._judge(repo, run, ctx.steps, solution, str(uri), "kairos_next")
                if result is not None:
                    return result
        raise KairosError(errors.CONFLICT, "The run changed while answering; retry the call.")

    # --- attest ----------------------------------------------------------------------------

    def attest(self, uri: str, outcome: str, message: str, caller: Caller, *,
               quality_bonus: float = 0.0, llm_model_id: str | None = None,
               solution: dict[str, Any] | None = None) -> dict[str, Any]:
        """Types and ranges come validated (``requests.Attest``); the message's length
        limit is a setting."""
        limits.check_length(message, "message", limits.current().message_chars)
        nonce = _nonce_of(solution)
        for _ in range(_SWAP_ATTEMPTS):
            with self.store.write() as repo:
                ctx = self.protocols.run_context(repo, uri, caller, nonce)
                step, proto = ctx.step, ctx.protocol
                statuses = (engine.ACTIVE, engine.COMPLETED, engine.FINISHED)
                run = self._find_run(repo, ctx, caller, None, statuses)
                if run is None:
                    raise KairosError(
                        errors.NO_ACTIVE_RUN,
                        f"No run of this protocol to attest for this caller. Call kairos_begin "
                        f"with {to_uri(ctx.steps.ids[0])} first.", field="uri")
                counted_before = _counted(run)
                if solution is not None:
                    if run["challenge"] is None:
                        raise ValidationError(
                            "solution", "no solution: every step of this run is already proven")
                    judged = self._judge(repo, run, ctx.steps, solution, str(uri),
                                         "kairos_attest")
                    if judged is None:
                        continue
                    if "error_code" in judged:
                        return judged
                    run = repo.run(run["id"])
                    assert run is not None
                return self._record_outcome(repo, run, proto, step, outcome, message,
                                            float(quality_bonus), llm_model_id,
                                            counted_before)
        raise KairosError(errors.CONFLICT, "The run changed while attesting; retry the call.")

    def _record_outcome(self, repo: Repo, run: RunRow, proto: Mapping[Any, Any],
                        step: Mapping[Any, Any], outcome: str,
                        message: str, bonus: float, model: str | None,
                        counted_before: Any = _FROM_RUN) -> dict[str, Any]:
        """Record the outcome; the protocol's counters move from what the run counted as
        before (``counted_before``, by default what ``run`` counts as) to what it counts
        as now (see ``_counted``)."""
        if counted_before is _FROM_RUN:
            counted_before = _counted(run)
        stamp = now()
        proven = bool(run["proven"])
        counted = _counted(run, outcome)
        previous_model = run["outcome_model"]
        deltas: dict[str, Any] = {"last_outcome": outcome, "last_run_at": stamp,
                                  "quality_bonus": bonus - (run["quality_bonus"] or 0.0)}
        if counted != counted_before:
            if counted is not None:
                deltas[_COUNTERS[counted]] = 1
            if counted_before is not None:
                deltas[_COUNTERS[counted_before]] = -1
        metrics = repo.protocol_metrics(proto["id"], lock=True)
        per_model = dict(metrics["per_model"]) if metrics else {}
        if previous_model and counted_before:
            counts = dict(per_model.get(previous_model, {}))
            counts[counted_before] = counts.get(counted_before, 0) - 1
            per_model[previous_model] = counts
        if model and counted:
            counts = dict(per_model.get(model, {}))
            counts[counted] = counts.get(counted, 0) + 1
            per_model[model] = counts
        deltas["per_model"] = per_model
        repo.bump_protocol(proto["id"], **deltas)
        failed_step = step["id"] if outcome == "failure" else None
        if run["failed_step_id"] and run["failed_step_id"] != failed_step:
            repo.bump_step(run["failed_step_id"], failures=-1)
        if failed_step and run["failed_step_id"] != failed_step:
            repo.bump_step(failed_step, failures=1)
        repo.swap_run(run["id"], run["nonce"], status=engine.FINISHED, outcome=outcome,
                      outcome_model=model, failed_step_id=failed_step, message=message,
                      quality_bonus=bonus, updated_at=stamp)
        repo.insert_attestation(run_id=run["id"], space=run["space"], protocol_id=proto["id"],
                                step_uri=to_uri(step["id"]), outcome=outcome, message=message,
                                quality_bonus=bonus, llm_model_id=model, proven=proven,
                                created_at=stamp)
        if outcome == "success" and proven and self.protocols.search is not None:
            self.protocols.search.learning.learn(repo, run)  # the searches that led here
        return {
            "uri": to_uri(step["id"]),
            "run_id": run["id"],
            "outcome": outcome,
            "proven": proven,
            "message": message,
            "quality_bonus": bonus,
            "llm_model_id": model,
            "proof_hash": run["head"],
            "proofs": repo.proof_count(run["id"]),
            "rated_at": stamp,
            "next_action": "Run finished. Report the outcome to the user.",
        }

    # --- shared ----------------------------------------------------------------------------

    @staticmethod
    def _find_run(repo: Repo, ctx: RunContext, caller: Caller, step_index: int | None,
                  statuses: tuple[str, ...]) -> RunRow | None:
        """By the solution's nonce (``ctx.run``, read with the step); failing that, the
        caller's most recent run of this protocol that waits at ``step_index`` (DESIGN
        section 4)."""
        protocol_id = ctx.protocol["id"]
        run = ctx.run
        if (run is not None and run["protocol_id"] == protocol_id
                and run["status"] in statuses
                and (step_index is None or run["step_index"] == step_index)):
            return run
        return repo.latest_run(caller.id, protocol_id, statuses, step_index)

    def _judge(self, repo: Repo, run: RunRow, loaded: RunSteps, solution: Any, sent_uri: str,
               tool: str) -> dict[str, Any] | None:
        """Answer the run's pending challenge; None when another writer won the race."""
        steps = loaded.views
        state = _state(run)
        if state.challenge is None or state.step_index >= len(steps):
            raise ValidationError("solution", "no pending challenge for this run")
        nonce, stamp = new_nonce(), now()
        decision = engine.answer(steps, state, solution, sent_uri=sent_uri, new_nonce=nonce,
                                 now=stamp, tool=tool)
        values = _state_values(decision.state, stamp)
        if isinstance(decision, engine.Accepted) and decision.state.challenge is None:
            values["proven"] = True  # the last step's answer: every step is proven
        if not repo.swap_run(run["id"], run["nonce"], **values):
            return None
        step_id = loaded.ids[state.step_index]
        if decision.state.challenge is not None:
            repo.insert_nonce(nonce, run["id"], decision.state.step_index,
                              decision.state.attempt, stamp)
        if isinstance(decision, engine.Refused):
            repo.bump_step(step_id, refused=1)
            return decision.response
        repo.insert_proof(run["id"], repo.proof_count(run["id"]), decision.record, stamp)
        repo.bump_step(step_id, accepted=1)
        if (decision.state.status == engine.COMPLETED and run["status"] == engine.ACTIVE
                and run["outcome"] is None):
            # Reaching the last step records a success, unproven until the last step's
            # answer comes through kairos_attest; unproven successes are not counted.
            repo.swap_run(run["id"], decision.state.nonce, outcome="success")
            repo.bump_protocol(run["protocol_id"], last_outcome="success", last_run_at=stamp)
        return decision.response

    # --- history and verification -----------------------------------------------------------

    def verify(self, run_id: Any, caller: Caller) -> dict[str, Any]:
        with self.store.read() as repo:
            run = self._own_run(repo, run_id, caller)
            records = [dict(p["record"], proof_hash=p["proof_hash"])
                       for p in repo.proofs(run["id"])]
        head, checked, broken = verify_chain(records)
        if broken is None and head != run["head"]:
            broken_dict: dict[str, Any] | None = {
                "index": len(records), "step_uri": None,
                "reason": "the run's head does not match its last proof"}
        else:
            broken_dict = (None if broken is None else
                           {"index": broken.index, "step_uri": broken.step_uri,
                            "reason": broken.reason})
        return {"run_id": run["id"], "valid": broken_dict is None, "proofs": checked,
                "proven": bool(run["proven"]), "head": run["head"],
                "first_broken": broken_dict}

    def proof_log(self, run_id: Any, caller: Caller) -> dict[str, Any]:
        with self.store.read() as repo:
            run = self._own_run(repo, run_id, caller)
            proofs = [dict(p["record"], proof_hash=p["proof_hash"])
                      for p in repo.proofs(run["id"])]
        return {"run_id": run["id"], "proofs": proofs}

    def history(self, caller: Caller, limit: int = 20) -> list[dict[str, Any]]:
        with self.store.read() as repo:
            rows = repo.runs_in(caller.space, limit)
            titles = {}
            for r in rows:
                if r["protocol_id"] not in titles:
                    p = repo.protocol(r["protocol_id"])
                    titles[r["protocol_id"]] = p["title"] if p else None
        return [{"run_id": r["id"], "chain_label": titles[r["protocol_id"]],
                 "status": r["status"], "outcome": r["outcome"],
                 "proven": bool(r["proven"]), "step": r["step_index"] + 1,
                 "retry_count": r["retry_count"], "caller": r["caller"],
                 "created_at": r["created_at"], "updated_at": r["updated_at"]} for r in rows]

    @staticmethod
    def _own_run(repo: Repo, run_id: Any, caller: Caller) -> Row:
        if not isinstance(run_id, str) or not run_id:
            raise ValidationError("run_id", "a run id string")
        if limits.BAD_CHAR.search(run_id):  # no id holds one; PostgreSQL cannot compare it
            raise NotFoundError(f"No run {run_id!r}.", field="run_id")
        run = repo.run(run_id)
        if run is None or run["space"] != caller.space:
            raise NotFoundError(f"No run {run_id}.", field="run_id")
        return run
