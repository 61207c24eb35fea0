"""The search engine: keeps the index in step with every write, and answers kairos_search
and the unified search of seed 002 with one calibrated hybrid score."""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import delete, insert, select, update
from sqlalchemy.engine import Connection

from ..store import schema as t
from ..store.db import Store
from ..store.repo import Repo
from . import ranking
from .embedders import EmbedderUnavailable
from .sessions import Sessions, SessionStore

CANDIDATES = 100
STEM_CACHE = 50_000
DUPLICATE_BUDGET = 0.75
_WORDS = re.compile(r"\w+", re.UNICODE)
_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="kairos-dupcheck")


def jaccard(a: str, b: str) -> float:
    wa, wb = set(_WORDS.findall(a.lower())), set(_WORDS.findall(b.lower()))
    return len(wa & wb) / len(wa | wb) if wa and wb else 0.0


@dataclass(frozen=True)
class DocSpec:
    """A searchable record: what full-text indexes, and the texts whose vectors stand for
    it (the best-matching vector answers)."""

    kind: str
    entity_id: str
    space: str
    title: str
    body: str
    vector_texts: tuple[str, ...]
    updated_at: str
    category: str | None = None
    section: str | None = None
    author: str | None = None


@dataclass
class Hit:
    rid: int
    kind: str
    entity_id: str
    score: float
    dense: float | None
    text: float | None
    row: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Ranked:
    hits: list[Hit]
    mode: str            # "hybrid" | "text"
    degraded: bool
    hint: str | None


