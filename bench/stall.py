"""Stalls: how long one crafted request holds up everyone else.

One `kairos serve` (SQLite, the local model). A prober, in a process of its own, calls
`GET /health` one request at a time, back to back, for the whole run; each body below is
then sent again and again, one request at a time, for `--seconds` (and at least `--repeat`
times), and the `/health` latencies seen while that body was being served are its figure.
Every crafted body (the inputs that used to stall the server) is measured beside a plain
body of the same size, in the same run, and an idle window measures the prober alone.

Reports, per body: its size, its own median latency and status, and the p50 / p99 / max of
the concurrent `/health` (goal: p99 ≤ 50 ms for any body within the body limit).

    python bench/stall.py [--seconds 4] [--repeat 3] [--json bench/results/stall.json]
    python bench/stall.py --only "950,000" --kind plain --seconds 10   # one body, longer
    python bench/stall.py --awake      # CPUs kept from idling (see bench/README.md, Stalls)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import httpx2  # noqa: E402
from harness import Server, http_client, machine, stats  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

MINT = "/api/v1/protocols"


def _doc(body: str) -> str:
    return f"# A protocol\n\n## Build\n\nBuild it.\n\n{body}\n"


def _plain_doc(size: int) -> str:
    steps = "".join(f"## Step {i}\n\nDo part {i} of the work, then check it.\n\nPROOF OF WORK: "
                    f"echo {i}\n\n" for i in range(150))
    text = "# Plain protocol\n\n" + steps
    return (text + "Some closing words in the last step. " * (size // 37 + 1))[:size]


def _mint_body(markdown_doc: str) -> bytes:
    return json.dumps({"markdown_doc": markdown_doc, "force_update": True}).encode()


def _minted(doc: str) -> tuple[bytes, bytes]:
    """The mint body of ``doc``, and of a plain document of the same length."""
    return _mint_body(doc), _mint_body(_plain_doc(len(doc)))


def cases() -> list[tuple[str, str, bytes | str, bytes | str]]:
    """(name, path or "mcp", crafted body, plain body of the same size: the same bytes for
    a raw JSON body, the same document length for a document)."""
    quotes = 45_000
    digits = ("[" + ",".join(["9" * 299] * 13_000) + "]").encode()
    numbers_plain = ("[" + ",".join(['"' + "a" * 297 + '"'] * 13_000) + "]").encode()
    block = '```json\n{"challenge": "' + '\\"' * 400_000 + "\n```"  # 800 KB document
    block_plain = '```json\n{"challenge": "' + "ab" * 400_000 + "\n```"
    heading = "## " + "1. " * 300_000
    lists = "- a\n" * 200_000
    brackets = "PROOF OF WORK: echo\n" + "[" * 950_000
    return [
        ("escaped quotes, unclosed (90 KB body)", MINT,
         ('{"markdown_doc": "' + '\\"' * quotes).encode(),
         ('{"markdown_doc": "' + "ab" * quotes).encode()),
        ("escaped quotes, unclosed (3.9 MB body)", MINT,
         ('{"markdown_doc": "' + '\\"' * 1_950_000).encode(),
         ('{"markdown_doc": "' + "ab" * 1_950_000).encode()),
        ("299-digit numbers (3.9 MB body)", MINT, digits, numbers_plain),
        ("1.3 million JSON values (3.9 MB body)", MINT,
         ("[" + "1," * 1_299_999 + "1]").encode()[:3_900_000],
         ('["' + "a" * 3_899_996 + '"]').encode()),
        ("escaped quotes in a json challenge block (REST)", MINT, *_minted(_doc(block))),
        ("escaped quotes in a json challenge block (MCP)", "mcp", _doc(block),
         _doc(block_plain)),
        ("heading of '1. ' x 300,000", MINT, *_minted(_doc(heading))),
        ("200,000 list items (800 KB document)", MINT, *_minted(_doc(lists))),
        ("950,000 '[' after a PROOF OF WORK", MINT, *_minted(_doc(brackets))),
    ]


def _probe(url: str, stop: Any, out: Any) -> None:
    """``GET /health`` back to back, in a process of its own (so that sending megabytes from
    this one does not delay it); (end, latency) pairs on monotonic time, sent at the end."""
    samples: list[tuple[float, float]] = []
    with httpx2.Client(base_url=url, timeout=60) as http:
        while not stop.is_set():
            started = time.monotonic()
            http.get("/health")
            ended = time.monotonic()
            samples.append((ended, ended - started))
    out.send(samples)


class Prober:
    def __init__(self, url: str) -> None:
        context = multiprocessing.get_context("spawn")
        self.stop = context.Event()
        self._receive, send = context.Pipe(duplex=False)
        self.process = context.Process(target=_probe, args=(url, self.stop, send))
        self.samples: list[tuple[float, float]] = []

    def __enter__(self) -> Prober:
        self.process.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.samples = self._receive.recv()
        self.process.join(timeout=60)

    def window(self, start: float, end: float) -> list[float]:
        """Latencies of the probes that overlapped ``[start, end]``."""
        return [lat for t, lat in self.samples if t >= start and t - lat <= end]


async def _send(http: httpx2.AsyncClient, session: ClientSession | None, path: str,
                body: bytes | str) -> int:
    if path == "mcp":
        assert session is not None and isinstance(body, str)
        result = await session.call_tool("kairos_mint", {"markdown_doc": body})
        return 200 if not result.is_error else 422
    response = await http.post(path, content=body,
                               headers={"content-type": "application/json"})
    return response.status_code


async def measure(url: str, seconds: float, repeat: int, idle: float, only: str = "",
                  kinds: tuple[str, ...] = ("crafted", "plain"), nice: int = 0
                  ) -> list[dict[str, Any]]:
    windows: list[tuple[dict[str, Any], float, float]] = []
    with Prober(url) as prober:
        os.nice(nice)  # the sender only: the server and the prober started before
        async with http_client() as mcp_http, \
                streamable_http_client(f"{url}/mcp", http_client=mcp_http) as (read, write), \
                ClientSession(read, write) as session, \
                httpx2.AsyncClient(base_url=url, timeout=httpx2.Timeout(300)) as http:
            await session.initialize()
            started = time.monotonic()
            await asyncio.sleep(idle)  # the prober alone: the idle baseline
            windows.append(({"case": "idle (no other request)", "kind": "baseline"},
                            started, time.monotonic()))
            for name, path, crafted, plain in cases():
                if not name.startswith(only):
                    continue
                for kind, body in (("crafted", crafted), ("plain", plain)):
                    if kind not in kinds:
                        continue
                    took, statuses = [], []
                    start = time.monotonic()
                    while len(took) < repeat or time.monotonic() - start < seconds:
                        began = time.monotonic()
                        statuses.append(await _send(http, session, path, body))
                        took.append(time.monotonic() - began)
                    windows.append(({"case": name, "kind": kind, "bytes": len(body),
                                     "requests": len(took), "status": sorted(set(statuses)),
                                     "request_p50_ms": stats(took)["p50_ms"]},
                                    start, time.monotonic()))
    rows = []
    for row, start, end in windows:
        health = prober.window(start, end)
        rows.append({**row, **stats(health),
                     "max_ms": round(max(health, default=0) * 1000, 3)})
    return rows


@contextlib.contextmanager
def _spinners(count: int) -> Iterator[None]:
    """``count`` processes that spin at nice 19: they take only CPU time nothing else wants,
    and keep the CPUs from going idle."""
    spin = "import os\nos.nice(19)\nwhile True: pass"
    procs = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(count)]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=4.0, help="seconds per body [4]")
    p.add_argument("--repeat", type=int, default=3, help="at least this many requests [3]")
    p.add_argument("--idle", type=float, default=5.0, help="idle baseline seconds [5]")
    p.add_argument("--only", default="", metavar="NAME",
                   help="only the bodies whose name starts with NAME")
    p.add_argument("--kind", choices=("crafted", "plain"), default=None,
                   help="only the crafted bodies, or only their plain twins")
    p.add_argument("--nice", type=int, default=0, metavar="N",
                   help="lower the sender's CPU priority by N (a sender on another machine "
                        "takes no CPU from the server) [0]")
    p.add_argument("--awake", action="store_true",
                   help="keep every CPU busy at the lowest priority, so that no request waits "
                        "for an idle CPU to wake (on a virtual machine that can take tens of ms)")
    p.add_argument("--json", type=Path, default=HERE / "results" / "stall.json")
    args = p.parse_args()
    console = Console()
    with tempfile.TemporaryDirectory(prefix="kairos-stall-") as tmp, \
            _spinners((os.cpu_count() or 1) if args.awake else 0):
        home = Path(tmp)
        server = Server(home, None, home / "serve.log")
        try:
            server.wait_ready()
            kinds = (args.kind,) if args.kind else ("crafted", "plain")
            rows = asyncio.run(measure(server.url, args.seconds, args.repeat, args.idle,
                                       args.only, kinds, args.nice))
        finally:
            server.stop()
    table = Table(title="GET /health while one body is served (ms)")
    for column in ("body", "kind", "bytes", "status", "request p50", "n", "health p50",
                   "health p99", "health max"):
        table.add_column(column, justify="left" if column in ("body", "kind") else "right")
    for r in rows:
        table.add_row(r["case"], r["kind"], str(r.get("bytes", "")),
                      ",".join(map(str, r.get("status", []))), str(r.get("request_p50_ms", "")),
                      str(r["n"]), str(r["p50_ms"]), str(r["p99_ms"]), str(r.get("max_ms", "")))
    console.print(table)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    result = {"machine": machine(), "awake": args.awake, "rows": rows}
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    console.print(f"written to {args.json}")


if __name__ == "__main__":
    main()
