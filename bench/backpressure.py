"""Backpressure: how fast admitted requests stay when far more clients call than the server
serves at once.

One `kairos serve` (SQLite) with 300 tldr protocols. Each client loops over a mixed agent
workload — a `kairos_search`, then a run (begin, next × steps, attest) of the protocol it
found — for a fixed window. A refused request (503 OVERLOADED) is counted and retried after
its `Retry-After` plus a random share of it (jitter), as a well-behaved client does; the
clients run in one process on the server's cores, so a burst of refusals also costs the
client's own event loop. Measured in one run, same data:

- 16 clients with the default in-flight limit (the baseline);
- 256 clients with the default limit (backpressure on);
- 256 clients with no effective limit (10,000: everything queues, the old behaviour).

Reports p50/p99 of admitted requests, requests/s, refusals, and the 256-client p99 as a
ratio to the 16-client p99 (goal: within 5×).

    python bench/backpressure.py [--seconds 20] [--protocols 300]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import httpx2  # noqa: E402
from harness import Server, load_now, machine, stats  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402
from workload import load_pages, protocol_markdown, task_query  # noqa: E402

RESULTS = HERE / "results"


class Tally:
    def __init__(self) -> None:
        self.admitted: list[float] = []
        self.refused = 0
        self.errors = 0


async def call(http: httpx2.AsyncClient, tally: Tally, path: str, body: dict[str, Any],
               deadline: float, rng: random.Random) -> dict[str, Any] | None:
    """POST until admitted (or the window ends); the admitted latency is recorded."""
    while time.monotonic() < deadline:
        started = time.perf_counter()
        response = await http.post(path, json=body)
        if response.status_code == 503:
            tally.refused += 1
            wait = float(response.headers.get("retry-after", "1"))
            await asyncio.sleep(wait * rng.uniform(1, 2))
            continue
        tally.admitted.append(time.perf_counter() - started)
        if response.status_code >= 400:
            tally.errors += response.status_code >= 500
            return None
        return dict(response.json())
    return None


async def agent(http: httpx2.AsyncClient, tally: Tally, queries: list[str],
                deadline: float, rng: random.Random) -> None:
    while time.monotonic() < deadline:
        found = await call(http, tally, "/api/v1/protocols/search",
                           {"query": rng.choice(queries)}, deadline, rng)
        matches = [c for c in (found or {}).get("choices", []) if c["role"] == "match"]
        if not matches:
            continue
        step = await call(http, tally, "/api/v1/runs/begin", {"uri": matches[0]["uri"]},
                          deadline, rng)
        while step is not None and "challenge" in step:
            challenge = step["challenge"]
            solution = {"type": "shell", "nonce": challenge["nonce"],
                        "proof_hash": challenge["proof_hash"],
                        "shell": {"exit_code": 0, "stdout": "ok", "stderr": "",
                                  "duration_seconds": 0.1}}
            uri = step["next_action"].split("kairos://mem/")[-1][:36]
            if "kairos_attest" in step["next_action"]:
                await call(http, tally, "/api/v1/runs/attest",
                           {"uri": f"kairos://mem/{uri}", "outcome": "success",
                            "message": "done", "solution": solution}, deadline, rng)
                break
            step = await call(http, tally, "/api/v1/runs/next",
                              {"uri": f"kairos://mem/{uri}", "solution": solution}, deadline, rng)


async def level(url: str, clients: int, seconds: float, queries: list[str]) -> dict[str, Any]:
    tally = Tally()
    limits = httpx2.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx2.AsyncClient(base_url=url, limits=limits,
                                  timeout=httpx2.Timeout(120)) as http:
        deadline = time.monotonic() + seconds
        started = time.monotonic()
        await asyncio.gather(*(agent(http, tally, queries, deadline, random.Random(i))
                               for i in range(clients)))
        elapsed = time.monotonic() - started
    return {"clients": clients, **stats(tally.admitted),
            "admitted_per_s": round(len(tally.admitted) / elapsed, 1),
            "refused": tally.refused, "server_errors": tally.errors, "load": load_now()}


def mint(url: str, pages: list[Any]) -> None:
    with httpx2.Client(base_url=url, timeout=120) as http:
        for page in pages:
            http.post("/api/v1/protocols", json={"markdown_doc": protocol_markdown(page)})


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=20.0, help="window per level [20]")
    p.add_argument("--protocols", type=int, default=300, help="protocols minted [300]")
    args = p.parse_args()
    console = Console()
    pages = [pg for pg in load_pages(platform="common") if pg.examples][:args.protocols]
    queries = [q for q in (task_query(pg) for pg in pages) if q]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="kairos-bp-") as tmp:
        home = Path(tmp)
        for name, clients, inflight in (("limit 16", 16, 16), ("limit 16", 256, 16),
                                        ("no limit", 256, 10_000)):
            server = Server(home, None, home / f"serve-{clients}-{inflight}.log",
                            KAIROS_MAX_INFLIGHT=str(inflight))
            try:
                server.wait_ready()
                if not rows:
                    mint(server.url, pages)
                row = asyncio.run(level(server.url, clients, args.seconds, queries))
            finally:
                server.stop()
            rows.append({"server": name, **row})
            console.print(rows[-1])
    base = rows[0]["p99_ms"]
    table = Table(title=f"Backpressure: admitted requests, {args.seconds:.0f} s per level, "
                        f"{len(pages)} protocols, SQLite")
    for col in ("server", "clients", "admitted/s", "p50 ms", "p99 ms", "p99 / 16-client p99",
                "refused (503)", "5xx"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["server"], str(r["clients"]), f"{r['admitted_per_s']:.1f}",
                      f"{r['p50_ms']:.1f}", f"{r['p99_ms']:.1f}",
                      f"{r['p99_ms'] / base:.2f}×", str(r["refused"]), str(r["server_errors"]))
    console.print(table)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "backpressure.json"
    out.write_text(json.dumps({"machine": machine(), "seconds": args.seconds,
                               "protocols": len(pages), "levels": rows}, indent=1))
    console.print(f"wrote {out}")


if __name__ == "__main__":
    main()
