"""The search engine, put together from its parts: ``indexing`` keeps the index in step
with every write, ``candidates`` reads a query's candidates and their evidence and
``ranking`` scores them on one scale (kairos_search and the unified search, contract §5),
``duplicates`` checks a write against its kind's records, ``learning`` learns triggers
from proven runs, and ``background`` embeds what is still waiting for vectors."""

from __future__ import annotations

from ..domain.ports import Embedder
from ..domain.search_sessions import Sessions
from ..store.db import Store
from .background import Background
from .candidates import Candidates
from .duplicates import Duplicates
from .indexing import Indexer
from .learning import Learning
from .sessions import SessionStore

__all__ = ["SearchService"]


class SearchService:
    def __init__(self, store: Store, embedder: Embedder, sessions: Sessions | None = None
                 ) -> None:
        self.store, self.embedder = store, embedder
        self.sessions: Sessions = sessions or SessionStore()
        self.indexing = Indexer(store, embedder)
        self.candidates = Candidates(store, embedder)
        self.duplicates = Duplicates(store, embedder)
        self.learning = Learning(store, embedder)
        self.background = Background(store, embedder, self.indexing, self.learning)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop background work between batches and wait for it."""
        self.background.stop(timeout)
        self.candidates.close()
        self.learning.close()
