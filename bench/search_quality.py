"""Retrieval quality on the tldr "describe → find" task, end to end through kairos_search,
beside BM25 and MiniLM baselines computed in the same run.

    python bench/search_quality.py [--limit N] [--embedder local|none]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from workload import Page, protocol_markdown, task_items

from kairos.config import load_settings
from kairos.search.embedders import LocalEmbedder, make_embedder
from kairos.service import Kairos

RESULTS = Path(__file__).resolve().parent / "results"
_STOP = set("a an and are as at be by for from has he in is it its of on that the to was were "
            "will with this these those or not but if then than so such into out up down "
            "over under which who whom what when where why how all any both each few more most "
            "other some no nor only own same too very can just should now".split())


def baseline_doc(page: Page) -> str:
    """name + example descriptions + commands, braces and brackets stripped."""
    parts = [page.name] + [f"{e['description']} {e['command']}" for e in page.examples]
    return re.sub(r"[{}\[\]]", "", " ".join(parts))


def _tokens(text: str) -> list[str]:
    return [w for w in re.findall(r"\w+", text.lower()) if w not in _STOP]


class BM25:
    """Okapi BM25 (k1=1.5, b=0.75) with English stop words, as the task's baseline."""

    def __init__(self, docs: list[str], k1: float = 1.5, b: float = 0.75) -> None:
        self.tf = [Counter(_tokens(d)) for d in docs]
        self.len = np.array([sum(c.values()) for c in self.tf], dtype=float)
        self.avg = float(self.len.mean())
        df: Counter[str] = Counter()
        for c in self.tf:
            df.update(c.keys())
        n = len(docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.k1, self.b = k1, b
        self.postings: dict[str, list[int]] = {}
        for i, c in enumerate(self.tf):
            for t in c:
                self.postings.setdefault(t, []).append(i)

    def scores(self, query: str) -> np.ndarray:
        out = np.zeros(len(self.tf))
        for t in set(_tokens(query)):
            for i in self.postings.get(t, []):
                f = self.tf[i][t]
                norm = f + self.k1 * (1 - self.b + self.b * self.len[i] / self.avg)
                out[i] += self.idf[t] * f * (self.k1 + 1) / norm
        return out


def metrics(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks)
    return {
        "recall@1": sum(r == 1 for r in ranks) / n,
        "recall@5": sum(r is not None and r <= 5 for r in ranks) / n,
        "mrr@10": sum(1 / r for r in ranks if r is not None and r <= 10) / n,
    }


def _rank(order: np.ndarray, target: int) -> int | None:
    hits = np.flatnonzero(order[:10] == target)
    return int(hits[0]) + 1 if len(hits) else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit", type=int, default=None, help="first N common pages only")
    parser.add_argument("--embedder", default="local", choices=["local", "none"])
    args = parser.parse_args()
    console = Console()
    items = list(task_items(args.limit))
    pages = [p for p, _ in items]
    queries = [q for _, q in items]
    console.print(f"{len(items)} pages (common), one query each")

    embedder = make_embedder(args.embedder)
    if isinstance(embedder, LocalEmbedder):
        embedder.wait(300)
    home = Path(tempfile.mkdtemp(prefix="kairos-bench-"))
    k = Kairos(load_settings(env={"KAIROS_HOME": str(home)}), embedder=embedder,
               background=False)
    index_of: dict[str, int] = {}
    started = time.perf_counter()
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("minting", total=len(pages))
        for i, page in enumerate(pages):
            item = k.mint(protocol_markdown(page, with_description=False),
                          force_update=True)["items"][0]
            index_of[item["uri"]] = i
            progress.advance(task)
    mint_seconds = time.perf_counter() - started

    kairos_ranks: list[int | None] = []
    latencies = []
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("searching", total=len(queries))
        for i, query in enumerate(queries):
            t0 = time.perf_counter()
            response = k.search(query)
            latencies.append(time.perf_counter() - t0)
            found = [index_of.get(c["uri"]) for c in response["choices"] if c["role"] == "match"]
            kairos_ranks.append(found.index(i) + 1 if i in found else None)
            progress.advance(task)

    docs = [baseline_doc(p) for p in pages]
    bm25 = BM25(docs)
    bm25_ranks = [_rank(np.argsort(-bm25.scores(q)), i) for i, q in enumerate(queries)]
    rows = {"BM25 (k1=1.5, b=0.75, stop words)": metrics(bm25_ranks)}
    if embedder.ready:
        dvec = embedder.embed(docs)
        qvec = embedder.embed(queries)
        sims = qvec @ dvec.T
        mini_ranks = [_rank(np.argsort(-sims[i]), i) for i in range(len(queries))]
        rows["all-MiniLM-L6-v2 cosine"] = metrics(mini_ranks)
    rows["KAIROS kairos_search"] = metrics(kairos_ranks)

    table = Table(title=f"tldr describe → find ({len(items)} common pages)")
    for col in ("method", "recall@1", "recall@5", "MRR@10"):
        table.add_column(col)
    for name, m in rows.items():
        table.add_row(name, f"{m['recall@1']:.3f}", f"{m['recall@5']:.3f}", f"{m['mrr@10']:.3f}")
    console.print(table)
    lat = np.array(latencies) * 1000
    console.print(f"mint: {len(pages) / mint_seconds:.1f} protocols/s; kairos_search in process: "
                  f"p50 {np.percentile(lat, 50):.1f} ms, p99 {np.percentile(lat, 99):.1f} ms")
    RESULTS.mkdir(exist_ok=True)
    out = {"pages": len(items), "embedder": args.embedder, "methods": rows,
           "mint_per_second": len(pages) / mint_seconds,
           "search_ms": {"p50": float(np.percentile(lat, 50)),
                         "p99": float(np.percentile(lat, 99))}}
    (RESULTS / "search_quality.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
