"""`kairos serve` stopped: SIGTERM closes the service and exits 0, and the parser's worker
process (started by a large document) never outlives the server, even one killed with
SIGKILL."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import psutil
import pytest

from kairos.service.parsing import INLINE_CHARS
from tests.replicas.serving import free_port, server_env, wait_healthy

LARGE = ("# A long protocol\n\n## Read\n\n" + "Read the notes once more. " * (INLINE_CHARS // 20)
         + "\n\nPROOF OF WORK: echo read\n")


@pytest.fixture
def server(home: Path, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A `kairos serve` process that has parsed a large document, so its parser's worker
    process runs."""
    port = free_port()
    with (tmp_path / "serve.log").open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kairos.cli.main", "serve", "--port", str(port),
             "--log-level", "warning"], env=server_env(home), stdout=log, stderr=log)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, proc, time.monotonic() + 60)
        minted = httpx2.post(f"{url}/api/v1/protocols", json={"markdown_doc": LARGE},
                             timeout=60)
        assert minted.status_code == 201, minted.text
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=60)


def _children(proc: subprocess.Popen[bytes]) -> list[psutil.Process]:
    children = psutil.Process(proc.pid).children(recursive=True)
    assert any("spawn_main" in " ".join(c.cmdline()) for c in children), children
    return children


def test_sigterm_closes_the_service_and_exits_0(server: subprocess.Popen[bytes]) -> None:
    children = _children(server)
    server.send_signal(signal.SIGTERM)
    assert server.wait(timeout=60) == 0
    _, alive = psutil.wait_procs(children, timeout=10)
    assert alive == []


def test_the_parser_worker_leaves_with_a_killed_server(
        server: subprocess.Popen[bytes]) -> None:
    children = _children(server)
    server.kill()
    server.wait(timeout=60)
    _, alive = psutil.wait_procs(children, timeout=10)
    assert alive == []
