"""kairos_search latency on its own: over MCP streamable HTTP to `kairos serve`, in process,
and the floor (the query's embedding plus a raw scan of the same vectors), measured in the
same run; with the server's peak RSS, and the empty store's RSS as its baseline.

    python bench/search_latency.py                       # 7,425 tldr protocols (SQLite)
    python bench/search_latency.py --synthetic-50k       # and 50,000 (synthetic variants)
    python bench/search_latency.py --postgres            # and 7,425 on PostgreSQL

The corpora are built as in bench/run.py (bench/corpus.py); queries are the describe → find
queries of the corpus's pages. Results: bench/results/search_latency.json.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import figures
from corpus import (
    SYNTHETIC_SIZE,
    PrimedEmbedder,
    build,
    queries,
    real_items,
    synthetic_items,
    vector_cache,
)
from harness import machine, postgres
from rich.console import Console
from rich.table import Table

from kairos.search.embedders import LocalEmbedder

RESULTS = Path(__file__).resolve().parent / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--synthetic-50k", action="store_true")
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    console = Console()
    model = LocalEmbedder().load()
    primed = PrimedEmbedder(model, vector_cache(model))
    items = real_items()
    sizes = [len(items)] + ([SYNTHETIC_SIZE] if args.synthetic_50k else [])
    if args.synthetic_50k:
        items = synthetic_items(items)
    root = Path(tempfile.mkdtemp(prefix="kairos-latency-"))
    out: dict[str, Any] = {"machine": machine(), "queries": args.queries, "figures": {}}
    try:
        logs = root / "logs"
        logs.mkdir()
        corpora, _ = build("protocol", items, sizes, root, primed, console)
        qs = [q for _, q in queries(corpora[sizes[0]].items, args.queries)]
        empty = root / "empty"
        empty.mkdir()
        out["figures"]["empty (RSS baseline)"] = figures.search(
            empty, model, qs[:50], logs, vectors=None, in_process=False)
        for size, corpus in corpora.items():
            console.print(f"measuring {size} protocols (SQLite)")
            out["figures"][f"{size} SQLite"] = figures.search(
                corpus.home, model, qs, logs,
                vectors=figures.corpus_vectors(corpus.db, "protocol"))
        if args.postgres:
            with postgres() as url:
                size = sizes[0]
                build("protocol", items, [size], root, primed, console, database_url=url)
                console.print(f"measuring {size} protocols (PostgreSQL)")
                out["figures"][f"{size} PostgreSQL"] = figures.search(
                    root / "pg-home", model, qs, logs, database_url=url,
                    vectors=figures.corpus_vectors(corpora[size].db, "protocol"))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    out["load_end"] = machine()["load_avg"]
    table = Table(title=f"kairos_search, {args.queries} queries, load avg "
                        f"{out['machine']['load_avg']} → {out['load_end']}")
    for col in ("store", "MCP HTTP p50 / p99 ms", "in process p50 / p99", "embed p50",
                "scan p50", "floor p50", "HTTP ÷ floor", "peak RSS MB"):
        table.add_column(col)

    def pair(d: dict[str, Any] | None) -> str:
        return f"{d['p50_ms']:.1f} / {d['p99_ms']:.1f}" if d else "—"

    for name, f in out["figures"].items():
        table.add_row(name, pair(f.get("http")), pair(f.get("in_process")),
                      f"{f['embed']['p50_ms']:.2f}" if "embed" in f else "—",
                      f"{f['scan']['p50_ms']:.2f}" if "scan" in f else "—",
                      f"{f['floor']['p50_ms']:.1f}" if "floor" in f else "—",
                      str(f.get("http_over_floor", "—")), str(f.get("rss_peak_mb")))
    console.print(table)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "search_latency.json").write_text(json.dumps(out, indent=2, default=str))
    console.print(f"{time.process_time():.0f} s of CPU in this process")


if __name__ == "__main__":
    main()
