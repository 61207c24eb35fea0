"""Migrations run once, under a lock: processes started together against one fresh
database (`kairos migrate` and a `kairos serve` whose workers each migrate at start) all
succeed, and the schema ends at the newest revision."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import make_url, text

from kairos.store import db
from tests.conftest import PG_URL
from tests.replicas.serving import free_port, server_env, wait_healthy

pytestmark = pytest.mark.slow
KAIROS = [sys.executable, "-m", "kairos.cli.main"]


def _head() -> str | None:
    cfg = Config()
    cfg.set_main_option("script_location", str(Path(db.__file__).parent / "migrations"))
    return ScriptDirectory.from_config(cfg).get_current_head()


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A home and the URL of a database nobody has migrated yet."""
    home = tmp_path / "fresh"
    if not PG_URL:
        yield home, f"sqlite:///{home / 'kairos.db'}"
        return
    name = f"kairos_fresh_{uuid.uuid4().hex[:12]}"
    admin = db.make_engine(PG_URL)
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    try:
        yield home, make_url(PG_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f"DROP DATABASE {name} WITH (FORCE)"))
        admin.dispose()


def test_processes_started_together_on_a_fresh_database_all_come_up_at_head(
        fresh: tuple[Path, str]) -> None:
    home, url = fresh
    env = server_env(home, url if PG_URL else None)
    port = free_port()
    migrators = [subprocess.Popen([*KAIROS, "migrate"], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(3)]
    server = subprocess.Popen([*KAIROS, "serve", "--workers", "2", "--port", str(port),
                               "--log-level", "warning"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        head = _head()
        for proc in migrators:
            _, err = proc.communicate(timeout=90)
            assert proc.returncode == 0, err
            assert f"schema at revision {head}" in err
        base = f"http://127.0.0.1:{port}"
        wait_healthy(base, server, time.monotonic() + 90)
        minted = httpx2.post(f"{base}/api/v1/protocols", timeout=30, json={
            "markdown_doc": "# Rotate the signing keys\n\n## Rotate\n\nRun the script.\n"})
        assert minted.status_code in (200, 201), minted.text
    finally:
        server.terminate()
        assert server.wait(timeout=60) == 0
    engine = db.make_engine(url)
    try:
        with engine.connect() as conn:
            versions = conn.execute(text("SELECT version_num FROM alembic_version")).all()
    finally:
        engine.dispose()
    assert [v[0] for v in versions] == [head]

