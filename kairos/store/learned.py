"""Learned triggers (``learned_triggers``) and the recent protocol searches they are
learned from (``search_leads``): the statements of ``search.learning``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np
from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.engine import Connection

from ..domain.responses import LearnedTrigger
from . import schema

_LEARNED, _LEADS = schema.learned_triggers, schema.search_leads
_L = _LEARNED.c


def add_lead(conn: Connection, row: dict[str, Any], *, older_than: str) -> None:
    """Remember a search, and forget those made before ``older_than``."""
    conn.execute(delete(_LEADS).where(_LEADS.c.created_at < older_than))
    conn.execute(insert(_LEADS).values(**row))


def previous_start(conn: Connection, space: str, caller: str, before: str) -> str | None:
    """When the caller's last run in ``space`` before ``before`` began."""
    r = schema.runs.c
    return conn.execute(select(func.max(r.created_at)).where(
        (r.space == space) & (r.caller == caller) & (r.created_at < before))).scalar()


def leads(conn: Connection, space: str, caller: str, after: str, until: str,
          limit: int = 50) -> Sequence[Any]:
    """The caller's searches in ``space`` made after ``after`` and by ``until``, the most
    recent first: (query, protocol_ids, vector, model_id)."""
    c = _LEADS.c
    return conn.execute(
        select(c.query, c.protocol_ids, c.vector, c.model_id)
        .where((c.space == space) & (c.caller == caller) & (c.created_at > after)
               & (c.created_at <= until))
        .order_by(c.created_at.desc()).limit(limit)).all()


def of_protocol(conn: Connection, protocol_id: str) -> Sequence[Any]:
    """A protocol's learned triggers: (id, text_key, vector, model_id)."""
    return conn.execute(select(_L.id, _L.text_key, _L.vector, _L.model_id).where(
        _L.protocol_id == protocol_id)).all()


def seen_again(conn: Connection, trigger_id: str, now: str) -> None:
    conn.execute(update(_LEARNED).where(_L.id == trigger_id).values(
        runs=_L.runs + 1, last_seen=now))


def add(conn: Connection, **values: Any) -> None:
    conn.execute(insert(_LEARNED).values(**values))


def keep_recent(conn: Connection, protocol_id: str, keep: int) -> None:
    """Keep the ``keep`` most recently used learned triggers of a protocol."""
    ids = [r[0] for r in conn.execute(select(_L.id).where(_L.protocol_id == protocol_id)
                                      .order_by(_L.last_seen.desc(), _L.runs.desc()))]
    if len(ids) > keep:
        conn.execute(delete(_LEARNED).where(_L.id.in_(ids[keep:])))


def listing(conn: Connection, protocol_id: str) -> list[LearnedTrigger]:
    q = (select(_L.id, _L.text, _L.runs, _L.created_at, _L.last_seen)
         .where(_L.protocol_id == protocol_id).order_by(_L.last_seen.desc(), _L.id))
    return [cast(LearnedTrigger, dict(r)) for r in conn.execute(q).mappings()]


def forget(conn: Connection, protocol_id: str, trigger_ids: Sequence[str]) -> int:
    """Remove learned triggers of a protocol (all of them when ``trigger_ids`` is empty);
    the number removed."""
    q = delete(_LEARNED).where(_L.protocol_id == protocol_id)
    if trigger_ids:
        q = q.where(_L.id.in_(list(trigger_ids)))
    return int(conn.execute(q).rowcount or 0)


def vectors(conn: Connection, protocol_id: str, model_id: str) -> list[np.ndarray]:
    """The learned triggers' vectors of ``model_id``, most recently used first."""
    return [np.frombuffer(r[0], np.float32) for r in conn.execute(
        select(_L.vector).where((_L.protocol_id == protocol_id) & (_L.model_id == model_id)
                                & _L.vector.is_not(None))
        .order_by(_L.last_seen.desc(), _L.id))]


def stale(conn: Connection, model_id: str) -> list[tuple[str, str, str]]:
    """(id, protocol id, text) of learned triggers without a vector of ``model_id``."""
    return [(r.id, r.protocol_id, r.text) for r in conn.execute(
        select(_L.id, _L.protocol_id, _L.text).where(
            _L.vector.is_(None) | (_L.model_id != model_id) | _L.model_id.is_(None)))]


def set_vector(conn: Connection, trigger_id: str, vector: np.ndarray, model_id: str) -> None:
    conn.execute(update(_LEARNED).where(_L.id == trigger_id).values(
        vector=np.asarray(vector, np.float32).tobytes(), model_id=model_id))

