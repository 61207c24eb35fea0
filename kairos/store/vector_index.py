"""Vector indexes. A document has several vectors in ``seq`` order (summary, full text, one
per step); a search scores it by ``domain.scoring.dense_of`` of their cosines, or, with
``seq``, by the cosine of that one vector (like compared with like, for duplicates).

On SQLite: exact search in process over a cache of the stored vectors, kept coherent by a
version counter in ``index_meta`` (bumped by every write, checked by every search) so a
write by another process is never missed. On PostgreSQL: pgvector's HNSW finds the nearest
vectors, and the candidates' cosines are computed in the database."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from sqlalchemy import delete, func, insert, select, text, update
from sqlalchemy.engine import Connection
from threadpoolctl import threadpool_limits

from ..domain import scoring
from . import schema, search_docs
from .text_index import kinds_in


class VectorIndex:
    """What both indexes do alike; a write, commit or rollback needs nothing more unless
    an index keeps a cache (``MemoryVectorIndex``)."""

    def upsert(self, conn: Connection, rid: int, space: str, kind: str, vectors: np.ndarray,
               model_id: str, roles: Sequence[str] | None = None) -> None:
        """Replace a document's vectors; ``roles`` says what each one is (``doc``,
        ``trigger``, ``learned``; all ``doc`` when omitted)."""
        raise NotImplementedError

    def delete(self, conn: Connection, rids: Iterable[int]) -> None:
        ids = list(rids)
        if ids:
            conn.execute(delete(schema.search_vectors).where(schema.search_vectors.c.rid.in_(ids)))
            self.touch(conn, lambda: self._remove(ids))

    def _remove(self, rids: list[int]) -> None:
        return None

    def touch(self, conn: Connection, apply: Callable[[], None] = lambda: None) -> None:
        """Record a write (``apply``: what it changes in a cache, once committed)."""
        return None

    def prepare(self, conn: Connection, dim: int) -> None:
        return None

    @contextmanager
    def committing(self, conn: Connection) -> Iterator[None]:
        """Around the COMMIT of a write's transaction."""
        yield

    def rollback(self, conn: Connection) -> None:
        return None

    def search(self, conn: Connection, query: np.ndarray, *, space: str,
               kinds: Sequence[str], model_id: str, limit: int | None,
               seq: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(rids, scores) of the ``limit`` best documents (every document: None), best
        first."""
        raise NotImplementedError

    def scores(self, conn: Connection, query: np.ndarray, rids: Sequence[int], *,
               model_id: str, seq: int | None = None) -> dict[int, float]:
        """The score of each given document that has vectors of ``model_id``."""
        raise NotImplementedError

    def size(self, conn: Connection, *, space: str, kinds: Sequence[str],
             model_id: str) -> int | None:
        """How many documents of the space and kinds have vectors of ``model_id`` (None:
        not known without counting)."""
        return None


def _combine(cosines: np.ndarray, seq: int | None) -> float:
    """A document's score from its cosines in seq order."""
    if seq is None:
        return scoring.dense_of(cosines)
    return float(cosines[min(seq, len(cosines) - 1)])


def _rows(rid: int, vectors: np.ndarray, model_id: str, roles: Sequence[str] | None
          ) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """A document's vectors as a matrix, and as the rows to insert."""
    matrix = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1)
    roles = roles if roles is not None else ["doc"] * len(matrix)
    rows = [{"rid": rid, "seq": i, "model_id": model_id, "vector": row.tobytes(), "role": role}
            for i, (row, role) in enumerate(zip(matrix, roles, strict=True))]
    return matrix, rows


def _version(conn: Connection) -> int:
    return int(search_docs.meta(conn, "version") or 0)


def _bump(conn: Connection) -> int:
    res = conn.execute(update(schema.index_meta).where(schema.index_meta.c.key == "version")
                       .values(value=text("CAST(CAST(value AS INTEGER) + 1 AS TEXT)")))
    if res.rowcount == 0:
        conn.execute(insert(schema.index_meta).values(key="version", value="1"))
    return _version(conn)


