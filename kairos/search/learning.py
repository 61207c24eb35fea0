"""Learned triggers: a query that led to a proven successful run of a protocol becomes an
example request of that protocol, in its space, searched like an author trigger.

* **Leads.** Every kairos_search remembers, for ``LEAD_MINUTES``, its query, the query's
  vector and the engine's ``LEAD_TOP`` best protocols (matches or not), per space and
  caller (``note``; written by a worker thread, so a search never waits on a write; at
  most ``MAX_WAITING`` wait at once).
* **Learning.** When a run ends in a proven success (``learn``, called in the transaction
  that records the outcome), the caller's searches made before the run began, since
  their previous run and within ``LEAD_MINUTES``, that had the protocol among their best
  become learned triggers of it: at most ``LEARN_PER_RUN`` of them, the most recent
  first. Never from an unproven run or a failure, never across spaces (a lead and a run
  are matched on their space), never a query that is the protocol's title or one of its
  author triggers.
* **Bounds.** Learned triggers are deduplicated (the same words, or vectors closer than
  ``SAME``, count as one, whose ``runs`` grows) and at most ``limits.LEARNED_TRIGGERS``
  per protocol: the least recently used go first.
* **Vectors.** A learned trigger keeps its query's vector; the protocol's search vectors
  are its own, its author triggers' and then its learned triggers' (``sync``). After a
  model change the drain embeds the learned texts again (``embed_pending``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from concurrent import futures
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from ..domain import doctext, limits
from ..domain.ports import Embedder
from ..domain.uris import new_id
from ..store import learned, search_docs
from ..store.db import Store
from ..store.repo import Repo
from ..store.schema import stamp
from .embedders import embed

if TYPE_CHECKING:
    from .ranking import Ranked

LEAD_MINUTES = 30
LEAD_TOP = 10
#: Searches waiting to be remembered at most: beyond, a search is not remembered (a busy
#: server keeps answering; it only learns less).
MAX_WAITING = 256
LEARN_PER_RUN = 3
SAME = 0.97
_log = logging.getLogger(__name__)


class Learning:
    def __init__(self, store: Store, embedder: Embedder) -> None:
        self.store, self.embedder = store, embedder
        self._writer = futures.ThreadPoolExecutor(1, thread_name_prefix="kairos-leads")
        self._pending: list[futures.Future[None]] = []
        self._lock = threading.Lock()

    # --- leads ---------------------------------------------------------------------------

    def note(self, space: str, caller: str, query: str, ranked: Ranked) -> None:
        """Remember a protocol search (in the background)."""
        ids = list(dict.fromkeys(h.entity_id for h in ranked.hits
                                 if h.kind == "protocol"))[:LEAD_TOP]
        if not ids:
            return
        vector = ranked.query_vector
        row = {"space": space, "caller": caller, "query": doctext.embedding_query(query),
               "protocol_ids": ids, "created_at": stamp(datetime.now(UTC)),
               "vector": None if vector is None else np.asarray(vector, np.float32).tobytes(),
               "model_id": None if vector is None else self.embedder.model_id}
        with self._lock:
            self._pending = [f for f in self._pending if not f.done()]
            if len(self._pending) >= MAX_WAITING:
                return
            with suppress(RuntimeError):  # shut down: the process is stopping
                self._pending.append(self._writer.submit(self._write_lead, row))

    def _write_lead(self, row: dict[str, Any]) -> None:
        cutoff = stamp(datetime.now(UTC) - timedelta(minutes=LEAD_MINUTES))
        try:
            with self.store.write() as repo:
                learned.add_lead(repo.conn, row, older_than=cutoff)
        except Exception:  # a lost lead only means nothing is learned from it
            _log.warning("could not remember a search", exc_info=True)

    def flush(self, timeout: float = 30.0) -> None:
        """Wait until the searches made so far are remembered."""
        with self._lock:
            pending = list(self._pending)
        futures.wait(pending, timeout=timeout)

    def close(self) -> None:
        self.flush()
        self._writer.shutdown(wait=True)

    # --- learning ------------------------------------------------------------------------

    def learn(self, repo: Repo, run: Any) -> list[str]:
        """The learned triggers a proven successful ``run`` teaches its protocol (see the
        module docstring); in the caller's transaction. Returns their texts."""
        conn = repo.conn
        protocol = repo.protocol(run["protocol_id"])
        if protocol is None or protocol["builtin"] or protocol["space"] != run["space"]:
            return []
        started = run["created_at"]
        earlier = learned.previous_start(conn, run["space"], run["caller"], started)
        since = stamp(datetime.fromisoformat(started) - timedelta(minutes=LEAD_MINUTES))
        since = max(since, earlier or since)
        leads = learned.leads(conn, run["space"], run["caller"], since, started)
        known = {doctext.title_form(t) for t in (protocol["title"], *(protocol["triggers"] or ()))}
        chosen = []
        for lead in leads:  # the most recent first
            key = doctext.title_form(lead.query)
            if (protocol["id"] not in lead.protocol_ids or key in known or not key
                    or len(lead.query) > limits.TRIGGER_CHARS):
                continue
            known.add(key)
            chosen.append((lead, key))
            if len(chosen) == LEARN_PER_RUN:
                break
        for lead, key in reversed(chosen):  # so that the most recent is the last used
            self._remember(repo, protocol, lead.query, key, lead.vector, lead.model_id)
        if chosen:
            learned.keep_recent(conn, protocol["id"], limits.LEARNED_TRIGGERS)
            self.sync(repo, protocol["id"])
        return [lead.query for lead, _ in reversed(chosen)]

    @staticmethod
    def _remember(repo: Repo, protocol: Any, text: str, key: str, vector: bytes | None,
                  model_id: str | None) -> None:
        now = stamp(datetime.now(UTC))
        rows = learned.of_protocol(repo.conn, protocol["id"])
        same = next((r.id for r in rows if r.text_key == key), None)
        if same is None and vector is not None:
            mine = np.frombuffer(vector, np.float32)
            same = next((r.id for r in rows if r.vector is not None and r.model_id == model_id
                         and float(np.frombuffer(r.vector, np.float32) @ mine) >= SAME), None)
        if same is not None:
            learned.seen_again(repo.conn, same, now)
            return
        learned.add(repo.conn, id=new_id(), space=protocol["space"], protocol_id=protocol["id"],
                    text=text, text_key=key, runs=1, vector=vector, model_id=model_id,
                    created_at=now, last_seen=now)

    # --- forgetting -----------------------------------------------------------------------

    def forget(self, repo: Repo, protocol_id: str, trigger_ids: Sequence[str]) -> int:
        """Remove learned triggers of a protocol (all of them when ``trigger_ids`` is
        empty); the number removed."""
        removed = learned.forget(repo.conn, protocol_id, trigger_ids)
        if removed:
            self.sync(repo, protocol_id)
        return removed

    # --- vectors -------------------------------------------------------------------------

    def sync(self, repo: Repo, protocol_id: str) -> None:
        """The protocol's search vectors again: its own and its author triggers' as
        stored, then its learned triggers'. Nothing while it has no vectors (queued)."""
        if not self.embedder.ready:
            return
        conn = repo.conn
        model_id = self.embedder.model_id
        doc = search_docs.doc_of(conn, search_docs.key_of("protocol", protocol_id))
        if doc is None:
            return
        own = search_docs.vectors_of(conn, [doc.rid], model_id, learned=False)
        if not own:
            return
        taught = learned.vectors(conn, protocol_id, model_id)
        matrix = np.stack([np.frombuffer(r.vector, np.float32) for r in own] + taught)
        self.store.vector_index.upsert(conn, doc.rid, doc.space, doc.kind, matrix, model_id,
                                       [r.role for r in own] + ["learned"] * len(taught))

    def embed_pending(self) -> int:
        """Embed the learned triggers that have no vector of the current model (after a
        model change, or learned while the provider was down); the number embedded."""
        if not self.embedder.ready:
            return 0
        model_id = self.embedder.model_id
        with self.store.read() as repo:
            todo = learned.stale(repo.conn, model_id)
        if not todo:
            return 0
        vectors = embed(self.embedder, [text for _, _, text in todo])
        if vectors is None:
            return 0
        with self.store.write() as repo:
            for (tid, _, _), vec in zip(todo, vectors, strict=True):
                learned.set_vector(repo.conn, tid, vec, model_id)
            for protocol_id in {pid for _, pid, _ in todo}:
                self.sync(repo, protocol_id)
        return len(todo)
