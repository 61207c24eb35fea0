"""Held-out retrieval: requests in people's words (bench/data/requests.jsonl) against the
4,613 tldr `common` pages minted as protocols with their descriptions, through the real
engine (``Kairos.search``, the code behind kairos_search), beside plain all-MiniLM-L6-v2
cosine and BM25 over the same documents, computed in the same run.

    python bench/requests_eval.py --split tune      # the half that choices are made on
    python bench/requests_eval.py --split test      # the half that is reported
    python bench/requests_eval.py --split tune --no-description   # pages without intro

``--no-description`` mints the pages without their description (title, step labels and
commands only, as in the describe → find task and as many real protocols are written); the
baselines then read the same documents without it.

A request counts as found at rank r when any of its expected pages is the r-th match; an
off-topic request is right when kairos_search returns no match at all. The split was
made once with a fixed seed (bench/data/check_requests.py checks it).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import anyio
import numpy as np
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from corpus import PrimedEmbedder, build, open_kairos, progress_bar, real_items, vector_cache
from harness import stats
from search_quality import BM25, RESULTS, metrics
from workload import Page

from kairos.search.embedders import LocalEmbedder

REQUESTS = Path(__file__).resolve().parent / "data" / "requests.jsonl"


def load_requests(split: str) -> list[dict[str, object]]:
    rows = [json.loads(line) for line in REQUESTS.read_text("utf-8").splitlines() if line]
    return [r for r in rows if split == "all" or r["split"] == split]


def plain_doc(page: Page, described: bool = True) -> str:
    """The document the baselines read: the protocol's words (name, description when the
    protocol has it, each step's label and command), without markdown or template braces."""
    steps = " ".join(f"{e['description']} {e['command']}" for e in page.examples)
    head = f"{page.name}: {page.description}" if described else f"{page.name}:"
    return f"{head} {steps}".replace("{{", "").replace("}}", "")


