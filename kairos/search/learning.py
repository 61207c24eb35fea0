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
from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.engine import Connection

from ..domain import doctext, limits
from ..domain.responses import LearnedTrigger
from ..domain.uris import new_id
from ..store import schema
from ..store.repo import Repo

if TYPE_CHECKING:
    from .ranking import Ranked
    from .service import SearchService

LEAD_MINUTES = 30
LEAD_TOP = 10
#: Searches waiting to be remembered at most: beyond, a search is not remembered (a busy
#: server keeps answering; it only learns less).
MAX_WAITING = 256
LEARN_PER_RUN = 3
SAME = 0.97
_log = logging.getLogger(__name__)


def _stamp(moment: datetime | None = None) -> str:
    return (moment or datetime.now(UTC)).isoformat(timespec="microseconds")


def _key(text: str) -> str:
    return doctext.title_form(text)


class Learning:
    def __init__(self, search: SearchService) -> None:
        self.search = search
        self.store = search.store
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
               "protocol_ids": ids, "created_at": _stamp(),
               "vector": None if vector is None else np.asarray(vector, np.float32).tobytes(),
               "model_id": None if vector is None else self.search.embedder.model_id}
        with self._lock:
            self._pending = [f for f in self._pending if not f.done()]
            if len(self._pending) >= MAX_WAITING:
                return
            with suppress(RuntimeError):  # shut down: the process is stopping
                self._pending.append(self._writer.submit(self._write_lead, row))

    def _write_lead(self, row: dict[str, Any]) -> None:
        cutoff = _stamp(datetime.now(UTC) - timedelta(minutes=LEAD_MINUTES))
        try:
            with self.store.write() as repo:
                repo.conn.execute(delete(schema.search_leads).where(
                    schema.search_leads.c.created_at < cutoff))
                repo.conn.execute(insert(schema.search_leads).values(**row))
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
        earlier = conn.execute(select(func.max(schema.runs.c.created_at)).where(
            (schema.runs.c.space == run["space"]) & (schema.runs.c.caller == run["caller"])
            & (schema.runs.c.created_at < started))).scalar()
        since = _stamp(datetime.fromisoformat(started) - timedelta(minutes=LEAD_MINUTES))
        since = max(since, earlier or since)
        c = schema.search_leads.c
        leads = conn.execute(
            select(c.query, c.protocol_ids, c.vector, c.model_id)
            .where((c.space == run["space"]) & (c.caller == run["caller"])
                   & (c.created_at > since) & (c.created_at <= started))
            .order_by(c.created_at.desc()).limit(50)).all()
        known = {_key(protocol["title"])} | {_key(x) for x in protocol["triggers"] or ()}
        chosen = []
        for lead in leads:  # the most recent first
            key = _key(lead.query)
            if (protocol["id"] not in lead.protocol_ids or key in known or not key
                    or len(lead.query) > limits.TRIGGER_CHARS):
                continue
            known.add(key)
            chosen.append((lead, key))
            if len(chosen) == LEARN_PER_RUN:
                break
        learned: list[str] = []
        for lead, key in reversed(chosen):  # so that the most recent is the last used
            self._remember(conn, protocol, lead.query, key, lead.vector, lead.model_id)
            learned.append(lead.query)
        if learned:
            self._bound(conn, protocol["id"])
            self.sync(repo, protocol["id"])
        return learned

    def _remember(self, conn: Connection, protocol: Any, text: str, key: str,
                  vector: bytes | None, model_id: str | None) -> None:
        c = schema.learned_triggers.c
        now = _stamp()
        rows = conn.execute(select(c.id, c.text_key, c.vector, c.model_id).where(
            c.protocol_id == protocol["id"])).all()
        same = next((r.id for r in rows if r.text_key == key), None)
        if same is None and vector is not None:
            mine = np.frombuffer(vector, np.float32)
            same = next((r.id for r in rows if r.vector is not None and r.model_id == model_id
                         and float(np.frombuffer(r.vector, np.float32) @ mine) >= SAME), None)
        if same is not None:
            conn.execute(update(schema.learned_triggers).where(c.id == same).values(
                runs=c.runs + 1, last_seen=now))
            return
        conn.execute(insert(schema.learned_triggers).values(
            id=new_id(), space=protocol["space"], protocol_id=protocol["id"], text=text,
            text_key=key, runs=1, vector=vector, model_id=model_id, created_at=now,
            last_seen=now))

    @staticmethod
    def _bound(conn: Connection, protocol_id: str) -> None:
        c = schema.learned_triggers.c
        ids = [r[0] for r in conn.execute(select(c.id).where(c.protocol_id == protocol_id)
                                          .order_by(c.last_seen.desc(), c.runs.desc()))]
        if len(ids) > limits.LEARNED_TRIGGERS:
            conn.execute(delete(schema.learned_triggers).where(
                c.id.in_(ids[limits.LEARNED_TRIGGERS:])))

    # --- reading and forgetting ------------------------------------------------------------

    @staticmethod
    def listing(conn: Connection, protocol_id: str) -> list[LearnedTrigger]:
        c = schema.learned_triggers.c
        return [{"id": r.id, "text": r.text, "runs": r.runs, "created_at": r.created_at,
                 "last_seen": r.last_seen}
                for r in conn.execute(select(c.id, c.text, c.runs, c.created_at, c.last_seen)
                                      .where(c.protocol_id == protocol_id)
                                      .order_by(c.last_seen.desc(), c.id))]

    def forget(self, repo: Repo, protocol_id: str, trigger_ids: Sequence[str]) -> int:
        """Remove learned triggers of a protocol (all of them when ``trigger_ids`` is
        empty); the number removed."""
        c = schema.learned_triggers.c
        q = delete(schema.learned_triggers).where(c.protocol_id == protocol_id)
        if trigger_ids:
            q = q.where(c.id.in_(list(trigger_ids)))
        removed = int(repo.conn.execute(q).rowcount or 0)
        if removed:
            self.sync(repo, protocol_id)
        return removed

    # --- vectors -------------------------------------------------------------------------

    @staticmethod
    def vectors(conn: Connection, protocol_id: str, model_id: str) -> list[np.ndarray]:
        """The learned triggers' vectors of ``model_id``, most recently used first."""
        c = schema.learned_triggers.c
        return [np.frombuffer(r[0], np.float32) for r in conn.execute(
            select(c.vector).where((c.protocol_id == protocol_id) & (c.model_id == model_id)
                                   & c.vector.is_not(None))
            .order_by(c.last_seen.desc(), c.id))]

    def sync(self, repo: Repo, protocol_id: str) -> None:
        """The protocol's search vectors again: its own and its author triggers' as
        stored, then its learned triggers'. Nothing while it has no vectors (queued)."""
        if not self.search.vectors_ready:
            return
        conn = repo.conn
        model_id = self.search.embedder.model_id
        d, v = schema.search_docs.c, schema.search_vectors.c
        doc = conn.execute(select(d.rid, d.space, d.kind).where(
            d.key == f"protocol:{protocol_id}")).first()
        if doc is None:
            return
        own = conn.execute(select(v.vector, v.role).where(
            (v.rid == doc.rid) & (v.model_id == model_id) & (v.role != "learned"))
            .order_by(v.seq)).all()
        if not own:
            return
        learned = self.vectors(conn, protocol_id, model_id)
        matrix = np.stack([np.frombuffer(r.vector, np.float32) for r in own] + learned)
        self.store.vector_index.upsert(conn, doc.rid, doc.space, doc.kind, matrix, model_id,
                                       [r.role for r in own] + ["learned"] * len(learned))

    def stale(self, model_id: str) -> list[tuple[str, str, str]]:
        """(id, protocol id, text) of learned triggers without a vector of ``model_id``."""
        c = schema.learned_triggers.c
        with self.store.read() as repo:
            return [(r.id, r.protocol_id, r.text) for r in repo.conn.execute(
                select(c.id, c.protocol_id, c.text).where(
                    c.vector.is_(None) | (c.model_id != model_id) | c.model_id.is_(None)))]

    def embed_pending(self) -> int:
        """Embed the learned triggers that have no vector of the current model (after a
        model change, or learned while the provider was down); the number embedded."""
        if not self.search.vectors_ready:
            return 0
        model_id = self.search.embedder.model_id
        todo = self.stale(model_id)
        if not todo:
            return 0
        vectors = self.search.embed_texts([text for _, _, text in todo])
        if vectors is None:
            return 0
        c = schema.learned_triggers.c
        with self.store.write() as repo:
            for (tid, _, _), vec in zip(todo, vectors, strict=True):
                repo.conn.execute(update(schema.learned_triggers).where(c.id == tid).values(
                    vector=np.asarray(vec, np.float32).tobytes(), model_id=model_id))
            for protocol_id in {pid for _, pid, _ in todo}:
                self.sync(repo, protocol_id)
        return len(todo)
