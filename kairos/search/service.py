"""The search engine: keeps the index in step with every write (learned triggers
included, ``learning``), and answers kairos_search and the unified search (contract §5) with
one score (``ranking``, ``domain.matching``) from the dense evidence of the vector index,
the text evidence of the full-text index and the lexical evidence of the records' text."""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from typing import Any

import numpy as np
from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from ..domain import doctext
from ..domain.ports import Embedder
from ..domain.responses import Duplicate, DuplicateCheck, Reindexed
from ..store import schema
from ..store.db import Store
from ..store.repo import Repo
from .documents import DocSpec, stored_doc
from .embedders import EmbedderUnavailable
from .learning import Learning
from .ranking import Ranked, Ranker
from .sessions import Sessions, SessionStore

#: Duplicates compare like with like: the first vector of both records, which stands for
#: the whole record (``doctext.document``).
DUPLICATE_SEQ = 0
_WORDS = re.compile(r"\w+", re.UNICODE)


def jaccard(a: str, b: str) -> float:
    wa, wb = set(_WORDS.findall(a.lower())), set(_WORDS.findall(b.lower()))
    return len(wa & wb) / len(wa | wb) if wa and wb else 0.0


class SearchService:
    def __init__(self, store: Store, embedder: Embedder, sessions: Sessions | None = None
                 ) -> None:
        self.store = store
        self.embedder = embedder
        self.sessions: Sessions = sessions or SessionStore()
        self._backfill_lock = threading.Lock()
        self._stop = threading.Event()
        self._queued = threading.Event()  # set when a write stored no vectors
        self._thread: threading.Thread | None = None
        self.backfill_state = "idle"
        self.ranker = Ranker(self)
        self.learning = Learning(self)
    # --- provider state ----------------------------------------------------------------------

    @property
    def vectors_ready(self) -> bool:
        return self.embedder.ready

    @property
    def provider(self) -> str:
        return self.embedder.name

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray | None:
        """The vectors of ``texts``, or None when the provider cannot embed now."""
        return self._embed(texts)

    def _embed(self, texts: Sequence[str]) -> np.ndarray | None:
        if not self.vectors_ready:
            return None
        try:
            return np.asarray(self.embedder.embed(list(texts)), dtype=np.float32)
        except EmbedderUnavailable:
            return None

    # --- writes (inside the caller's transaction) --------------------------------------------

    def embed_docs(self, docs: Sequence[DocSpec]) -> np.ndarray | None:
        """The vectors of documents (all their vector texts, in order), or None when the
        provider cannot embed now (the documents are then queued for the drain)."""
        texts = [txt for d in docs for txt in d.vector_texts]
        return self._embed(texts) if texts else None

    def embed_each(self, docs: Sequence[DocSpec]) -> list[np.ndarray | None]:
        """``embed_docs`` in one model call, split per document."""
        matrix = self.embed_docs(docs)
        if matrix is None:
            return [None] * len(docs)
        ends = np.cumsum([len(d.vector_texts) for d in docs])
        return list(np.split(matrix, ends[:-1]))

    def index(self, repo: Repo, docs: Sequence[DocSpec], vectors: np.ndarray | None) -> None:
        """Upsert documents in the caller's transaction: a search right after sees them.
        ``vectors`` come from ``embed_docs``, called before the transaction (the model never
        runs inside one); None stores the text now and queues the vectors for the drain."""
        conn = repo.conn
        offset = 0
        for doc in docs:
            rid = self._upsert_doc(conn, doc)
            self.store.text_index.upsert(conn, rid, doc.space, doc.kind, doc.title,
                                          doc.labels, doc.body)
            n = len(doc.vector_texts)
            if vectors is not None and n:
                self._upsert_vectors(conn, rid, doc, vectors[offset:offset + n],
                                     self.embedder.model_id)
            else:
                self._queued.set()
                self.store.vector_index.delete(conn, [rid])
                self.store.vector_index.touch(conn)
            offset += n

    def unindex(self, repo: Repo, kind: str, entity_ids: Sequence[str]) -> None:
        conn = repo.conn
        keys = [f"{kind}:{e}" for e in entity_ids]
        rids = [r[0] for r in conn.execute(select(schema.search_docs.c.rid)
                                           .where(schema.search_docs.c.key.in_(keys)))]
        if not rids:
            return
        self.store.text_index.delete(conn, rids)
        self.store.vector_index.delete(conn, rids)
        conn.execute(delete(schema.search_docs).where(schema.search_docs.c.rid.in_(rids)))

    def _upsert_vectors(self, conn: Connection, rid: int, doc: DocSpec, matrix: np.ndarray,
                        model_id: str) -> None:
        """A document's vectors: its texts', then, for a protocol, its learned triggers'
        (``learning``), which no rewrite of the protocol drops."""
        roles = list(doc.vector_roles())
        learned = (self.learning.vectors(conn, doc.entity_id, model_id)
                   if doc.kind == "protocol" and doc.entity_id else [])
        if learned:
            matrix = np.vstack([matrix, *learned])
            roles += ["learned"] * len(learned)
        self.store.vector_index.upsert(conn, rid, doc.space, doc.kind, matrix, model_id, roles)

    @staticmethod
    def _upsert_doc(conn: Connection, doc: DocSpec) -> int:
        key = f"{doc.kind}:{doc.entity_id}"
        values = {"kind": doc.kind, "entity_id": doc.entity_id, "space": doc.space,
                  "title": doc.title, "labels": doc.labels, "body": doc.body,
                  "ntokens": doc.ntokens, "category": doc.category,
                  "section": doc.section, "author": doc.author, "updated_at": doc.updated_at}
        docs = schema.search_docs
        row = conn.execute(select(docs.c.rid).where(docs.c.key == key)).first()
        if row is None:
            res = conn.execute(insert(schema.search_docs).values(key=key, **values))
            return int(res.inserted_primary_key[0])  # type: ignore[index]
        conn.execute(update(docs).where(docs.c.rid == row[0]).values(**values))
        return int(row[0])

    # --- ranking (``ranking``) --------------------------------------------------------------

    def rank(self, query: str, *, space: str, kinds: Sequence[str],
             filters: Mapping[str, str] | None = None, exclude: set[str] | None = None,
             boosts: bool = False, floor: float | None = None) -> Ranked:
        """``ranking.Ranker.rank``."""
        return self.ranker.rank(query, space=space, kinds=kinds, filters=filters,
                                exclude=exclude, boosts=boosts, floor=floor)

    def embed_query(self, query: str) -> np.ndarray | None:
        """The query's vector as the engine embeds it, or None when vectors are unavailable."""
        qvec = self._embed([doctext.embedding_query(query)])
        return None if qvec is None else qvec[0]

    def hint(self, degraded: bool) -> str | None:
        if not degraded:
            return None
        if self.provider == "none":
            return "Vector search is disabled (embedder 'none'); text search was used."
        return f"Vector search unavailable ({self.embedder.state}); text fallback used."

    # --- duplicate check ---------------------------------------------------------------------

    def duplicate_check(self, kind: str, space: str, title: str, body: str,
                        exclude: str | None, *,
                        query_vector: np.ndarray | None = None) -> DuplicateCheck:
        """Advisory: ≥ 0.85 → ``review_first``; 0.50–0.84 → listed as FYI. A plain read,
        run before the write; ``guard`` keeps a concurrent write from slipping past it."""
        similar = self.similar(kind, space, title, body, exclude, query_vector)
        duplicates = [s for s in similar if s["score"] >= 0.50]
        result: DuplicateCheck = {"duplicates": duplicates, "warnings": []}
        if duplicates and duplicates[0]["score"] >= 0.85:
            result["recommendation"] = "review_first"
        return result

    # --- the write guard ----------------------------------------------------------------------

    def version(self, space: str, kind: str) -> int:
        """How many checked writes of ``kind`` the space has had (read before a check).
        The counter row is created here, in its own transaction, the first time."""
        key = _version_key(space, kind)
        with self.store.read() as repo:
            value = _get_meta(repo.conn, key)
        if value is None:
            with suppress(IntegrityError), self.store.write() as repo:
                repo.conn.execute(insert(schema.index_meta).values(key=key, value="0"))
            with self.store.read() as repo:
                value = _get_meta(repo.conn, key)
        return int(value or 0)

    @staticmethod
    def guard(repo: Repo, space: str, kind: str, seen: int) -> bool:
        """In the write transaction: count this write, if no other checked write of the
        kind came after ``seen``. False means the duplicate check is stale: check again.
        On PostgreSQL the conditional UPDATE row-locks the counter until commit, so two
        writers cannot both pass it."""
        return bool(repo.conn.execute(update(schema.index_meta).where(
            (schema.index_meta.c.key == _version_key(space, kind))
            & (schema.index_meta.c.value == str(seen))).values(value=str(seen + 1))).rowcount)

    def similar(self, kind: str, space: str, title: str, body: str,
                exclude: str | None, query_vector: np.ndarray | None = None
                ) -> list[Duplicate]:
        """Similarity to existing records of a kind, best first: the cosine of the full-text
        vectors when ``query_vector`` (the new record's, ``DUPLICATE_SEQ``) is given, else
        the word overlap (Jaccard) with the best text matches."""
        text = f"{title}. {body}"
        c = schema.search_docs.c
        with self.store.read() as repo:
            conn = repo.conn
            if query_vector is not None and self.vectors_ready:
                rids, sims = self.store.vector_index.search(
                    conn, query_vector, space=space, kinds=(kind,),
                    model_id=self.embedder.model_id, limit=21, seq=DUPLICATE_SEQ)
                scores = dict(zip(rids.tolist(), sims.tolist(), strict=True))
                rows: Sequence[Any] = conn.execute(select(c.rid, c.entity_id, c.title).where(
                    c.rid.in_(list(scores)))).all()
            else:
                found = self.store.text_index.search(conn, text[:300], space=space,
                                                     kinds=(kind,), limit=21)
                hits = {} if found is None else found.best
                rows = conn.execute(select(c.rid, c.entity_id, c.title, c.body).where(
                    c.rid.in_(list(hits)))).all()
                scores = {r.rid: jaccard(text, f"{r.title}. {r.body}") for r in rows}
        out: list[Duplicate] = [{"entity_id": r.entity_id, "entity_type": kind,
                                 "title": r.title, "score": round(max(0.0, scores[r.rid]), 4)}
                                for r in rows if r.entity_id != exclude]
        out.sort(key=lambda d: -d["score"])
        return out[:20]

    # --- background work ---------------------------------------------------------------------

    def backfill(self, *, progress: Callable[[int, int], None] | None = None,
                 batch: int = 64, force: bool = False) -> Reindexed:
        """Embed every document that has no vector of the current model (after a model
        change, or written while a remote provider was down), batch by batch: each batch
        is read, embedded outside any transaction, then written where its document has not
        changed in between."""
        probe = self._embed(["dimension probe"])
        if probe is None:
            return {"embedded": 0, "model_id": None, "state": "vectors unavailable"}
        model_id = self.embedder.model_id
        with self.store.engine.begin() as conn:
            self.store.vector_index.prepare(conn, int(probe.shape[1]))
        with self._backfill_lock:
            self.backfill_state = "running"
            started = time.perf_counter()
            todo = self._pending(model_id, everything=force or self._recipe_changed())
            done = 0
            try:
                for i in range(0, len(todo), batch):
                    if self._stop.is_set():
                        break
                    chunk = todo[i:i + batch]
                    with self.store.read() as repo:
                        rows = list(repo.conn.execute(select(schema.search_docs).where(
                            schema.search_docs.c.rid.in_(chunk))).mappings())
                        specs = [s for r in rows
                                 if (s := stored_doc(repo, r["kind"], r["entity_id"]))]
                    vectors = self.embed_docs(specs)
                    if vectors is None:
                        break
                    with self.store.write() as repo:
                        self._store_vectors(repo, specs, vectors, model_id)
                    done += len(chunk)
                    if progress:
                        progress(done, len(todo))
                if done == len(todo):
                    with self.store.write() as repo:
                        _set_meta(repo.conn, "model_id", model_id)
                        _set_meta(repo.conn, "recipe", doctext.RECIPE)
            finally:
                self.backfill_state = "idle"
            return {"embedded": done, "model_id": model_id,
                    "seconds": round(time.perf_counter() - started, 3)}

    def _recipe_changed(self) -> bool:
        """True when the store's vectors were embedded from other texts than
        ``doctext.document`` writes now (a store written by an earlier version). A store
        that has recorded no recipe has only written this one (migration 0007 marks older
        stores): it records it now."""
        with self.store.read() as repo:
            recipe = _get_meta(repo.conn, "recipe")
        if recipe is None:
            with suppress(IntegrityError), self.store.write() as repo:
                repo.conn.execute(insert(schema.index_meta).values(
                    key="recipe", value=doctext.RECIPE))
            return False
        return recipe != doctext.RECIPE

    def _pending(self, model_id: str, *, everything: bool = False) -> list[int]:
        d, v = schema.search_docs.c, schema.search_vectors.c
        with self.store.read() as repo:
            q = select(d.rid).order_by(d.rid)
            if not everything:
                q = q.where(~select(v.rid).where((v.rid == d.rid) & (v.model_id == model_id))
                            .exists())
            return [r[0] for r in repo.conn.execute(q)]

    def _store_vectors(self, repo: Repo, specs: Sequence[DocSpec], vectors: np.ndarray,
                       model_id: str) -> None:
        """Vectors of documents that still read as they did when embedded."""
        c = schema.search_docs.c
        keys = {f"{s.kind}:{s.entity_id}": s for s in specs}
        current = {r.key: (r.rid, r.updated_at) for r in repo.conn.execute(
            select(c.key, c.rid, c.updated_at).where(c.key.in_(list(keys))))}
        offset = 0
        for spec in specs:
            n = len(spec.vector_texts)
            rid, stamp = current.get(f"{spec.kind}:{spec.entity_id}", (None, None))
            if rid is not None and stamp == spec.updated_at:
                self._upsert_vectors(repo.conn, rid, spec, vectors[offset:offset + n],
                                     model_id)
            offset += n

    def start_background(self, interval: float = 2.0, idle: float = 60.0) -> threading.Thread:
        """Drain the queue of documents without vectors of the current model, for as long
        as the process runs: at start (a model change), right after this process queued a
        write, every ``interval`` while the provider is still down, and every ``idle``
        seconds otherwise (writes another replica queued). Progress: ``index_state``."""
        def work() -> None:
            woken = False
            while not self._stop.is_set():
                self._queued.clear()
                # A wake comes from inside the queuing write's transaction, which may not
                # have committed yet: look again one ``interval`` later.
                busy = self._drain() or woken
                woken = self._queued.wait(interval if busy else idle)

        self._thread = threading.Thread(target=work, name="kairos-drain", daemon=True)
        self._thread.start()
        return self._thread

    def _drain(self) -> bool:
        """One pass of the drain; True when documents are still waiting for vectors."""
        if self.provider == "none":
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
            self.backfill_state = f"error: {type(exc).__name__}: {exc}"[:200]
            return True

    def stop(self, timeout: float = 30.0) -> None:
        """Stop background work between batches and wait for it."""
        self._stop.set()
        self._queued.set()
        self.ranker.close()
        self.learning.close()
        if self._thread is not None:
            self._thread.join(timeout)

    def index_state(self) -> dict[str, Any]:
        model_id = self.embedder.model_id if self.vectors_ready else None
        with self.store.read() as repo:
            conn = repo.conn
            docs = conn.execute(select(func.count()).select_from(schema.search_docs)).scalar_one()
            vec = conn.execute(select(func.count(schema.search_vectors.c.rid.distinct())).where(
                schema.search_vectors.c.model_id == (model_id or ""))).scalar_one()
            stored = _get_meta(conn, "model_id")
        return {"documents": docs, "with_vectors": vec, "pending": docs - vec,
                "model_id": model_id, "indexed_model_id": stored,
                "backfill": self.backfill_state}


def _version_key(space: str, kind: str) -> str:
    return f"writes:{kind}:{hashlib.sha256(space.encode('utf-8')).hexdigest()[:40]}"


def _get_meta(conn: Connection, key: str) -> str | None:
    meta = schema.index_meta
    row = conn.execute(select(meta.c.value).where(meta.c.key == key)).first()
    return None if row is None else str(row[0])


def _set_meta(conn: Connection, key: str, value: str) -> None:
    if conn.execute(update(schema.index_meta).where(schema.index_meta.c.key == key)
                    .values(value=value)).rowcount == 0:
        conn.execute(insert(schema.index_meta).values(key=key, value=value))
