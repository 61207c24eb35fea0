"""CPU time of one ``kairos_next`` call in process (``Kairos.next`` on a SQLite file).

    python bench/next_cpu.py [--runs N] [--repeats R] [--steps S] [--profile] [--json FILE]
                             [--database-url URL] [--rest] [--statements]

Builds a Kairos on a temporary SQLite store with the shipped local model, mints two
protocols of ``--steps`` steps each — one whose steps end in ``PROOF OF WORK: timeout 30s
...`` (shell challenges), one whose steps end in ``PROOF OF WORK: comment min_length=20``
— and drives ``--runs`` runs of each: ``begin``, ``next`` for steps 2..S, ``attest`` with
the last step's solution. Only the ``next`` calls are timed, with ``time.process_time``
(CPU of this process, all threads), and the figure is the CPU per call over all of them;
the median of ``--repeats`` repetitions (each with fresh runs) is reported, with calls/s
(calls over the CPU they took, i.e. one core's throughput in process, no transport).

The shell figure is the run loop itself. A comment answer adds its relevance check
(``domain.relevance``: lexical, no model call) on top of that.

``--rest`` sends the same calls through the REST app in process instead (``create_app`` as
``kairos serve`` builds it, called as ASGI: routing, the middleware, validation, the thread
hop, the JSON; no sockets), so the difference between the two is what the HTTP stack costs
beyond the service, before any network.

``--statements`` drives one more run through the service and prints, per call (begin,
each ``next``, attest), the database round trips it made: every statement SQLAlchemy sent
(BEGIN and COMMIT included) and each liveness ping of a pooled connection.

``--profile`` runs one more repetition of the shell loop with its ``next`` calls under
cProfile and prints the top entries by cumulative time. ``KAIROS_BENCH_CODE`` is printed:
the directory the ``kairos`` package was imported from, so a run against another checkout
(``PYTHONPATH=...``) says so.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import pstats
import statistics
import sys
import tempfile
import time
from functools import partial
from itertools import pairwise
from pathlib import Path
from typing import Any

import uvloop

import kairos
from kairos.config import load_settings
from kairos.domain.caller import Caller
from kairos.domain.requests import Attest, Begin, Mint, Next
from kairos.domain.validation import parse
from kairos.search.embedders import local_model
from kairos.service import Kairos
from kairos.service.wiring import open_service

COMMENT_MIN = 20


def release_protocol(kind: str, steps: int) -> str:
    """A release checklist of ``steps`` steps whose challenges are all shell commands
    (``kind`` "shell") or all comments ("comment")."""
    shell = kind == "shell"
    parts = [f"# Release Checklist {'Shell' if shell else 'Notes'}\n\nShip a release of the "
             f"service, {'step by step' if shell else 'noting each stage'}.\n"]
    for i in range(1, steps + 1):
        parts.append(
            f"## Stage {i} check\n\nRun the stage {i} verification script and make sure it "
            f"exits cleanly.\n\nPROOF OF WORK: timeout 30s ./check.sh stage{i}\n" if shell else
            f"## Stage {i} review\n\nReview stage {i} of the release and report what you "
            f"looked at.\n\nPROOF OF WORK: comment min_length={COMMENT_MIN}\n")
    return "\n".join(parts)


def solution(challenge: dict[str, Any], index: int) -> dict[str, Any]:
    base = {"type": challenge["type"], "nonce": challenge["nonce"],
            "proof_hash": challenge["proof_hash"]}
    if challenge["type"] == "shell":
        base["shell"] = {"exit_code": 0, "stdout": f"stage {index} ok\n", "stderr": "",
                         "duration_seconds": 0.4}
    else:
        base["comment"] = {"text": f"Inspected nginx.conf and bumped worker_processes to "
                                   f"{index + 3}; the smoke tests passed on staging-{index}."}
    return base



class Direct:
    """``begin``, ``next`` and ``attest`` as the service's own calls, each request validated
    into its model first, as every surface does."""

    def __init__(self, k: Kairos) -> None:
        self.k = k
        self.caller = Caller()

    async def begin(self, uri: str) -> Any:
        return self.k.begin(parse(Begin, {"uri": uri}), self.caller)

    async def next(self, uri: str, solution: dict[str, Any]) -> Any:
        return self.k.next(parse(Next, {"uri": uri, "solution": solution}), self.caller)

    async def attest(self, uri: str, solution: dict[str, Any]) -> Any:
        return self.k.attest(parse(Attest, {"uri": uri, "outcome": "success",
                                            "message": "released", "solution": solution}),
                             self.caller)


class Rest:
    """The same calls as REST requests to the ASGI app of ``kairos serve``, in process (its
    lifespan, which only runs MCP sessions, is not started)."""

    HEADERS = ((b"host", b"127.0.0.1"), (b"content-type", b"application/json"),
               (b"x-chl-session", b"bench-next-cpu"))

    def __init__(self, k: Kairos) -> None:
        from kairos.api import create_app
        from kairos.mcp import ServiceRef, build_server

        self.app = create_app(k, mcp_factory=partial(build_server, ServiceRef.of(k)))

    async def call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        raw = json.dumps(body).encode()
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                 "method": "POST", "scheme": "http", "path": path, "raw_path": path.encode(),
                 "query_string": b"", "root_path": "", "client": ("127.0.0.1", 1),
                 "server": ("127.0.0.1", 80), "state": {},
                 "headers": [*self.HEADERS, (b"content-length", str(len(raw)).encode())]}
        messages = [{"type": "http.request", "body": raw, "more_body": False}]
        out: list[bytes] = []

        async def receive() -> dict[str, Any]:
            if messages:
                return messages.pop()
            await asyncio.Future()  # never a disconnect: the client waits for its answer
            raise AssertionError

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body":
                out.append(message.get("body", b""))

        await self.app(scope, receive, send)
        return dict(json.loads(b"".join(out)))

    async def begin(self, uri: str) -> dict[str, Any]:
        return await self.call("/api/v1/runs/begin", {"uri": uri})

    async def next(self, uri: str, solution: dict[str, Any]) -> dict[str, Any]:
        return await self.call("/api/v1/runs/next", {"uri": uri, "solution": solution})

    async def attest(self, uri: str, solution: dict[str, Any]) -> dict[str, Any]:
        return await self.call("/api/v1/runs/attest", {
            "uri": uri, "outcome": "success", "message": "released", "solution": solution})


async def run_loop(k: Direct | Rest, uris: list[str], runs: int,
                   prof: cProfile.Profile | None = None) -> tuple[float, int]:
    """Drive ``runs`` runs; return the CPU seconds spent inside ``next`` and the calls
    (``prof``, when given, profiles the ``next`` calls only)."""
    cpu = 0.0
    calls = 0
    clock = time.process_time
    for _ in range(runs):
        challenge = (await k.begin(uris[0]))["challenge"]
        for i in range(1, len(uris)):
            sol = solution(challenge, i)
            if prof is not None:
                prof.enable()
            t0 = clock()
            out = await k.next(uris[i], sol)
            cpu += clock() - t0
            if prof is not None:
                prof.disable()
            calls += 1
            if "error_code" in out:
                raise SystemExit(f"unexpected refusal: {out['error_code']}: {out.get('message')}")
            challenge = out["challenge"]
        done = await k.attest(uris[-1], solution(challenge, len(uris)))
        if not done.get("proven"):
            raise SystemExit(f"run not proven: {done}")
    return cpu, calls


async def measure(k: Direct | Rest, uris: list[str], runs: int, repeats: int
                  ) -> dict[str, Any]:
    await run_loop(k, uris, 3)  # warm-up: caches, prepared statements, the pool's connection
    per_call = []
    for _ in range(repeats):
        cpu, calls = await run_loop(k, uris, runs)
        per_call.append(cpu / calls)
    med = statistics.median(per_call)
    return {"ms_per_next": round(med * 1000, 4),
            "repeats_ms": [round(x * 1000, 4) for x in per_call],
            "calls_per_s": round(1 / med, 1), "next_calls_per_repeat": runs * (len(uris) - 1)}


class Statements:
    """Round trips to the database, counted by SQLAlchemy's events on ``engine``."""

    def __init__(self, engine: Any) -> None:
        from sqlalchemy import event

        self.sent: list[str] = []
        listen = partial(event.listen, engine)
        listen("before_cursor_execute", lambda *a: self.sent.append(_verb(a[2])))
        if engine.dialect.name != "sqlite":  # SQLite's BEGIN is a statement of its own
            listen("begin", lambda conn: self.sent.append("BEGIN"))
        listen("commit", lambda conn: self.sent.append("COMMIT"))
        listen("rollback", lambda conn: self.sent.append("ROLLBACK"))
        ping = engine.dialect.do_ping

        def pinged(dbapi_conn: Any) -> bool:
            self.sent.append("ping")
            return bool(ping(dbapi_conn))

        engine.dialect.do_ping = pinged

    def take(self) -> list[str]:
        taken, self.sent[:] = list(self.sent), []
        return taken


