"""Shared helpers of the benchmark: timing and percentiles, the machine's load, `kairos
serve` subprocesses, a throwaway PostgreSQL, MCP client sessions and peak RSS."""

from __future__ import annotations

import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx2
import numpy as np
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parent.parent
READY_TIMEOUT = 300.0  # seconds for a server to load its model under load


# --- timing ----------------------------------------------------------------------------------

def stats(seconds: Sequence[float]) -> dict[str, float]:
    """n, p50 and p99 (milliseconds) of durations given in seconds."""
    ms = np.asarray(seconds, dtype=float) * 1000
    if not len(ms):
        return {"n": 0, "p50_ms": float("nan"), "p99_ms": float("nan")}
    return {"n": len(ms), "p50_ms": round(float(np.percentile(ms, 50)), 3),
            "p99_ms": round(float(np.percentile(ms, 99)), 3)}


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def machine() -> dict[str, Any]:
    import onnxruntime

    return {"cpus": os.cpu_count(), "load_avg": [round(x, 2) for x in os.getloadavg()],
            "onnxruntime": onnxruntime.__version__,
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
            "python": platform.python_version(), "platform": platform.platform(),
            "time": time.strftime("%Y-%m-%d %H:%M:%S")}


def load_now() -> float:
    return round(os.getloadavg()[0], 2)


# --- processes -------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def kairos_env(home: Path, database_url: str | None = None, **extra: str) -> dict[str, str]:
    """This environment without any KAIROS_* setting, then exactly the bench's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAIROS_")}
    env.update(KAIROS_HOME=str(home), KAIROS_EMBEDDER="local", KAIROS_CONFIG=os.devnull,
               TOKENIZERS_PARALLELISM="false", **extra)
    if database_url:
        env["KAIROS_DATABASE_URL"] = database_url
    return env


def peak_rss_mb(pid: int) -> float | None:
    """Peak resident set (VmHWM) of a live process, else its current RSS via psutil."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    try:
        import psutil

        return round(psutil.Process(pid).memory_info().rss / 2**20, 1)
    except Exception:
        return None


class Server:
    """A `kairos serve` subprocess on a free port, ready once its model is loaded."""

    def __init__(self, home: Path, database_url: str | None, log: Path, **env: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "kairos.cli.main", "serve", "--port", str(self.port),
                 "--log-level", "warning"], cwd=ROOT, env=kairos_env(home, database_url, **env),
                stdout=out, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"kairos serve exited with {self.proc.returncode}; see "
                                   f"{self.log}")
            try:
                health = httpx2.get(f"{self.url}/health", timeout=10).json()
                index = health.get("index", {})
                if (health["embedder"]["state"] == "ready" and index.get("backfill") == "idle"
                        and index.get("with_vectors") == index.get("documents")):
                    return dict(health)
            except (httpx2.HTTPError, KeyError, ValueError):
                pass
            time.sleep(0.25)  # polling a process we do not control, bounded by the deadline
        raise TimeoutError(f"{self.url} not ready after {timeout:.0f}s; see {self.log}")

    def peak_rss_mb(self) -> float | None:
        return peak_rss_mb(self.proc.pid)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)


@contextmanager
def servers(home: Path, n: int = 1, *, database_url: str | None = None,
            logs: Path | None = None) -> Iterator[list[Server]]:
    """``n`` replicas on one store, all stopped on the way out whatever happens."""
    logs = logs or home
    started: list[Server] = []
    try:
        for i in range(n):
            started.append(Server(home, database_url, logs / f"serve-{i}.log"))
        for server in started:
            server.wait_ready()
        yield started
    finally:
        for server in started:
            server.stop()


@contextmanager
def postgres() -> Iterator[str]:
    """A throwaway PostgreSQL 16 with pgvector (scripts/pg.py), stopped and removed after."""
    root = Path(tempfile.mkdtemp(prefix="kb-", dir="/dev/shm" if Path("/dev/shm").is_dir()
                                 else None))
    script = [sys.executable, str(ROOT / "scripts" / "pg.py")]
    try:
        out = subprocess.run([*script, "start", str(root)], check=True, capture_output=True,
                             text=True, timeout=300)
        yield out.stdout.strip().splitlines()[-1]
    finally:
        try:
            subprocess.run([*script, "stop", str(root)], capture_output=True, timeout=120)
        finally:
            shutil.rmtree(root, ignore_errors=True)


# --- MCP clients -----------------------------------------------------------------------------

def http_client(**headers: str) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=120),
                              limits=httpx2.Limits(max_connections=200,
                                                   max_keepalive_connections=200))


@asynccontextmanager
async def mcp_http(url: str, session: str = "bench") -> AsyncIterator[ClientSession]:
    """An initialized MCP session over streamable HTTP (stateful, legacy handshake)."""
    async with http_client(**{"X-CHL-Session": session}) as http, streamable_http_client(
            f"{url}/mcp", http_client=http) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        yield s
