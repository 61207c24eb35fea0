"""Runs as training data: traces with rewards, chat transcripts for supervised fine-tuning,
and preference pairs. Pure: a run comes in as plain data (``run_data.RunData``), records go
out as JSON-ready dicts. The formats are described field by field in ``docs/datasets.md``.

A success counts only when it is **proven** (every step's answer is in the chain): the
others are left out unless asked for, and flagged when they are in. Failures always count.
The chat formats leave out each run's nonces and hashes (``dataset_chat``); the trace keeps
them, so its chain can be recomputed from the record alone (``check_trace``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any

from .canonical import KAIROS_JSON_1
from .dataset_chat import answer_text, compact, step_of, turns
from .dataset_filters import Filters
from .errors import ValidationError
from .proof import Break, verify_chain
from .run_data import ProtocolData, RefusedAnswer, RunData, StepData

TRACE, SFT, PREFERENCE = "trace-jsonl", "sft-jsonl", "preference-jsonl"
FORMATS = (TRACE, SFT, PREFERENCE)
PAIRS_PER_FAILURE_MAX = 100
#: One record of a dataset, as JSON values (its fields: ``docs/datasets.md``).
Record = dict[str, Any]
# Step states in a trace: answered and accepted; refused and never accepted; shown and
# left unanswered; never shown.
ACCEPTED, REFUSED, UNANSWERED, NOT_REACHED = "accepted", "refused", "unanswered", "not_reached"
# What a preference pair's rejected answer is: the failed run's accepted answer at that
# step, its last refused answer, or (neither known) its report of the failure.
FROM_ACCEPTED, FROM_REFUSED, FROM_ATTESTATION = "accepted", "refused", "attestation"
_LINE_BREAKS = ("\x85", "\u2028", "\u2029")  # json.dumps escapes the others (< 0x20)


# --- shared pieces ----------------------------------------------------------------------------


def reward(run: RunData) -> float | None:
    """1 for a proven success, 0 for a failure, None (no verified reward) otherwise."""
    if run.proven_success:
        return 1.0
    return 0.0 if run.outcome == "failure" else None


def _meta(run: RunData) -> dict[str, Any]:
    """What traces a record back to its run: flat values, the same in every format."""
    return {"run_id": run.run_id, "protocol_uri": run.protocol.uri,
            "protocol_title": run.protocol.title, "protocol_version": run.protocol.version,
            "protocol_hash": run.protocol.content_hash, "proof_head": run.head,
            "outcome": run.outcome, "proven": run.proven, "llm_model_id": run.llm_model_id,
            "created_at": run.created_at}


# --- trace-jsonl ------------------------------------------------------------------------------


def trace_record(run: RunData) -> dict[str, Any]:
    """Every step of one run: what it asked, its challenge, the accepted answer's proof
    record (the chain, whole), the refusals known; the outcome and its reward."""
    done = run.accepted
    refused: dict[int, list[dict[str, Any]]] = {}
    for r in run.refusals:
        refused.setdefault(r.step_index, []).append(
            {"error_code": r.error_code, "solution": r.solution, "time": r.time})
    size = max(len(run.protocol.steps), max(done, default=-1) + 1,
               max(refused, default=-1) + 1)
    shown = len(done)  # the step after the last accepted one was shown
    steps = []
    for index in range(size):
        step = step_of(run.protocol, index)
        proof = done.get(index)
        if proof is not None:
            state = ACCEPTED
        elif index in refused:
            state = REFUSED
        else:
            state = UNANSWERED if index == shown else NOT_REACHED
        steps.append({
            "index": index,
            "uri": step.uri if step else (proof or {}).get("step_uri"),
            "label": step.label if step else None,
            "content": step.content if step else None,
            "challenge": dict(step.challenge) if step else None,
            "state": state,
            "proof": dict(proof) if proof is not None else None,
            "refusals": refused.get(index, []),
        })
    return {**_meta(run), "space": run.space, "caller": run.caller, "status": run.status,
            "updated_at": run.updated_at, "chain_rule": run.chain_rule,
            "reward": reward(run), "request": run.request,
            "message": run.message, "quality_bonus": run.quality_bonus,
            "proofs": len(done), "steps": steps}


def trace_records(runs: Iterable[RunData], *, include_unproven: bool = False
                  ) -> Iterator[dict[str, Any]]:
    for run in runs:
        if run.counts(include_unproven):
            yield trace_record(run)


def check_trace(record: Mapping[str, Any]) -> Break | None:
    """Recompute a trace record's chain from its steps' proofs: None when it holds and ends
    at the record's ``proof_head``, else the first link that does not."""
    proofs = [s["proof"] for s in record["steps"] if s.get("proof") is not None]
    head, _, broken = verify_chain(proofs, record.get("chain_rule", KAIROS_JSON_1))
    if broken is None and head != record["proof_head"]:
        return Break(len(proofs), None, "the chain does not end at proof_head")
    return broken


# --- sft-jsonl --------------------------------------------------------------------------------


def sft_record(run: RunData) -> dict[str, Any] | None:
    """A run's conversation: each step a user turn, each accepted answer the assistant's.
    None when no step was answered (nothing to learn from)."""
    answered = 0
    done = run.accepted
    while answered in done:
        answered += 1
    if not answered:
        return None
    messages = turns(run, answered - 1)
    messages.append({"role": "assistant",
                     "content": answer_text(done[answered - 1]["solution"])})
    return {"messages": messages, **_meta(run)}


def sft_records(runs: Iterable[RunData], *, include_unproven: bool = False
                ) -> Iterator[dict[str, Any]]:
    """Proven successes (and, asked for, unproven ones, flagged ``proven: false``)."""
    for run in runs:
        if run.outcome == "success" and run.counts(include_unproven):
            record = sft_record(run)
            if record is not None:
                yield record


