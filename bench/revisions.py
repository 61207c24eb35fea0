"""Two revisions of the server under the same mixed load, side by side: the working tree
against ``--base`` (a git revision), each level's window run on one and then the other.

    python bench/revisions.py [--base HEAD] [--levels 16,64] [--rounds 4] [--seconds 20]
                              [--workers 1] [--json FILE]

The load is ``backpressure.py``'s (its clients, store and steady-part figures). Both
servers run from the start, on SQLite, each with its own home; the base revision is
checked out into a temporary git worktree and run from there. Windows alternate between
the two servers (base first in even rounds, the working tree first in odd ones), so a
drift of the machine's load falls on both alike: on this 2-core machine the same server
varies by 10 % or more from one window to the next, more than most changes do. Per
level, the medians of each server's windows and the median of the rounds' ratios (the
working tree's figure over the base's, in the same round) are reported.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from backpressure import RESULTS, inputs, level, prepare  # noqa: E402
from harness import machine  # noqa: E402
from next_http import kairos_cmd, started  # noqa: E402

ROOT = HERE.parent


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", default="HEAD", help="the git revision to compare with [HEAD]")
    p.add_argument("--levels", default="16,64", help="clients per level [16,64]")
    p.add_argument("--rounds", type=int, default=4, help="windows per level and server [4]")
    p.add_argument("--seconds", type=float, default=20.0, help="window [20]")
    p.add_argument("--warmup", type=float, default=2.0, help="left out of a window [2]")
    p.add_argument("--settle", type=float, default=20.0,
                   help="seconds the largest level runs first on each, unmeasured [20]")
    p.add_argument("--workers", type=int, default=1, help="processes of each server [1]")
    p.add_argument("--json", type=Path, default=RESULTS / "revisions.json")
    a = p.parse_args()
    levels = [int(x) for x in a.levels.split(",")]
    corpus, fresh, queries = inputs(300)
    root = Path(tempfile.mkdtemp(prefix="kairos-rev-"))
    base = root / "base"
    try:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q",
                        str(base), a.base], check=True)
        commit = subprocess.run(["git", "-C", str(base), "rev-parse", "--short", "HEAD"],
                                check=True, capture_output=True, text=True).stdout.strip()
        b_argv, b_port, b_env = kairos_cmd(root / "b", a.workers, 16)
        w_argv, w_port, w_env = kairos_cmd(root / "w", a.workers, 16)
        # -P: the base's code, not that of the directory the server starts in
        b_argv, b_env = [b_argv[0], "-P", *b_argv[1:]], {**b_env, "PYTHONPATH": str(base)}
        with started([(b_argv, b_port, b_env), (w_argv, w_port, w_env)],
                     root / "servers.log") as ports, \
                multiprocessing.get_context("fork").Pool(2) as pool:
            servers = {}
            for name, port in zip((commit, "working tree"), ports, strict=True):
                servers[name] = (port, prepare(pool, 2, port, max(levels), a.settle, corpus,
                                               fresh, queries, 8))
            rows: list[dict[str, Any]] = []
            for r in range(a.rounds):
                names = list(servers) if r % 2 == 0 else list(servers)[::-1]
                for n in levels if r % 2 == 0 else levels[::-1]:
                    for name in names:
                        port, proc = servers[name]
                        row = {"server": name, "round": r,
                               **level(pool, 2, port, n, a.seconds, a.warmup, queries,
                                       fresh, 8, proc)}
                        print(name, f"round {r + 1}", n, row["successes_per_s"],
                              row["admitted"], flush=True)
                        rows.append(row)
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)],
                       check=False)
        shutil.rmtree(root, ignore_errors=True)
    result = {"machine": machine(), "base": commit, "workers": a.workers,
              "seconds": a.seconds, "rounds": a.rounds, "rows": rows,
              "levels": summary(rows, levels, commit)}
    a.json.parent.mkdir(parents=True, exist_ok=True)
    a.json.write_text(json.dumps(result, indent=1))
    print(f"clients | {commit}: successes/s, p99 ms | working tree: successes/s, p99 ms | "
          "ratio (working tree ÷ base)")
    for s in result["levels"]:
        print(f"{s['clients']} | {s['base']['successes_per_s']:.0f}, "
              f"{s['base']['p99_ms']:.0f} | {s['tree']['successes_per_s']:.0f}, "
              f"{s['tree']['p99_ms']:.0f} | {s['successes_ratio']:.2f}, p99 "
              f"{s['p99_ratio']:.2f}")
    print(f"results: {a.json}")


def summary(rows: list[dict[str, Any]], levels: list[int], commit: str) -> list[dict[str, Any]]:
    out = []
    for n in levels:
        pick = {name: sorted((r for r in rows if r["clients"] == n and r["server"] == name),
                             key=lambda r: r["round"]) for name in (commit, "working tree")}
        pairs = list(zip(pick[commit], pick["working tree"], strict=True))

        def med(name: str, key: str, pick: dict[str, list[dict[str, Any]]] = pick) -> float:
            return statistics.median(r[key] if key == "successes_per_s"
                                     else r["admitted"][key] for r in pick[name])

        out.append({
            "clients": n,
            "base": {"successes_per_s": med(commit, "successes_per_s"),
                     "p99_ms": med(commit, "p99_ms")},
            "tree": {"successes_per_s": med("working tree", "successes_per_s"),
                     "p99_ms": med("working tree", "p99_ms")},
            "successes_ratio": round(statistics.median(
                t["successes_per_s"] / b["successes_per_s"] for b, t in pairs), 3),
            "p99_ratio": round(statistics.median(
                t["admitted"]["p99_ms"] / b["admitted"]["p99_ms"] for b, t in pairs), 3)})
    return out


if __name__ == "__main__":
    main()
