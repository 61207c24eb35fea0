"""Mixed load at rising concurrency: how many answers succeed, how fast the admitted ones
are, and when (and how) the server sheds — on SQLite and on PostgreSQL.

    python bench/backpressure.py [--seconds 20] [--warmup 2] [--levels 16,20,64,256]
                                 [--settle 20] [--rounds 4] [--client-processes 2]
                                 [--workers 1]
                                 [--protocols 300]
                                 [--backends sqlite,pg] [--mint-every 8] [--json FILE]
                                 [--log FILE] [--env KEY=VALUE ...]

One `kairos serve` per backend (defaults: 16 in flight, 64 waiting, 5 s wait), with 300
tldr protocols minted first, then one protocol of its own for each client of the largest
level. Each client loops over a mixed agent workload: a search
(`/api/v1/protocols/search`), every ``--mint-every``-th time a mint into the same space (a
new version of the client's own protocol: the title is the client's, the steps another
tldr page's), then a run (begin, next × steps, attest) of the protocol the search found.
Every window thus sees a store of the same size: when each mint made a new protocol, the
store grew through the run, and with it the server's CPU per success (2.97 ms in a run's
first window, 3.5–4.1 ms in the later ones), which favoured whichever level ran first.
Before the rounds, the largest level runs for ``--settle`` seconds, unmeasured: its
clients' runs teach the protocols their learned triggers (up to ten each) and leave their
searches' leads, and the server's CPU per success rose through the first round until they
had (3.57 ms in the first window, 4.2–5.2 ms once a 256-client window had run), which
favoured the first levels. The levels then run one after the other on the same server,
for ``--seconds`` each, in ``--rounds`` rounds, every other round in reverse order (16,
20, 64, 256, then 256, 64, 20, 16, …), an even number of them so that every level holds
each place as often: the machine's load drifts, and a fixed order would hand every later
level a different machine. The 16-client level is the baseline the others are read
against, in the same round; a figure's ratio is the median of its rounds' ratios.

A 503 is counted (with or without Retry-After) and retried after its Retry-After plus a
random share of it, as a well-behaved client does; a 409 CONFLICT (a write told to retry)
and any other 5xx are counted. The clients are spread over ``--client-processes``
processes (uvloop, the minimal HTTP/1.1 client of ``next_http.py``; client i in process
i mod P), on the same cores as the server: one process alone would serve 64 or 256
connections from one event loop, and be the first thing to fall behind.

Besides the answers, each level records the CPU the server process spent (``/proc``) per
success, and the clients' CPU: the server's CPU per success at 64 clients against 16 says
whether a request waiting in the queue costs the server anything, whatever CPU the shared
machine leaves it.

Every client of a level starts in the same millisecond, so a window opens with a burst:
at 64 clients, 64 searches at once, of which 48 wait in the queue behind 16 others (the
waits of searches and begins had a p99 of 580–630 ms, those of next and attest 235 ms, all
the longest among a window's first 100 requests). That burst is the
bench's, not the level's, so a level's figures are those of its steady part: answers to
requests sent after the window's first ``--warmup`` seconds, and successes completed in
that time. The same figures over the whole window are reported beside them
(``whole_window``).

Per level (summed over the rounds; rates and ratios as medians of the rounds):
successes/s (2xx answers completed), p50/p99 of admitted answers (everything but a 503,
measured from the request to its answer, waiting in the server's queue included), the
p99 over the 16-client p99, both again over the whole window, server CPU and context
switches per success, and the counts. Goals: no 503 at 20 and 64 clients, successes/s at
64 ≥ at 16; at 256, every 503 with Retry-After and the admitted p99 ≤ 5× the 16-client
p99.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import psutil

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
        self.ok: list[float] = []           # when each 2xx answer completed
        self.admitted: list[tuple[float, float]] = []  # every answer but a 503: (sent, took)
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
        tally.admitted.append((started_at, took))
        answer = loads(data) if data else {}
        if status < 300:
            tally.ok.append(started_at + took)
            return dict(answer)
        tally.codes[f"{status} {answer.get('error_code')}"] += 1
        return None
    return None


def own(i: int, doc: str) -> str:
    """``doc`` as a version of client ``i``'s own protocol: its title is the client's."""
    return f"# The procedure of agent {i}\n" + doc.split("\n", 1)[1]


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
            if turn % mint_every == 0:  # a new version of the agent's own protocol
                await call(conn, tally, "/api/v1/protocols",
                           {"markdown_doc": own(i, rng.choice(fresh)), "force_update": True},
                           rng)
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


async def window(port: int, agents: range, seconds: float, warmup: float, queries: list[str],
                 fresh: list[str], mint_every: int) -> dict[str, Any]:
    """``agents`` for ``seconds``: the window's answers, whole and past its first
    ``warmup`` seconds (the steady part), and this process's CPU."""
    tally = Tally()
    tasks = [asyncio.create_task(agent(i, port, tally, queries, fresh, mint_every))
             for i in agents]
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    began = time.perf_counter()
    await asyncio.sleep(seconds)
    tally.stop = True
    elapsed = time.perf_counter() - began
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    ok, admitted = list(tally.ok), list(tally.admitted)  # what the window saw
    await asyncio.gather(*tasks, return_exceptions=True)
    steady = began + warmup
    return {"ok": len(ok), "ok_steady": sum(done >= steady for done in ok),
            "admitted": [took for _, took in admitted],
            "admitted_steady": [took for sent, took in admitted if sent >= steady],
            "codes": dict(tally.codes), "elapsed": elapsed,
            "cpu": (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)}


