"""MCP sessions over streamable HTTP: memory and file descriptors of the server as sessions
open and close, and what one credential that never closes its sessions does to others.

    python bench/mcp_sessions.py [--cycles 2000] [--flood 10000] [--rounds 3]

One `kairos serve` (SQLite, two tokens: A and B; the default cap of 100 sessions per
credential). The server's RSS and open descriptors are read from /proc:

1. baseline, after 20 sessions opened and closed;
2. after ``--cycles`` sessions opened (initialize), used (tools/list) and closed (DELETE)
   one after another by token A — the leak check: RSS and descriptors beside the baseline;
3. token A opens ``--flood`` sessions as fast as it can and closes none: how many are
   admitted and how many refused (429 TOO_MANY_SESSIONS), the peak RSS; then token B
   opens a session (it must be admitted);
4. token A closes the sessions it holds: RSS and descriptors beside the baseline again;
5. steps 3 and 4 again, ``--rounds`` in all (memory a closed session left is used again,
   not added to).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import httpx2  # noqa: E402
from harness import Server, machine  # noqa: E402

RESULTS = HERE / "results"
MCP = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "bench", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def usage(pid: int) -> dict[str, float]:
    status = Path(f"/proc/{pid}/status").read_text()
    rss = next(int(line.split()[1]) for line in status.splitlines()
               if line.startswith("VmRSS:"))
    return {"rss_mb": round(rss / 1024, 1), "fds": len(os.listdir(f"/proc/{pid}/fd"))}


async def open_session(http: httpx2.AsyncClient, token: str) -> tuple[int, str | None]:
    auth = {"authorization": f"Bearer {token}", **MCP}
    response = await http.post("/mcp", json=INITIALIZE, headers=auth)
    session = response.headers.get("mcp-session-id")
    if session:
        headers = {**auth, "mcp-session-id": session}
        await http.post("/mcp", json=INITIALIZED, headers=headers)
    return response.status_code, session


async def close(http: httpx2.AsyncClient, token: str, session: str) -> None:
    await http.delete("/mcp", headers={"authorization": f"Bearer {token}",
                                       "mcp-session-id": session})


async def cycle(http: httpx2.AsyncClient, token: str) -> None:
    status, session = await open_session(http, token)
    assert status == 200 and session, status
    await http.post("/mcp", json=LIST, headers={"authorization": f"Bearer {token}", **MCP,
                                                 "mcp-session-id": session})
    await close(http, token, session)


def client(url: str) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(base_url=url, timeout=60,
                              limits=httpx2.Limits(max_connections=64))


async def settled(pid: int) -> dict[str, float]:
    """The server's usage once the client's connections are closed on its side too."""
    last: dict[str, float] = {}
    for _ in range(50):  # a process we do not control: bounded polling
        now = usage(pid)
        if now == last:
            return now
        last = now
        await asyncio.sleep(0.1)
    return last


async def flood_round(url: str, pid: int, flood: int) -> tuple[dict[str, Any],
                                                                dict[str, float]]:
    """Token A opens ``flood`` sessions and closes none; token B opens one; then A closes
    what it holds."""
    held: list[str] = []
    statuses: dict[int, int] = {}
    peak = 0.0
    began = time.perf_counter()
    async with client(url) as http:
        for start in range(0, flood, 50):
            batch = await asyncio.gather(*(open_session(http, "token-a")
                                           for _ in range(min(50, flood - start))))
            for status, session in batch:
                statuses[status] = statuses.get(status, 0) + 1
                if status == 200 and session:
                    held.append(session)
            peak = max(peak, usage(pid)["rss_mb"])
        other_began = time.perf_counter()
        other, _ = await open_session(http, "token-b")
        report = {"attempts": flood, "statuses": statuses, "held": len(held),
                  "seconds": round(time.perf_counter() - began, 1), "peak_rss_mb": peak,
                  "other_token_status": other,
                  "other_token_ms": round((time.perf_counter() - other_began) * 1000, 1)}
        for session in held:
            await close(http, "token-a", session)
    return report, await settled(pid)


async def run(url: str, pid: int, cycles: int, flood: int, rounds: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with client(url) as http:
        for _ in range(20):
            await cycle(http, "token-a")
    out["baseline"] = await settled(pid)
    began = time.perf_counter()
    async with client(url) as http:
        for _ in range(cycles):
            await cycle(http, "token-a")
    out["after_cycles"] = {**await settled(pid), "cycles": cycles,
                           "seconds": round(time.perf_counter() - began, 1)}
    for round_ in range(1, rounds + 1):
        out[f"flood_{round_}"], out[f"after_close_{round_}"] = await flood_round(url, pid,
                                                                                 flood)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cycles", type=int, default=2000)
    p.add_argument("--flood", type=int, default=10_000)
    p.add_argument("--rounds", type=int, default=3, help="flood-and-close rounds [3]")
    p.add_argument("--json", type=Path, default=RESULTS / "mcp_sessions.json")
    a = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="kairos-mcp-sessions-") as tmp:
        home = Path(tmp)
        server = Server(home, None, home / "serve.log",
                        KAIROS_API_TOKENS="token-a:A,token-b:B", KAIROS_HOST="127.0.0.1")
        try:
            server.wait_ready()
            result = {"machine": machine(),
                      **asyncio.run(run(server.url, server.proc.pid, a.cycles, a.flood,
                                                 a.rounds))}
        finally:
            server.stop()
    result["machine"]["load_avg_end"] = machine()["load_avg"]
    a.json.parent.mkdir(parents=True, exist_ok=True)
    a.json.write_text(json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "machine"}, indent=1))
    print(f"load {result['machine']['load_avg']} → {result['machine']['load_avg_end']}; "
          f"results: {a.json}")


if __name__ == "__main__":
    main()
