"""Approximate vector search against the exact scan KAIROS does: usearch (HNSW, in
process) and sqlite-vec (a vec0 table in the SQLite file; exact, in SQL), and pgvector's
HNSW with --postgres, on the protocol vectors of the benchmark corpora.

    python bench/ann.py [--synthetic-50k] [--postgres] [--queries 300]

For each index: build seconds, query p50 / p99 ms, and recall@10 against the exact top 10
(numpy over the same matrix), after exact rescoring of the index's top 40. Vectors come
from bench/.cache (bench/corpus.py); the 50,000 synthetic ones are the real pages' moved by
seeded noise, as in bench/run.py.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from corpus import (
    SYNTHETIC_SIZE,
    PrimedEmbedder,
    progress_bar,
    protocol_vector_texts,
    queries,
    real_items,
    synthetic_items,
    vector_cache,
)
from harness import machine, postgres, stats
from rich.console import Console
from rich.table import Table

from kairos.search.embedders import LocalEmbedder

TOP, RESCORE = 10, 40


def vectors(size: int, n: int, console: Console) -> tuple[np.ndarray, np.ndarray]:
    """The first vector of each of ``size`` protocols, and query vectors."""
    model = LocalEmbedder().load()
    primed = PrimedEmbedder(model, vector_cache(model))
    items = real_items()
    if size > len(items):
        items = synthetic_items(items, size)
    base = [it for it in items[:size] if it.base is None]
    with progress_bar(console) as progress:
        primed.prime([t for it in base for t in protocol_vector_texts(it)], progress, "texts")
    for it in items[:size]:
        if it.base is not None:
            primed.derive(protocol_vector_texts(it), protocol_vector_texts(it.base), it.page.id)
    matrix = np.stack([primed.embed(protocol_vector_texts(it)[:1])[0] for it in items[:size]])
    return matrix, model.embed([q for _, q in queries(base, n)])


def exact(matrix: np.ndarray, q: np.ndarray) -> np.ndarray:
    scores = matrix @ q
    top = np.argpartition(-scores, TOP)[:TOP]
    return top[np.argsort(-scores[top])]


def rescored(matrix: np.ndarray, q: np.ndarray, ids: np.ndarray) -> np.ndarray:
    ids = ids[ids >= 0]
    return ids[np.argsort(-(matrix[ids] @ q))][:TOP]


def measure(name: str, matrix: np.ndarray, qs: np.ndarray, build: Any, search: Any
            ) -> dict[str, Any]:
    started = time.perf_counter()
    index = build(matrix)
    built = time.perf_counter() - started
    lat, hits = [], 0
    for q in qs:
        t0 = time.perf_counter()
        found = rescored(matrix, q, np.asarray(search(index, q), dtype=np.int64))
        lat.append(time.perf_counter() - t0)
        hits += len(set(found.tolist()) & set(exact(matrix, q).tolist()))
    return {"index": name, "build_s": round(built, 2), **stats(lat),
            "recall@10": round(hits / (TOP * len(qs)), 4)}


def numpy_exact(matrix: np.ndarray, qs: np.ndarray) -> dict[str, Any]:
    return measure("exact (numpy, the engine's scan)", matrix, qs, lambda m: m,
                   lambda m, q: exact(m, q))


def usearch_hnsw(matrix: np.ndarray, qs: np.ndarray, ef: int) -> dict[str, Any]:
    from usearch.index import Index

    def build(m: np.ndarray) -> Any:
        index = Index(ndim=m.shape[1], metric="cos", dtype="f32", connectivity=16,
                      expansion_add=128, expansion_search=ef)
        index.add(np.arange(len(m)), m, threads=1)
        return index

    return measure(f"usearch HNSW (M 16, ef {ef})", matrix, qs, build,
                   lambda i, q: i.search(q, RESCORE).keys)


def sqlite_vec(matrix: np.ndarray, qs: np.ndarray) -> dict[str, Any]:
    import sqlite_vec as sv

    def build(m: np.ndarray) -> sqlite3.Connection:
        db = sqlite3.connect(":memory:")
        db.enable_load_extension(True)
        sv.load(db)
        db.execute(f"CREATE VIRTUAL TABLE v USING vec0(e float[{m.shape[1]}] "
                   "distance_metric=cosine)")
        db.executemany("INSERT INTO v(rowid, e) VALUES (?, ?)",
                       ((i, row.tobytes()) for i, row in enumerate(m)))
        return db

    return measure("sqlite-vec vec0 (exact, in SQL)", matrix, qs, build, lambda db, q: [
        r[0] for r in db.execute("SELECT rowid FROM v WHERE e MATCH ? AND k = ?",
                                 (q.astype(np.float32).tobytes(), RESCORE))])


def pgvector_hnsw(matrix: np.ndarray, qs: np.ndarray, ef: int) -> dict[str, Any]:
    import psycopg

    with postgres() as url:
        conn = psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"),
                               autocommit=True)

        def build(m: np.ndarray) -> Any:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute(f"CREATE TABLE v (id int PRIMARY KEY, e vector({m.shape[1]}))")
            with conn.cursor().copy("COPY v (id, e) FROM STDIN") as copy:
                for i, row in enumerate(m):
                    copy.write_row((i, "[" + ",".join(f"{x:.7g}" for x in row) + "]"))
            conn.execute("CREATE INDEX ON v USING hnsw (e vector_cosine_ops)")
            conn.execute(f"SET hnsw.ef_search = {ef}")
            return conn

        def search(c: Any, q: np.ndarray) -> list[int]:
            literal = "[" + ",".join(f"{x:.7g}" for x in q) + "]"
            return [r[0] for r in c.execute(
                f"SELECT id FROM v ORDER BY e <=> '{literal}'::vector LIMIT {RESCORE}")]

        try:
            return measure(f"pgvector HNSW (ef_search {ef})", matrix, qs, build, search)
        finally:
            conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--synthetic-50k", action="store_true")
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    console = Console()
    table = Table(title=f"vector indexes against the exact scan, load {machine()['load_avg']}")
    for col in ("vectors", "index", "build s", "query p50 / p99 ms", "recall@10"):
        table.add_column(col)
    for size in [7425] + ([SYNTHETIC_SIZE] if args.synthetic_50k else []):
        matrix, qs = vectors(size, args.queries, console)
        runs = [numpy_exact(matrix, qs), usearch_hnsw(matrix, qs, 64),
                usearch_hnsw(matrix, qs, 256)]
        if hasattr(sqlite3.Connection, "enable_load_extension"):
            runs.append(sqlite_vec(matrix, qs))
        else:  # many Python builds (pyenv's default, macOS's) cannot load SQLite extensions
            console.print("sqlite-vec: skipped, this Python's sqlite3 cannot load extensions")
        if args.postgres:
            runs += [pgvector_hnsw(matrix, qs, 40), pgvector_hnsw(matrix, qs, 400)]
        for r in runs:
            table.add_row(str(size), r["index"], str(r["build_s"]),
                          f"{r['p50_ms']:.2f} / {r['p99_ms']:.2f}", f"{r['recall@10']:.4f}")
    console.print(table)


if __name__ == "__main__":
    main()
