"""Retrieval quality on the tldr "describe → find" task, end to end through kairos_search,
beside BM25 and MiniLM baselines computed in the same run.

    python bench/search_quality.py [--limit N]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from workload import Page

from kairos.search.embedders import LocalEmbedder

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
    parser.add_argument("--model-dir", type=Path, default=None,
                        help="another exported model directory (default: the shipped one)")
    args = parser.parse_args()
    # run.py's corpus and quality figure; imported here, as they import this module.
    from corpus import PrimedEmbedder, build, queries, real_items, vector_cache
    from figures import Quality

    console = Console()
    items = [it for it in real_items() if it.page.platform == "common"][:args.limit]
    qs = queries(items, 0)
    console.print(f"{len(items)} common pages, {len(qs)} queries (one per page)")
    model = LocalEmbedder(args.model_dir).load()
    root = Path(tempfile.mkdtemp(prefix="kairos-quality-"))
    try:
        started = time.perf_counter()
        corpora, _ = build("protocol", items, [len(items)], root,
                           PrimedEmbedder(model, vector_cache(model)), console)
        build_seconds = time.perf_counter() - started
        result = Quality(model).measure(corpora[len(items)], qs)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    table = Table(title=f"tldr describe → find ({len(items)} common pages)")
    for col in ("method", "recall@1", "recall@5", "MRR@10"):
        table.add_column(col)
    for name, m in result["methods"].items():
        table.add_row(name, f"{m['recall@1']:.3f}", f"{m['recall@5']:.3f}", f"{m['mrr@10']:.3f}")
    console.print(table)
    console.print(f"corpus built in {build_seconds:.0f} s (vectors in batches); "
                  f"kairos_search in process: p50 {result['search_ms']['p50_ms']:.1f} ms, "
                  f"p99 {result['search_ms']['p99_ms']:.1f} ms")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "search_quality.json").write_text(json.dumps(
        {"pages": len(items), "model_id": model.model_id, **result,
         "build_seconds": build_seconds}, indent=2))


if __name__ == "__main__":
    main()
