"""Two `kairos serve` processes on one database: state lives in the database, so an agent
may reach a different replica on every call (SQLite file or PostgreSQL alike)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.replicas.serving import free_port, server_env, wait_healthy
from tests.spec.seedkit import THREE_STEPS, shell_ok

pytestmark = pytest.mark.slow


@pytest.fixture
def replicas(home: Path) -> Iterator[list[str]]:
    env = server_env(home)
    procs, urls = [], []
    for _ in range(2):
        port = free_port()
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "kairos.cli.main", "serve", "--port", str(port),
             "--log-level", "warning"], env=env, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL))
        urls.append(f"http://127.0.0.1:{port}")
    try:
        deadline = time.monotonic() + 60
        for url, proc in zip(urls, procs, strict=True):
            wait_healthy(url, proc, deadline)
        yield urls
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=30)


def _post(url: str, path: str, body: dict[str, Any], session: str) -> dict[str, Any]:
    r = httpx2.post(f"{url}/api/v1{path}", json=body, timeout=30,
                   headers={"X-CHL-Session": session})
    assert r.status_code in (200, 201), r.text
    return r.json()


def test_begin_on_one_replica_finish_on_the_other(replicas: list[str]) -> None:
    a, b = replicas
    steps = [s["uri"] for s in _post(a, "/protocols", {"markdown_doc": THREE_STEPS},
                                     "s")["items"][0]["steps"]]
    response = _post(a, "/runs/begin", {"uri": steps[0]}, "agent")
    response = _post(b, "/runs/next", {"uri": steps[1],
                                       "solution": shell_ok(response["challenge"])}, "agent")
    response = _post(a, "/runs/next", {"uri": steps[2],
                                       "solution": shell_ok(response["challenge"])}, "agent")
    done = _post(b, "/runs/attest", {"uri": steps[2], "outcome": "success", "message": "ok",
                                     "solution": shell_ok(response["challenge"])}, "agent")
    assert done["proofs"] == 3
    verify = httpx2.get(f"{a}/api/v1/runs/{done['run_id']}/verify", timeout=30).json()
    assert verify["valid"] is True


def test_an_update_through_one_replica_is_found_through_the_other(
        replicas: list[str]) -> None:
    a, b = replicas
    uri = _post(a, "/protocols", {"markdown_doc": "# Renew TLS certificates\n\n## Renew\n\n"
                                                  "Run certbot renew.\n"}, "s")["items"][0]["uri"]
    assert _post(b, "/protocols/search", {"query": "renew tls"}, "s")["choices"][0]["uri"] == uri
    _post(b, "/protocols/update", {"uris": [uri], "updates": {
        "content": "Rotate the kafka broker keystore."}}, "s")
    found = _post(a, "/protocols/search", {"query": "kafka broker keystore"}, "s")
    assert found["choices"][0]["uri"] == uri


def test_sixteen_agents_over_both_replicas_all_complete(replicas: list[str]) -> None:
    steps = [s["uri"] for s in _post(replicas[0], "/protocols", {"markdown_doc": THREE_STEPS},
                                     "s")["items"][0]["steps"]]

    def agent(i: int) -> dict[str, Any]:
        hop = [replicas[(i + j) % 2] for j in range(4)]
        session = f"agent-{i}"
        r = _post(hop[0], "/runs/begin", {"uri": steps[0]}, session)
        for uri, url in zip(steps[1:], hop[1:3], strict=True):
            r = _post(url, "/runs/next", {"uri": uri, "solution": shell_ok(r["challenge"])},
                      session)
            assert "error_code" not in r, r
        return _post(hop[3], "/runs/attest", {"uri": steps[2], "outcome": "success",
                                              "message": "ok",
                                              "solution": shell_ok(r["challenge"])}, session)

    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(agent, range(16)))
    assert all(r["proofs"] == 3 for r in results)
    assert len({r["run_id"] for r in results}) == 16
    for r in results:
        report = httpx2.get(f"{replicas[1]}/api/v1/runs/{r['run_id']}/verify", timeout=30).json()
        assert report["valid"] is True
