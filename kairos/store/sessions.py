"""Search sessions as rows, with the same semantics as the in-process LRU: at most
``capacity`` sessions (the least recently seen go first), ``ttl`` seconds of idleness."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy import delete, func, insert, select, update

from ..domain.responses import SessionInfo
from . import schema
from .db import Store

MAX_LAST_QUERIES = 20


def merged(current: list[str], ids: Iterable[str]) -> list[str]:
    """``current`` then the ``ids`` it does not hold yet, in order."""
    out = list(current)
    seen = set(out)
    for i in ids:
        if i not in seen:
            out.append(i)
            seen.add(i)
    return out


class DbSessionStore:
    def __init__(self, store: Store, capacity: int = 500, ttl_seconds: float = 3600.0,
                 clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.capacity = capacity
        self.ttl = ttl_seconds
        self.clock = clock

    def __len__(self) -> int:
        with self.store.read() as repo:
            return int(repo.conn.execute(
                select(func.count()).select_from(schema.search_sessions)
                .where(schema.search_sessions.c.last_seen >= self.clock() - self.ttl)).scalar_one())

    def _row(self, conn: Any, session_id: str, lock: bool = False) -> Any:
        q = select(schema.search_sessions).where(schema.search_sessions.c.session_id == session_id)
        if lock:
            q = q.with_for_update()
        row = conn.execute(q).mappings().first()
        if row is not None and self.clock() - row["last_seen"] > self.ttl:
            return None
        return row

    def get(self, session_id: str) -> SessionInfo | None:
        with self.store.read() as repo:
            row = self._row(repo.conn, session_id)
        if row is None:
            return None
        return {"session_id": session_id, "viewed_ids": list(row["viewed_ids"]),
                "cited_ids": list(row["cited_ids"]), "last_queries": list(row["last_queries"])}

    def viewed(self, session_id: str) -> set[str]:
        with self.store.read() as repo:
            row = self._row(repo.conn, session_id)
        return set(row["viewed_ids"]) if row is not None else set()

    def _change(self, session_id: str, *, query: str | None = None,
                viewed: Iterable[str] = (), cited: Iterable[str] = ()) -> SessionInfo:
        now = self.clock()
        with self.store.write() as repo:
            conn = repo.conn
            row = self._row(conn, session_id, lock=True)
            if row is None:
                conn.execute(delete(schema.search_sessions).where(
                    schema.search_sessions.c.session_id == session_id))
                values: dict[str, list[str]] = {"viewed_ids": [], "cited_ids": [],
                                                "last_queries": []}
                conn.execute(insert(schema.search_sessions).values(
                    session_id=session_id, last_seen=now, **values))
                self._evict(conn, now)
            else:
                values = {k: list(row[k]) for k in ("viewed_ids", "cited_ids", "last_queries")}
            values["viewed_ids"] = merged(values["viewed_ids"], viewed)
            values["cited_ids"] = merged(values["cited_ids"], cited)
            if query:
                values["last_queries"] = (values["last_queries"] + [query])[-MAX_LAST_QUERIES:]
            conn.execute(update(schema.search_sessions).where(
                schema.search_sessions.c.session_id == session_id).values(last_seen=now, **values))
        return {"session_id": session_id, "viewed_ids": values["viewed_ids"],
                "cited_ids": values["cited_ids"], "last_queries": values["last_queries"]}

    def _evict(self, conn: Any, now: float) -> None:
        c = schema.search_sessions.c
        conn.execute(delete(schema.search_sessions).where(c.last_seen < now - self.ttl))
        keep = select(c.session_id).order_by(c.last_seen.desc()).limit(self.capacity)
        conn.execute(delete(schema.search_sessions).where(c.session_id.not_in(keep.scalar_subquery())))

    def record(self, session_id: str, *, query: str | None = None,
               viewed: Iterable[str] = ()) -> None:
        self._change(session_id, query=query, viewed=viewed)

    def cite(self, session_id: str, ids: Iterable[str]) -> SessionInfo:
        return self._change(session_id, cited=ids)