class SearchService:
    def __init__(self, store: Store, embedder: Any, sessions: Sessions | None = None) -> None:
        self.store = store
        self.embedder = embedder
        self.sessions: Sessions = sessions or SessionStore()
        self._backfill_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.backfill_state = "idle"
        self.spec_builders: dict[str, Callable[[Repo, str], DocSpec | None]] = {}
        self._stems: OrderedDict[tuple[int, str], tuple[set[str], set[str]]] = OrderedDict()
        self._stems_lock = threading.Lock()

    def _stems_for(self, conn: Connection, rows: dict[int, dict[str, Any]]
                   ) -> dict[int, tuple[set[str], set[str]]]:
        """Stemmed title and body words per document, cached by (rid, updated_at) so a
        write anywhere (even by another process) simply misses the cache; bodies are read
        only for the misses."""
        out: dict[int, tuple[set[str], set[str]]] = {}
        with self._stems_lock:
            for rid, row in rows.items():
                hit = self._stems.get((rid, row["updated_at"]))
                if hit is not None:
                    out[rid] = hit
        missing = [rid for rid in rows if rid not in out]
        if missing:
            c = t.search_docs.c
            for rid, body in conn.execute(select(c.rid, c.body).where(c.rid.in_(missing))):
                rows[rid]["body"] = body
                out[rid] = (ranking.stems(rows[rid]["title"]), ranking.stems(body[:5000]))
            with self._stems_lock:
                for rid in missing:
                    if rid in out:
                        self._stems[(rid, rows[rid]["updated_at"])] = out[rid]
                while len(self._stems) > STEM_CACHE:
                    self._stems.popitem(last=False)
        return out

    # --- provider state ----------------------------------------------------------------------

    @property
    def vectors_ready(self) -> bool:
        return bool(self.embedder is not None and self.embedder.ready)

    @property
    def provider(self) -> str:
        return "none" if self.embedder is None else str(self.embedder.name)

    def _embed(self, texts: Sequence[str]) -> np.ndarray | None:
        if not self.vectors_ready:
            return None
        try:
            return np.asarray(self.embedder.embed(list(texts)), dtype=np.float32)
        except EmbedderUnavailable:
            return None

    # --- writes (inside the caller's transaction) --------------------------------------------

    def embed_docs(self, docs: Sequence[DocSpec]) -> np.ndarray | None:
        """The vectors of documents (all their vector texts, in order), or None."""
        texts = [txt for d in docs for txt in d.vector_texts]
        return self._embed(texts) if texts else None

    def index(self, repo: Repo, docs: Sequence[DocSpec],
              vectors: np.ndarray | None = None) -> None:
        """Upsert documents in the caller's transaction: a search right after sees them.
        ``vectors`` may come precomputed from ``embed_docs`` (embed once per write)."""
        conn = repo.conn
        if vectors is None:
            vectors = self.embed_docs(docs)
        offset = 0
        for doc in docs:
            rid = self._upsert_doc(conn, doc)
            self.store.text_index.upsert(conn, rid, doc.title, doc.body)
            n = len(doc.vector_texts)
            if vectors is not None and n:
                self.store.vector_index.upsert(conn, rid, doc.space, doc.kind,
                                               vectors[offset:offset + n],
                                               self.embedder.model_id)
            else:
                self.store.vector_index.delete(conn, [rid])
                self.store.vector_index.touch(conn)
            offset += n

    def unindex(self, repo: Repo, kind: str, entity_ids: Sequence[str]) -> None:
        conn = repo.conn
        keys = [f"{kind}:{e}" for e in entity_ids]
        rids = [r[0] for r in conn.execute(select(t.search_docs.c.rid)
                                           .where(t.search_docs.c.key.in_(keys)))]
        if not rids:
            return
        self.store.text_index.delete(conn, rids)
        self.store.vector_index.delete(conn, rids)
        conn.execute(delete(t.search_docs).where(t.search_docs.c.rid.in_(rids)))

    @staticmethod
    def _upsert_doc(conn: Connection, doc: DocSpec) -> int:
        key = f"{doc.kind}:{doc.entity_id}"
        values = {"kind": doc.kind, "entity_id": doc.entity_id, "space": doc.space,
                  "title": doc.title, "body": doc.body, "category": doc.category,
                  "section": doc.section, "author": doc.author, "updated_at": doc.updated_at}
        row = conn.execute(select(t.search_docs.c.rid).where(t.search_docs.c.key == key)).first()
        if row is None:
            res = conn.execute(insert(t.search_docs).values(key=key, **values))
            return int(res.inserted_primary_key[0])  # type: ignore[index]
        conn.execute(update(t.search_docs).where(t.search_docs.c.rid == row[0]).values(**values))
        return int(row[0])

    # --- ranking -----------------------------------------------------------------------------

    def rank(self, query: str, *, space: str, kinds: Sequence[str],
             where: Callable[[dict[str, Any]], bool] | None = None,
             exclude: set[str] | None = None, boosts: bool = False,
             query_vector: np.ndarray | None = None) -> Ranked:
        """Every candidate scored on one calibrated scale in [0, 1], best first.
        ``query_vector`` replaces the query's embedding (a document's own vector)."""
        qvec = (query_vector.reshape(1, -1) if query_vector is not None
                else self._embed([query]))
        degraded = qvec is None
        with self.store.read() as repo:
            conn = repo.conn
            text_hits = self.store.text_index.search(conn, query, space=space, kinds=kinds,
                                                     limit=CANDIDATES)
            dense: dict[int, float] = {}
            candidates = {rid for rid, _ in text_hits}
            if qvec is not None:
                model_id = self.embedder.model_id
                rids, sims = self.store.vector_index.search(
                    conn, qvec[0], space=space, kinds=kinds, model_id=model_id,
                    limit=CANDIDATES)
                dense = dict(zip(rids.tolist(), sims.tolist(), strict=True))
                missing = [rid for rid in candidates if rid not in dense]
                if missing:
                    dense.update(self.store.vector_index.scores(conn, qvec[0], missing,
                                                                model_id=model_id))
                candidates |= set(dense)
            if not candidates:
                return Ranked([], "text" if degraded else "hybrid", degraded,
                              self._hint(degraded))
            c = t.search_docs.c
            rows = {r["rid"]: dict(r) for r in conn.execute(
                select(*[col for col in t.search_docs.c if col.name != "body"])
                .where(c.rid.in_(list(candidates)))).mappings()}
            stems = self._stems_for(conn, rows)
            metrics = (repo.outcomes_for([r["entity_id"] for r in rows.values()
                                          if r["kind"] == "protocol"]) if boosts else {})
        terms = ranking.query_stems(query)
        hits = []
        for rid, row in rows.items():
            if exclude and row["entity_id"] in exclude:
                continue
            if where is not None and not where(row):
                continue
            d = dense.get(rid) if not degraded else None
            title_stems, body_stems = stems[rid]
            txt = ranking.text_score(ranking.coverage(terms, title_stems, body_stems))
            score = ranking.fuse(d, txt)
            m = metrics.get(row["entity_id"])
            if m is not None:
                score = ranking.with_outcomes(score, m[0], m[1])
            hits.append(Hit(rid, row["kind"], row["entity_id"], score, d, txt, row))
        hits.sort(key=lambda h: (-h.score, h.row["title"]))
        return Ranked(hits, "text" if degraded else "hybrid", degraded, self._hint(degraded))

    def _hint(self, degraded: bool) -> str | None:
        if not degraded:
            return None
        if self.embedder is None or self.provider == "none":
            return "Vector search is disabled (embedder 'none'); text search was used."
        state = getattr(self.embedder, "state", "unavailable")
        return f"Vector search unavailable ({state}); text fallback used."

    # --- duplicate check ---------------------------------------------------------------------

    def duplicate_check(self, kind: str, space: str, title: str, body: str,
                        exclude: str | None, *, budget: float = DUPLICATE_BUDGET,
                        query_vector: np.ndarray | None = None) -> dict[str, Any]:
        """Advisory, within a time budget: ≥ 0.85 → ``review_first``; 0.50–0.84 → listed as
        FYI; a timeout → ``duplicate_check_timeout=true``. Callers run it inside their write
        transaction, before the insert, so it never races it."""
        future = _pool.submit(self.similar, kind, space, title, body, exclude, query_vector)
        try:
            similar = future.result(timeout=budget)
        except FutureTimeout:
            return {"duplicates": [], "warnings": ["duplicate_check_timeout=true"]}
        duplicates = [s for s in similar if s["score"] >= 0.50]
        result: dict[str, Any] = {"duplicates": duplicates, "warnings": []}
        if duplicates and duplicates[0]["score"] >= 0.85:
            result["recommendation"] = "review_first"
        return result

    def similar(self, kind: str, space: str, title: str, body: str,
                exclude: str | None, query_vector: np.ndarray | None = None
                ) -> list[dict[str, Any]]:
        """Similarity to existing records of a kind: cosine of the vectors (of the same
        recipe as the stored ones) when available, else the word overlap (Jaccard)."""
        text = f"{title}. {body}"
        ranked = self.rank(text[:1500], space=space, kinds=(kind,),
                           exclude={exclude} if exclude else None, query_vector=query_vector)
        out = []
        top = ranked.hits[:20]
        bodies: dict[int, str] = {}
        if any(h.dense is None for h in top):
            with self.store.read() as repo:
                c = t.search_docs.c
                bodies = dict(repo.conn.execute(select(c.rid, c.body).where(
                    c.rid.in_([h.rid for h in top]))).all())
        for hit in top:
            if hit.dense is not None:
                score = hit.dense
            else:
                score = jaccard(text, f"{hit.row['title']}. {bodies.get(hit.rid, '')}")
            out.append({"entity_id": hit.entity_id, "entity_type": kind,
                        "title": hit.row["title"], "score": round(max(0.0, score), 4)})
        out.sort(key=lambda d: -d["score"])
        return out

    # --- background work ---------------------------------------------------------------------

    def backfill(self, *, progress: Callable[[int, int], None] | None = None,
                 batch: int = 64, force: bool = False) -> dict[str, Any]:
        """Embed every document that has no vector of the current model: after a model
        change, or for documents written while the model was loading."""
        if not self.vectors_ready:
            return {"embedded": 0, "model_id": None, "state": "vectors unavailable"}
        probe = self._embed(["dimension probe"])
        if probe is None:
            return {"embedded": 0, "model_id": None, "state": "vectors unavailable"}
        model_id = self.embedder.model_id
        with self.store.engine.begin() as conn:
            self.store.vector_index.prepare(conn, int(probe.shape[1]))
        with self._backfill_lock:
            self.backfill_state = "running"
            started = time.perf_counter()
            with self.store.read() as repo:
                have = set() if force else {r[0] for r in repo.conn.execute(
                    select(t.search_vectors.c.rid).where(
                        t.search_vectors.c.model_id == model_id).distinct())}
                todo = [r["rid"] for r in repo.conn.execute(
                    select(t.search_docs.c.rid)).mappings() if r["rid"] not in have]
            done = 0
            for i in range(0, len(todo), batch):
                if self._stop.is_set():
                    break
                chunk = todo[i:i + batch]
                with self.store.write() as repo:
                    rows = list(repo.conn.execute(select(t.search_docs).where(
                        t.search_docs.c.rid.in_(chunk))).mappings())
                    specs = [self.spec_for_row(repo, r) for r in rows]
                    self.index(repo, [s for s in specs if s is not None])
                done += len(chunk)
                if progress:
                    progress(done, len(todo))
            with self.store.write() as repo:
                _set_meta(repo.conn, "model_id", model_id)
            self.backfill_state = "idle"
            return {"embedded": done, "model_id": model_id,
                    "seconds": round(time.perf_counter() - started, 3)}

    def spec_for_row(self, repo: Repo, row: Any) -> DocSpec | None:
        """Rebuild a document's spec from the record it indexes (hook set by the app)."""
        builder = self.spec_builders.get(row["kind"])
        return builder(repo, row["entity_id"]) if builder else None

    def start_background(self) -> threading.Thread:
        """Wait for the model off the request path, then backfill missing vectors."""
        def work() -> None:
            wait = getattr(self.embedder, "wait", None)
            while wait is not None and not self._stop.is_set() and not wait(0.5):
                if getattr(self.embedder, "state", "").startswith("failed"):
                    return
            if self.vectors_ready and not self._stop.is_set():
                self.backfill()

        self._thread = threading.Thread(target=work, name="kairos-backfill", daemon=True)
        self._thread.start()
        return self._thread

    def stop(self, timeout: float = 30.0) -> None:
        """Stop background work between batches and wait for it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def index_state(self) -> dict[str, Any]:
        with self.store.read() as repo:
            conn = repo.conn
            docs = conn.execute(select(t.search_docs.c.rid)).all()
            model_id = self.embedder.model_id if self.vectors_ready else None
            vec = conn.execute(select(t.search_vectors.c.rid).where(
                t.search_vectors.c.model_id == (model_id or "")).distinct()).all()
            stored = _get_meta(conn, "model_id")
        return {"documents": len(docs), "with_vectors": len(vec),
                "model_id": model_id, "indexed_model_id": stored,
                "backfill": self.backfill_state}


def _get_meta(conn: Connection, key: str) -> str | None:
    row = conn.execute(select(t.index_meta.c.value).where(t.index_meta.c.key == key)).first()
    return None if row is None else str(row[0])


def _set_meta(conn: Connection, key: str, value: str) -> None:
    if conn.execute(update(t.index_meta).where(t.index_meta.c.key == key)
                    .values(value=value)).rowcount == 0:
        conn.execute(insert(t.index_meta).values(key=key, value=value))
