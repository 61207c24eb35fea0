"""kairos_next over HTTP, beside the HTTP floor measured in the same run.

    python bench/next_http.py [--seconds 8] [--levels 1,16,64] [--no-postgres]
                              [--only floor,sqlite,pg] [--processes 1,2]
                              [--max-inflight N] [--json FILE]

Agents run a ten-step protocol (begin, next × 9, attest) over REST, again and again, for
``--seconds`` per concurrency level, each with its own ``X-CHL-Session`` and its own
keep-alive connection to every server. Setups, each started fresh (``kairos serve`` with the
shipped local model on a temporary home):

- **floor**: ``bench/floor_http.py`` — FastAPI under uvicorn with the event loop and HTTP
  parser of ``kairos serve`` (``kairos.server.uvicorn_options``), one trivial JSON route,
  no store, no middleware — with 1 and with 2 worker processes, driven by the same client
  at the same concurrency (each agent posts a body the size of a ``next`` body, in turn);
- **SQLite** behind ``kairos serve --workers 1`` and ``--workers 2`` (one address, the kernel
  spreading connections over the workers);
- **PostgreSQL** (a throwaway one from ``scripts/pg.py``, a new database for each setup)
  behind one ``kairos serve`` and behind two on different ports sharing the database;
  agent i's call j goes to server (i + j) mod 2.

Each server admits ``--max-inflight`` requests at once (``KAIROS_MAX_INFLIGHT``; by default
the largest level, so that every agent is served; the server's own default, 16, would
answer the others 503). A 503 is retried after its Retry-After and counted.

Per level: ``kairos_next`` calls/s and all calls/s (begin, next and attest) completed inside
the window, p50/p99 of one ``next`` and of a whole run (begin → next × 9 → attest), answers
5xx, each throughput over the floor's calls/s at the same concurrency with the same number
of processes, and PostgreSQL's next/s over SQLite's (same processes, same run). The client
is one asyncio process on the same machine (a minimal HTTP/1.1 client over raw streams, so
that the client takes as little of the shared cores as it can); it records its own CPU
time, reported as a share of the window.

Prints a table and writes ``bench/results/next_http.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]

from harness import free_port, kairos_env, load_now, postgres, stats  # noqa: E402

RESULTS = HERE / "results"
STEPS = 10
RUN_PROTOCOL = "# Bench: release checklist\n\nA ten-step run for the benchmark.\n\n" + "".join(
    f"## Check part {i}\n\nCheck part {i} of the release.\n\nPROOF OF WORK: echo part-{i}\n\n"
    for i in range(1, STEPS + 1))
READY_SECONDS = 180.0

try:
    import orjson

    def dumps(value: Any) -> bytes:
        return orjson.dumps(value)

    loads = orjson.loads
except ImportError:  # the client works without it, only slower
    def dumps(value: Any) -> bytes:
        return json.dumps(value, separators=(",", ":")).encode()

    loads = json.loads


# --- a minimal HTTP/1.1 client ---------------------------------------------------------------

class HttpError(Exception):
    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class Conn:
    """One keep-alive connection; requests on it are sequential."""

    def __init__(self, host: str, port: int, headers: dict[str, str] | None = None) -> None:
        self.host, self.port = host, port
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        self.head = (f"Host: {host}:{port}\r\nContent-Type: application/json\r\n"
                     f"Accept: application/json\r\n{extra}")
        self.refused = 0
        self.retry_after: str | None = None  # the last response's Retry-After header
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        self.writer.write(f"{method} {path} HTTP/1.1\r\n{self.head}Content-Length: {len(body)}"
                          f"\r\n\r\n".encode("latin-1") + body)
        try:
            head = await self.reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            await self.close()
            raise HttpError(f"connection closed: {exc}") from None
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        length, chunked, close = None, False, False
        self.retry_after = None
        for line in lines[1:]:
            name, _, value = line.partition(":")
            name = name.strip().lower()
            if name == "retry-after":
                self.retry_after = value.strip()
            elif name == "content-length":
                length = int(value)
            elif name == "transfer-encoding" and "chunked" in value.lower():
                chunked = True
            elif name == "connection" and value.strip().lower() == "close":
                close = True
        if chunked:
            parts = []
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                parts.append(await self.reader.readexactly(size + 2))
                if size == 0:
                    break
            data = b"".join(p[:-2] for p in parts)
        else:
            data = await self.reader.readexactly(length or 0)
        if close:
            await self.close()
        return status, data

    async def json(self, path: str, value: Any) -> dict[str, Any]:
        """POST ``value``; a 503 (too many requests in flight) is retried after its
        Retry-After, as an agent would, and counted in ``refused``."""
        payload = dumps(value)
        while True:
            status, data = await self.request("POST", path, payload)
            body = loads(data)
            if status != 503:
                break
            self.refused += 1
            await asyncio.sleep(float(body.get("details", {}).get("retry_after", 1)))
        if status >= 400 or "error_code" in body:
            raise HttpError(f"{path}: {status} {body.get('error_code')}", status)
        return dict(body)

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with suppress(Exception):
                await self.writer.wait_closed()
        self.reader = self.writer = None


def shell_ok(challenge: dict[str, Any]) -> dict[str, Any]:
    return {"type": "shell", "nonce": challenge["nonce"], "proof_hash": challenge["proof_hash"],
            "shell": {"exit_code": 0, "stdout": "", "stderr": "", "duration_seconds": 0.1}}


# --- load ------------------------------------------------------------------------------------

FLOOR_BODY = {"uri": "kairos://mem/00000000-0000-0000-0000-000000000000",
              "solution": shell_ok({"nonce": "0" * 32, "proof_hash": "0" * 64})}


async def drive(ports: list[int], n: int, seconds: float, steps: list[str] | None
                ) -> dict[str, Any]:
    """``n`` agents for ``seconds``: runs of ``steps`` (kairos), or trivial posts (floor,
    ``steps`` None). Only calls completed inside the window count."""
    nexts: list[float] = []
    calls: list[float] = []
    runs: list[float] = []
    failures: list[str] = []
    server_errors = [0]
    refused = [0]
    stop = asyncio.Event()

    async def agent(i: int) -> None:
        conns = [Conn("127.0.0.1", p, {"X-CHL-Session": f"agent-{i}"}) for p in ports]
        turn = i
        clock = time.perf_counter

        async def call(path: str, body: dict[str, Any]) -> dict[str, Any]:
            nonlocal turn
            conn = conns[turn % len(conns)]
            turn += 1
            t0 = clock()
            out = await conn.json(path, body)
            if not stop.is_set():
                calls.append(clock() - t0)
            return out

        try:
            while not stop.is_set():
                try:
                    if steps is None:
                        await call("/floor", FLOOR_BODY)
                        continue
                    started = clock()
                    r = await call("/api/v1/runs/begin", {"uri": steps[0]})
                    for uri in steps[1:]:
                        t0 = clock()
                        r = await call("/api/v1/runs/next",
                                       {"uri": uri, "solution": shell_ok(r["challenge"])})
                        if not stop.is_set():
                            nexts.append(clock() - t0)
                    await call("/api/v1/runs/attest",
                               {"uri": steps[-1], "outcome": "success", "message": "bench run",
                                "solution": shell_ok(r["challenge"])})
                    if not stop.is_set():
                        runs.append(clock() - started)
                except (HttpError, KeyError, ValueError, OSError) as exc:
                    failures.append(f"{type(exc).__name__}: {exc}"[:200])
                    server_errors[0] += getattr(exc, "status", 0) >= 500
        finally:
            for conn in conns:
                refused[0] += conn.refused
                await conn.close()

    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    tasks = [asyncio.create_task(agent(i)) for i in range(n)]
    started = time.perf_counter()
    await asyncio.sleep(seconds)
    stop.set()
    elapsed = time.perf_counter() - started
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    await asyncio.gather(*tasks)
    client_cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    out: dict[str, Any] = {
        "agents": n, "seconds": round(elapsed, 2),
        "calls_per_second": round(len(calls) / elapsed, 1), "call": stats(calls),
        "failures": len(failures), "first_failure": failures[:1],
        "server_errors_5xx": server_errors[0], "refused_503": refused[0],
        "client_cpu_share": round(client_cpu / elapsed, 2), "load": load_now()}
    if steps is not None:
        out.update(next_per_second=round(len(nexts) / elapsed, 1), next=stats(nexts),
                   run=stats(runs), runs=len(runs))
    return out


def run_levels(ports: list[int], levels: list[int], seconds: float,
               steps: list[str] | None) -> dict[str, Any]:
    loop = _loop()
    asyncio.set_event_loop(loop)
    try:
        loop.run_until_complete(drive(ports, 16, min(2.0, seconds), steps))  # warm-up
        return {str(n): loop.run_until_complete(drive(ports, n, seconds, steps))
                for n in levels}
    finally:
        loop.close()


def _loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop

        return uvloop.new_event_loop()
    except ImportError:
        return asyncio.new_event_loop()


def mint(port: int) -> list[str]:
    async def go() -> list[str]:
        conn = Conn("127.0.0.1", port)
        try:
            body = await conn.json("/api/v1/protocols", {"markdown_doc": RUN_PROTOCOL,
                                                         "force_update": True})
        finally:
            await conn.close()
        return [s["uri"] for s in body["items"][0]["steps"]]

    return asyncio.run(go())


# --- servers ---------------------------------------------------------------------------------

def _health(port: int) -> dict[str, Any] | None:
    async def go() -> dict[str, Any] | None:
        conn = Conn("127.0.0.1", port)
        try:
            status, data = await asyncio.wait_for(conn.request("GET", "/health"), 10)
            return dict(loads(data)) if status < 500 else None
        except (TimeoutError, OSError, HttpError, ValueError):
            return None
        finally:
            await conn.close()

    return asyncio.run(go())


@contextmanager
def started(commands: list[tuple[list[str], int, dict[str, str]]], log: Path
            ) -> Iterator[list[int]]:
    """Start each (argv, port, env); yield the ports once every one answers /health."""
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with log.open("ab") as out:
            for argv, _, env in commands:
                procs.append(subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out,
                                              stderr=subprocess.STDOUT,
                                              start_new_session=True))
        deadline = time.monotonic() + READY_SECONDS
        for proc, (_, port, _) in zip(procs, commands, strict=True):
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"server exited with {proc.returncode}; see {log}")
                health = _health(port)
                if health and health.get("status") in ("healthy", None):
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"port {port} not ready; see {log}")
                time.sleep(0.2)
        yield [port for _, port, _ in commands]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def fresh_database(url: str, name: str) -> str:
    """A new, empty database ``name`` on the server of ``url``; its URL."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def floor_cmd(workers: int) -> tuple[list[str], int, dict[str, str]]:
    port = free_port()
    return ([sys.executable, str(HERE / "floor_http.py"), str(port), str(workers)], port,
            dict(os.environ))


