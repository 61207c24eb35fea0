"""The background work: embed the documents that have no vectors of the current model
(after a model or recipe change, or written while a remote provider was down) and the
learned triggers likewise, in a thread that drains the queue for as long as the process
runs; and the index's state, for ``/health``."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from ..domain import doctext
from ..domain.ports import Embedder
from ..domain.responses import Reindexed
from ..store import search_docs
from ..store.db import Store
from .documents import stored_doc
from .embedders import EmbedderUnavailable, embed
from .indexing import Indexer
from .learning import Learning


class Background:
    def __init__(self, store: Store, embedder: Embedder, indexer: Indexer,
                 learning: Learning) -> None:
        self.store, self.embedder, self.indexer, self.learning = (store, embedder, indexer,
                                                                  learning)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.state = "idle"
        #: Set while the drain's last pass left nothing waiting for vectors.
        self.drained = threading.Event()

    def backfill(self, *, progress: Callable[[int, int], None] | None = None,
                 batch: int = 64, force: bool = False) -> Reindexed:
        """Embed every document that has no vector of the current model (``force``:
        every document), batch by batch: each batch is read, embedded outside any
        transaction, then written where its document has not changed in between."""
        probe = embed(self.embedder, ["dimension probe"])
        if probe is None:
            return {"embedded": 0, "model_id": None, "state": "vectors unavailable"}
        model_id = self.embedder.model_id
        with self.store.engine.begin() as conn:
            self.store.vector_index.prepare(conn, int(probe.shape[1]))
        with self._lock:
            self.state = "running"
            started = time.perf_counter()
            todo = self._pending(model_id, everything=force or self._recipe_changed())
            done = 0
            try:
                for i in range(0, len(todo), batch):
                    if self._stop.is_set():
                        break
                    chunk = todo[i:i + batch]
                    with self.store.read() as repo:
                        specs = [s for r in search_docs.rows(repo.conn, chunk, "kind",
                                                             "entity_id")
                                 if (s := stored_doc(repo, r.kind, r.entity_id))]
                    vectors = self.indexer.embed_docs(specs)
                    if vectors is None:
                        break
                    with self.store.write() as repo:
                        self.indexer.refresh(repo, specs, vectors, model_id)
                    done += len(chunk)
                    if progress:
                        progress(done, len(todo))
                if done == len(todo):
                    with self.store.write() as repo:
                        search_docs.set_meta(repo.conn, "model_id", model_id)
                        search_docs.set_meta(repo.conn, "recipe", doctext.RECIPE)
            finally:
                self.state = "idle"
            return {"embedded": done, "model_id": model_id,
                    "seconds": round(time.perf_counter() - started, 3)}

    def _recipe_changed(self) -> bool:
        """True when the store's vectors were embedded from other texts than
        ``doctext.document`` writes now (a store written by an earlier version). A store
        that has recorded no recipe has only written this one (migration 0007 marks older
        stores): it records it now."""
        with self.store.read() as repo:
            recipe = search_docs.meta(repo.conn, "recipe")
        if recipe is None:
            with self.store.write() as repo:
                search_docs.add_meta(repo.conn, "recipe", doctext.RECIPE)
            return False
        return recipe != doctext.RECIPE

    def _pending(self, model_id: str, *, everything: bool = False) -> list[int]:
        with self.store.read() as repo:
            return search_docs.pending(repo.conn, model_id, everything=everything)

    def start(self, interval: float = 2.0, idle: float = 60.0) -> threading.Thread:
        """Drain the queue of documents without vectors of the current model, for as long
        as the process runs: at start (a model change), right after this process queued a
        write, every ``interval`` while the provider is still down, and every ``idle``
        seconds otherwise (writes another replica queued). Progress: ``index_state``."""
        queued = self.indexer.queued

        def work() -> None:
            woken = False
            while not self._stop.is_set():
                queued.clear()
                # A wake comes from inside the queuing write's transaction, which may not
                # have committed yet: look again one ``interval`` later.
                busy = self._drain() or woken
                (self.drained.clear if busy else self.drained.set)()
                woken = queued.wait(interval if busy else idle)

        self._thread = threading.Thread(target=work, name="kairos-drain", daemon=True)
        self._thread.start()
        return self._thread

    def _drain(self) -> bool:
        """One pass of the drain; True when documents are still waiting for vectors."""
        if self.embedder.name == "none":
            return False
        try:
            self.embedder.probe()  # a remote model's dimension, once it answers
            self.learning.embed_pending()
            if not self._pending(self.embedder.model_id) and not self._recipe_changed():
                return False
            self.backfill()
            self.learning.embed_pending()
            return bool(self._pending(self.embedder.model_id))
        except EmbedderUnavailable:
            return True  # still down: the documents stay queued
        except Exception as exc:  # the drain must outlive a bad moment
            self.state = f"error: {type(exc).__name__}: {exc}"[:200]
            return True

    def stop(self, timeout: float = 30.0) -> None:
        """Stop between batches and wait for the thread."""
        self._stop.set()
        self.indexer.queued.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def index_state(self) -> dict[str, Any]:
        model_id = self.embedder.model_id if self.embedder.ready else None
        with self.store.read() as repo:
            docs, vec = search_docs.totals(repo.conn, model_id or "")
            stored = search_docs.meta(repo.conn, "model_id")
        return {"documents": docs, "with_vectors": vec, "pending": docs - vec,
                "model_id": model_id, "indexed_model_id": stored, "backfill": self.state}
