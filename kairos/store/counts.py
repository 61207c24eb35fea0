"""A protocol's statistics in one space: the changes one write makes to them, gathered
while it runs and applied at its end, always in one order — the steps' rows by id, then
the protocol's row, then the row of the protocol version the run follows. On PostgreSQL
every counter UPDATE holds its row's lock until commit;
two writers that took the same rows in opposite orders would each wait for the other
(a deadlock). One order means one of them simply waits its turn."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.sql import Executable

from . import schema

#: Columns of ``protocol_metrics`` that are added to; the others given are set.
PROTOCOL_COUNTERS = ("runs", "successes", "failures", "quality_bonus")
_BUMPS: dict[tuple[str, tuple[str, ...]], Executable] = {}


@dataclass
class Counts:
    """What one write adds to (or sets in) the statistics of ``protocol_id`` as run in
    ``space`` (and its counters to those of its ``version``, when given)."""

    protocol_id: str
    space: str
    version: int | None = None
    protocol: dict[str, Any] = field(default_factory=dict)
    steps: dict[str, dict[str, int]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(int)))
    models: dict[str, dict[str, int]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(int)))

    def add(self, **values: Any) -> None:
        """Add to the protocol's counters (``runs=1``); set its other columns
        (``last_outcome="success"``)."""
        for key, value in values.items():
            if key in PROTOCOL_COUNTERS:
                self.protocol[key] = self.protocol.get(key, 0) + value
            else:
                self.protocol[key] = value

    def step(self, step_id: str, **deltas: int) -> None:
        for key, value in deltas.items():
            self.steps[step_id][key] += value

    def model(self, model: str, outcome: str, delta: int) -> None:
        self.models[model][outcome] += delta


def apply(conn: Connection, counts: Counts) -> None:
    """Write ``counts``: the steps' rows in order of id, then the protocol's row (read
    under its lock when a model's counts change, since ``per_model`` is one JSON value)."""
    base = {"b_space": counts.space}
    for step_id in sorted(counts.steps):
        deltas = {k: v for k, v in counts.steps[step_id].items() if v}
        if deltas:
            conn.execute(_bump("step", tuple(deltas)),
                         {**base, "b_id": step_id, **{f"d_{k}": v for k, v in deltas.items()}})
    values = dict(counts.protocol)
    if any(any(d.values()) for d in counts.models.values()):
        m = schema.protocol_metrics.c
        row = conn.execute(select(m.per_model).where(
            (m.protocol_id == counts.protocol_id) & (m.space == counts.space))
            .with_for_update()).first()
        per_model = {k: dict(v) for k, v in (row[0] if row else {}).items()}
        for model, deltas in counts.models.items():
            mine = per_model.setdefault(model, {})
            for outcome, delta in deltas.items():
                mine[outcome] = mine.get(outcome, 0) + delta
        values["per_model"] = per_model
    if values:
        params = {f"d_{k}" if k in PROTOCOL_COUNTERS else f"v_{k}": v for k, v in values.items()}
        conn.execute(_bump("protocol", tuple(values)),
                     {**base, "b_id": counts.protocol_id, **params})
    deltas = {k: v for k, v in counts.protocol.items() if k in PROTOCOL_COUNTERS and v}
    if counts.version is not None and deltas:
        bump = ({**base, "b_id": counts.protocol_id, "b_version": counts.version,
                 **{f"d_{k}": v for k, v in deltas.items()}})
        if not conn.execute(_bump("version", tuple(deltas)), bump).rowcount:
            conn.execute(_new_version_row(conn.dialect.name), {
                "protocol_id": counts.protocol_id, "version": counts.version,
                "space": counts.space, "runs": 0, "successes": 0, "failures": 0,
                "quality_bonus": 0.0})
            conn.execute(_bump("version", tuple(deltas)), bump)


def _new_version_row(dialect: str) -> Executable:
    """The INSERT of a version's first statistics row; a replica that made it first wins."""
    stmt = _BUMPS.get(("version-row", (dialect,)))
    if stmt is None:
        insert_ = postgresql.insert if dialect == "postgresql" else sqlite.insert
        stmt = _BUMPS[("version-row", (dialect,))] = (
            insert_(schema.version_metrics).on_conflict_do_nothing())
    return stmt


def _bump(table: str, keys: tuple[str, ...]) -> Executable:
    """The UPDATE that adds ``d_<key>`` to each counter and sets ``v_<key>`` to each other
    column of ``keys`` (one statement per table and set of keys, built on first use: the
    run loop runs a handful per call, and building one costs more than running it)."""
    stmt = _BUMPS.get((table, keys))
    if stmt is None:
        if table == "protocol":
            c = schema.protocol_metrics.c
            where = (c.protocol_id == bindparam("b_id")) & (c.space == bindparam("b_space"))
            values = {k: (getattr(c, k) + bindparam(f"d_{k}") if k in PROTOCOL_COUNTERS
                          else bindparam(f"v_{k}", type_=getattr(c, k).type)) for k in keys}
            stmt = update(schema.protocol_metrics).where(where).values(values)
        elif table == "version":
            v = schema.version_metrics.c
            stmt = update(schema.version_metrics).where(
                (v.protocol_id == bindparam("b_id")) & (v.version == bindparam("b_version"))
                & (v.space == bindparam("b_space"))).values(
                {k: getattr(v, k) + bindparam(f"d_{k}") for k in keys})
        else:
            s = schema.step_metrics.c
            where = (s.step_id == bindparam("b_id")) & (s.space == bindparam("b_space"))
            stmt = update(schema.step_metrics).where(where).values(
                {k: getattr(s, k) + bindparam(f"d_{k}") for k in keys})
        _BUMPS[(table, keys)] = stmt
    return stmt


__all__ = ["PROTOCOL_COUNTERS", "Counts", "apply"]