def _client(args: tuple[Any, ...]) -> dict[str, Any]:
    """One client process's share of a level (``multiprocessing``)."""
    loop = _loop()
    try:
        return loop.run_until_complete(window(*args))
    finally:
        loop.close()


def level(pool: Any, processes: int, port: int, clients: int, seconds: float,
          warmup: float, queries: list[str], fresh: list[str], mint_every: int,
          server: psutil.Process) -> dict[str, Any]:
    shares = [(port, range(p, clients, processes), seconds, warmup, queries, fresh,
               mint_every) for p in range(min(processes, clients))]
    cpu0, switches0 = _usage(server)
    parts = pool.map(_client, shares)
    cpu1, switches1 = _usage(server)
    elapsed = statistics.mean(part["elapsed"] for part in parts)
    ok = sum(part["ok"] for part in parts)
    ok_steady = sum(part["ok_steady"] for part in parts)
    codes: Counter[str] = Counter()
    for part in parts:
        codes.update(part["codes"])
    server_cpu = cpu1 - cpu0
    return {"clients": clients, "successes_per_s": round(ok_steady / (elapsed - warmup), 1),
            "admitted": stats([t for part in parts for t in part["admitted_steady"]]),
            "whole_window": {"successes_per_s": round(ok / elapsed, 1),
                             "admitted": stats([t for part in parts
                                                for t in part["admitted"]])},
            "codes": dict(codes), "load": load_now(),
            "server_cpu_share": round(server_cpu / elapsed, 2),
            "server_cpu_ms_per_success": round(1000 * server_cpu / max(ok, 1), 2),
            "server_switches_per_success": {
                kind: round((switches1[kind] - switches0[kind]) / max(ok, 1), 1)
                for kind in ("voluntary", "involuntary")},
            "client_cpu_share": round(sum(part["cpu"] for part in parts) / elapsed, 2)}


def listening(port: int) -> psutil.Process:
    """The server that listens on ``port``: with several workers, their supervisor."""
    for conn in psutil.net_connections("tcp"):
        if conn.laddr and conn.laddr.port == port and conn.status == psutil.CONN_LISTEN \
                and conn.pid:
            found = psutil.Process(conn.pid)
            parent = found.parent()
            return parent if parent and str(port) in parent.cmdline() else found
    raise RuntimeError(f"no process listens on port {port}")


def _usage(server: psutil.Process) -> tuple[float, dict[str, int]]:
    """CPU seconds and context switches of ``server`` and its workers so far."""
    cpu, switches = 0.0, {"voluntary": 0, "involuntary": 0}
    for proc in (server, *server.children(recursive=True)):
        times, counts = proc.cpu_times(), proc.num_ctx_switches()
        cpu += times.user + times.system
        switches["voluntary"] += counts.voluntary
        switches["involuntary"] += counts.involuntary
    return cpu, switches


