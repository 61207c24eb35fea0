"""KAIROS benchmark: every figure in one run, each beside its baseline measured in the same
run, as median (p50) and p99. Prints tables, writes bench/results/bench[-quick].json and
bench/results/scaling[-quick].png.

    python bench/run.py [--sizes 1000,4613,7425] [--synthetic-50k] [--quick] [--no-postgres]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import figures  # noqa: E402
import report  # noqa: E402
from corpus import (  # noqa: E402
    SYNTHETIC_SIZE,
    Corpus,
    PrimedEmbedder,
    build,
    queries,
    real_items,
    snapshot,
    synthetic_items,
    vector_cache,
)
from harness import machine, postgres, servers  # noqa: E402
from rich.console import Console  # noqa: E402

from kairos.search.embedders import LocalEmbedder  # noqa: E402

RESULTS = HERE / "results"


@dataclass
class Config:
    sizes: list[int]
    synthetic: bool
    quick: bool
    postgres: bool
    queries: int          # latency samples per search figure
    quality_queries: int  # describe → find queries per size (0: all)
    mint_sample: int      # measured mints before each size
    levels: list[int]     # concurrent agents
    seconds: float        # window per concurrency level
    cold_repeats: int
    in_process_runs: int


def config(argv: list[str] | None = None) -> Config:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", help="corpus sizes (protocols from tldr pages, ≤ 7425) "
                                   "[default 1000,4613,7425; --quick: 300,1000]")
    p.add_argument("--synthetic-50k", action="store_true",
                   help="also a 50,000-protocol corpus of varied pages (takes long)")
    p.add_argument("--quick", action="store_true", help="small sizes, fewer repetitions")
    p.add_argument("--no-postgres", action="store_true", help="skip the PostgreSQL figures")
    p.add_argument("--queries", type=int, help="latency samples per figure [300; quick 40]")
    p.add_argument("--quality-queries", type=int,
                   help="retrieval queries per size, 0 for all [1000; quick 150]")
    p.add_argument("--seconds", type=float, help="seconds per concurrency level [15; quick 4]")
    a = p.parse_args(argv)
    quick = a.quick
    sizes = sorted({int(s) for s in (a.sizes or ("300,1000" if quick else "1000,4613,7425"))
                    .split(",")})
    if not sizes or sizes[0] < 20 or sizes[-1] > 7425:
        p.error("sizes must be between 20 and 7425")
    return Config(
        sizes=sizes, synthetic=a.synthetic_50k, quick=quick, postgres=not a.no_postgres,
        queries=a.queries or (40 if quick else 300),
        quality_queries=a.quality_queries if a.quality_queries is not None else (
            150 if quick else 1000),
        mint_sample=min(50 if quick else 200, sizes[0]), levels=[1, 16, 64],
        seconds=a.seconds or (4.0 if quick else 15.0), cold_repeats=2 if quick else 5,
        in_process_runs=10 if quick else 30)


class Bench:
    def __init__(self, cfg: Config, root: Path) -> None:
        self.cfg, self.root = cfg, root
        self.console = Console()
        if not self.console.is_terminal:  # a log file: room for the wide tables
            self.console = Console(width=150)
        suffix = "-quick" if cfg.quick else ""
        self.json_path = RESULTS / f"bench{suffix}.json"
        self.png_path = RESULTS / f"scaling{suffix}.png"
        self.r: dict[str, Any] = {"config": asdict(cfg), "machine": machine(), "corpora": {},
                                  "mint": {}, "search": {}, "unified": {}, "quality": {},
                                  "runs": {}}
        self.logs = root / "logs"
        self.logs.mkdir()

    def save(self) -> None:
        RESULTS.mkdir(exist_ok=True)
        self.json_path.write_text(json.dumps(self.r, indent=2, default=str))

    def stage(self, name: str, fn: Callable[[], Any]) -> Any:
        """Run one figure; a failure is recorded and the run goes on."""
        self.console.rule(f"[bold]{name}")
        started = time.perf_counter()
        try:
            value = fn()
        except Exception as exc:  # one broken figure must not lose the others
            traceback.print_exc()
            value = {"error": f"{type(exc).__name__}: {exc}"}
            self.console.print(f"[red]{name} failed: {value['error']}[/red]")
        self.console.print(f"{name}: {time.perf_counter() - started:.0f} s")
        self.save()
        return value

    def run(self) -> None:
        cfg, con = self.cfg, self.console
        con.print(f"KAIROS bench: sizes {cfg.sizes}{' + synthetic 50k' if cfg.synthetic else ''}"
                  f", {cfg.queries} queries per latency figure, load avg "
                  f"{self.r['machine']['load_avg']} on {self.r['machine']['cpus']} CPUs")
        with con.status("loading the local model"):
            model = LocalEmbedder()
            if not model.ready:
                raise SystemExit(f"the local model did not load: {model.state}")
        primed = PrimedEmbedder(model, vector_cache(model))
        items = real_items()
        prot_sizes = cfg.sizes + ([SYNTHETIC_SIZE] if cfg.synthetic else [])
        if cfg.synthetic:
            items = synthetic_items(items)

        con.rule("[bold]corpora (built once, copied at each size)")
        started = time.perf_counter()
        protocols, self.r["mint"] = build("protocol", items, prot_sizes, self.root, primed,
                                          con, sample=cfg.mint_sample)
        self.r["corpora"]["protocol_build_seconds"] = round(time.perf_counter() - started)
        started = time.perf_counter()
        manuals, _ = build("manual", items, cfg.sizes, self.root, primed, con)
        self.r["corpora"]["manual_build_seconds"] = round(time.perf_counter() - started)
        self.save()
        self.r["corpora"]["sizes"] = prot_sizes
        largest = protocols[cfg.sizes[-1]]

        for size, corpus in protocols.items():
            qs = [q for _, q in queries(corpus.items, cfg.queries)]
            self.r["search"][str(size)] = self.stage(
                f"kairos_search at {size} protocols (SQLite)", lambda c=corpus, qs=qs:
                figures.search(c.home, model, qs, self.logs,
                               vectors=figures.corpus_vectors(c.db, "protocol")))
        latency_qs = [q for _, q in queries(largest.items, cfg.queries)]
        empty = self.root / "empty"
        empty.mkdir()
        self.r["rss_empty"] = self.stage("empty store (RSS baseline)", lambda: figures.search(
            empty, model, latency_qs[:max(20, cfg.queries // 4)], self.logs, vectors=None,
            in_process=False))
        for size, corpus in manuals.items():
            qs = [q for _, q in queries(corpus.items, cfg.queries)]
            self.r["unified"][str(size)] = self.stage(
                f"search_entries at {size} manuals", lambda c=corpus, qs=qs:
                figures.unified_search(c, model, qs))
        quality = figures.Quality(model)
        for size in cfg.sizes:
            corpus = protocols[size]
            self.r["quality"][str(size)] = self.stage(
                f"retrieval quality at {size}", lambda c=corpus: quality.measure(
                    c, queries(c.items, cfg.quality_queries)))
        self.r["cold_start"] = self.stage(f"cold start on {largest.size} protocols", lambda:
                                          figures.cold_start(largest.home, latency_qs[0],
                                                             cfg.cold_repeats,
                                                             self.logs / "stdio.log"))
        self.r["runs"]["sqlite"] = self.stage("runs on SQLite", lambda: self.sqlite_runs(
            largest, model))
        if cfg.postgres:
            self.stage("PostgreSQL", lambda: self.postgres(items, largest, primed, model,
                                                            latency_qs))
        self.r["machine"]["load_avg_end"] = machine()["load_avg"]

    def sqlite_runs(self, corpus: Corpus, model: LocalEmbedder) -> dict[str, Any]:
        home = self.root / "runs-sqlite"
        snapshot(corpus.db, home)
        with servers(home, logs=self.logs) as srv:
            out = figures.runs_over_http([s.url for s in srv], self.cfg.levels,
                                         self.cfg.seconds)
        out["in_process"] = figures.runs_in_process(home, model, self.cfg.in_process_runs)
        return out

    def postgres(self, items: list[Any], largest: Corpus, primed: PrimedEmbedder,
                 model: LocalEmbedder, qs: list[str]) -> None:
        cfg, size = self.cfg, largest.size
        home = self.root / "pg-home"
        with postgres() as url:
            build("protocol", items, [size], self.root, primed, self.console,
                  database_url=url)
            self.r["search"][f"{size} (PostgreSQL)"] = self.stage(
                f"kairos_search at {size} protocols (PostgreSQL)", lambda: figures.search(
                    home, model, qs, self.logs, database_url=url,
                    vectors=figures.corpus_vectors(largest.db, "protocol")))
            for n in (1, 2):
                def one(n: int = n) -> dict[str, Any]:
                    with servers(home, n, database_url=url, logs=self.logs) as srv:
                        return figures.runs_over_http([s.url for s in srv], cfg.levels,
                                                      cfg.seconds)
                self.r["runs"][f"postgres ×{n}"] = self.stage(
                    f"runs on PostgreSQL, {n} replica(s)", one)

    def finish(self) -> None:
        self.r["goals"] = report.goals(self.r)
        self.save()
        self.console.rule("[bold]Results")
        for t in report.tables(self.r):
            self.console.print(t)
        png = report.plot(self.r, self.png_path)
        self.console.print(f"results: {self.json_path}" + (f", plot: {png}" if png else ""))


def main() -> None:
    cfg = config()
    started = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix="kairos-bench-"))
    bench = Bench(cfg, root)
    try:
        bench.run()
    finally:
        bench.r["seconds"] = round(time.perf_counter() - started)
        bench.finish()
        shutil.rmtree(root, ignore_errors=True)
    bench.console.print(f"total: {bench.r['seconds'] / 60:.1f} min")


if __name__ == "__main__":
    main()
