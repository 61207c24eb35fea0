"""A protocol's statistics counted again from what its runs left behind, to compare with
the counters the run loop keeps: runs, counted outcomes (a failure always, a success when
proven), models, and per step the accepted answers (proofs), the refused ones (each
refusal issues the nonce of a later attempt) and the failures attested at it."""

from __future__ import annotations

from collections import Counter
from typing import Any

from sqlalchemy import func, select

from kairos.service import Caller, Kairos
from kairos.store import schema as t


def recount(kairos: Kairos, first_uri: str, space: str = "default") -> dict[str, Any]:
    step_id = first_uri.removeprefix("kairos://mem/")
    r, s = t.runs.c, t.steps.c
    with kairos.store.read() as repo:
        conn = repo.conn
        protocol_id = conn.execute(select(s.protocol_id).where(s.id == step_id)).scalar_one()
        steps = conn.execute(select(s.id, s.position).where(s.protocol_id == protocol_id)
                             .order_by(s.position)).all()
        runs = conn.execute(select(t.runs).where(r.protocol_id == protocol_id,
                                                 r.space == space)).mappings().all()
        ids = [run["id"] for run in runs]
        accepted = dict(conn.execute(
            select(t.proofs.c.step_index, func.count()).where(t.proofs.c.run_id.in_(ids))
            .group_by(t.proofs.c.step_index)).all())
        refused = dict(conn.execute(
            select(t.nonces.c.step_index, func.count())
            .where(t.nonces.c.run_id.in_(ids), t.nonces.c.attempt > 1)
            .group_by(t.nonces.c.step_index)).all())
    outcomes: Counter[str] = Counter()
    models: dict[str, Counter[str]] = {}
    failed = Counter(run["failed_step_id"] for run in runs if run["failed_step_id"])
    for run in runs:
        counted = run["outcome"] if run["outcome"] == "failure" or (
            run["outcome"] == "success" and run["proven"]) else None
        if counted:
            outcomes[counted] += 1
            if run["outcome_model"]:
                models.setdefault(run["outcome_model"], Counter())[counted] += 1
    return {"runs": len(runs), "successes": outcomes["success"],
            "failures": outcomes["failure"],
            "per_model": {m: dict(c) for m, c in models.items()},
            "steps": [{"accepted": accepted.get(pos, 0), "refused": refused.get(pos, 0),
                       "failures": failed[sid]} for sid, pos in steps]}


def counted(kairos: Kairos, first_uri: str, space: str = "default") -> dict[str, Any]:
    """The same figures as the run loop's counters hold them."""
    m = kairos.metrics(first_uri, Caller(space=space))
    per_model = {model: {k: v for k, v in counts.items() if v}
                 for model, counts in m["per_model"].items()}
    return {"runs": m["runs"], "successes": m["successes"], "failures": m["failures"],
            "per_model": {model: c for model, c in per_model.items() if c},
            "steps": [{k: s[k] for k in ("accepted", "refused", "failures")}
                      for s in m["steps"]]}
