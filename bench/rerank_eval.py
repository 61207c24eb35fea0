"""What reranking the engine's top k could give, and what a cross-encoder of MiniLM-L6's
size would cost per query on this machine, all from one run.

    python bench/rerank_eval.py --split tune --stores DIR     # DIR: stores as match_eval.py
                                                              # builds them (a copy is fine)

**Ceiling.** For every on-topic query of the three stores (``agent_sets.py``), the engine's
order without a boundary (unified search, ``min_score`` 0) down to the largest k, and beside
it plain MiniLM cosine (``match_eval.py``'s baseline). A reranker of the engine's top k can
only reorder those k: its R@1 and R@5 are at most the share of queries whose right answer
is among them (recall@k), whatever its scores. Per store and style: engine R@1 / R@5,
cosine R@1 / R@5, and recall@k for each k.

**Cost.** A cross-encoder reads each (query, candidate) pair through its transformer. The
ms-marco MiniLM-L-6 cross-encoders have the shipped model's shape (6 layers, 384 wide, the
same word pieces); their head (a pooler and a 384 × 1 product) is small beside the layers.
So the shipped int8 graph run on
the k pair encodings "[CLS] query [SEP] candidate's text [SEP]" (the candidate's text cut
to fit ``--max-tokens``) costs what such a reranker costs. Per k, tokens and threads: the
wall time of tokenizing and scoring one query's k pairs, p50 / p99, over the tldr store's
request queries of the half, the configurations interleaved query by query so that the
machine's load falls on all of them alike. One batch per query (k sequences padded to the
longest), and one run per pair (no padding), both timed; beside them the query's own
embedding, which every search already pays, timed the same way. Results:
``bench/results/rerank_<split>.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_sets import PROTOCOL_STORES, STYLES, Store, open_store
from harness import machine, stats
from match_eval import baselines
from search_quality import RESULTS

from kairos.search.embedders import LocalEmbedder

PAGE = 25  # the unified search's largest limit


def engine_order(store: Store, q: str, k: int) -> list[str]:
    """The engine's top ``k`` record ids without a boundary (unified search, ``min_score`` 0,
    read in pages of the largest limit the request allows)."""
    key = "title" if store.name in PROTOCOL_STORES else "entity_id"
    order: list[str] = []
    while len(order) < k:
        page = store.kairos.search_entries({
            "query": q, "types": list(store.kinds), "min_score": 0, "offset": len(order),
            "limit": min(PAGE, k - len(order))})
        order += [store.id_of.get(r[key], "?") for r in page["results"]]
        if not page["has_more"]:
            break
    return order


def first_rank(order: list[str], expected: list[str]) -> int | None:
    return next((i + 1 for i, x in enumerate(order) if x in expected), None)


def ceiling(rows: list[dict[str, Any]], ks: list[int]) -> dict[str, Any]:
    """Engine and cosine R@1 / R@5, and the engine's recall@k, of on-topic ``rows``."""
    n = len(rows)
    out: dict[str, Any] = {"queries": n}
    for method in ("engine", "cosine"):
        ranks = [first_rank(r[method], r["expected"]) for r in rows]
        out[method] = {"r1": sum(x == 1 for x in ranks) / n,
                       "r5": sum(x is not None and x <= 5 for x in ranks) / n}
    ranks = [first_rank(r["engine"], r["expected"]) for r in rows]
    out["recall_at"] = {str(k): sum(x is not None and x <= k for x in ranks) / n for k in ks}
    return out


class PairScorer:
    """The shipped graph run on (query, text) pair encodings: the cost of a cross-encoder of
    its size. Its outputs are not relevance scores; only the time is read."""

    def __init__(self, threads: int, max_tokens: int) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        model_dir = LocalEmbedder().model_dir
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        # The query is kept whole; the candidate's text is cut to fit.
        self.tokenizer.enable_truncation(max_length=max_tokens, strategy="only_second")
        self.tokenizer.enable_padding(pad_id=0, pad_token=self.tokenizer.id_to_token(0))
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(model_dir / "model.onnx"), options,
                                            providers=["CPUExecutionProvider"])

    def run(self, query: str, texts: list[str], batched: bool) -> int:
        """Score the pairs (one batch, or one run per pair); the number of word pieces read."""
        chunks = [texts] if batched else [[t] for t in texts]
        pieces = 0
        for chunk in chunks or [[]]:
            # No candidates: the query alone, as the search embeds it (the baseline).
            encoded = self.tokenizer.encode_batch([(query, t) for t in chunk] or [query])
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            self.session.run(None, {"input_ids": ids, "attention_mask": mask})
            pieces += int(mask.sum())
        return pieces


