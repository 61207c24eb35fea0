"""Ranking: the candidates of a query, their evidence (dense, text, lexical, outcomes) and
their scores on one scale in [0, 1] (``domain.matching``, ``candidates``).

The candidates are the best of each index, each scored by both; with a ``floor`` (the
unified search), every document of the space and kinds that can score at least the floor,
besides. Protocols and knowledge entries are scored apart (each kind has its own anchor)
and merged. The full-text pass runs on a connection of its own in a worker while this
thread embeds the query and scans the vectors (SQLite, ONNX Runtime and numpy all let go of
the interpreter lock): a query costs the longer of the two, not their sum.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent import futures
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from ..domain import matching
from ..domain.lexical import Lexical
from ..store import schema
from ..store.text_index import Terms, TextMatches
from . import candidates

if TYPE_CHECKING:
    from .service import SearchService

CANDIDATES = candidates.CANDIDATES
#: Searches at a time whose full-text pass runs beside their vector pass (``rank``).
PARALLEL = 4


@dataclass
class Hit:
    rid: int
    kind: str
    entity_id: str
    score: float
    dense: float | None
    text: float | None
    row: dict[str, Any] = field(default_factory=dict)
    lexical: Lexical = field(default_factory=Lexical)
    outcomes: matching.Outcomes | None = None
    evidence: matching.Scored | None = None


@dataclass(frozen=True)
class Ranked:
    hits: list[Hit]
    mode: str            # "hybrid" | "text"
    degraded: bool
    hint: str | None
    query_vector: np.ndarray | None = None
    terms: Terms | None = None
    #: The scoring context of protocols (True) and of knowledge entries (False).
    contexts: Mapping[bool, matching.Context] = field(default_factory=dict)


class Ranker:
    def __init__(self, search: SearchService) -> None:
        self.search = search
        self.store = search.store
        self._workers = futures.ThreadPoolExecutor(PARALLEL, thread_name_prefix="kairos-text")
        self._parallel = threading.BoundedSemaphore(PARALLEL)

    def close(self) -> None:
        self._workers.shutdown(wait=False)

    def rank(self, query: str, *, space: str, kinds: Sequence[str],
             filters: Mapping[str, str] | None = None, exclude: set[str] | None = None,
             boosts: bool = False, floor: float | None = None) -> Ranked:
        """Candidates on one scale in [0, 1] (``domain.matching``), best first. ``filters``
        (column → value: category, author, section) and ``exclude`` (entity ids) only
        hide records: a record's score does not depend on them."""
        embedded: list[np.ndarray | None] = []

        def embed() -> np.ndarray | None:
            """The query's vector, made once (beside the first full-text pass)."""
            if not embedded:
                embedded.append(self.search.embed_query(query))
            return embedded[0]

        families = [f for f in (tuple(k for k in kinds if k == "protocol"),
                                tuple(k for k in kinds if k != "protocol")) if f]
        parts = [self._family(query, embed, space=space, kinds=family, filters=filters,
                              exclude=exclude, boosts=boosts, floor=floor)
                 for family in families or [()]]
        if len(parts) == 1:
            return parts[0]
        first, second = parts
        hits = sorted(first.hits + second.hits, key=_order)
        terms = first.terms if first.terms is not None else second.terms
        return Ranked(hits, first.mode, first.degraded, first.hint, embed(), terms,
                      {**first.contexts, **second.contexts})

    def _family(self, query: str, embed: Callable[[], np.ndarray | None], *, space: str,
                kinds: Sequence[str], filters: Mapping[str, str] | None,
                exclude: set[str] | None, boosts: bool, floor: float | None) -> Ranked:
        limit = None if floor is not None else CANDIDATES
        search = partial(self.store.text_index.search, query=query, space=space, kinds=kinds,
                         limit=limit)
        rest = partial(self._ranked, query, embed, space=space, kinds=kinds, limit=limit,
                       filters=filters, exclude=exclude, boosts=boosts, floor=floor)
        # A query holding one connection while it waits for a second could starve the
        # pool, so only PARALLEL queries at a time do it; the others, on a busy server,
        # run the pass on their single connection (on a busy server every core is busy).
        if not self._parallel.acquire(blocking=False):
            return rest(search)
        try:
            with self.store.read() as text_repo:
                job = self._workers.submit(search, text_repo.conn)
                try:
                    return rest(lambda _conn: job.result())
                finally:
                    futures.wait([job])  # the worker is done with the connection first
        finally:
            self._parallel.release()

    def _ranked(self, query: str, embed: Callable[[], np.ndarray | None],
                text_of: Callable[[Connection], TextMatches | None], *,
                space: str, kinds: Sequence[str], limit: int | None,
                filters: Mapping[str, str] | None, exclude: set[str] | None, boosts: bool,
                floor: float | None) -> Ranked:
        search = self.search
        qvec = embed()
        degraded = qvec is None
        mode = "text" if degraded else "hybrid"
        with self.store.read() as repo:
            conn = repo.conn
            dense: dict[int, float] = {}
            if qvec is not None:
                model_id = search.embedder.model_id
                rids, sims = self.store.vector_index.search(
                    conn, qvec, space=space, kinds=kinds, model_id=model_id, limit=limit)
                dense = dict(zip(rids.tolist(), sims.tolist(), strict=True))
            matches = text_of(conn)
            text = None if matches is None else matches.best
            if matches is not None and limit is not None:  # the other candidates' evidence
                best = matches.best
                text = {**matches.of([rid for rid in dense if rid not in best]), **best}
            if qvec is not None and text and limit is not None:
                missing = [rid for rid in text if rid not in dense]
                if missing:
                    dense.update(self.store.vector_index.scores(conn, qvec, missing,
                                                                model_id=model_id))
            terms = None if matches is None else matches.terms
            if not kinds or (not dense and not text):
                return Ranked([], mode, degraded, search.hint(degraded), qvec, terms)
            n_docs = terms.n_scope if terms is not None else None
            if n_docs is None and qvec is not None:
                n_docs = self.store.vector_index.size(conn, space=space, kinds=kinds,
                                                      model_id=model_id)
            if n_docs is None:
                n_docs = _count(conn, space, kinds)
            found = candidates.score(conn, query, kinds[0], dense, text, terms, n_docs,
                                     floor, boosts)
            rows = self._rows(conn, found.scores, filters, exclude, boosts)
        hits = []
        for row in rows:
            rid = row["rid"]
            wins, losses = row.pop("successes", None), row.pop("failures", None)
            outcomes = None if wins is None else matching.Outcomes(wins, losses)
            scored = found.scores[rid].boosted(outcomes)
            e = found.evidence[rid]
            hits.append(Hit(rid, row["kind"], row["entity_id"], scored.score, e.dense, e.text,
                            row, e.lexical, outcomes, scored))
        hits.sort(key=_order)
        return Ranked(hits, mode, degraded, search.hint(degraded), qvec, terms,
                      {kinds[0] == "protocol": found.context})

    @staticmethod
    def _rows(conn: Connection, candidates: Iterable[int], filters: Mapping[str, str] | None,
              exclude: set[str] | None, boosts: bool) -> list[dict[str, Any]]:
        c, m = schema.search_docs.c, schema.protocol_metrics.c
        q = select(c.rid, c.kind, c.entity_id, c.space, c.title, c.category, c.section,
                   c.author, c.updated_at).where(c.rid.in_(list(candidates)))
        for column, value in (filters or {}).items():
            q = q.where(c[column] == value)
        if exclude:
            q = q.where(c.entity_id.not_in(list(exclude)))
        if boosts:
            q = q.add_columns(m.successes, m.failures).outerjoin(
                schema.protocol_metrics, (c.kind == "protocol") & (m.protocol_id == c.entity_id))
        return [dict(r) for r in conn.execute(q).mappings()]


def _order(hit: Hit) -> tuple[float, float, str]:
    """Best first: by score, then by strength (candidates close to the strongest share
    its score), then by title."""
    return (-hit.score, -(hit.evidence.strength if hit.evidence else 0.0), hit.row["title"])


def _count(conn: Connection, space: str, kinds: Sequence[str]) -> int:
    c = schema.search_docs.c
    return int(conn.execute(select(func.count()).where(
        (c.space == space) & c.kind.in_(list(kinds)))).scalar_one())
