"""`kairos serve --workers 2`: two processes on one address and one database, with the
guarantees of one (single-use nonces, one protocol per title), on SQLite and PostgreSQL."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import httpx2
import psutil
import pytest

from tests.replicas.serving import free_port, server_env, wait_healthy
from tests.spec.seedkit import THREE_STEPS, shell_ok

pytestmark = pytest.mark.slow
CLIENTS = 16


@dataclass
class Served:
    url: str
    port: int
    proc: subprocess.Popen[bytes]
    log: Path

    def workers(self) -> list[psutil.Process]:
        return psutil.Process(self.proc.pid).children()


def _until(check: Any, what: str, seconds: float = 60) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)  # polling processes we do not control; bounded by the deadline
    raise TimeoutError(what)


@pytest.fixture
def served(home: Path, tmp_path: Path) -> Iterator[Served]:
    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kairos.cli.main", "serve", "--workers", "2", "--port",
             str(port), "--log-level", "warning"], env=server_env(home),
            stdout=subprocess.DEVNULL, stderr=err)
    s = Served(f"http://127.0.0.1:{port}", port, proc, log)
    try:
        wait_healthy(s.url, proc, time.monotonic() + 60)
        _until(lambda: "worker processes" in log.read_text(), "both workers ready")
        yield s
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def _clients(url: str) -> list[httpx2.Client]:
    """CLIENTS clients of one agent session, each with its own connection already open
    (the kernel spreads connections over the workers' sockets)."""
    clients = [httpx2.Client(base_url=url, timeout=30, headers={"X-CHL-Session": "agent"})
               for _ in range(CLIENTS)]
    for c in clients:
        assert c.get("/health").status_code == 200
    return clients


def _at_once(clients: list[httpx2.Client], call: Any) -> list[httpx2.Response]:
    """``call(client)`` from every client at the same moment."""
    start = threading.Barrier(len(clients))

    def one(c: httpx2.Client) -> httpx2.Response:
        start.wait(timeout=30)
        return call(c)

    with ThreadPoolExecutor(len(clients)) as pool:
        return list(pool.map(one, clients))


def test_two_worker_processes_serve_the_connections(served: Served) -> None:
    workers = served.workers()
    assert len(workers) == 2
    clients = _clients(served.url)
    try:
        connected = {w.pid: [c for c in w.net_connections(kind="tcp")
                             if c.status == psutil.CONN_ESTABLISHED
                             and c.laddr.port == served.port] for w in workers}
        assert all(connected.values()), connected  # each worker holds some connections
        assert sum(len(c) for c in connected.values()) == CLIENTS
    finally:
        for c in clients:
            c.close()


def test_a_nonce_answered_through_both_workers_at_once_is_accepted_once(
        served: Served) -> None:
    clients = _clients(served.url)
    try:
        steps = [s["uri"] for s in clients[0].post("/api/v1/protocols", json={
            "markdown_doc": THREE_STEPS}).json()["items"][0]["steps"]]
        begun = clients[0].post("/api/v1/runs/begin", json={"uri": steps[0]}).json()
        answer = {"uri": steps[1], "solution": shell_ok(begun["challenge"])}
        responses = _at_once(clients, lambda c: c.post("/api/v1/runs/next", json=answer))
    finally:
        for c in clients:
            c.close()
    assert all(r.status_code < 500 for r in responses), [r.text for r in responses]
    accepted = [r for r in responses if r.status_code == 200 and "error_code" not in r.json()]
    assert len(accepted) == 1, [r.text for r in responses]
    refused = {r.json()["error_code"] for r in responses if r not in accepted}
    assert refused == {"NO_ACTIVE_RUN"}  # the nonce is spent: no run waits for it
    # The run goes on from the one accepted answer, with one proof per step.
    post = partial(httpx2.post, headers={"X-CHL-Session": "agent"}, timeout=30)
    r = post(f"{served.url}/api/v1/runs/next", json={
        "uri": steps[2], "solution": shell_ok(accepted[0].json()["challenge"])}).json()
    done = post(f"{served.url}/api/v1/runs/attest", json={
        "uri": steps[2], "outcome": "success", "message": "ok",
        "solution": shell_ok(r["challenge"])}).json()
    assert done["proofs"] == 3
    run = httpx2.get(f"{served.url}/api/v1/runs/{done['run_id']}/verify", timeout=30).json()
    assert run["valid"] is True


def test_racing_mints_of_one_title_through_both_workers_store_one_protocol(
        served: Served) -> None:
    doc = "# Rotate the signing keys\n\n## Rotate\n\nRun the key rotation script.\n"
    clients = _clients(served.url)
    try:
        responses = _at_once(clients, lambda c: c.post("/api/v1/protocols",
                                                        json={"markdown_doc": doc}))
    finally:
        for c in clients:
            c.close()
    stored = [r for r in responses if r.status_code in (200, 201)]
    assert len(stored) == 1, [r.text for r in responses]
    # Refused as a taken title, or (when the check read the stored copy but not yet its
    # title) as a near-copy of it: either way, not stored.
    refused = {r.json()["error_code"] for r in responses if r not in stored}
    assert refused <= {"DUPLICATE_CHAIN", "SIMILAR_MEMORY_FOUND"}, refused
    page = httpx2.get(f"{served.url}/api/v1/protocols", params={"title": "signing"},
                     timeout=30).json()
    assert page["total"] == 1


def test_a_dead_worker_is_reported_and_replaced_and_sigterm_stops_all(
        served: Served) -> None:
    second = served.workers()[1]
    second.kill()
    replaced = _until(lambda: len(w := served.workers()) == 2 and second not in w and w,
                      "a replacement worker")
    assert f"worker {second.pid} stopped unexpectedly (killed by SIGKILL)" in \
        served.log.read_text()
    assert httpx2.get(f"{served.url}/health", timeout=30).status_code == 200
    served.proc.send_signal(signal.SIGTERM)
    assert served.proc.wait(timeout=60) == 0
    assert not any(psutil.pid_exists(w.pid) for w in replaced)
    with pytest.raises(httpx2.ConnectError):
        httpx2.get(f"{served.url}/health", timeout=5)