def cost(store: Store, rows: list[dict[str, Any]], ks: list[int], max_tokens: list[int],
         threads: list[int], console: Console) -> list[dict[str, Any]]:
    """p50 / p99 of scoring one query's top-k pairs, per configuration, interleaved."""
    scorers = {(t, m): PairScorer(t, m) for t in threads for m in max_tokens}
    configs = [(0, max_tokens[0], t, True) for t in threads] + [
        (k, m, t, b) for k in ks for m in max_tokens for t in threads for b in (True, False)]
    times: dict[tuple[int, int, int, bool], list[float]] = {c: [] for c in configs}
    pieces: dict[tuple[int, int, int, bool], list[int]] = {c: [] for c in configs}
    for scorer in scorers.values():
        scorer.run("warm up", ["warm up"] * 4, True)
    for i, r in enumerate(rows):
        texts = [store.docs[x] for x in r["engine"] if x in store.docs]
        for j in range(len(configs)):
            k, m, t, b = c = configs[(i + j) % len(configs)]
            started = time.perf_counter()
            pieces[c].append(scorers[(t, m)].run(r["query"], texts[:k], b))
            times[c].append(time.perf_counter() - started)
    console.print(f"cost: {len(rows)} queries × {len(configs)} configurations")
    return [{"k": k, "max_tokens": m, "threads": t, "batched": b, **stats(times[(k, m, t, b)]),
             "pieces_mean": float(np.mean(pieces[(k, m, t, b)]))}
            for (k, m, t, b) in configs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=("tune", "test", "all"), default="tune")
    parser.add_argument("--stores", type=Path, required=True,
                        help="the stores match_eval.py built (built there when absent)")
    parser.add_argument("--only", default="team,tldr,entries")
    parser.add_argument("--k", default="10,20,30", help="candidate counts to rerank")
    parser.add_argument("--max-tokens", default="64,128", help="pair lengths for the cost")
    parser.add_argument("--threads", default="1,2", help="onnxruntime threads for the cost")
    parser.add_argument("--cost-queries", type=int, default=60,
                        help="tldr request queries timed (the first of the half)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    ks = sorted(int(x) for x in args.k.split(","))
    console = Console(stderr=True)
    model = LocalEmbedder(threads=1).load()
    out: dict[str, Any] = {"split": args.split, "machine": machine(), "stores": {}}
    for name in args.only.split(","):
        store = open_store(name, args.stores, model, args.split, console)
        try:
            rows = [{"query": q.query, "style": q.style, "expected": q.expected,
                     "engine": engine_order(store, q.query, ks[-1])}
                    for q in store.queries if q.expected]
            baselines(store, model, rows, console)
            out["stores"][name] = {"documents": len(store.docs), "all": ceiling(rows, ks), **{
                style: ceiling([r for r in rows if r["style"] == style], ks)
                for style in STYLES if any(r["style"] == style for r in rows)}}
            if name == "tldr":
                requests = [r for r in rows if r["style"] == "request"]
                out["cost"] = cost(store, requests[:args.cost_queries], ks,
                                   [int(x) for x in args.max_tokens.split(",")],
                                   [int(x) for x in args.threads.split(",")], console)
        finally:
            store.kairos.close()
    out["load_end"] = machine()["load_avg"]
    report(out, ks, Console(width=160))
    RESULTS.mkdir(exist_ok=True)
    (args.json or RESULTS / f"rerank_{args.split}.json").write_text(json.dumps(out, indent=1))


def report(out: dict[str, Any], ks: list[int], console: Console) -> None:
    table = Table(title=f"Reranking the engine's top k: the ceiling, {out['split']} half "
                        f"(load {out['machine']['load_avg']} → {out['load_end']})")
    for col in ("store", "style", "n", "engine R@1 / R@5", "cosine R@1 / R@5",
                *(f"recall@{k}" for k in ks)):
        table.add_column(col)
    for name, figures in out["stores"].items():
        for style in ("all", *STYLES):
            f = figures.get(style)
            if f:
                table.add_row(name, style, str(f["queries"]),
                              f"{f['engine']['r1']:.3f} / {f['engine']['r5']:.3f}",
                              f"{f['cosine']['r1']:.3f} / {f['cosine']['r5']:.3f}",
                              *(f"{f['recall_at'][str(k)]:.3f}" for k in ks))
    console.print(table)
    if "cost" not in out:
        return
    table = Table(title="Scoring one query's k pairs through a 6-layer, 384-wide int8 "
                        "transformer (tldr requests; ms)")
    for col in ("k", "max tokens", "threads", "batch", "p50", "p99", "word pieces"):
        table.add_column(col)
    for c in out["cost"]:
        if c["k"] == 0:
            table.add_row("—", "—", str(c["threads"]), "the query alone (its embedding)",
                          f"{c['p50_ms']:.1f}", f"{c['p99_ms']:.1f}", f"{c['pieces_mean']:.0f}")
            continue
        table.add_row(str(c["k"]), str(c["max_tokens"]), str(c["threads"]),
                      "one batch" if c["batched"] else "one per pair", f"{c['p50_ms']:.1f}",
                      f"{c['p99_ms']:.1f}", f"{c['pieces_mean']:.0f}")
    console.print(table)


if __name__ == "__main__":
    main()
