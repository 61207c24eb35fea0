"""kill -9 of `kairos serve` in the middle of a mixed load (bulk mints, searches, agents
running protocols to an attested outcome), then a restart: every write a client saw
acknowledged is there whole (a protocol with all its steps and its vectors, an outcome on
its run), every run's proof chain verifies, an answered nonce stays spent, the protocol's
counters equal what its runs left behind, and the SQLite file passes its integrity check.
``KAIROS_KILL9_ROUNDS`` sets the number of kills (3)."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.conftest import PG_URL, loopback_socket, make_kairos
from tests.recount import counted, recount
from tests.spec.seedkit import THREE_STEPS, shell_ok

pytestmark = pytest.mark.slow

ROUNDS = int(os.environ.get("KAIROS_KILL9_ROUNDS", "3"))


def _serve(home: Path, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "KAIROS_HOME": str(home), "KAIROS_API_TOKENS": ""}
    if PG_URL:
        env["KAIROS_DATABASE_URL"] = PG_URL
    proc = subprocess.Popen([sys.executable, "-m", "kairos.cli.main", "serve", "--port",
                             str(port), "--log-level", "warning"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"kairos serve exited with {proc.returncode}")
        try:
            if httpx2.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx2.HTTPError:
            pass
        time.sleep(0.05)  # polling a process we do not control, bounded by the deadline
    proc.kill()
    raise TimeoutError("kairos serve did not become healthy")


class Load:
    """Clients that mint and run until the server dies, keeping what it acknowledged."""

    def __init__(self, url: str, round_: int, steps: list[str]) -> None:
        self.url, self.round, self.steps = url, round_, steps
        self.minted: dict[str, str] = {}     # title → step-1 uri, acknowledged
        self.spent: list[dict[str, Any]] = []  # answers the server accepted
        self.outcomes: dict[str, str] = {}      # run id → outcome, acknowledged
        self.stop = threading.Event()

    def mint(self) -> None:
        with httpx2.Client(base_url=self.url, timeout=30) as http:
            for i in range(10_000):
                title = f"Kill round {self.round} protocol {i}"
                doc = (f"# {title}\n\n## Rotate key {i}\n\nRotate signing key {i} of "
                       f"round {self.round}.\n\n## Verify {i}\n\nCheck the new key {i} "
                       "signs.\n\nPROOF OF WORK: comment min_length=10\n")
                try:
                    r = http.post("/api/v1/protocols",
                                  json={"markdown_doc": doc, "force_update": True})
                except httpx2.HTTPError:
                    return
                if r.status_code == 201:
                    self.minted[title] = r.json()["items"][0]["uri"]
                if self.stop.is_set():
                    return

    def run(self, agent: str) -> None:
        with httpx2.Client(base_url=self.url, timeout=30,
                          headers={"X-CHL-Session": agent}) as http:
            turn = 0
            while not self.stop.is_set():
                turn += 1
                try:
                    r = http.post("/api/v1/runs/begin", json={"uri": self.steps[0]}).json()
                    for uri in self.steps[1:]:
                        answer = {"uri": uri, "solution": shell_ok(r["challenge"])}
                        r = http.post("/api/v1/runs/next", json=answer).json()
                        if "error_code" not in r:
                            self.spent.append(answer)
                    attest = ({"outcome": "failure", "message": "broke"} if turn % 3 == 0 else
                              {"outcome": "success", "message": "done",
                               "solution": shell_ok(r["challenge"])})
                    done = http.post("/api/v1/runs/attest",
                                     json={"uri": self.steps[-1], **attest})
                    if done.status_code == 200:
                        self.outcomes[done.json()["run_id"]] = attest["outcome"]
                except (httpx2.HTTPError, KeyError, ValueError):
                    return

    def search(self) -> None:
        with httpx2.Client(base_url=self.url, timeout=30) as http:
            while not self.stop.is_set():
                try:
                    http.post("/api/v1/protocols/search", json={"query": "rotate a key"})
                except httpx2.HTTPError:
                    return


def test_acknowledged_writes_survive_kill_9(home: Path) -> None:
    rng = random.Random(20261124)
    sock, port = loopback_socket()
    sock.close()  # the server binds the port itself
    url = f"http://127.0.0.1:{port}"
    proc = _serve(home, port)
    steps = [s["uri"] for s in httpx2.post(f"{url}/api/v1/protocols", json={
        "markdown_doc": THREE_STEPS}, timeout=30).json()["items"][0]["steps"]]
    minted: dict[str, str] = {}
    spent: list[dict[str, Any]] = []
    outcomes: dict[str, str] = {}
    try:
        for round_ in range(ROUNDS):
            load = Load(url, round_, steps)
            workers = [threading.Thread(target=load.mint), threading.Thread(target=load.search),
                       *(threading.Thread(target=load.run, args=(f"agent-{i}",))
                         for i in range(2))]
            for w in workers:
                w.start()
            time.sleep(rng.uniform(0.8, 2.5))  # let writes pile up, then kill at a random time
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            load.stop.set()
            for w in workers:
                w.join(timeout=60)
            minted |= load.minted
            spent += load.spent
            outcomes |= load.outcomes
            proc = _serve(home, port)
        assert minted and spent and outcomes, "the load made no acknowledged writes"

        with httpx2.Client(base_url=url, timeout=30) as http:
            for title, uri in minted.items():
                r = http.get(f"/api/v1/protocols/{uri.rsplit('/', 1)[1]}",
                             params={"protocol": "true"})
                assert r.status_code == 200, title
                assert len(r.json()["steps"]) == 2, title
            index = http.get("/health").json()["index"]
            assert index["pending"] == 0 and index["with_vectors"] == index["documents"]
            for run in http.get("/api/v1/runs", params={"limit": 500}).json()["items"]:
                report = http.get(f"/api/v1/runs/{run['run_id']}/verify").json()
                assert report["valid"] is True, report
            for answer in spent[:20]:
                again = http.post("/api/v1/runs/next", json=answer).json()
                assert again.get("error_code") is not None, again  # spent: refused
    finally:
        proc.kill()
        proc.wait(timeout=30)
    kairos = make_kairos(home, KAIROS_EMBEDDER="none")
    for run_id, outcome in outcomes.items():
        run = kairos.run_detail(run_id)
        assert (run["status"], run["outcome"]) == ("finished", outcome), run
    assert recount(kairos, steps[0]) == counted(kairos, steps[0])
    if not PG_URL:
        with sqlite3.connect(home / "kairos.db") as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