# --- preference-jsonl -------------------------------------------------------------------------


def _rejected(run: RunData, index: int) -> tuple[str, str]:
    """What the failed run answered at ``index``, and where that comes from."""
    proof = run.accepted.get(index)
    if proof is not None:
        return answer_text(proof["solution"]), FROM_ACCEPTED
    known = [r for r in run.refusals if r.step_index == index and r.solution is not None]
    if known:
        return answer_text(known[-1].solution), FROM_REFUSED
    return compact({"outcome": "failure", "message": run.message or ""}), FROM_ATTESTATION


def _key(run: RunData, index: int) -> tuple[Any, ...] | None:
    step = step_of(run.protocol, index)
    if step is None:
        return None
    return (run.protocol.uri, run.protocol.version, run.protocol.content_hash, index, step.uri)


def _instant(stamp: str) -> float:
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return 0.0


def preference_records(runs: Iterable[RunData], *, pairs_per_failure: int = 1
                       ) -> Iterator[dict[str, Any]]:
    """Pairs of a proven success (chosen) and a failure (rejected) of the same protocol
    version, at the step where the failure failed. The prompt is the success's own
    conversation up to that step (its earlier answers were all accepted); each failure is
    paired with up to ``pairs_per_failure`` successes, the nearest in time first."""
    if (not isinstance(pairs_per_failure, int) or isinstance(pairs_per_failure, bool)
            or not 1 <= pairs_per_failure <= PAIRS_PER_FAILURE_MAX):
        raise ValidationError("pairs_per_failure",
                              f"an integer from 1 to {PAIRS_PER_FAILURE_MAX}")
    return _pairs(list(runs), pairs_per_failure)


def _pairs(runs: list[RunData], limit: int) -> Iterator[dict[str, Any]]:
    # Each proven success under every (protocol version, step) it answered, once.
    answered: dict[tuple[Any, ...], list[tuple[float, str, RunData]]] = {}
    for success in runs:
        if success.proven_success:
            when = _instant(success.created_at)
            for index in success.accepted:
                key = _key(success, index)
                if key is not None:
                    answered.setdefault(key, []).append((when, success.run_id, success))
    for failure in runs:
        if failure.outcome != "failure":
            continue
        index = failure.failed_step()
        key = _key(failure, index)
        if key is None or key not in answered:
            continue
        rejected, source = _rejected(failure, index)
        when = _instant(failure.created_at)
        nearest = sorted(((abs(t - when), run_id, s) for t, run_id, s in answered[key]
                          if run_id != failure.run_id), key=lambda near: near[:2])
        paired = 0
        for _, _, success in nearest:
            chosen = answer_text(success.accepted[index]["solution"])
            if chosen == rejected:
                continue  # the same answer on both sides teaches nothing
            yield _pair(success, failure, index, chosen, rejected, source)
            paired += 1
            if paired == limit:
                break


def _pair(success: RunData, failure: RunData, index: int, chosen: str, rejected: str,
          source: str) -> dict[str, Any]:
    step = success.protocol.steps[index]
    return {
        "prompt": turns(success, index),
        "chosen": [{"role": "assistant", "content": chosen}],
        "rejected": [{"role": "assistant", "content": rejected}],
        "chosen_run_id": success.run_id, "rejected_run_id": failure.run_id,
        "chosen_proof_head": success.head, "rejected_proof_head": failure.head,
        "protocol_uri": success.protocol.uri, "protocol_title": success.protocol.title,
        "protocol_version": success.protocol.version,
        "protocol_hash": success.protocol.content_hash,
        "step_index": index, "step_uri": step.uri, "rejected_source": source,
        "chosen_llm_model_id": success.llm_model_id,
        "rejected_llm_model_id": failure.llm_model_id,
    }


# --- one entry point --------------------------------------------------------------------------


def export(fmt: str, runs: Iterable[RunData], filters: Filters | None = None, *,
           pairs_per_failure: int = 1) -> Iterator[Record]:
    """The records of ``fmt`` from the runs ``filters`` selects (by default: proven
    successes and failures of any space, protocol and time)."""
    if fmt not in FORMATS:
        raise ValidationError("format", "one of " + ", ".join(FORMATS))
    filters = filters or Filters()
    chosen = (r for r in runs if filters.selects(r))
    unproven = not filters.proven_only
    if fmt == TRACE:
        return trace_records(chosen, include_unproven=unproven)
    if fmt == SFT:
        return sft_records(chosen, include_unproven=unproven)
    return preference_records(chosen, pairs_per_failure=pairs_per_failure)


def to_jsonl(record: Mapping[str, Any]) -> str:
    """One line of a JSON Lines file, no trailing newline. UTF-8 as is, except the
    characters that some readers take for a line break (``str.splitlines`` does), which
    JSON allows raw inside strings: escaped, so a record is always one line."""
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for char in _LINE_BREAKS:
        text = text.replace(char, f"\\u{ord(char):04x}")
    return text


__all__ = ["ACCEPTED", "FORMATS", "FROM_ACCEPTED", "FROM_ATTESTATION", "FROM_REFUSED",
           "NOT_REACHED", "PAIRS_PER_FAILURE_MAX", "PREFERENCE", "REFUSED", "SFT", "TRACE",
           "UNANSWERED", "Filters", "ProtocolData", "Record", "RefusedAnswer", "RunData",
           "StepData", "check_trace", "export", "preference_records", "reward", "sft_record",
           "sft_records", "to_jsonl", "trace_record", "trace_records"]