async def fresh_search(home: Path, query: str) -> list[str]:
    """kairos_search as the first call of a `kairos mcp` process started for it: the
    matches' URIs."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "kairos.cli.main", "mcp"],
                                   env={**os.environ, "KAIROS_HOME": str(home)})
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            result = await s.call_tool("kairos_search", {"query": query})
    choices = (result.structured_content or {}).get("choices", [])
    return [c["uri"] for c in choices if c["role"] == "match"]


def _rank_of(order: list[str], expected: set[str]) -> int | None:
    return next((i + 1 for i, pid in enumerate(order[:10]) if pid in expected), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=("tune", "test", "all"), default="tune")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--fresh", type=int, default=0, metavar="N",
                        help="also ask the first N labelled requests each of a freshly "
                             "started `kairos mcp` (stdio, official MCP client), at once")
    parser.add_argument("--evidence", type=Path, default=None,
                        help="write each request's candidates with the engine's raw evidence "
                             "(dense, text) here")
    parser.add_argument("--no-description", action="store_true",
                        help="mint the pages without their description")
    args = parser.parse_args()
    described = not args.no_description

    console = Console(stderr=True)
    requests = load_requests(args.split)
    labelled = [r for r in requests if r["expected"]]
    off_topic = [r for r in requests if not r["expected"]]
    items = [dataclasses.replace(it, described=described) for it in real_items()
             if it.page.platform == "common"]
    model = LocalEmbedder(threads=2).load()
    root = Path(tempfile.mkdtemp(prefix="kairos-requests-"))
    try:
        started = time.perf_counter()
        corpora, _ = build("protocol", items, [len(items)], root,
                           PrimedEmbedder(model, vector_cache(model)), console)
        corpus = corpora[len(items)]
        console.print(f"corpus: {len(corpus.uris)} protocols in "
                      f"{time.perf_counter() - started:.0f} s")
        page_of = {uri: items[i].page.id for uri, i in corpus.uris.items()}
        page_by_title = {it.title: it.page.id for it in items}
        k = open_kairos(corpus.home, LocalEmbedder(threads=1).load())
        try:
            k.search("warm up")
            ranks, latency, no_match = [], [], []
            evidence = []
            for r in requests:
                if args.evidence:
                    hits = k.search_engine.candidates.rank(str(r["query"]), space="default",
                                                           kinds=("protocol",)).hits
                    evidence.append({**r, "candidates": [
                        [page_by_title.get(h.row["title"], "?"), h.dense, h.text]
                        for h in hits]})
                t0 = time.perf_counter()
                choices = k.search(str(r["query"]))["choices"]
                latency.append(time.perf_counter() - t0)
                found = [page_of.get(c["uri"], "?") for c in choices if c["role"] == "match"]
                if r["expected"]:
                    ranks.append(_rank_of(found, set(r["expected"])))  # type: ignore[arg-type]
                else:
                    no_match.append(not found)
        finally:
            k.close()
        fresh = [anyio.run(fresh_search, corpus.home, str(r["query"]))
                 for r in labelled[:args.fresh]]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if args.evidence:
        args.evidence.write_text("\n".join(json.dumps(e) for e in evidence) + "\n")

    ids = [it.page.id for it in items]
    docs = [plain_doc(it.page, described) for it in items]
    cache = PrimedEmbedder(model, vector_cache(model))
    with progress_bar(console) as progress:
        cache.prime(docs, progress, "baseline documents")
    doc_vectors = cache.embed(docs)
    queries = [str(r["query"]) for r in labelled]
    sims = model.embed(queries) @ doc_vectors.T
    bm25 = BM25(docs)
    cos_ranks, bm_ranks = [], []
    for j, r in enumerate(labelled):
        expected = set(r["expected"])  # type: ignore[arg-type]
        cos_ranks.append(_rank_of([ids[i] for i in np.argsort(-sims[j])[:10]], expected))
        bm_ranks.append(_rank_of([ids[i] for i in np.argsort(-bm25.scores(queries[j]))[:10]],
                                 expected))
    methods = {"BM25 (same documents)": metrics(bm_ranks),
               "all-MiniLM-L6-v2 cosine (same documents)": metrics(cos_ranks),
               "KAIROS kairos_search": metrics(ranks)}
    result = {"split": args.split, "described": described, "requests": len(labelled),
              "off_topic": len(off_topic), "documents": len(docs), "model_id": model.model_id,
              "methods": methods,
              "off_topic_no_match": sum(no_match) / len(no_match) if no_match else None,
              "search_ms": stats(latency)}

    table = Table(title=f"requests, {args.split} half"
                        f"{'' if described else ' (pages without description)'}: "
                        f"{len(labelled)} labelled, "
                        f"{len(off_topic)} off-topic, {len(docs)} protocols")
    for col in ("method", "recall@1", "recall@5", "MRR@10"):
        table.add_column(col)
    for name, m in methods.items():
        table.add_row(name, f"{m['recall@1']:.3f}", f"{m['recall@5']:.3f}", f"{m['mrr@10']:.3f}")
    Console().print(table)
    base, ours = methods["all-MiniLM-L6-v2 cosine (same documents)"], methods[
        "KAIROS kairos_search"]
    Console().print(
        f"kairos_search − cosine: recall@1 {ours['recall@1'] - base['recall@1']:+.3f}, "
        f"recall@5 {ours['recall@5'] - base['recall@5']:+.3f}; off-topic with no match: "
        f"{sum(no_match)}/{len(no_match)}; search p50 {result['search_ms']['p50_ms']:.1f} ms")
    if fresh:
        fresh_ranks = [_rank_of([page_of.get(u, "?") for u in found], set(r["expected"]))
                       for found, r in zip(fresh, labelled, strict=False)]
        warm = ranks[:len(fresh)]
        result["fresh_mcp"] = {"requests": len(fresh), "fresh": metrics(fresh_ranks),
                               "warm": metrics(warm), "same_answers": sum(
                                   a == b for a, b in zip(fresh_ranks, warm, strict=True))}
        Console().print(f"fresh `kairos mcp`, first call, {len(fresh)} requests: recall@5 "
                        f"{result['fresh_mcp']['fresh']['recall@5']:.3f} (warm "
                        f"{result['fresh_mcp']['warm']['recall@5']:.3f}); same rank for "
                        f"{result['fresh_mcp']['same_answers']} of {len(fresh)}")
    out = args.json or RESULTS / (f"requests_{args.split}"
                                  f"{'' if described else '_nodesc'}.json")
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
