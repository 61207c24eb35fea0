"""Search sessions as rows, one set for every replica, with the same semantics as the
in-process LRU."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, fields
from typing import Any

from sqlalchemy import delete, func, insert, select, update

from ..domain.responses import SessionInfo
from ..domain.search_sessions import SessionLists, Sessions
from . import schema
from .db import Store


class DbSessionStore(Sessions):
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
        return None if row is None else _lists(row).info(session_id)

    def change(self, session_id: str, *, query: str | None = None,
               viewed: Iterable[str] = (), cited: Iterable[str] = ()) -> SessionInfo:
        now = self.clock()
        with self.store.write() as repo:
            conn, table = repo.conn, schema.search_sessions
            row = self._row(conn, session_id, lock=True)
            lists = SessionLists() if row is None else _lists(row)
            lists.add(query=query, viewed=viewed, cited=cited)
            values = {"last_seen": now, **asdict(lists)}
            this = table.c.session_id == session_id
            if row is None:  # new, or in place of one expired
                conn.execute(delete(table).where(this))
                conn.execute(insert(table).values(session_id=session_id, **values))
                self._evict(conn, now)
            else:
                conn.execute(update(table).where(this).values(**values))
        return lists.info(session_id)

    def _evict(self, conn: Any, now: float) -> None:
        c = schema.search_sessions.c
        conn.execute(delete(schema.search_sessions).where(c.last_seen < now - self.ttl))
        keep = select(c.session_id).order_by(c.last_seen.desc()).limit(self.capacity)
        conn.execute(delete(schema.search_sessions).where(c.session_id.not_in(keep.scalar_subquery())))


def _lists(row: Any) -> SessionLists:
    return SessionLists(*(list(row[f.name]) for f in fields(SessionLists)))
