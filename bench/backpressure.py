"""Mixed load at rising concurrency: how many answers succeed, how fast the admitted ones
are, and when (and how) the server sheds — on SQLite and on PostgreSQL.

    python bench/backpressure.py [--seconds 20] [--levels 16,20,64,256] [--protocols 300]
                                 [--backends sqlite,pg] [--mint-every 8] [--json FILE]
                                 [--env KEY=VALUE ...]

One `kairos serve` per backend (defaults: 16 in flight, 64 waiting, 5 s wait), with 300
tldr protocols minted first. Each client loops over a mixed agent workload: a search
(`/api/v1/protocols/search`), every ``--mint-every``-th time a mint of a new protocol into
the same space, then a run (begin, next × steps, attest) of the protocol the search found.
The levels run one after the other on the same server, for ``--seconds`` each; the
16-client level is the baseline the others are read against.

A 503 is counted (with or without Retry-After) and retried after its Retry-After plus a
random share of it, as a well-behaved client does; a 409 CONFLICT (a write told to retry)
and any other 5xx are counted. The clients are one asyncio process (uvloop, the minimal
HTTP/1.1 client of ``next_http.py``) on the same cores as the server.

Per level: successes/s (2xx answers completed inside the window), p50/p99 of admitted
answers (everything but a 503, measured from the request to its answer, waiting in the
server's queue included), the p99 over the 16-client p99, and the counts. Goals: no 503 at
20 and 64 clients, successes/s at 64 ≥ at 16; at 256, every 503 with Retry-After and the
admitted p99 ≤ 5× the 16-client p99.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from contextlib import nullcontext
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from harness import load_now, machine, postgres, stats  # noqa: E402
from next_http import (  # noqa: E402
    Conn,
    _loop,
    dumps,
    fresh_database,
    kairos_cmd,
    loads,
    shell_ok,
    started,
)
from workload import load_pages, protocol_markdown, task_query  # noqa: E402

RESULTS = HERE / "results"


class Tally:
    def __init__(self) -> None:
        self.ok: list[float] = []           # 2xx answers, completed inside the window
        self.admitted: list[float] = []     # every answer but a 503
        self.codes: Counter[str] = Counter()
        self.stop = False


async def call(conn: Conn, tally: Tally, path: str, body: dict[str, Any],
               rng: random.Random) -> dict[str, Any] | None:
    """POST until admitted (or the window ends); the body of a 2xx, else None."""
    payload = dumps(body)
    while not tally.stop:
        started_at = time.perf_counter()
        status, data = await conn.request("POST", path, payload)
        took = time.perf_counter() - started_at
        if tally.stop:
            return None
        if status == 503:
            retry_after = conn.retry_after
            tally.codes["503 with Retry-After" if retry_after else "503 WITHOUT Retry-After"] += 1
            await asyncio.sleep(float(retry_after or 1) * rng.uniform(1, 2))
            continue
        tally.admitted.append(took)
        answer = loads(data) if data else {}
        if status < 300:
            tally.ok.append(took)
            return dict(answer)
        tally.codes[f"{status} {answer.get('error_code')}"] += 1
        return None
    return None


async def agent(i: int, port: int, tally: Tally, queries: list[str], fresh: list[str],
                mint_every: int) -> None:
    rng = random.Random(i)
    conn = Conn("127.0.0.1", port, {"X-CHL-Session": f"agent-{i}"})
    turn = 0
    try:
        while not tally.stop:
            turn += 1
            found = await call(conn, tally, "/api/v1/protocols/search",
                               {"query": rng.choice(queries)}, rng)
            if turn % mint_every == 0:
                doc = rng.choice(fresh).replace("\n", f" (agent {i}, turn {turn})\n", 1)
                await call(conn, tally, "/api/v1/protocols",
                           {"markdown_doc": doc, "force_update": True}, rng)
            matches = [c for c in (found or {}).get("choices", []) if c["role"] == "match"]
            if not matches:
                continue
            step = await call(conn, tally, "/api/v1/runs/begin", {"uri": matches[0]["uri"]},
                              rng)
            while step is not None and "challenge" in step:
                uri = step["next_action"].split("kairos://mem/")[-1][:36]
                body = {"uri": f"kairos://mem/{uri}", "solution": shell_ok(step["challenge"])}
                if "kairos_attest" in step["next_action"]:
                    await call(conn, tally, "/api/v1/runs/attest",
                               {**body, "outcome": "success", "message": "done"}, rng)
                    break
                step = await call(conn, tally, "/api/v1/runs/next", body, rng)
    finally:
        await conn.close()


async def level(port: int, clients: int, seconds: float, queries: list[str],
                fresh: list[str], mint_every: int) -> dict[str, Any]:
    tally = Tally()
    tasks = [asyncio.create_task(agent(i, port, tally, queries, fresh, mint_every))
             for i in range(clients)]
    began = time.perf_counter()
    await asyncio.sleep(seconds)
    tally.stop = True
    elapsed = time.perf_counter() - began
    ok, admitted = list(tally.ok), list(tally.admitted)  # what the window saw
    await asyncio.gather(*tasks, return_exceptions=True)
    return {"clients": clients, "successes_per_s": round(len(ok) / elapsed, 1),
            "admitted": stats(admitted), "codes": dict(tally.codes), "load": load_now()}


def mint(port: int, docs: list[str]) -> None:
    async def go() -> None:
        conn = Conn("127.0.0.1", port)
        try:
            for doc in docs:
                await conn.json("/api/v1/protocols", {"markdown_doc": doc,
                                                      "force_update": True})
        finally:
            await conn.close()

    asyncio.run(go())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=20.0, help="window per level [20]")
    p.add_argument("--levels", default="16,20,64,256", help="clients per level")
    p.add_argument("--protocols", type=int, default=300, help="protocols minted first [300]")
    p.add_argument("--backends", default="sqlite,pg", help="of sqlite, pg [both]")
    p.add_argument("--mint-every", type=int, default=8,
                   help="a client mints on every N-th turn [8]")
    p.add_argument("--env", action="append", default=[],
                   help="KEY=VALUE for each server (e.g. KAIROS_MAX_QUEUE=1)")
    p.add_argument("--json", type=Path, default=RESULTS / "backpressure.json")
    a = p.parse_args()
    levels = [int(x) for x in a.levels.split(",")]
    pages = [pg for pg in load_pages(platform="common") if pg.examples]
    corpus = [protocol_markdown(pg) for pg in pages[:a.protocols]]
    fresh = [protocol_markdown(pg) for pg in pages[a.protocols:a.protocols + 500]]
    queries = [q for q in (task_query(pg) for pg in pages[:a.protocols]) if q]
    extra = dict(item.split("=", 1) for item in a.env)
    result: dict[str, Any] = {"machine": machine(), "seconds": a.seconds,
                              "protocols": len(corpus), "mint_every": a.mint_every,
                              "server_env": extra, "backends": {}}
    root = Path(tempfile.mkdtemp(prefix="kairos-bp-"))
    try:
        for backend in a.backends.split(","):
            with postgres() if backend == "pg" else nullcontext() as url:
                database = fresh_database(url, "backpressure") if url else None
                argv, port, env = kairos_cmd(root / backend, 1, 16, database)  # 16: default
                with started([(argv, port, {**env, **extra})],
                             root / "servers.log") as (port,):
                    mint(port, corpus)
                    loop = _loop()
                    rows = []
                    for n in levels:
                        rows.append(loop.run_until_complete(
                            level(port, n, a.seconds, queries, fresh, a.mint_every)))
                        print(backend, rows[-1], flush=True)
                    loop.close()
            base = rows[0]["admitted"]["p99_ms"]
            for r in rows:
                r["p99_over_first"] = round(r["admitted"]["p99_ms"] / base, 2)
            result["backends"][backend] = rows
            a.json.parent.mkdir(parents=True, exist_ok=True)
            a.json.write_text(json.dumps(result, indent=1))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    result["machine"]["load_avg_end"] = machine()["load_avg"]
    a.json.write_text(json.dumps(result, indent=1))
    table(result, levels[0])
    print(f"results: {a.json}")


def table(result: dict[str, Any], first: int) -> None:
    head = ("backend", "clients", "successes/s", "admitted p50 / p99 ms",
            f"p99 ÷ {first}-client", "503 (with / without Retry-After)", "409 CONFLICT",
            "other errors", "load")
    rows = []
    for backend, levels in result["backends"].items():
        for r in levels:
            codes = dict(r["codes"])
            with_ra = codes.pop("503 with Retry-After", 0)
            without = codes.pop("503 WITHOUT Retry-After", 0)
            conflict = codes.pop("409 CONFLICT", 0)
            rows.append((backend, r["clients"], f"{r['successes_per_s']:.0f}",
                         f"{r['admitted']['p50_ms']:.0f} / {r['admitted']['p99_ms']:.0f}",
                         f"{r['p99_over_first']:.2f}×", f"{with_ra} / {without}",
                         str(conflict), json.dumps(codes) if codes else "0", str(r["load"])))
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=True)]
    for row in (head, *rows):
        print(" | ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
