"""The duplicate check of a checked write (a mint, a saved entry): how alike the new record
is to those of its kind in the space, read before the write; and the write guard, which
sends the write back to check again when another checked write of the kind came in
between."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..domain.ports import Embedder
from ..domain.responses import Duplicate, DuplicateCheck
from ..store import search_docs
from ..store.db import Store
from ..store.repo import Repo

#: Duplicates compare like with like: the first vector of both records, which stands for
#: the whole record (``doctext.document``).
DUPLICATE_SEQ = 0
#: Listed as FYI from this similarity; ``review_first`` from ``REVIEW``.
LISTED, REVIEW = 0.50, 0.85
_WORDS = re.compile(r"\w+", re.UNICODE)


def jaccard(a: str, b: str) -> float:
    wa, wb = set(_WORDS.findall(a.lower())), set(_WORDS.findall(b.lower()))
    return len(wa & wb) / len(wa | wb) if wa and wb else 0.0


class Duplicates:
    def __init__(self, store: Store, embedder: Embedder) -> None:
        self.store, self.embedder = store, embedder

    def check(self, kind: str, space: str, title: str, body: str, exclude: str | None, *,
              query_vector: np.ndarray | None = None) -> DuplicateCheck:
        """Advisory: ≥ 0.85 → ``review_first``; 0.50–0.84 → listed as FYI. A plain read,
        run before the write; ``guard`` keeps a concurrent write from slipping past it."""
        similar = self.similar(kind, space, title, body, exclude, query_vector)
        duplicates = [s for s in similar if s["score"] >= LISTED]
        result: DuplicateCheck = {"duplicates": duplicates, "warnings": []}
        if duplicates and duplicates[0]["score"] >= REVIEW:
            result["recommendation"] = "review_first"
        return result

    def similar(self, kind: str, space: str, title: str, body: str,
                exclude: str | None, query_vector: np.ndarray | None = None
                ) -> list[Duplicate]:
        """Similarity to existing records of a kind, best first: the cosine of the full-text
        vectors when ``query_vector`` (the new record's, ``DUPLICATE_SEQ``) is given, else
        the word overlap (Jaccard) with the best text matches."""
        text = f"{title}. {body}"
        with self.store.read() as repo:
            conn = repo.conn
            if query_vector is not None and self.embedder.ready:
                rids, sims = self.store.vector_index.search(
                    conn, query_vector, space=space, kinds=(kind,),
                    model_id=self.embedder.model_id, limit=21, seq=DUPLICATE_SEQ)
                scores = dict(zip(rids.tolist(), sims.tolist(), strict=True))
                rows: Sequence[Any] = search_docs.rows(conn, scores, "rid", "entity_id",
                                                       "title")
            else:
                found = self.store.text_index.search(conn, text[:300], space=space,
                                                     kinds=(kind,), limit=21)
                hits = {} if found is None else found.best
                rows = search_docs.rows(conn, hits, "rid", "entity_id", "title", "body")
                scores = {r.rid: jaccard(text, f"{r.title}. {r.body}") for r in rows}
        out: list[Duplicate] = [{"entity_id": r.entity_id, "entity_type": kind,
                                 "title": r.title, "score": round(max(0.0, scores[r.rid]), 4)}
                                for r in rows if r.entity_id != exclude]
        out.sort(key=lambda d: -d["score"])
        return out[:20]

    def version(self, space: str, kind: str) -> int:
        """How many checked writes of ``kind`` the space has had (read before a check).
        The counter is created here, in a write of its own, the first time."""
        key = search_docs.writes_key(space, kind)
        with self.store.read() as repo:
            value = search_docs.meta(repo.conn, key)
        if value is None:
            with self.store.write() as repo:
                value = search_docs.add_meta(repo.conn, key, "0")
        return int(value)

    @staticmethod
    def guard(repo: Repo, space: str, kind: str, seen: int) -> bool:
        """In the write transaction: count this write, if no other checked write of the
        kind came after ``seen``. False means the duplicate check is stale: check again."""
        return search_docs.count_write(repo.conn, space, kind, seen)
