"""Faults of the storage are states, not crashes: a full disk, read-only storage and a
database that is down answer 503 with a code that says which (STORAGE_FULL,
STORAGE_READ_ONLY, DATABASE_UNAVAILABLE) and Retry-After, on REST and MCP; ``/health``
reports the fault; nothing is half-written; and the server serves again once it is fixed.

The disks are real: a small tmpfs, filled up or remounted read-only (mounting needs root,
or the tests are skipped). PostgreSQL is made read-only as a standby is (every transaction
read-only), and is taken down by stopping the TCP proxy the service reaches it through."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from sqlalchemy import make_url, text

from kairos.config import load_settings
from kairos.mcp import ServiceRef, build_server
from kairos.service.wiring import open_service
from kairos.store import db
from tests.client import Agent
from tests.conftest import PG_URL, in_process, make_kairos

pytestmark = pytest.mark.anyio
DOC = "# Rotate the signing keys\n\n## Rotate\n\nRotate the release signing keys.\n"
SECOND = "# Renew the certificates\n\n## Renew\n\nRenew the TLS certificates of the edge.\n"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs of its own (skipped where mounting is not allowed)."""
    where = tmp_path / "disk"
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(where)],
                             capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip("mounting a tmpfs needs root: " + mounted.stderr.decode()[:100])
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _remount(disk: Path, mode: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{mode}", str(disk)], check=True)


def _sqlite(home: Path) -> Agent:
    """A service on an SQLite store in ``home``, whatever backend the suite runs on."""
    settings = load_settings(env={"KAIROS_HOME": str(home), "KAIROS_EMBEDDER": "none"})
    return Agent(open_service(settings, background=False))


async def _refused(http: httpx2.AsyncClient, code: str) -> None:
    """A write on REST and a tool call on MCP answer the fault; /health reports it."""
    minted = await http.post("/api/v1/protocols", json={"markdown_doc": SECOND})
    assert minted.status_code == 503, minted.text
    assert minted.json()["error_code"] == code and int(minted.headers["retry-after"]) >= 1
    assert "nothing was written" in minted.json()["message"]
    health = await http.get("/health")
    assert health.status_code == 503
    assert (health.json()["status"], health.json()["store"]["fault"]) == ("unhealthy", code)


async def _mcp_error(kairos: Agent) -> str:
    """The error code of an MCP kairos_mint, through the real SDK client in memory."""
    from mcp import Client

    from kairos.mcp import local_identity

    server = build_server(ServiceRef.of(kairos.service), limits=kairos.limits,
                          identify=local_identity("default", "s"))
    async with Client(server) as client:
        result = await client.call_tool("kairos_mint", {"markdown_doc": SECOND})
    assert result.is_error
    return str((result.structured_content or {})["error_code"])


async def test_a_full_disk_answers_503_storage_full_and_writes_nothing(disk: Path) -> None:
    kairos = _sqlite(disk / "home")
    try:
        kairos.mint(DOC)
        filler = disk / "filler"
        with filler.open("wb") as out, contextlib.suppress(OSError):
            while True:
                out.write(b"\0" * 65536)
        async with in_process(kairos) as http:
            await _refused(http, "STORAGE_FULL")
            assert (await http.get("/api/v1/protocols")).json()["total"] == 1  # reads work
        assert await _mcp_error(kairos) == "STORAGE_FULL"
        filler.unlink()
        async with in_process(kairos) as http:
            assert (await http.get("/health")).status_code == 200
            # Nothing of the refused mints was kept: the same title mints as new.
            minted = await http.post("/api/v1/protocols", json={"markdown_doc": SECOND})
            assert minted.status_code == 201 and minted.json()["items"][0]["updated"] is False
            assert (await http.get("/health")).status_code == 200
    finally:
        kairos.close()


async def test_read_only_storage_answers_503_storage_read_only(disk: Path) -> None:
    kairos = _sqlite(disk / "home")
    try:
        kairos.mint(DOC)
        kairos.store.close()  # no file held open for writing: the disk may go read-only
        _remount(disk, "ro")
        async with in_process(kairos) as http:
            await _refused(http, "STORAGE_READ_ONLY")
        assert await _mcp_error(kairos) == "STORAGE_READ_ONLY"
        kairos.store.close()
        _remount(disk, "rw")
        async with in_process(kairos) as http:
            assert (await http.get("/health")).status_code == 200
            minted = await http.post("/api/v1/protocols", json={"markdown_doc": SECOND})
            assert minted.status_code == 201
    finally:
        kairos.close()


def test_an_empty_read_only_home_is_one_clear_line(disk: Path) -> None:
    _remount(disk, "ro")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAIROS_")}
    done = subprocess.run([sys.executable, "-m", "kairos.cli.main", "search", "deploy"],
                          env={**env, "KAIROS_HOME": str(disk), "KAIROS_EMBEDDER": "none",
                               "KAIROS_CONFIG": os.devnull},
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "[STORAGE_READ_ONLY]" in lines[0], done.stderr
    assert str(disk) in lines[0] and "unexpected" not in lines[0]


# --- PostgreSQL ---------------------------------------------------------------------------

needs_pg = pytest.mark.skipif(not PG_URL, reason="needs PostgreSQL (KAIROS_TEST_DATABASE_URL)")


@pytest.fixture
def fresh_pg() -> Iterator[str]:
    """The URL of a database of its own (its settings change in the test)."""
    name = f"kairos_fault_{uuid.uuid4().hex[:12]}"
    admin = db.make_engine(PG_URL)
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    try:
        yield make_url(PG_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f"DROP DATABASE {name} WITH (FORCE)"))
        admin.dispose()


@needs_pg
async def test_a_read_only_postgresql_answers_503_storage_read_only(
        fresh_pg: str, tmp_path: Path) -> None:
    kairos = make_kairos(tmp_path, KAIROS_EMBEDDER="none", KAIROS_DATABASE_URL=fresh_pg)
    kairos.mint(DOC)
    name = make_url(fresh_pg).database
    with kairos.store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
        c.execute(text(f"ALTER DATABASE {name} SET default_transaction_read_only = on"))
    kairos.store.engine.dispose()  # new sessions start read-only, as on a standby
    async with in_process(kairos) as http:
        await _refused(http, "STORAGE_READ_ONLY")
        assert (await http.get("/api/v1/protocols")).json()["total"] == 1  # reads work


class Proxy:
    """A TCP proxy to the PostgreSQL server: stopping it takes the database away."""

    def __init__(self, upstream: tuple[int, Any]) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.socket(self.upstream[0])
            server.connect(self.upstream[1])
            self.open += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_RDWR)

    def stop(self) -> None:
        with contextlib.suppress(OSError):  # wakes the accept() under way (Linux)
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        for s in self.open:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()


