"""Search session memory (contract §5 R10): what a conversation already saw and cited,
and how each search or citation adds to it, the same for sessions kept in process
(``search.sessions.SessionStore``) and as database rows (``store.sessions.DbSessionStore``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field

from .responses import SessionInfo

MAX_LAST_QUERIES = 20


def merged(current: list[str], ids: Iterable[str]) -> list[str]:
    """``current`` then the ``ids`` it does not hold yet, in order."""
    return list(dict.fromkeys([*current, *ids]))


@dataclass
class SessionLists:
    viewed_ids: list[str] = field(default_factory=list)
    cited_ids: list[str] = field(default_factory=list)
    last_queries: list[str] = field(default_factory=list)

    def add(self, *, query: str | None = None, viewed: Iterable[str] = (),
            cited: Iterable[str] = ()) -> None:
        self.viewed_ids = merged(self.viewed_ids, viewed)
        self.cited_ids = merged(self.cited_ids, cited)
        if query:
            self.last_queries = [*self.last_queries, query][-MAX_LAST_QUERIES:]

    def info(self, session_id: str) -> SessionInfo:
        return {"session_id": session_id, "viewed_ids": list(self.viewed_ids),
                "cited_ids": list(self.cited_ids), "last_queries": list(self.last_queries)}


class Sessions(ABC):
    """Session memory: at most ``capacity`` sessions (the least recently seen go first),
    each forgotten after ``ttl`` seconds of idleness."""

    @abstractmethod
    def get(self, session_id: str) -> SessionInfo | None:
        """The session's lists, or None when unknown or expired (does not refresh it)."""

    @abstractmethod
    def change(self, session_id: str, *, query: str | None = None,
               viewed: Iterable[str] = (), cited: Iterable[str] = ()) -> SessionInfo:
        """Refresh the session (made when unknown or expired) and add to its lists."""

    def viewed(self, session_id: str) -> set[str]:
        info = self.get(session_id)
        return set(info["viewed_ids"]) if info else set()

    def record(self, session_id: str, *, query: str | None = None,
               viewed: Iterable[str] = ()) -> None:
        self.change(session_id, query=query, viewed=viewed)

    def cite(self, session_id: str, ids: Iterable[str]) -> SessionInfo:
        return self.change(session_id, cited=ids)


__all__ = ["MAX_LAST_QUERIES", "SessionLists", "Sessions", "merged"]
