"""Shared fixtures: a real store per test.

SQLite by default (migrated once, copied per test). With ``KAIROS_TEST_DATABASE_URL``
pointing at a PostgreSQL server, the same tests run on PostgreSQL: migrated once, every
table emptied before each test.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
from collections.abc import AsyncIterator, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx2
import pytest
from sqlalchemy import text

from kairos.config import load_settings
from kairos.search.embedders import LocalEmbedder, local_model
from kairos.service import Caller, Kairos
from kairos.service.wiring import open_service
from kairos.store.db import Store
from tests.client import Agent

PG_URL = os.environ.get("KAIROS_TEST_DATABASE_URL", "")
BACKEND = "postgresql" if PG_URL else "sqlite"
#: How many times each race scenario runs, each on a fresh store (``KAIROS_RACE_TRIALS``).
RACE_TRIALS = range(int(os.environ.get("KAIROS_RACE_TRIALS", "1")))


def pytest_report_header() -> str:
    return f"kairos backend: {BACKEND}"


@pytest.fixture(scope="session")
def pg_store() -> Iterator[Store | None]:
    if not PG_URL:
        yield None
        return
    store = Store(PG_URL)
    yield store
    store.close()


def _empty(store: Store) -> None:
    from kairos.store.schema import metadata

    names = ", ".join(t.name for t in metadata.sorted_tables)
    with store.engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {names} RESTART IDENTITY CASCADE"))


@pytest.fixture(scope="session")
def template_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated, empty database file; copying it is much faster than migrating again."""
    path = tmp_path_factory.mktemp("template") / "kairos.db"
    store = Store(f"sqlite:///{path}")
    with store.engine.connect() as conn:
        conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    return path


@pytest.fixture
def home(tmp_path: Path, template_db: Path, pg_store: Store | None) -> Path:
    if pg_store is not None:
        _empty(pg_store)
    else:
        shutil.copy(template_db, tmp_path / "kairos.db")
    return tmp_path


@pytest.fixture(scope="session")
def model() -> LocalEmbedder:
    """The real local model (the process-wide instance the service uses)."""
    return local_model().load()


def make_kairos(home: Path, embedder: object = None, **env: str) -> Agent:
    """A service on the test's store with the shipped local model, unless another embedder
    (or ``KAIROS_EMBEDDER=none``) is asked for; spoken to as an agent's code speaks
    (``tests.client``), its typed API at ``.service``."""
    base = {"KAIROS_HOME": str(home)}
    if PG_URL:
        base["KAIROS_DATABASE_URL"] = PG_URL
    settings = load_settings(env={**base, **env})
    if embedder is None and settings.embedder != "none":
        embedder = local_model()
    service = Agent(open_service(settings, embedder=embedder,  # type: ignore[arg-type]
                                 background=False))
    _opened.append(service)
    return service


_opened: list[Agent] = []


@pytest.fixture(autouse=True)
def _close_services() -> Iterator[None]:
    """Every service a test made is closed after it (no connection outlives its test)."""
    yield
    while _opened:
        _opened.pop().close()


@pytest.fixture
def kairos(home: Path) -> Iterator[Agent]:
    k = make_kairos(home)
    yield k
    k.close()


@pytest.fixture
def caller() -> Caller:
    return Caller()


#: The base URL of in-process HTTP clients (a loopback Host, as the Host check wants).
BASE = "http://127.0.0.1:8765"


@contextlib.asynccontextmanager
async def in_process(kairos: Agent | Kairos, **options: Any
                     ) -> AsyncIterator[httpx2.AsyncClient]:
    """A client of the REST app (with MCP inside) of ``kairos``, served in process;
    ``options`` go to ``create_app``."""
    from kairos.api import create_app
    from kairos.mcp import ServiceRef, build_server

    service = kairos.service if isinstance(kairos, Agent) else kairos
    app = create_app(service, mcp_factory=partial(build_server, ServiceRef.of(service)),
                     **options)
    async with app.router.lifespan_context(app), httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=app), base_url=BASE) as client:
        yield client


@pytest.fixture
async def http(kairos: Agent) -> AsyncIterator[httpx2.AsyncClient]:
    """The REST app (with MCP inside) in process, on the test's store."""
    async with in_process(kairos) as client:
        yield client


def loopback_socket() -> tuple[socket.socket, int]:
    """A socket bound to a free port of 127.0.0.1 and listening, before any server starts
    on it: clients may connect at once (the kernel queues them)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock, int(sock.getsockname()[1])
