"""Keyset reads, for what is walked page by page to its end: the protocols and entries of
``resources/list`` (ordered by title then id, or by id, one indexed query per page) and the
finished runs a dataset export reads in batches, with their proofs, steps and attestations
fetched for a whole batch at once (no query per run). Builders only: ``Repo.all`` runs them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Select, false, select, true, tuple_

from . import schema
from .reads import entry_table, equal, first_step_of


def _protocol_rows() -> Select[Any]:
    p = schema.protocols.c
    return select(p.id, p.title, p.title_key, p.updated_at,
                  first_step_of(p.id).label("step_id"))


def builtin_protocols() -> Select[Any]:
    """The built-in protocols, every space's, by title."""
    p = schema.protocols.c
    return _protocol_rows().where(p.builtin == true()).order_by(p.title_key, p.id)


def protocols_after(space: str, after: tuple[str, str] | None, limit: int) -> Select[Any]:
    """Up to ``limit`` protocols of ``space`` past the key ``(title_key, id)``, by that key:
    a range of the ``(space, title_key)`` unique index."""
    p = schema.protocols.c
    q = _protocol_rows().where(p.space == space, p.builtin == false())
    if after is not None:
        q = q.where(tuple_(p.title_key, p.id) > tuple_(*after))
    return q.order_by(p.title_key, p.id).limit(limit)


def entries_after(kind: str, space: str, after: str | None, limit: int) -> Select[Any]:
    """Up to ``limit`` experiences or manuals (``kind``) of ``space`` past the id ``after``."""
    table = entry_table(kind).c
    q = select(table.id, table.title, table.updated_at).where(table.space == space)
    if after is not None:
        q = q.where(table.id > after)
    return q.order_by(table.id).limit(limit)


# --- dataset batches --------------------------------------------------------------------------


def finished_runs(space: str, after: tuple[str, str] | None, limit: int, *,
                  protocol_id: str | None = None, outcome: str | None = None) -> Select[Any]:
    """Up to ``limit`` runs of ``space`` with an outcome past the key ``(created_at, id)``,
    oldest first."""
    r = schema.runs.c
    q = select(schema.runs).where(r.space == space, r.outcome.is_not(None),
                                  *equal(r, protocol_id=protocol_id, outcome=outcome))
    if after is not None:
        q = q.where(tuple_(r.created_at, r.id) > tuple_(*after))
    return q.order_by(r.created_at, r.id).limit(limit)


def proofs_of(run_ids: Sequence[str]) -> Select[Any]:
    """The runs' proof records with their hashes, in order."""
    pr = schema.proofs.c
    return (select(pr.run_id, pr.record, pr.proof_hash).where(pr.run_id.in_(list(run_ids)))
            .order_by(pr.run_id, pr.seq))


def attestations_of(run_ids: Sequence[str]) -> Select[Any]:
    """What a dataset takes of the runs' attestations: the step and the model, in order."""
    a = schema.attestations.c
    return (select(a.run_id, a.step_uri, a.llm_model_id).where(a.run_id.in_(list(run_ids)))
            .order_by(a.id))


def versions_in(keys: Sequence[tuple[str, int]]) -> Select[Any]:
    """The stored protocol versions named by ``(protocol_id, version)`` keys."""
    v = schema.protocol_versions.c
    return (select(v.protocol_id, v.version, v.title, v.markdown, v.steps)
            .where(tuple_(v.protocol_id, v.version).in_(list(keys))))


def steps_beside(step_ids: Sequence[str], space: str) -> Select[Any]:
    """The steps of ``space`` in the protocols of the steps ``step_ids``: every URI whose
    text a change to one of them changes."""
    s = schema.steps.c
    owners = select(s.protocol_id).where(s.id.in_(list(step_ids)), s.space == space)
    return select(s.id).where(s.protocol_id.in_(owners)).order_by(s.protocol_id, s.position)


__all__ = ["attestations_of", "builtin_protocols", "entries_after", "finished_runs",
           "proofs_of", "protocols_after", "steps_beside", "versions_in"]