def _verb(sql: str) -> str:
    """``UPDATE runs``, ``SELECT … FROM steps``: what a statement is, in a few words."""
    words = sql.split()
    verb = words[0].upper() if words else "?"
    table = next((w for prev, w in pairwise(words)
                  if prev.upper() in ("INTO", "UPDATE", "FROM")), "")
    return f"{verb} {table}".strip()


async def statements(k: Kairos, uris: list[str]) -> None:
    """One run through the service, with each call's round trips printed."""
    from collections import Counter

    direct = Direct(k)
    await run_loop(direct, uris, 1)  # warm: the step cache, prepared statements
    counter = Statements(k.store.engine)
    rows: list[tuple[str, list[str]]] = []
    challenge = (await direct.begin(uris[0]))["challenge"]
    rows.append(("begin", counter.take()))
    for i in range(1, len(uris)):
        challenge = (await direct.next(uris[i], solution(challenge, i)))["challenge"]
        rows.append((f"next {i + 1}", counter.take()))
    await direct.attest(uris[-1], solution(challenge, len(uris)))
    rows.append(("attest", counter.take()))
    for name, sent in rows:
        detail = ", ".join(f"{n}× {what}" if n > 1 else what
                           for what, n in Counter(sent).items())
        print(f"{name:8s} {len(sent):2d} round trips: {detail}")