class MemoryVectorIndex(VectorIndex):
    """Exact cosine search: one float32 matrix per (space, kind), rebuilt lazily."""

    def __init__(self) -> None:
        # One BLAS thread for numpy: a matrix-vector product is bound by memory, and a
        # second BLAS thread beside the embedding model's threads made it ~100× slower.
        threadpool_limits(limits=1, user_api="blas")
        self._lock = threading.Lock()
        self._version: int | None = None
        self.loads = 0  # how many times every vector was read
        self._model_id: str | None = None
        self._rows: dict[tuple[str, str], dict[int, np.ndarray]] = {}
        self._stacked: dict[tuple[str, str],
                            tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}

    # --- writes (inside the caller's transaction) --------------------------------------------

    def upsert(self, conn: Connection, rid: int, space: str, kind: str, vectors: np.ndarray,
               model_id: str, roles: Sequence[str] | None = None) -> None:
        conn.execute(delete(schema.search_vectors).where(schema.search_vectors.c.rid == rid))
        matrix, rows = _rows(rid, vectors, model_id, roles)
        conn.execute(insert(schema.search_vectors), rows)
        self.touch(conn, lambda: self._apply(rid, space, kind, matrix, model_id))

    def touch(self, conn: Connection, apply: Callable[[], None] = lambda: None) -> None:
        """Bump the version (also for a write that changed no vectors, e.g. a document
        without vectors); ``apply`` follows once the transaction committed."""
        version = _bump(conn)
        conn.info.setdefault("kairos_vector_pending", []).append((version, apply))

    @contextmanager
    def committing(self, conn: Connection) -> Iterator[None]:
        """Apply this transaction's writes to the cache once it has committed, holding the
        cache meanwhile: a search that reads the new version waits the moment until the
        cache has it too, rather than reloading every vector."""
        pending = conn.info.pop("kairos_vector_pending", [])
        if not pending:
            yield
            return
        with self._lock:
            yield  # the COMMIT: when it fails, nothing is applied
            for version, apply in pending:
                if self._version is None or self._version >= version:
                    continue  # not loaded, or loaded since, with this write
                if self._version == version - 1:
                    apply()
                    self._version = version
                else:
                    self._version = None  # another process wrote in between: reload

    def rollback(self, conn: Connection) -> None:
        conn.info.pop("kairos_vector_pending", None)

    def _apply(self, rid: int, space: str, kind: str, matrix: np.ndarray, model_id: str) -> None:
        self._remove([rid])
        if model_id == self._model_id:
            self._rows.setdefault((space, kind), {})[rid] = matrix
            self._stacked.pop((space, kind), None)

    def _remove(self, rids: list[int]) -> None:
        for key, rows in self._rows.items():
            hit = False
            for rid in rids:
                hit = rows.pop(rid, None) is not None or hit
            if hit:
                self._stacked.pop(key, None)

    # --- reads -------------------------------------------------------------------------------

    def _load(self, conn: Connection, model_id: str) -> None:
        """Read every vector of ``model_id`` straight into one preallocated matrix per
        (space, kind), so that loading never holds the vectors twice."""
        version = _version(conn)
        if self._model_id == model_id and self._version is not None \
                and version <= self._version:
            # A search whose snapshot began before the cache's last write keeps the cache:
            # a version holds every write before it, and what the snapshot cannot see yet
            # (a newer document) is dropped when the hits are read in the snapshot.
            return
        self.loads += 1
        d, v = schema.search_docs.c, schema.search_vectors.c
        joined = schema.search_docs.join(schema.search_vectors, v.rid == d.rid)
        counts = conn.execute(select(d.space, d.kind, func.count(), func.max(func.length(
            v.vector))).select_from(joined).where(v.model_id == model_id)
            .group_by(d.space, d.kind)).all()
        matrices = {(space, kind): np.empty((n, size // 4), dtype=np.float32)
                    for space, kind, n, size in counts}
        filled = dict.fromkeys(matrices, 0)
        owners: dict[tuple[str, str], list[int]] = {key: [] for key in matrices}
        for rid, space, kind, blob in conn.execute(
                select(d.rid, d.space, d.kind, v.vector).select_from(joined)
                .where(v.model_id == model_id).order_by(v.rid, v.seq)):
            key = (space, kind)
            matrices[key][filled[key]] = np.frombuffer(blob, dtype=np.float32)
            filled[key] += 1
            owners[key].append(rid)
        self._rows, self._stacked = {}, {}
        for key, matrix in matrices.items():
            rids, starts, sizes = np.unique(np.asarray(owners[key], dtype=np.int64),
                                            return_index=True, return_counts=True)
            self._stacked[key] = self._views(key, rids, starts, matrix, sizes)
        self._version, self._model_id = version, model_id

    def _views(self, key: tuple[str, str], rids: np.ndarray, starts: np.ndarray,
               matrix: np.ndarray, sizes: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Each document's vectors become a view into ``matrix``: one copy in memory."""
        self._rows[key] = {rid: matrix[s:s + n] for rid, s, n in
                           zip(rids.tolist(), starts.tolist(), sizes.tolist(), strict=True)}
        return rids, starts, matrix, sizes

    def _matrix(self, key: tuple[str, str]
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """(rids, start row of each rid, matrix, rows of each rid): a rid's vectors are
        contiguous rows of the matrix."""
        stacked = self._stacked.get(key)
        if stacked is None:
            rows = self._rows.get(key)
            if not rows:
                return None
            sizes = np.array([len(m) for m in rows.values()], dtype=np.int64)
            starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
            stacked = self._views(key, np.fromiter(rows.keys(), dtype=np.int64,
                                                   count=len(rows)), starts,
                                  np.vstack(list(rows.values())), sizes)
            self._stacked[key] = stacked
        return stacked

    def search(self, conn: Connection, query: np.ndarray, *, space: str,
               kinds: Sequence[str], model_id: str, limit: int | None,
               seq: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        with self._lock:
            self._load(conn, model_id)
            parts = [m for k in kinds if (m := self._matrix((space, k))) is not None]
        if not parts:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        rids = np.concatenate([p[0] for p in parts])
        best = np.concatenate([self._score(p[2] @ query, p[1], p[3], seq) for p in parts])
        if limit is not None and len(best) > limit:
            top = np.argpartition(-best, limit)[:limit]
            rids, best = rids[top], best[top]
        order = np.argsort(-best, kind="stable")
        return rids[order], best[order]

    @staticmethod
    def _score(cosines: np.ndarray, starts: np.ndarray, sizes: np.ndarray,
               seq: int | None) -> np.ndarray:
        if seq is None:
            return scoring.dense_segments(cosines, starts, sizes)
        return cosines[starts + np.minimum(seq, sizes - 1)]

    def scores(self, conn: Connection, query: np.ndarray, rids: Sequence[int], *,
               model_id: str, seq: int | None = None) -> dict[int, float]:
        with self._lock:
            self._load(conn, model_id)
            found = {rid: m for rows in self._rows.values() for rid in rids
                     if (m := rows.get(rid)) is not None}
        return {rid: _combine(m @ query, seq) for rid, m in found.items()}

    def size(self, conn: Connection, *, space: str, kinds: Sequence[str],
             model_id: str) -> int | None:
        with self._lock:
            self._load(conn, model_id)
            return sum(len(m[0]) for k in kinds if (m := self._matrix((space, k))) is not None)


def _best(scores: dict[int, float], limit: int | None) -> tuple[np.ndarray, np.ndarray]:
    """(rids, scores) of the ``limit`` best, best first."""
    ordered = sorted(scores.items(), key=lambda kv: -kv[1])[:limit]
    return (np.array([r for r, _ in ordered], dtype=np.int64),
            np.array([c for _, c in ordered], dtype=np.float32))


def _literal(vector: np.ndarray) -> str:
    values = np.asarray(vector, dtype=np.float32).tolist()
    return "[" + ",".join(["%.7g"] * len(values)) % tuple(values) + "]"


class PgVectorIndex(VectorIndex):
    """pgvector: an ``embedding`` column next to the portable bytes, an HNSW cosine index
    per dimension (a partial expression index, so several models can coexist), and no
    in-process cache, so every replica sees every write at once."""

    def upsert(self, conn: Connection, rid: int, space: str, kind: str, vectors: np.ndarray,
               model_id: str, roles: Sequence[str] | None = None) -> None:
        conn.execute(delete(schema.search_vectors).where(schema.search_vectors.c.rid == rid))
        matrix, rows = _rows(rid, vectors, model_id, roles)
        conn.execute(text(
            "INSERT INTO search_vectors (rid, seq, model_id, vector, embedding, dim, role) "
            "VALUES (:rid, :seq, :model_id, :vector, CAST(:embedding AS vector), :dim, :role)"),
            [{**values, "embedding": _literal(vector), "dim": int(matrix.shape[1])}
             for values, vector in zip(rows, matrix, strict=True)])

    def prepare(self, conn: Connection, dim: int) -> None:
        """The HNSW index for one dimension (run outside a write transaction)."""
        conn.execute(text(
            f"CREATE INDEX IF NOT EXISTS ix_search_vectors_hnsw_{int(dim)} ON search_vectors "
            f"USING hnsw ((embedding::vector({int(dim)})) vector_cosine_ops) "
            f"WHERE dim = {int(dim)}"))

    def search(self, conn: Connection, query: np.ndarray, *, space: str,
               kinds: Sequence[str], model_id: str, limit: int | None,
               seq: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The documents of the nearest vectors (HNSW), then ranked by their score; with
        no ``limit``, every document of the space and kinds, scored exactly."""
        dim = len(query)
        if limit is None:
            rids = [int(r[0]) for r in conn.execute(text(
                "SELECT rid FROM search_docs WHERE space = :space "
                f"AND kind IN ({kinds_in(kinds)})"), {"space": space})]
            return _best(self.scores(conn, query, rids, model_id=model_id, seq=seq), None)
        seq_filter = "" if seq is None else f"AND v.seq = {int(seq)} "
        # HNSW returns at most ef_search rows before the filters: ask for enough of them.
        conn.execute(text(f"SET LOCAL hnsw.ef_search = {min(1000, max(40, limit * 4))}"))
        rows = conn.execute(text(
            "SELECT DISTINCT v.rid FROM (SELECT v.rid "
            "FROM search_vectors v JOIN search_docs d ON d.rid = v.rid "
            f"WHERE v.dim = {dim} AND v.model_id = :model AND d.space = :space "
            f"AND d.kind IN ({kinds_in(kinds)}) {seq_filter}"
            f"ORDER BY v.embedding::vector({dim}) <=> CAST(:q AS vector({dim})) "
            "LIMIT :limit) v"),
            {"q": _literal(query), "model": model_id, "space": space, "limit": limit * 4})
        found = self.scores(conn, query, [int(r[0]) for r in rows], model_id=model_id, seq=seq)
        return _best(found, limit)

    def scores(self, conn: Connection, query: np.ndarray, rids: Sequence[int], *,
               model_id: str, seq: int | None = None) -> dict[int, float]:
        if not rids:
            return {}
        dim = len(query)
        rows = conn.execute(text(
            f"SELECT rid, seq, 1 - (embedding::vector({dim}) <=> CAST(:q AS vector({dim}))) "
            f"FROM search_vectors WHERE dim = {dim} AND model_id = :model "
            "AND rid = ANY(:rids) ORDER BY rid, seq"),
            {"q": _literal(query), "model": model_id, "rids": list(rids)})
        cosines: dict[int, list[float]] = {}
        for rid, _, cos in rows:
            cosines.setdefault(int(rid), []).append(float(cos))
        return {rid: _combine(np.asarray(c, dtype=np.float32), seq)
                for rid, c in cosines.items()}
