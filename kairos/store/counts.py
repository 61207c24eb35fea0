"""A protocol's statistics in one space: the changes one write makes to them, gathered
while it runs and applied at its end, always in one order — the steps' rows by id, then
the protocol's row, then the row of the protocol version the run follows. On PostgreSQL
every counter UPDATE holds its row's lock until commit;
two writers that took the same rows in opposite orders would each wait for the other
(a deadlock). One order means one of them simply waits its turn."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from sqlalchemy import and_, bindparam, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.sql import Executable

from . import schema

#: Columns of ``protocol_metrics`` that are added to; the others given are set.
PROTOCOL_COUNTERS = ("runs", "successes", "failures", "quality_bonus")


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

    def apply(self, conn: Connection) -> None:
        """Write these changes: the steps' rows in order of id, then the protocol's row (read
        under its lock when a model's counts change, since ``per_model`` is one JSON value),
        then the version's. A row not made yet (a built-in protocol's first run in a space, a
        version's first run) is made as it is first counted."""
        mine = {"protocol_id": self.protocol_id, "space": self.space}
        for step_id in sorted(self.steps):
            deltas = {k: v for k, v in self.steps[step_id].items() if v}
            if deltas:
                _count(conn, "step", {"step_id": step_id, "space": self.space}, deltas, mine)
        values = dict(self.protocol)
        if any(any(d.values()) for d in self.models.values()):
            m = schema.protocol_metrics.c
            row = conn.execute(select(m.per_model).where(
                (m.protocol_id == self.protocol_id) & (m.space == self.space))
                .with_for_update()).first()
            per_model = {k: dict(v) for k, v in (row[0] if row else {}).items()}
            for model, deltas in self.models.items():
                by_outcome = per_model.setdefault(model, {})
                for outcome, delta in deltas.items():
                    by_outcome[outcome] = by_outcome.get(outcome, 0) + delta
            values["per_model"] = per_model
        if values:
            _count(conn, "protocol", mine, values, {"per_model": {}})
        deltas = {k: v for k, v in self.protocol.items() if k in PROTOCOL_COUNTERS and v}
        if self.version is not None and deltas:
            _count(conn, "version", {**mine, "version": self.version}, deltas, {})


#: Each statistics table, and the columns that name one of its rows.
_TABLES = {"protocol": (schema.protocol_metrics, ("protocol_id", "space")),
           "step": (schema.step_metrics, ("step_id", "space")),
           "version": (schema.version_metrics, ("protocol_id", "version", "space"))}


def _count(conn: Connection, table: str, row: dict[str, Any], values: dict[str, Any],
           new: dict[str, Any]) -> None:
    """Add ``values`` to the counters of ``row`` in ``table`` (set the protocol's other
    columns). A row not made yet is made first, with ``new`` and its counters at their
    defaults: a replica that made it first wins, and this one then adds to it."""
    stmt = _bump(table, tuple(values))
    params = {**{f"b_{k}": v for k, v in row.items()},
              **{f"v_{k}" if _sets(table, k) else f"d_{k}": v for k, v in values.items()}}
    if conn.execute(stmt, params).rowcount:
        return
    conn.execute(schema.insert_new(conn, _TABLES[table][0]), {**new, **row})
    conn.execute(stmt, params)


def _sets(table: str, column: str) -> bool:
    """Whether ``column`` is set rather than added to: the protocol's last outcome, its
    time and its per-model counts."""
    return table == "protocol" and column not in PROTOCOL_COUNTERS


@cache
def _bump(table: str, keys: tuple[str, ...]) -> Executable:
    """The UPDATE of the row named by ``b_<column>`` that adds ``d_<key>`` to each counter
    of ``keys`` and sets ``v_<key>`` to each other column (one statement per table and set
    of keys, built on first use: the run loop runs a handful per call, and building one
    costs more than running it)."""
    t, names = _TABLES[table]
    return update(t).where(and_(*(t.c[n] == bindparam(f"b_{n}") for n in names))).values(
        {k: bindparam(f"v_{k}", type_=t.c[k].type) if _sets(table, k)
         else t.c[k] + bindparam(f"d_{k}") for k in keys})


__all__ = ["PROTOCOL_COUNTERS", "Counts"]
