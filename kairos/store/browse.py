"""Read-only queries for browsing a space: protocol and run listings with paging, run
proof counts, outcome series over time, and entry listings. Each takes a ``Repo`` whose
transaction the Store opened."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Select, and_, case, func, select

from . import schema as t
from .repo import Repo, Row

PROTOCOL_SORTS = ("updated", "title", "runs")


def protocol_page_query(space: str, *, q: str | None, sort: str, limit: int,
                        offset: int) -> tuple[Select[Any], Select[Any]]:
    """(page query, count query) of a space's own protocols: id, title, tags, dates and run
    counters; ``q`` filters titles case-insensitively."""
    p, m = t.protocols.c, t.protocol_metrics.c
    cond = and_(p.space == space, p.builtin.is_(False))
    if q:
        cond = and_(cond, func.lower(p.title).contains(q.lower(), autoescape=True))
    order = {"updated": (p.updated_at.desc(), p.id),
             "title": (func.lower(p.title), p.id),
             "runs": (func.coalesce(m.runs, 0).desc(), p.updated_at.desc(), p.id)}[sort]
    page = (select(p.id, p.title, p.tags, p.created_at, p.updated_at,
                   func.coalesce(m.runs, 0).label("runs"),
                   func.coalesce(m.successes, 0).label("successes"),
                   func.coalesce(m.failures, 0).label("failures"),
                   m.last_outcome, m.last_run_at)
            .select_from(t.protocols)
            .outerjoin(t.protocol_metrics, (m.protocol_id == p.id) & (m.space == space))
            .where(cond).order_by(*order).limit(limit).offset(offset))
    total = select(func.count()).select_from(t.protocols).where(cond)
    return page, total


def protocol_page(repo: Repo, space: str, *, q: str | None, sort: str, limit: int,
                  offset: int) -> tuple[list[dict[str, Any]], int]:
    """The page's rows, each with its ``step_count`` and first step's id (``step_id``),
    and the total number of matching protocols."""
    page, total = protocol_page_query(space, q=q, sort=sort, limit=limit, offset=offset)
    rows = [dict(r) for r in repo.conn.execute(page).mappings()]
    ids = [r["id"] for r in rows]
    first = repo.protocols_with_first_step(ids)
    counts = step_counts(repo, ids)
    out = []
    for r in rows:
        if r["id"] in first:  # a protocol always has steps; skip one caught mid-delete
            out.append(r | {"step_id": first[r["id"]]["step_id"],
                            "step_count": counts.get(r["id"], 0)})
    return out, int(repo.conn.execute(total).scalar_one())


def run_proof_counts(repo: Repo, protocol_ids: Sequence[str], space: str) -> list[Row]:
    """Every run of these protocols in ``space`` with its outcome and number of proofs."""
    if not protocol_ids:
        return []
    r, pr = t.runs.c, t.proofs.c
    proofs = (select(pr.run_id, func.count().label("proofs")).group_by(pr.run_id).subquery())
    q = (select(r.id, r.protocol_id, r.outcome, r.status,
                func.coalesce(proofs.c.proofs, 0).label("proofs"))
         .outerjoin(proofs, proofs.c.run_id == r.id)
         .where(r.protocol_id.in_(list(protocol_ids)), r.space == space))
    return list(repo.conn.execute(q).mappings())


def step_counts(repo: Repo, protocol_ids: Sequence[str]) -> dict[str, int]:
    if not protocol_ids:
        return {}
    s = t.steps.c
    q = (select(s.protocol_id, func.count()).where(s.protocol_id.in_(list(protocol_ids)))
         .group_by(s.protocol_id))
    return {row[0]: int(row[1]) for row in repo.conn.execute(q)}


def run_page(repo: Repo, space: str, *, limit: int, offset: int,
             protocol_id: str | None = None, status: str | None = None
             ) -> tuple[list[Row], int]:
    """A space's runs, most recently changed first, with their protocol's title and
    number of proofs."""
    r, p, pr = t.runs.c, t.protocols.c, t.proofs.c
    cond = r.space == space
    if protocol_id:
        cond = and_(cond, r.protocol_id == protocol_id)
    if status:
        cond = and_(cond, r.status == status)
    proofs = (select(pr.run_id, func.count().label("proofs")).group_by(pr.run_id).subquery())
    q = (select(t.runs, p.title, func.coalesce(proofs.c.proofs, 0).label("proofs"))
         .outerjoin(t.protocols, p.id == r.protocol_id)
         .outerjoin(proofs, proofs.c.run_id == r.id)
         .where(cond).order_by(r.updated_at.desc(), r.id).limit(limit).offset(offset))
    total = select(func.count()).select_from(t.runs).where(cond)
    return (list(repo.conn.execute(q).mappings()),
            int(repo.conn.execute(total).scalar_one()))


def outcome_series(repo: Repo, protocol_id: str, space: str) -> list[Row]:
    """Runs per day (by start) of a protocol in ``space``: started, successes, failures."""
    r = t.runs.c
    day = func.substr(r.created_at, 1, 10).label("day")
    q = (select(day, func.count().label("runs"),
                func.sum(case((r.outcome == "success", 1), else_=0)).label("successes"),
                func.sum(case((r.outcome == "failure", 1), else_=0)).label("failures"))
         .where(r.protocol_id == protocol_id, r.space == space).group_by(day).order_by(day))
    return list(repo.conn.execute(q).mappings())


def entry_page(repo: Repo, space: str, kind: str, *, category: str | None, limit: int,
               offset: int) -> tuple[list[Row], int]:
    """Experiences or manuals of a space, newest change first, optionally one category."""
    table = t.experiences if kind == "experience" else t.manuals
    cond = table.c.space == space
    if category:
        cond = and_(cond, table.c.category == category)
    q = (select(table).where(cond).order_by(table.c.updated_at.desc(), table.c.id)
         .limit(limit).offset(offset))
    total = select(func.count()).select_from(table).where(cond)
    return (list(repo.conn.execute(q).mappings()),
            int(repo.conn.execute(total).scalar_one()))


def ids_starting(repo: Repo, kind: str, prefix: str, spaces: Sequence[str],
                 limit: int = 2) -> list[str]:
    """Up to ``limit`` ids of the steps (``kind`` "step") or runs of ``spaces`` that start
    with ``prefix`` (hex digits and hyphens: nothing LIKE would read as a wildcard)."""
    table = t.steps if kind == "step" else t.runs
    q = (select(table.c.id).where(table.c.id.like(prefix + "%"),
                                  table.c.space.in_(list(spaces)))
         .order_by(table.c.id).limit(limit))
    return [row[0] for row in repo.conn.execute(q)]


__all__ = ["PROTOCOL_SORTS", "entry_page", "ids_starting", "outcome_series", "protocol_page",
           "protocol_page_query", "run_page", "run_proof_counts", "step_counts"]