def _upstream(url: str) -> tuple[int, Any]:
    parsed = make_url(url)
    port = parsed.port or 5432
    host = parsed.query.get("host") or parsed.host or "localhost"
    if isinstance(host, tuple):
        host = host[0]
    if host.startswith("/"):
        return socket.AF_UNIX, f"{host}/.s.PGSQL.{port}"
    return socket.AF_INET, (host, port)


@needs_pg
async def test_a_database_that_is_down_answers_503_database_unavailable(
        home: Path) -> None:
    proxy = Proxy(_upstream(PG_URL))
    parsed = make_url(PG_URL)
    url = parsed.set(host="127.0.0.1", port=proxy.port,
                     query={k: v for k, v in parsed.query.items() if k != "host"})
    kairos = make_kairos(home, KAIROS_EMBEDDER="none",
                         KAIROS_DATABASE_URL=url.render_as_string(hide_password=False))
    steps = [s["uri"] for s in kairos.mint(DOC)["items"][0]["steps"]]
    proxy.stop()
    async with in_process(kairos) as http:
        await _refused(http, "DATABASE_UNAVAILABLE")
        begun = await http.post("/api/v1/runs/begin", json={"uri": steps[0]})
        assert begun.status_code == 503 and begun.json()["error_code"] == "DATABASE_UNAVAILABLE"
        listed = await http.get("/api/v1/protocols")
        assert listed.status_code == 503
        assert listed.json()["error_code"] == "DATABASE_UNAVAILABLE"


@needs_pg
def test_a_pooled_connection_is_pinged_only_after_it_sat_unused(
        fresh_pg: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """In steady use no call pays a liveness round trip; a connection left unused that the
    server has closed meanwhile is found by the ping and replaced, unseen by the call."""
    store = db.Store(fresh_pg)
    pings = []
    ping = store.engine.dialect.do_ping
    monkeypatch.setattr(store.engine.dialect, "do_ping",
                        lambda conn: pings.append(1) or ping(conn))
    try:
        for _ in range(5):
            with store.read() as repo:
                pid = repo.conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()
        assert pings == []
        other = db.make_engine(fresh_pg)
        with other.begin() as conn:  # the server closes the pooled connection
            conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        other.dispose()
        monkeypatch.setattr(db, "PING_AFTER_IDLE", 0.0)
        with store.read() as repo:
            assert repo.conn.exec_driver_sql("SELECT pg_backend_pid()").scalar() != pid
        assert pings == [1]
    finally:
        store.close()