def kairos_cmd(home: Path, workers: int, inflight: int, database_url: str | None = None
               ) -> tuple[list[str], int, dict[str, str]]:
    port = free_port()
    return ([sys.executable, "-m", "kairos.cli.main", "serve", "--port", str(port),
             "--workers", str(workers), "--log-level", "warning"], port,
            kairos_env(home, database_url, KAIROS_MAX_INFLIGHT=str(inflight)))


# --- the run ---------------------------------------------------------------------------------

def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=8.0, help="window per level [8]")
    p.add_argument("--levels", default="1,16,64", help="concurrent agents [1,16,64]")
    p.add_argument("--no-postgres", action="store_true", help="skip PostgreSQL")
    p.add_argument("--only", default="floor,sqlite,pg",
                   help="setups to run, of floor, sqlite, pg [all]")
    p.add_argument("--processes", default="1,2", help="workers / replicas per setup [1,2]")
    p.add_argument("--max-inflight", type=int,
                   help="KAIROS_MAX_INFLIGHT of each server [the largest level]")
    p.add_argument("--json", type=Path, default=RESULTS / "next_http.json")
    a = p.parse_args()
    levels = [int(x) for x in a.levels.split(",")]
    counts = [int(x) for x in a.processes.split(",")]
    only = set(a.only.split(","))
    inflight = a.max_inflight or max(levels)
    if a.no_postgres:
        only.discard("pg")
    import uvicorn

    from kairos.server import uvicorn_options

    result: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "load_avg": [round(x, 2) for x in os.getloadavg()],
                    "python": sys.version.split()[0], "uvicorn": uvicorn.__version__,
                    "time": time.strftime("%Y-%m-%d %H:%M:%S %Z")},
        "config": {"seconds": a.seconds, "levels": levels, "steps": STEPS,
                   "max_inflight": inflight,
                   "server": uvicorn_options()},
        "setups": {}}
    begun = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix="kairos-next-http-"))
    log = root / "servers.log"

    def save() -> None:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(result, indent=2))

    def measure(name: str, commands: list[tuple[list[str], int, dict[str, str]]],
                processes: int, kairos: bool) -> None:
        print(f"{name} …", flush=True)
        with started(commands, log) as ports:
            steps = mint(ports[0]) if kairos else None
            result["setups"][name] = {"processes": processes, "servers": len(ports),
                                      "levels": run_levels(ports, levels, a.seconds, steps)}
        for n, r in result["setups"][name]["levels"].items():
            print(f"  {n:>3} agents: {r['calls_per_second']:8.1f} calls/s"
                  + (f", {r['next_per_second']:7.1f} next/s" if kairos else "")
                  + f", client CPU {r['client_cpu_share']:.2f}, load {r['load']}", flush=True)
        save()

    try:
        for w in counts:
            if "floor" in only:
                measure(f"floor ×{w}", [floor_cmd(w)], w, kairos=False)
        for w in counts:
            if "sqlite" in only:
                home = root / f"sqlite-{w}"
                measure(f"SQLite, {w} worker{'s' if w > 1 else ''}",
                        [kairos_cmd(home, w, inflight)], w, kairos=True)
        if "pg" in only:
            with postgres() as url:
                for n in counts:
                    home = root / f"pg-{n}"
                    db = fresh_database(url, f"next_http_{n}")
                    measure(f"PostgreSQL, {n} replica{'s' if n > 1 else ''}",
                            [kairos_cmd(home, 1, inflight, db) for _ in range(n)], n,
                            kairos=True)
    finally:
        result["seconds"] = round(time.perf_counter() - begun)
        result["machine"]["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
        ratios(result)
        save()
        shutil.rmtree(root, ignore_errors=True)
    table(result)
    print(f"results: {a.json} ({result['seconds']} s)")


def ratios(result: dict[str, Any]) -> None:
    """Each setup's calls/s over the floor's with the same number of processes, and
    PostgreSQL's next/s over SQLite's with the same number of processes."""
    for name, setup in result["setups"].items():
        if name.startswith("PostgreSQL"):
            n = setup["processes"]
            sqlite = result["setups"].get(f"SQLite, {n} worker{'s' if n > 1 else ''}")
            for level, r in setup["levels"].items():
                s = (sqlite or {}).get("levels", {}).get(level)
                if s and s.get("next_per_second"):
                    r["over_sqlite"] = round(r["next_per_second"] / s["next_per_second"], 3)
    for setup in result["setups"].values():
        floor = result["setups"].get(f"floor ×{setup['processes']}")
        if floor is None:
            continue
        for n, r in setup["levels"].items():
            f = floor["levels"].get(n)
            if f and f["calls_per_second"]:
                r["over_floor"] = round(r["calls_per_second"] / f["calls_per_second"], 3)


def table(result: dict[str, Any]) -> None:
    head = ("setup", "agents", "next/s", "÷ SQLite", "calls/s", "÷ floor", "next p50/p99 ms",
            "run p50/p99 ms", "5xx", "client CPU", "load")
    rows = []
    for name, setup in result["setups"].items():
        for n, r in setup["levels"].items():
            nx, run, call = r.get("next"), r.get("run"), r["call"]
            rows.append((
                name, n, f"{r['next_per_second']:.0f}" if "next_per_second" in r else "–",
                f"{r['over_sqlite']:.0%}" if "over_sqlite" in r else "–",
                f"{r['calls_per_second']:.0f}",
                f"{r['over_floor']:.0%}" if "over_floor" in r else "–",
                f"{nx['p50_ms']:.1f} / {nx['p99_ms']:.1f}" if nx else
                f"{call['p50_ms']:.1f} / {call['p99_ms']:.1f}",
                f"{run['p50_ms']:.0f} / {run['p99_ms']:.0f}" if run else "–",
                str(r.get("server_errors_5xx", "–")),
                f"{r['client_cpu_share']:.2f}", f"{r['load']}"))
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=True)]
    for row in (head, *rows):
        print(" | ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