def combined(rounds: list[list[dict[str, Any]]], first: int) -> list[dict[str, Any]]:
    """Per level over the rounds: counts summed, rates and ratios as medians of the
    rounds (each ratio against the first level's figure of the same round)."""
    out = []
    for n in dict.fromkeys(r["clients"] for r in rounds[0]):
        rows = [next(r for r in rnd if r["clients"] == n) for rnd in rounds]
        base = [next(r for r in rnd if r["clients"] == first) for rnd in rounds]
        codes: Counter[str] = Counter()
        for r in rows:
            codes.update(r["codes"])
        out.append({
            "clients": n, "rounds": rows,
            "successes_per_s": statistics.median(r["successes_per_s"] for r in rows),
            "successes_over_first": round(statistics.median(
                r["successes_per_s"] / b["successes_per_s"] for r, b in zip(rows, base,
                                                                             strict=True)), 2),
            "server_cpu_per_success_over_first": round(statistics.median(
                r["server_cpu_ms_per_success"] / b["server_cpu_ms_per_success"]
                for r, b in zip(rows, base, strict=True)), 2),
            "server_cpu_ms_per_success": statistics.median(
                r["server_cpu_ms_per_success"] for r in rows),
            "p99_over_first": round(statistics.median(
                r["admitted"]["p99_ms"] / b["admitted"]["p99_ms"]
                for r, b in zip(rows, base, strict=True)), 2),
            "whole_window": {
                "successes_over_first": round(statistics.median(
                    r["whole_window"]["successes_per_s"] / b["whole_window"]["successes_per_s"]
                    for r, b in zip(rows, base, strict=True)), 2),
                "p99_ms": statistics.median(r["whole_window"]["admitted"]["p99_ms"]
                                            for r in rows),
                "p99_over_first": round(statistics.median(
                    r["whole_window"]["admitted"]["p99_ms"]
                    / b["whole_window"]["admitted"]["p99_ms"]
                    for r, b in zip(rows, base, strict=True)), 2)},
            "admitted": {"p50_ms": statistics.median(r["admitted"]["p50_ms"] for r in rows),
                         "p99_ms": statistics.median(r["admitted"]["p99_ms"] for r in rows)},
            "codes": dict(codes),
            "load": [r["load"] for r in rows]})
    return out


def inputs(protocols: int) -> tuple[list[str], list[str], list[str]]:
    """The tldr protocols minted first, the pages a client mints later, the queries."""
    pages = [pg for pg in load_pages(platform="common") if pg.examples]
    return ([protocol_markdown(pg) for pg in pages[:protocols]],
            [protocol_markdown(pg) for pg in pages[protocols:protocols + 500]],
            [q for q in (task_query(pg) for pg in pages[:protocols]) if q])


