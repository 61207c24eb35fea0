"""Shared fixtures: a real SQLite store per test, migrated once and copied."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from kairos.config import load_settings
from kairos.service import Caller, Kairos
from kairos.store.db import Store


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


@pytest.fixture
def kairos(home: Path) -> Iterator[Kairos]:
    k = Kairos(load_settings(env={"KAIROS_HOME": str(home)}))
    yield k
    k.close()


@pytest.fixture
def caller() -> Caller:
    return Caller()
