"""The read model: one query per kind of record for a page of them — protocols, runs,
entries — with its filters, order and paging, and the query of its total. The builders are
pure (they return SQLAlchemy selects, tested as such); ``Repo.page`` runs them.

Every page's rows carry what its items show, so that a page is two statements whatever
its size: a protocol's step 1 and step count, its statistics in the space and how many
of its runs with an outcome were proven; a run's protocol title, step count and proofs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, Text, and_, case, cast, false, func, or_, select, true
from sqlalchemy.sql import ColumnElement

from ..domain.markdown import title_key
from . import schema
from .schema import entry_table


@dataclass(frozen=True)
class PageQuery:
    """The select of one page and the select of the total it is a page of."""

    page: Select[Any]
    total: Select[Any]


def _count_of(table: Any, where: ColumnElement[bool]) -> Select[Any]:
    return select(func.count()).select_from(table).where(where)


def equal(columns: Any, **values: Any) -> list[ColumnElement[bool]]:
    """``column == value`` for each of ``values`` that is given (not None): the optional
    filters of a read."""
    return [columns[name] == value for name, value in values.items() if value is not None]


def step_count_of(protocol_id: Any) -> Any:
    """How many steps the protocol ``protocol_id`` (a column or a value) has."""
    steps = schema.steps.c
    return (select(func.count()).where(steps.protocol_id == protocol_id)
            .scalar_subquery())


def first_step_of(protocol_id: Any) -> Any:
    steps = schema.steps.c
    return (select(steps.id).where(steps.protocol_id == protocol_id)
            .order_by(steps.position).limit(1).scalar_subquery())


def _runs_with_outcome(protocol_id: Any, space: str, proven: bool) -> Any:
    runs = schema.runs.c
    return (select(func.count()).where(
        runs.protocol_id == protocol_id, runs.space == space, runs.outcome.is_not(None),
        runs.proven == (true() if proven else false())).scalar_subquery())


PROTOCOL_ORDER = {
    "updated": lambda p, m: (p.updated_at.desc(), p.id),
    "title": lambda p, m: (p.title_key, p.id),
    "runs": lambda p, m: (func.coalesce(m.runs, 0).desc(), p.updated_at.desc(), p.id),
}


def protocol_page(space: str, *, limit: int, offset: int, title: str | None = None,
                  tag: str | None = None, builtin: bool = False, sort: str = "updated",
                  protocol_id: str | None = None) -> PageQuery:
    """The space's protocols (with ``builtin``, the built-in ones too): ``title`` keeps
    those whose title holds it (case and spacing aside), ``tag`` those with that tag,
    ``protocol_id`` that one. Each row: the protocol's columns, ``step_id`` (step 1),
    ``step_count``, its statistics in ``space`` and ``proven_runs``/``unproven_runs``."""
    p, m = schema.protocols.c, schema.protocol_metrics.c
    where = [or_(p.space == space, p.builtin) if builtin else p.space == space,
             *equal(p, id=protocol_id)]
    if title:
        where.append(p.title_key.contains(title_key(title), autoescape=True))
    if tag:  # tags are a JSON list of strings: the quoted tag in its text
        quoted = json.dumps(tag, ensure_ascii=False)
        where.append(cast(p.tags, Text).contains(quoted, autoescape=True))
    cond = and_(*where)
    page = (select(p.id, p.title, p.tags, p.builtin, p.intro, p.created_at, p.updated_at,
                   first_step_of(p.id).label("step_id"),
                   step_count_of(p.id).label("step_count"),
                   func.coalesce(m.runs, 0).label("runs"),
                   func.coalesce(m.successes, 0).label("successes"),
                   func.coalesce(m.failures, 0).label("failures"),
                   m.last_outcome, m.last_run_at,
                   _runs_with_outcome(p.id, space, True).label("proven_runs"),
                   _runs_with_outcome(p.id, space, False).label("unproven_runs"))
            .select_from(schema.protocols)
            .outerjoin(schema.protocol_metrics, (m.protocol_id == p.id) & (m.space == space))
            .where(cond).order_by(*PROTOCOL_ORDER[sort](p, m)).limit(limit).offset(offset))
    return PageQuery(page, _count_of(schema.protocols, cond))


def run_page(space: str, *, limit: int, offset: int, status: str | None = None,
             protocol_id: str | None = None, run_id: str | None = None) -> PageQuery:
    """The space's runs, most recently changed first (``status``, ``protocol_id``,
    ``run_id``: only those). Each row: the run's columns, its protocol's ``title``, the
    ``step_count`` of the version it follows, and its ``proofs``."""
    r, p, pr, v = schema.runs.c, schema.protocols.c, schema.proofs.c, schema.protocol_versions.c
    cond = and_(r.space == space, *equal(r, status=status, protocol_id=protocol_id, id=run_id))
    proofs = select(func.count()).where(pr.run_id == r.id).scalar_subquery()
    steps = func.coalesce(func.json_array_length(v.steps), step_count_of(r.protocol_id))
    page = (select(schema.runs, p.title, steps.label("step_count"), proofs.label("proofs"))
            .outerjoin(schema.protocols, p.id == r.protocol_id)
            .outerjoin(schema.protocol_versions, (v.protocol_id == r.protocol_id)
                       & (v.version == r.protocol_version))
            .where(cond).order_by(r.updated_at.desc(), r.id).limit(limit).offset(offset))
    return PageQuery(page, _count_of(schema.runs, cond))


def entry_page(space: str, kind: str, *, limit: int, offset: int,
               category: str | None = None) -> PageQuery:
    """Experiences or manuals (``kind``) of the space, most recently changed first;
    ``category``: only those."""
    table = entry_table(kind)
    cond = and_(table.c.space == space, *equal(table.c, category=category))
    page = (select(table).where(cond).order_by(table.c.updated_at.desc(), table.c.id)
            .limit(limit).offset(offset))
    return PageQuery(page, _count_of(table, cond))


def outcome_series(protocol_id: str, space: str) -> Select[Any]:
    """Runs per day (by start) of a protocol in ``space``: started, successes, failures."""
    r = schema.runs.c
    day = func.substr(r.created_at, 1, 10).label("day")
    return (select(day, func.count().label("runs"),
                   func.sum(case((r.outcome == "success", 1), else_=0)).label("successes"),
                   func.sum(case((r.outcome == "failure", 1), else_=0)).label("failures"))
            .where(r.protocol_id == protocol_id, r.space == space).group_by(day).order_by(day))


def latest_attestation(run_id: str) -> Select[Any]:
    """A run's newest attestation: its outcome, message and time."""
    a = schema.attestations.c
    return (select(a.outcome, a.message, a.created_at.label("time"))
            .where(a.run_id == run_id).order_by(a.id.desc()).limit(1))


def ids_starting(kind: str, prefix: str, spaces: Sequence[str], limit: int = 2) -> Select[Any]:
    """Up to ``limit`` ids of the steps (``kind`` "step") or runs of ``spaces`` that start
    with ``prefix`` (hex digits and hyphens: nothing LIKE would read as a wildcard)."""
    table = schema.steps if kind == "step" else schema.runs
    return (select(table.c.id).where(table.c.id.like(prefix + "%"),
                                     table.c.space.in_(spaces))
            .order_by(table.c.id).limit(limit))


__all__ = ["PROTOCOL_ORDER", "PageQuery", "entry_page", "entry_table", "equal", "ids_starting",
           "latest_attestation", "outcome_series", "protocol_page", "run_page", "step_count_of"]
