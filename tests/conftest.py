"""Shared fixtures: a real SQLite store per test, migrated once and copied."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from kairos.config import load_settings
from kairos.service import Caller, Kairos
from kairos.store.db import Store
from tests.fakes import HashEmbedder


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
def home(tmp_path: Path, template_db: Path) -> Path:
    shutil.copy(template_db, tmp_path / "kairos.db")
    return tmp_path


def make_kairos(home: Path, embedder: object = None, **env: str) -> Kairos:
    """A service on the test's store; vectors from the deterministic fake embedder unless
    another one (or ``KAIROS_EMBEDDER=none``) is asked for."""
    settings = load_settings(env={"KAIROS_HOME": str(home), **env})
    if embedder is None and settings.embedder != "none":
        embedder = HashEmbedder()
    return Kairos(settings, embedder=embedder, background=False)  # type: ignore[arg-type]


@pytest.fixture
def kairos(home: Path) -> Iterator[Kairos]:
    k = make_kairos(home)
    yield k
    k.close()


@pytest.fixture
def caller() -> Caller:
    return Caller()