async def report(caller: Direct | Rest, shell: list[str], comment: list[str],
                 args: argparse.Namespace) -> None:
    """Every measurement on one event loop (the REST app's thread pool is the loop's)."""
    results = {kind: await measure(caller, uris, args.runs, args.repeats)
               for kind, uris in (("shell", shell), ("comment", comment))}
    for name, r in results.items():
        print(f"{name:8s} CPU per next: {r['ms_per_next']:.3f} ms (median of "
              f"{args.repeats}: {', '.join(f'{x:.3f}' for x in r['repeats_ms'])}), "
              f"{r['calls_per_s']:.0f} calls/s, {r['next_calls_per_repeat']} calls per repeat")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    if args.profile:
        prof = cProfile.Profile()
        await run_loop(caller, shell, args.runs, prof)
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(args.top)
        print(buf.getvalue())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--database-url", default="",
                    help="a PostgreSQL URL instead of the temporary SQLite file (the "
                         "server's own CPU is not counted)")
    ap.add_argument("--statements", action="store_true",
                    help="print the round trips of each call of one run, and stop")
    ap.add_argument("--rest", action="store_true",
                    help="through the REST app in process (ASGI, no sockets)")
    args = ap.parse_args()
    print(f"KAIROS_BENCH_CODE {Path(kairos.__file__).parent}")
    with tempfile.TemporaryDirectory(prefix="kairos-next-cpu-") as home:
        env = {"KAIROS_HOME": home}
        if args.database_url:
            env["KAIROS_DATABASE_URL"] = args.database_url
        k = open_service(load_settings(env=env), embedder=local_model(), background=False)
        print(f"backend {k.store.dialect}{', through the REST app' if args.rest else ''}")
        try:
            shell, comment = ([s["uri"] for s in k.mint(
                parse(Mint, {"markdown_doc": release_protocol(kind, args.steps),
                             "force_update": True}), Caller())["items"][0]["steps"]]
                for kind in ("shell", "comment"))
            if args.statements:
                uvloop.run(statements(k, shell))
                return
            caller = Rest(k) if args.rest else Direct(k)
            uvloop.run(report(caller, shell, comment, args))
        finally:
            k.close()


if __name__ == "__main__":
    sys.exit(main())
