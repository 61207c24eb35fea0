"""Search sessions in process: an LRU of at most ``capacity`` sessions with an idle TTL,
guarded by one lock; every operation is O(1) (an OrderedDict move or pop). Per process,
wiped on restart."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable

from ..domain.responses import SessionInfo
from ..domain.search_sessions import SessionLists, Sessions


class SessionStore(Sessions):
    def __init__(self, capacity: int = 500, ttl_seconds: float = 3600.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.capacity = capacity
        self.ttl = ttl_seconds
        self.clock = clock
        self._sessions: OrderedDict[str, tuple[float, SessionLists]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._sessions)

    def _live(self, session_id: str, now: float) -> SessionLists | None:
        entry = self._sessions.get(session_id)
        if entry is None:
            return None
        last_seen, lists = entry
        if now - last_seen > self.ttl:
            del self._sessions[session_id]
            return None
        return lists

    def get(self, session_id: str) -> SessionInfo | None:
        with self._lock:
            lists = self._live(session_id, self.clock())
            return lists.info(session_id) if lists else None

    def change(self, session_id: str, *, query: str | None = None,
               viewed: Iterable[str] = (), cited: Iterable[str] = ()) -> SessionInfo:
        with self._lock:
            now = self.clock()
            lists = self._live(session_id, now) or SessionLists()
            self._sessions[session_id] = (now, lists)
            self._sessions.move_to_end(session_id)
            while len(self._sessions) > self.capacity:
                self._sessions.popitem(last=False)  # the least recently used goes
            lists.add(query=query, viewed=viewed, cited=cited)
            return lists.info(session_id)
