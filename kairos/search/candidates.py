"""Candidate generation: a query's candidates and their evidence, read from the store —
the best of the vector index and of the full-text index, each scored by both (with a
``floor``, the unified search's, every document of the space and kinds besides), their
texts and what their hits show — and ranked (``ranking``). Protocols and knowledge
entries are ranked apart (each kind has its own anchor) and merged.

The full-text pass runs on a connection of its own in a worker while this thread embeds
the query and scans the vectors (SQLite, ONNX Runtime and numpy all let go of the
interpreter lock): a query costs the longer of the two, not their sum.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent import futures
from functools import cache, partial
from typing import Any

import numpy as np

from ..domain import doctext
from ..domain.ports import Embedder
from ..store import search_docs
from ..store.db import Store
from ..store.repo import Repo
from ..store.text_index import TextMatches
from . import ranking
from .embedders import embed
from .ranking import CANDIDATES, Ranked

#: Searches at a time whose full-text pass runs beside their vector pass (``rank``).
PARALLEL = 4


class Candidates:
    def __init__(self, store: Store, embedder: Embedder) -> None:
        self.store, self.embedder = store, embedder
        self._workers = futures.ThreadPoolExecutor(PARALLEL, thread_name_prefix="kairos-text")
        self._parallel = threading.BoundedSemaphore(PARALLEL)

    def close(self) -> None:
        self._workers.shutdown(wait=False)

    def embed_query(self, query: str) -> np.ndarray | None:
        """The query's vector as the engine embeds it, or None when vectors are unavailable."""
        qvec = embed(self.embedder, [doctext.embedding_query(query)])
        return None if qvec is None else qvec[0]

    def hint(self, degraded: bool) -> str | None:
        if not degraded:
            return None
        if self.embedder.name == "none":
            return "Vector search is disabled (embedder 'none'); text search was used."
        return f"Vector search unavailable ({self.embedder.state}); text fallback used."

    def rank(self, query: str, *, space: str, kinds: Sequence[str],
             filters: Mapping[str, str] | None = None, exclude: set[str] | None = None,
             boosts: bool = False, floor: float | None = None) -> Ranked:
        """Candidates on one scale in [0, 1] (``domain.matching``), best first. ``filters``
        (column → value: category, author, section) and ``exclude`` (entity ids) only
        hide records: a record's score does not depend on them."""
        @cache
        def embed_once() -> np.ndarray | None:
            """The query's vector, made once (beside the first full-text pass)."""
            return self.embed_query(query)

        families = [f for f in (tuple(k for k in kinds if k == "protocol"),
                                tuple(k for k in kinds if k != "protocol")) if f]
        parts = [self._family(query, embed_once, space=space, kinds=family, filters=filters,
                              exclude=exclude, boosts=boosts, floor=floor)
                 for family in families or [()]]
        if len(parts) == 1:
            return parts[0]
        first, second = parts
        return ranking.merged(first, second, embed_once())

    def _family(self, query: str, embed_once: Callable[[], np.ndarray | None], *, space: str,
                kinds: Sequence[str], filters: Mapping[str, str] | None,
                exclude: set[str] | None, boosts: bool, floor: float | None) -> Ranked:
        limit = None if floor is not None else CANDIDATES
        search = partial(self.store.text_index.search, query=query, space=space, kinds=kinds,
                         limit=limit)
        rest = partial(self._ranked, query, embed_once, space=space, kinds=kinds, limit=limit,
                       filters=filters, exclude=exclude, boosts=boosts, floor=floor)
        # A query holding one connection while it waits for a second could starve the
        # pool, so only PARALLEL queries at a time do it; the others, on a busy server,
        # run the pass on their single connection (on a busy server every core is busy).
        if not self._parallel.acquire(blocking=False):
            return rest(lambda repo: search(repo.conn))
        try:
            with self.store.read() as text_repo:
                job = self._workers.submit(search, text_repo.conn)
                try:
                    return rest(lambda _repo: job.result())
                finally:
                    futures.wait([job])  # the worker is done with the connection first
        finally:
            self._parallel.release()

    def _ranked(self, query: str, embed_once: Callable[[], np.ndarray | None],
                text_of: Callable[[Repo], TextMatches | None], *,
                space: str, kinds: Sequence[str], limit: int | None,
                filters: Mapping[str, str] | None, exclude: set[str] | None, boosts: bool,
                floor: float | None) -> Ranked:
        qvec = embed_once()
        degraded = qvec is None
        mode = "text" if degraded else "hybrid"
        vectors = self.store.vector_index
        with self.store.read() as repo:
            conn = repo.conn
            dense: dict[int, float] = {}
            if qvec is not None:
                model_id = self.embedder.model_id
                rids, sims = vectors.search(conn, qvec, space=space, kinds=kinds,
                                            model_id=model_id, limit=limit)
                dense = dict(zip(rids.tolist(), sims.tolist(), strict=True))
            matches = text_of(repo)
            text = None if matches is None else matches.best
            if matches is not None and limit is not None:  # the other candidates' evidence
                best = matches.best
                text = {**matches.of([rid for rid in dense if rid not in best]), **best}
            if qvec is not None and text and limit is not None:
                missing = [rid for rid in text if rid not in dense]
                if missing:
                    dense.update(vectors.scores(conn, qvec, missing, model_id=model_id))
            terms = None if matches is None else matches.terms
            if not kinds or (not dense and not text):
                return Ranked([], mode, degraded, self.hint(degraded), qvec, terms)
            n_docs = terms.n_scope if terms is not None else None
            if n_docs is None and qvec is not None:
                n_docs = vectors.size(conn, space=space, kinds=kinds, model_id=model_id)
            if n_docs is None:
                n_docs = search_docs.count(conn, space, kinds)
            found = ranking.score(query, kinds[0], dense, text, terms, n_docs, floor, boosts,
                                  partial(_texts, repo))
            rows = search_docs.listed(conn, found.scores, filters, exclude, boosts)
        return Ranked(ranking.hits(found, rows), mode, degraded, self.hint(degraded), qvec,
                      terms, {kinds[0] == "protocol": found.context})


def _texts(repo: Repo, rids: Collection[int], lexical: bool) -> Sequence[Any]:
    """``ranking.TextsOf`` in ``repo``'s transaction."""
    return search_docs.rows(repo.conn, rids, "rid", "kind", "title",
                            *(("labels", "body") if lexical else ()))
