"""Migration 0012 adds triggers, learned triggers, search leads and vector roles, and keeps
every stored record (a copy of the protocols table would take their steps with it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import text

from kairos.store.db import make_engine, migrate
from tests.conftest import PG_URL

HERE = Path(__file__).resolve().parents[2] / "kairos" / "store"


def test_migration_0012_keeps_steps_and_vectors_both_ways(tmp_path: Path) -> None:
    if PG_URL:
        pytest.skip("a migration from 0011 runs on a store of its own (SQLite)")
    engine = make_engine(f"sqlite:///{tmp_path / 'kairos.db'}")
    assert migrate(engine, "0011") == "0011"
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO protocols (id, space, title, title_key, intro, tags, builtin, "
            "created_at, updated_at) VALUES ('p1', 'default', 'T', 't', '', '[]', 0, 'x', 'x')"))
        conn.execute(text(
            "INSERT INTO steps (id, protocol_id, space, position, label, content, challenge, "
            "updated_at) VALUES ('s1', 'p1', 'default', 0, 'L', 'C', '{}', 'x')"))
        conn.execute(text(
            "INSERT INTO search_docs (rid, key, kind, entity_id, space, title, labels, body, "
            "ntokens, updated_at) VALUES (1, 'protocol:p1', 'protocol', 'p1', 'default', 'T', "
            "'L', 'C', 3, 'x')"))
        conn.execute(text("INSERT INTO search_vectors (rid, seq, model_id, vector) "
                          "VALUES (1, 0, 'm', x'00000000')"))
    assert migrate(engine, "0012") == "0012"
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM steps")).scalar() == 1
        assert conn.execute(text("SELECT triggers FROM protocols")).scalar() == "[]"
        assert conn.execute(text("SELECT role FROM search_vectors")).scalar() == "doc"
        for table in ("learned_triggers", "search_leads"):
            assert conn.execute(text(f"SELECT count(*) FROM {table}")).scalar() == 0
    cfg = Config(str(HERE / "alembic.ini"))
    cfg.set_main_option("script_location", str(HERE / "migrations"))
    cfg.set_main_option("sqlalchemy.url", f"sqlite:///{tmp_path / 'kairos.db'}")
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0011")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM steps")).scalar() == 1
        assert conn.execute(text("SELECT count(*) FROM search_vectors")).scalar() == 1
    engine.dispose()
