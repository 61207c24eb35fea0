"""What an agent sees, on three stores and five query styles (``agent_sets.py``), beside
the engine's own ranking without a boundary, plain MiniLM cosine and BM25 over the same
documents, all from the same run.

    python bench/match_eval.py --split tune                 # the half choices are made on
    python bench/match_eval.py --split test                 # the half that is reported
    python bench/match_eval.py --split tune --evidence FILE # candidates' evidence, for
                                                            # bench/fit_match.py
    python bench/match_eval.py --stores DIR                 # keep the built stores there

Where the agent stands: ``kairos_search`` (``Kairos.search``, the code behind the MCP tool)
for the protocol stores, the unified search at its default ``min_score`` for the entries.
"Ranking" is the unified search with ``min_score`` 0: every candidate, in the engine's
order. Per store and style: recall@1 / recall@5 of each; for the agent's view also "right
among the matches", "hidden" (a right answer among the engine's top 5 but not among the
matches: the best-ranked right answer of the top 5 is not a match) and, for off-topic
queries, the share with no match. Results: ``bench/results/match_<split>.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_sets import PROTOCOL_STORES, STYLES, Query, Store, open_store
from corpus import PrimedEmbedder, progress_bar, vector_cache
from harness import machine, stats
from search_quality import BM25, RESULTS

from kairos.domain.doctext import title_form
from kairos.search.embedders import LocalEmbedder

TOP = 10


def agent_view(store: Store, q: str) -> list[str]:
    """The matches an agent gets, as record ids, best first."""
    k = store.kairos
    if store.name in PROTOCOL_STORES:
        choices = k.search(q, limit=TOP)["choices"]
        return [store.id_of.get(c["chain_label"], "?") for c in choices if c["role"] == "match"]
    results = k.search_entries({"query": q, "types": list(store.kinds), "limit": TOP})
    return [store.id_of.get(r["entity_id"], "?") for r in results["results"]]


def ranking(store: Store, q: str) -> list[str]:
    """The engine's order without a boundary (unified search, ``min_score`` 0)."""
    results = store.kairos.search_entries({"query": q, "types": list(store.kinds),
                                           "limit": TOP, "min_score": 0})["results"]
    key = "title" if store.name in PROTOCOL_STORES else "entity_id"
    return [store.id_of.get(r[key], "?") for r in results]


def evidence(store: Store, q: Query) -> dict[str, Any]:
    """Each candidate's raw evidence as the engine computed it (for ``fit_match.py``), and
    the query's cosines over the whole store."""
    engine = store.kairos.search_engine
    ranked = engine.rank(q.query, space="default", kinds=store.kinds,
                         boosts=store.name in PROTOCOL_STORES)
    key = "title" if store.name in PROTOCOL_STORES else "entity_id"
    candidates = [{"id": store.id_of.get(h.row[key] if key == "title" else h.entity_id, "?"),
                   "kind": h.kind, "dense": h.dense, "text": h.text,
                   "exact_title": title_form(h.row["title"]) == title_form(q.query),
                   **h.lexical.to_dict()} for h in ranked.hits]
    every: list[float] = []
    if ranked.query_vector is not None:
        with store.kairos.store.read() as repo:
            _, sims = store.kairos.store.vector_index.search(
                repo.conn, ranked.query_vector, space="default", kinds=store.kinds,
                model_id=engine.embedder.model_id, limit=None)
        every = sims.tolist()
    terms = ranked.terms
    return {"store": store.name, "id": q.id, "query": q.query, "style": q.style,
            "split": q.split, "expected": q.expected, "n_docs": len(store.docs),
            "terms": None if terms is None else [list(terms.words), list(terms.counts),
                                                 terms.n_docs, terms.n_scope],
            "candidates": candidates, "dense_all": sorted(every, reverse=True)[:50],
            "dense_mean": float(np.mean(every)) if every else None,
            "dense_std": float(np.std(every)) if every else None}


