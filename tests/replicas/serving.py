"""Real `kairos` server processes for the tests: a free port, the environment of the
test's store, and a bounded wait until a server answers."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import httpx2

from tests.conftest import PG_URL


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_env(home: Path, database_url: str | None = None) -> dict[str, str]:
    """The environment of a server on the test's store (PostgreSQL when the suite runs
    on it), without the model: these tests are about processes, not search."""
    env = {**os.environ, "KAIROS_HOME": str(home), "KAIROS_EMBEDDER": "none",
           "KAIROS_API_TOKENS": ""}
    if database_url or PG_URL:
        env["KAIROS_DATABASE_URL"] = database_url or PG_URL
    return env


def wait_healthy(url: str, proc: subprocess.Popen[bytes], deadline: float) -> None:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            if httpx2.get(f"{url}/health", timeout=1).status_code == 200:
                return
        except httpx2.HTTPError:
            pass
        time.sleep(0.1)  # polling a process we do not control; bounded by the deadline
    raise TimeoutError(f"{url} did not become healthy")
