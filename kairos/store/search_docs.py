"""The search documents (``search_docs``: one row per searchable record, keyed
``kind:entity_id``), the reads of their vectors beside the vector index's own, and the
index's bookkeeping (``index_meta``: the model and text recipe of its vectors, the vector
cache's version, the write counters of the duplicate check's guard)."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.engine import Connection

from . import schema

_DOCS, _VECTORS, _META = schema.search_docs, schema.search_vectors, schema.index_meta
_D, _V = _DOCS.c, _VECTORS.c


def key_of(kind: str, entity_id: str) -> str:
    return f"{kind}:{entity_id}"


def upsert(conn: Connection, key: str, values: Mapping[str, Any]) -> int:
    """Insert or update the document ``key``; its rid."""
    row = conn.execute(select(_D.rid).where(_D.key == key)).first()
    if row is None:
        res = conn.execute(insert(_DOCS).values(key=key, **values))
        return int(res.inserted_primary_key[0])  # type: ignore[index]
    conn.execute(update(_DOCS).where(_D.rid == row[0]).values(**values))
    return int(row[0])


def rids_of(conn: Connection, keys: Sequence[str]) -> list[int]:
    return [r[0] for r in conn.execute(select(_D.rid).where(_D.key.in_(list(keys))))]


def remove(conn: Connection, keys: Sequence[str]) -> list[int]:
    """Delete the documents ``keys``; the rids they had."""
    rids = rids_of(conn, keys)
    conn.execute(delete(_DOCS).where(_D.rid.in_(rids)))
    return rids


def rows(conn: Connection, rids: Collection[int], *columns: str) -> Sequence[Any]:
    """The ``columns`` (all of them when none are named) of the documents ``rids``."""
    wanted: list[Any] = [_D[name] for name in columns] or [_DOCS]
    return conn.execute(select(*wanted).where(_D.rid.in_(list(rids)))).all()


def listed(conn: Connection, rids: Iterable[int], filters: Mapping[str, str] | None,
           exclude: set[str] | None, boosts: bool) -> list[dict[str, Any]]:
    """What a hit shows of the documents ``rids`` that ``filters`` (column → value) and
    ``exclude`` (entity ids) leave, with a protocol's successes and failures (``boosts``)."""
    m = schema.protocol_metrics.c
    q = select(_D.rid, _D.kind, _D.entity_id, _D.space, _D.title, _D.category, _D.section,
               _D.author, _D.updated_at).where(_D.rid.in_(list(rids)))
    for column, value in (filters or {}).items():
        q = q.where(_D[column] == value)
    if exclude:
        q = q.where(_D.entity_id.not_in(list(exclude)))
    if boosts:
        q = q.add_columns(m.successes, m.failures).outerjoin(
            schema.protocol_metrics, (_D.kind == "protocol") & (m.protocol_id == _D.entity_id))
    return [dict(r) for r in conn.execute(q).mappings()]


def count(conn: Connection, space: str, kinds: Sequence[str]) -> int:
    return int(conn.execute(select(func.count()).where(
        (_D.space == space) & _D.kind.in_(list(kinds)))).scalar_one())


def pending(conn: Connection, model_id: str, *, everything: bool = False) -> list[int]:
    """The documents without vectors of ``model_id`` (``everything``: all), by rid."""
    q = select(_D.rid).order_by(_D.rid)
    if not everything:
        q = q.where(~select(_V.rid).where((_V.rid == _D.rid) & (_V.model_id == model_id))
                    .exists())
    return [r[0] for r in conn.execute(q)]


def stamps(conn: Connection, keys: Sequence[str]) -> dict[str, tuple[int, str]]:
    """Each stored document's rid and ``updated_at``, by key."""
    return {r.key: (r.rid, r.updated_at) for r in conn.execute(
        select(_D.key, _D.rid, _D.updated_at).where(_D.key.in_(list(keys))))}


def totals(conn: Connection, model_id: str) -> tuple[int, int]:
    """How many documents there are, and how many have vectors of ``model_id``."""
    docs = conn.execute(select(func.count()).select_from(_DOCS)).scalar_one()
    return int(docs), int(conn.execute(select(func.count(_V.rid.distinct())).where(
        _V.model_id == model_id)).scalar_one())


def doc_of(conn: Connection, key: str) -> Any | None:
    """The rid, space and kind of the document ``key``."""
    return conn.execute(select(_D.rid, _D.space, _D.kind).where(_D.key == key)).first()


def vectors_of(conn: Connection, rids: Sequence[int], model_id: str, *,
               learned: bool = True) -> Sequence[Any]:
    """The stored vectors of ``model_id`` of the documents ``rids`` (without their learned
    triggers' unless ``learned``), in seq order: (rid, role, vector)."""
    q = select(_V.rid, _V.role, _V.vector).where(_V.rid.in_(list(rids)),
                                                  _V.model_id == model_id)
    if not learned:
        q = q.where(_V.role != "learned").order_by(_V.rid, _V.seq)
    return conn.execute(q).all()


# --- the index's bookkeeping ----------------------------------------------------------------


def meta(conn: Connection, key: str) -> str | None:
    row = conn.execute(select(_META.c.value).where(_META.c.key == key)).first()
    return None if row is None else str(row[0])


def set_meta(conn: Connection, key: str, value: str) -> None:
    if conn.execute(update(_META).where(_META.c.key == key).values(value=value)).rowcount == 0:
        conn.execute(insert(_META).values(key=key, value=value))


def add_meta(conn: Connection, key: str, value: str) -> str:
    """Store ``value`` unless the key has one (another writer's, perhaps a moment ago);
    the value the key holds."""
    conn.execute(schema.insert_new(conn, _META).values(key=key, value=value))
    return meta(conn, key) or value


def writes_key(space: str, kind: str) -> str:
    """The counter of the checked writes of ``kind`` in ``space``."""
    return f"writes:{kind}:{hashlib.sha256(space.encode('utf-8')).hexdigest()[:40]}"


def count_write(conn: Connection, space: str, kind: str, seen: int) -> bool:
    """Count one checked write, if the counter still reads ``seen``. On PostgreSQL the
    conditional UPDATE row-locks the counter until commit, so two writers cannot both
    pass it."""
    return bool(conn.execute(update(_META).where(
        (_META.c.key == writes_key(space, kind)) & (_META.c.value == str(seen)))
        .values(value=str(seen + 1))).rowcount)