def rank_of(order: list[str], expected: set[str]) -> int | None:
    return next((i + 1 for i, x in enumerate(order[:TOP]) if x in expected), None)


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of one store and style (or of several, pooled)."""
    on = [r for r in rows if r["expected"]]
    off = [r for r in rows if not r["expected"]]
    out: dict[str, Any] = {"queries": len(on), "off_topic": len(off)}
    if off:
        out["off_topic_no_match"] = sum(not r["agent"] for r in off) / len(off)
    if not on:
        return out
    for method in ("agent", "ranking", "cosine", "bm25"):
        ranks = [rank_of(r[method], set(r["expected"])) for r in on]
        out[method] = {"r1": sum(x == 1 for x in ranks) / len(on),
                       "r5": sum(x is not None and x <= 5 for x in ranks) / len(on)}
    out["right_among_matches"] = sum(
        any(x in r["expected"] for x in r["agent"]) for r in on) / len(on)
    hidden = 0
    for r in on:
        top = next((x for x in r["ranking"][:5] if x in r["expected"]), None)
        hidden += top is not None and top not in r["agent"]
    out["hidden"] = hidden / len(on)
    out["matches_per_query"] = float(np.mean([len(r["agent"]) for r in on]))
    return out


def baselines(store: Store, model: LocalEmbedder, rows: list[dict[str, Any]],
              console: Console) -> None:
    """Plain cosine and BM25 over the store's plain documents, for every on-topic row."""
    ids = list(store.docs)
    texts = [store.docs[i] for i in ids]
    cache = PrimedEmbedder(model, vector_cache(model))
    with progress_bar(console) as progress:
        cache.prime(texts, progress, f"{store.name}: baseline documents")
    doc_vectors = cache.embed(texts)
    bm25 = BM25(texts)
    for r in rows:
        qv = store.kairos.search_engine.candidates.embed_query(r["query"])
        sims = doc_vectors @ qv if qv is not None else np.zeros(len(ids))
        r["cosine"] = [ids[i] for i in np.argsort(-sims)[:TOP]]
        r["bm25"] = [ids[i] for i in np.argsort(-bm25.scores(r["query"]))[:TOP]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=("tune", "test", "all"), default="tune")
    parser.add_argument("--stores", type=Path, default=None,
                        help="build the stores here, or reuse them when they are there")
    parser.add_argument("--only", default="team,tldr,entries", help="stores to measure")
    parser.add_argument("--evidence", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    console = Console(stderr=True)
    model = LocalEmbedder(threads=1).load()
    root = args.stores or Path(tempfile.mkdtemp(prefix="kairos-match-"))
    root.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"split": args.split, "machine": machine(), "stores": {}}
    dumped: list[dict[str, Any]] = []
    rows_of: dict[str, list[dict[str, Any]]] = {}
    latency: list[float] = []
    try:
        for name in args.only.split(","):
            store = open_store(name, root, model, args.split, console)
            try:
                store.kairos.search("warm up")
                rows = []
                for q in store.queries:
                    t0 = time.perf_counter()
                    agent = agent_view(store, q.query)
                    latency.append(time.perf_counter() - t0)
                    rows.append({"id": q.id, "query": q.query, "style": q.style,
                                 "expected": q.expected, "agent": agent,
                                 "ranking": ranking(store, q.query)})
                    if args.evidence:
                        dumped.append(evidence(store, q))
                baselines(store, model, [r for r in rows if r["expected"]], console)
            finally:
                store.kairos.close()
            rows_of[name] = rows
            out["stores"][name] = {"documents": len(store.docs), "all": summarise(rows), **{
                style: summarise([r for r in rows if r["style"] == style])
                for style in STYLES if any(r["style"] == style for r in rows)}}
    finally:
        if args.stores is None:
            shutil.rmtree(root, ignore_errors=True)
    out["search_ms"] = stats(latency)
    out["load_end"] = machine()["load_avg"]
    report(out, Console(width=160))
    if args.evidence:
        args.evidence.write_text("\n".join(json.dumps(d) for d in dumped) + "\n")
    RESULTS.mkdir(exist_ok=True)
    target = args.json or RESULTS / f"match_{args.split}.json"
    target.write_text(json.dumps({**out, "rows": rows_of}, indent=1))


def _pair(m: dict[str, float] | None) -> str:
    return "—" if m is None else f"{m['r1']:.3f} / {m['r5']:.3f}"


def report(out: dict[str, Any], console: Console) -> None:
    table = Table(title=f"What agents send, {out['split']} half (R@1 / R@5; load "
                        f"{out['machine']['load_avg']} → {out['load_end']})")
    for col in ("store", "style", "n", "agent sees (matches)", "right among matches",
                "hidden", "ranking", "cosine", "BM25", "off-topic, no match"):
        table.add_column(col)
    for name, figures in out["stores"].items():
        for style in ("all", *STYLES):
            f = figures.get(style)
            if not f:
                continue
            table.add_row(
                name, style, f"{f['queries']}+{f['off_topic']}", _pair(f.get("agent")),
                f"{f['right_among_matches']:.3f}" if "agent" in f else "—",
                f"{f['hidden']:.3f}" if "agent" in f else "—", _pair(f.get("ranking")),
                _pair(f.get("cosine")), _pair(f.get("bm25")),
                f"{f['off_topic_no_match']:.3f}" if "off_topic_no_match" in f else "—")
    console.print(table)
    console.print(f"search p50 {out['search_ms']['p50_ms']:.1f} ms, "
                  f"p99 {out['search_ms']['p99_ms']:.1f} ms")


if __name__ == "__main__":
    main()