def prepare(pool: Any, processes: int, port: int, clients: int, settle: float,
            corpus: list[str], fresh: list[str], queries: list[str],
            mint_every: int) -> psutil.Process:
    """The corpus and each of ``clients`` clients' own protocol minted, then the store
    settled (``clients`` clients for ``settle`` seconds, unmeasured); the server."""
    mint(port, corpus)
    mint(port, [own(i, fresh[i % len(fresh)]) for i in range(clients)])
    server = listening(port)
    if settle > 0:
        level(pool, processes, port, clients, settle, 0, queries, fresh, mint_every, server)
    return server


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
    p.add_argument("--warmup", type=float, default=2.0,
                   help="first seconds of a window left out of its steady figures [2]")
    p.add_argument("--levels", default="16,20,64,256", help="clients per level")
    p.add_argument("--settle", type=float, default=20.0,
                   help="seconds the largest level runs first, unmeasured [20]")
    p.add_argument("--rounds", type=int, default=4,
                   help="times every level runs, every other round in reverse order [4]")
    p.add_argument("--workers", type=int, default=1,
                   help="server processes (kairos serve --workers) [1]")
    p.add_argument("--client-processes", type=int, default=2,
                   help="processes the clients are spread over [2]")
    p.add_argument("--protocols", type=int, default=300, help="protocols minted first [300]")
    p.add_argument("--backends", default="sqlite,pg", help="of sqlite, pg [both]")
    p.add_argument("--mint-every", type=int, default=8,
                   help="a client mints on every N-th turn [8]")
    p.add_argument("--env", action="append", default=[],
                   help="KEY=VALUE for each server (e.g. KAIROS_MAX_QUEUE=1)")
    p.add_argument("--json", type=Path, default=RESULTS / "backpressure.json")
    p.add_argument("--log", type=Path, help="keep the servers' log in this file")
    a = p.parse_args()
    levels = [int(x) for x in a.levels.split(",")]
    corpus, fresh, queries = inputs(a.protocols)
    extra = dict(item.split("=", 1) for item in a.env)
    result: dict[str, Any] = {"machine": machine(), "seconds": a.seconds,
                              "protocols": len(corpus), "mint_every": a.mint_every,
                              "rounds": a.rounds, "settle": a.settle,
                              "client_processes": a.client_processes,
                              "workers": a.workers,
                              "server_env": extra, "backends": {}}
    root = Path(tempfile.mkdtemp(prefix="kairos-bp-"))
    try:
        for backend in a.backends.split(","):
            with postgres() if backend == "pg" else nullcontext() as url:
                database = fresh_database(url, "backpressure") if url else None
                argv, port, env = kairos_cmd(root / backend, a.workers, 16,  # 16: default
                                             database)
                with started([(argv, port, {**env, **extra})],
                             root / "servers.log") as (port,), \
                        multiprocessing.get_context("fork").Pool(a.client_processes) as pool:
                    server = prepare(pool, a.client_processes, port, max(levels), a.settle,
                                     corpus, fresh, queries, a.mint_every)
                    rounds = []
                    for i in range(a.rounds):
                        order = levels if i % 2 == 0 else levels[::-1]
                        rows = {n: level(pool, a.client_processes, port, n, a.seconds,
                                         a.warmup, queries, fresh, a.mint_every, server)
                                for n in order}
                        for n in order:
                            print(backend, f"round {i + 1}", rows[n], flush=True)
                        rounds.append([rows[n] for n in levels])
            result["backends"][backend] = combined(rounds, levels[0])
            a.json.parent.mkdir(parents=True, exist_ok=True)
            a.json.write_text(json.dumps(result, indent=1))
    finally:
        if a.log and (root / "servers.log").exists():
            shutil.copy(root / "servers.log", a.log)
        shutil.rmtree(root, ignore_errors=True)
    result["machine"]["load_avg_end"] = machine()["load_avg"]
    a.json.write_text(json.dumps(result, indent=1))
    table(result, levels[0])
    print(f"results: {a.json}")


def table(result: dict[str, Any], first: int) -> None:
    head = ("backend", "clients", "successes/s", f"÷ {first}-client", "admitted p50 / p99 ms",
            f"p99 ÷ {first}-client", f"whole window: ÷ {first} / p99 ÷ {first}",
            f"server CPU ms / success (÷ {first})",
            "503 (with / without Retry-After)", "409 CONFLICT", "other errors", "load")
    rows = []
    for backend, levels in result["backends"].items():
        for r in levels:
            codes = dict(r["codes"])
            with_ra = codes.pop("503 with Retry-After", 0)
            without = codes.pop("503 WITHOUT Retry-After", 0)
            conflict = codes.pop("409 CONFLICT", 0)
            rows.append((backend, r["clients"], f"{r['successes_per_s']:.0f}",
                         f"{r['successes_over_first']:.2f}",
                         f"{r['admitted']['p50_ms']:.0f} / {r['admitted']['p99_ms']:.0f}",
                         f"{r['p99_over_first']:.2f}×",
                         f"{r['whole_window']['successes_over_first']:.2f} / "
                         f"{r['whole_window']['p99_over_first']:.2f}×",
                         f"{r['server_cpu_ms_per_success']:.2f} "
                         f"({r['server_cpu_per_success_over_first']:.2f})",
                         f"{with_ra} / {without}", str(conflict),
                         json.dumps(codes) if codes else "0",
                         " ".join(str(x) for x in r["load"])))
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=True)]
    for row in (head, *rows):
        print(" | ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
