"""Indexing: the search documents of every write, in the writer's transaction (a search
right after sees them) — their rows and full-text columns at once, their vectors when the
provider can embed them, else queued for the background work (``background``)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from ..domain.ports import Embedder
from ..store import learned, search_docs
from ..store.db import Store
from ..store.repo import Repo
from .documents import DocSpec
from .embedders import embed


class Indexer:
    def __init__(self, store: Store, embedder: Embedder) -> None:
        self.store, self.embedder = store, embedder
        #: Set when a write stored a document without its vectors.
        self.queued = threading.Event()

    def embed_docs(self, docs: Sequence[DocSpec]) -> np.ndarray | None:
        """The vectors of documents (all their vector texts, in order), or None when the
        provider cannot embed now (the documents are then queued for the drain)."""
        texts = [txt for d in docs for txt in d.vector_texts]
        return embed(self.embedder, texts) if texts else None

    def embed_each(self, docs: Sequence[DocSpec]) -> list[np.ndarray | None]:
        """``embed_docs`` in one model call, split per document."""
        matrix = self.embed_docs(docs)
        return [None] * len(docs) if matrix is None else list(_per_doc(matrix, docs))

    def index(self, repo: Repo, docs: Sequence[DocSpec], vectors: np.ndarray | None) -> None:
        """Upsert documents in the caller's transaction. ``vectors`` come from
        ``embed_docs``, called before the transaction (the model never runs inside one);
        None stores the text now and queues the vectors for the drain."""
        conn = repo.conn
        parts = [None] * len(docs) if vectors is None else _per_doc(vectors, docs)
        for doc, matrix in zip(docs, parts, strict=True):
            rid = search_docs.upsert(conn, search_docs.key_of(doc.kind, doc.entity_id), {
                "kind": doc.kind, "entity_id": doc.entity_id, "space": doc.space,
                "title": doc.title, "labels": doc.labels, "body": doc.body,
                "ntokens": doc.ntokens, "category": doc.category, "section": doc.section,
                "author": doc.author, "updated_at": doc.updated_at})
            self.store.text_index.upsert(conn, rid, doc.space, doc.kind, doc.title,
                                         doc.labels, doc.body)
            if matrix is not None and len(matrix):
                self._vectors(repo, rid, doc, matrix, self.embedder.model_id)
            else:
                self.queued.set()
                self.store.vector_index.delete(conn, [rid])
                self.store.vector_index.touch(conn)

    def unindex(self, repo: Repo, kind: str, entity_ids: Sequence[str]) -> None:
        rids = search_docs.remove(repo.conn, [search_docs.key_of(kind, e) for e in entity_ids])
        self.store.text_index.delete(repo.conn, rids)
        self.store.vector_index.delete(repo.conn, rids)

    def refresh(self, repo: Repo, specs: Sequence[DocSpec], vectors: np.ndarray,
                model_id: str) -> None:
        """Store the vectors of the documents that still read as they did when embedded."""
        current = search_docs.stamps(repo.conn, [search_docs.key_of(s.kind, s.entity_id)
                                                 for s in specs])
        for spec, matrix in zip(specs, _per_doc(vectors, specs), strict=True):
            rid, stamp = current.get(search_docs.key_of(spec.kind, spec.entity_id), (None, None))
            if rid is not None and stamp == spec.updated_at:
                self._vectors(repo, rid, spec, matrix, model_id)

    def _vectors(self, repo: Repo, rid: int, doc: DocSpec, matrix: np.ndarray,
                 model_id: str) -> None:
        """A document's vectors: its texts', then, for a protocol, its learned triggers'
        (``learning``), which no rewrite of the protocol drops."""
        roles = list(doc.roles or ("doc",) * len(doc.vector_texts))
        found = (learned.vectors(repo.conn, doc.entity_id, model_id)
                 if doc.kind == "protocol" and doc.entity_id else [])
        if found:
            matrix = np.vstack([matrix, *found])
            roles += ["learned"] * len(found)
        self.store.vector_index.upsert(repo.conn, rid, doc.space, doc.kind, matrix, model_id,
                                       roles)


def _per_doc(matrix: np.ndarray, docs: Sequence[DocSpec]) -> list[np.ndarray]:
    """The vectors of ``docs`` (all their vector texts, in order) split per document."""
    return np.split(matrix, np.cumsum([len(d.vector_texts) for d in docs])[:-1])
