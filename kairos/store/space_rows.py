"""One space's rows, table by table: as an export reads them, and what an import asks of
the store before it writes the file's rows."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.engine import Connection, RowMapping

from . import schema


def of_space(conn: Connection, table: str, space: str, *, by_run: bool,
             order: Sequence[str]) -> Iterator[RowMapping]:
    """The rows of ``table`` in ``space`` ordered by the columns ``order``: those with that
    ``space``, or (``by_run``) those of the space's runs."""
    t = schema.metadata.tables[table]
    where = (t.c.run_id.in_(select(schema.runs.c.id).where(schema.runs.c.space == space))
             if by_run else t.c.space == space)
    yield from conn.execute(select(t).where(where).order_by(*(t.c[n] for n in order))).mappings()


def spaces_of(conn: Connection, table: str, ids: Iterable[str]) -> dict[str, str]:
    """The space of each of ``ids`` that ``table`` holds."""
    t = schema.metadata.tables[table]
    out: dict[str, str] = {}
    ids = list(ids)
    for i in range(0, len(ids), 500):
        q = select(t.c.id, t.c.space).where(t.c.id.in_(ids[i:i + 500]))
        out.update({r[0]: r[1] for r in conn.execute(q)})
    return out


def held_versions(conn: Connection, protocol_ids: Iterable[str]) -> set[tuple[str, int]]:
    """The (protocol id, version) the store holds of ``protocol_ids``."""
    v = schema.protocol_versions.c
    return {(r[0], r[1]) for r in conn.execute(
        select(v.protocol_id, v.version).where(v.protocol_id.in_(list(protocol_ids))))}


def insert_rows(conn: Connection, table: str, rows: list[dict[str, Any]]) -> None:
    conn.execute(insert(schema.metadata.tables[table]), rows)

