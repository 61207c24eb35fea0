"""What an attest costs as its caller's history grows, with and without the index that
finds the caller's run before this one (``ix_runs_caller_created``).

    python bench/attest_history.py [--sizes 0,5000,20000] [--attests 200] [--repeats 3]
                                   [--database-url URL] [--json FILE]

A proven run learns from the searches its caller made since their run before it
(``learned.previous_start``), inside the attest's write, which on SQLite every other
write waits for. One caller of a temporary store (the shipped local model) runs a one-step
protocol again and again until it has made each of ``--sizes`` runs; at each size it
times ``--attests`` rounds of search, begin, attest-with-the-last-proof (only the attest is
timed, wall clock, in process), once with the index and once after ``DROP INDEX``, in
``--repeats`` alternating pairs; the index is put back after. Reported per size: the
median attest in ms, each way, and their ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from next_http import shell_ok  # noqa: E402

from kairos.config import load_settings  # noqa: E402
from kairos.domain.caller import Caller  # noqa: E402
from kairos.domain.requests import Attest, Begin, Mint, Search  # noqa: E402
from kairos.domain.validation import parse  # noqa: E402
from kairos.search.embedders import local_model  # noqa: E402
from kairos.service import Kairos  # noqa: E402
from kairos.service.wiring import open_service  # noqa: E402

PROTOCOL = """# Nightly Backup Check

Check that last night's backup of the database finished.

## Check the backup

Run the check script and make sure it exits cleanly.

PROOF OF WORK: timeout 30s ./check-backup.sh
"""
INDEX = "ix_runs_caller_created"
CREATE = f"CREATE INDEX {INDEX} ON runs (space, caller, created_at)"
CALLER = Caller(id="nightly-agent")


def run(k: Kairos, uri: str, *, search: bool) -> float:
    """One run of the protocol; the seconds its attest took."""
    if search:
        k.search(parse(Search, {"query": "check last night's database backup"}), CALLER)
    begun = k.begin(parse(Begin, {"uri": uri}), CALLER)
    request = parse(Attest, {"uri": uri, "outcome": "success", "message": "checked",
                             "solution": shell_ok(begun["challenge"])})
    started = time.perf_counter()
    k.attest(request, CALLER)
    return time.perf_counter() - started


def timed(k: Kairos, uri: str, attests: int) -> float:
    """Median ms of ``attests`` attests, each after a search that gives it a lead."""
    k.search_engine.learning.flush()
    took = []
    for _ in range(attests):
        took.append(run(k, uri, search=True))
        k.search_engine.learning.flush()  # the lead is written before the next attest
    return 1000 * statistics.median(took)


def index(k: Kairos, present: bool) -> None:
    with k.store.engine.connect() as conn, conn.begin():
        conn.exec_driver_sql(CREATE if present else f"DROP INDEX {INDEX}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="0,5000,20000", help="runs the caller has made")
    ap.add_argument("--attests", type=int, default=200, help="attests timed per measure")
    ap.add_argument("--repeats", type=int, default=3, help="pairs of measures per size")
    ap.add_argument("--database-url", help="a PostgreSQL URL (default: SQLite)")
    ap.add_argument("--json", type=Path, default=HERE / "results" / "attest_history.json")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="kairos-attest-history-") as home:
        env = {"KAIROS_HOME": home}
        if a.database_url:
            env["KAIROS_DATABASE_URL"] = a.database_url
        k = open_service(load_settings(env=env), embedder=local_model(), background=False)
        try:
            uri = k.mint(parse(Mint, {"markdown_doc": PROTOCOL}), CALLER)["items"][0]["uri"]
            made = 0
            for size in (int(s) for s in a.sizes.split(",")):
                while made < size:
                    run(k, uri, search=False)
                    made += 1
                with_index, without = [], []
                for _ in range(a.repeats):
                    with_index.append(timed(k, uri, a.attests))
                    index(k, present=False)
                    without.append(timed(k, uri, a.attests))
                    index(k, present=True)
                made += 2 * a.repeats * a.attests
                fast, slow = statistics.median(with_index), statistics.median(without)
                rows.append({"runs_of_caller": size, "backend": k.store.dialect,
                             "with_index_ms": round(fast, 3), "without_ms": round(slow, 3),
                             "without_over_with": round(slow / fast, 2),
                             "each": {"with_index": with_index, "without": without}})
                print(f"{k.store.dialect} {size:>6} runs of the caller: attest {fast:.2f} ms "
                      f"with the index, {slow:.2f} ms without ({slow / fast:.2f}×)", flush=True)
        finally:
            k.close()
    a.json.parent.mkdir(parents=True, exist_ok=True)
    a.json.write_text(json.dumps({"attests": a.attests, "repeats": a.repeats,
                                  "rows": rows}, indent=1))
    print(f"results: {a.json}")


if __name__ == "__main__":
    main()
