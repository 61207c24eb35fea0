"""Alembic environment: runs on the connection KAIROS hands it, or on a URL."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine

from kairos.store.schema import metadata

config = context.config
connection = config.attributes.get("connection")


def _include(obj: object, name: str | None, type_: str, reflected: bool,
             compare_to: object) -> bool:
    """Leave the dialect-specific search tables (FTS5 shadow tables) to hand-written DDL."""
    return not (type_ == "table" and name is not None and name.startswith("search_fts"))


def _run(conn: Connection) -> None:
    context.configure(connection=conn, target_metadata=metadata, include_object=_include,
                      render_as_batch=conn.dialect.name == "sqlite")
    with context.begin_transaction():
        context.run_migrations()


if connection is not None:
    _run(connection)
else:
    engine = create_engine(config.get_main_option("sqlalchemy.url") or "sqlite://")
    with engine.connect() as conn:
        _run(conn)
