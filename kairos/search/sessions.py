"""Search session memory (contract §5 R10): what a conversation already saw and cited.

An LRU of at most ``capacity`` sessions with an idle TTL, guarded by one lock; every
operation is O(1) (an OrderedDict move or pop). Per process, wiped on restart.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from ..domain.responses import SessionInfo
from ..store.sessions import MAX_LAST_QUERIES, merged


class Sessions(Protocol):
    """Session memory: in process (``SessionStore``) or as database rows, one per replica
    set (``kairos.store.sessions.DbSessionStore``)."""

    def get(self, session_id: str) -> SessionInfo | None: ...

    def viewed(self, session_id: str) -> set[str]: ...

    def record(self, session_id: str, *, query: str | None = None,
               viewed: Iterable[str] = ()) -> None: ...

    def cite(self, session_id: str, ids: Iterable[str]) -> SessionInfo: ...


@dataclass
class Session:
    session_id: str
    created_at: float
    last_seen: float
    viewed_ids: list[str] = field(default_factory=list)
    cited_ids: list[str] = field(default_factory=list)
    last_queries: list[str] = field(default_factory=list)

    def snapshot(self) -> SessionInfo:
        return {"session_id": self.session_id, "viewed_ids": list(self.viewed_ids),
                "cited_ids": list(self.cited_ids), "last_queries": list(self.last_queries)}


class SessionStore:
    def __init__(self, capacity: int = 500, ttl_seconds: float = 3600.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.capacity = capacity
        self.ttl = ttl_seconds
        self.clock = clock
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._sessions)

    def _live(self, session_id: str, now: float) -> Session | None:
        session = self._sessions.get(session_id)
        if session is None:
            return None
        if now - session.last_seen > self.ttl:
            del self._sessions[session_id]
            return None
        return session

    def _touch(self, session_id: str) -> Session:
        now = self.clock()
        session = self._live(session_id, now)
        if session is None:
            session = Session(session_id, now, now)
            self._sessions[session_id] = session
            while len(self._sessions) > self.capacity:
                self._sessions.popitem(last=False)  # the least recently used goes
        session.last_seen = now
        self._sessions.move_to_end(session_id)
        return session

    def get(self, session_id: str) -> SessionInfo | None:
        """The session's lists, or None when unknown or expired (does not refresh it)."""
        with self._lock:
            session = self._live(session_id, self.clock())
            return session.snapshot() if session else None

    def viewed(self, session_id: str) -> set[str]:
        with self._lock:
            session = self._live(session_id, self.clock())
            return set(session.viewed_ids) if session else set()

    def record(self, session_id: str, *, query: str | None = None,
               viewed: Iterable[str] = ()) -> None:
        with self._lock:
            session = self._touch(session_id)
            if query:
                session.last_queries.append(query)
                del session.last_queries[:-MAX_LAST_QUERIES]
            session.viewed_ids[:] = merged(session.viewed_ids, viewed)

    def cite(self, session_id: str, ids: Iterable[str]) -> SessionInfo:
        with self._lock:
            session = self._touch(session_id)
            session.cited_ids[:] = merged(session.cited_ids, ids)
            return session.snapshot()
