"""Export every record of one space, as JSON-serialisable dicts (one per line of a JSON
Lines file): protocols and steps, runs with their proofs and attestations, categories,
experiences and manuals. ``service.imports`` reads such a file back, as untrusted input.

Each table of ``store.schema`` is either exported (with the rule that selects one space's
rows) or stays with its store, for a stated reason (``NOT_EXPORTED``). A table that is
neither refuses to export, so a new table is never silently dropped.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

from ..domain.caller import Caller
from ..store import schema, space_rows
from ..store.db import Store
from .clock import now

FORMAT = "kairos-export"
VERSION = 1

# How one space's rows are selected, per exported table.
BY_SPACE = "space"          # the table has a ``space`` column
BY_RUN = "run"              # rows of the space's runs (``run_id``)
SCOPES: dict[str, str] = {
    "protocols": BY_SPACE,
    "steps": BY_SPACE,
    "runs": BY_SPACE,
    "proofs": BY_RUN,
    "attestations": BY_SPACE,
    "categories": BY_SPACE,
    "experiences": BY_SPACE,
    "manuals": BY_SPACE,
    "learned_triggers": BY_SPACE,
    "protocol_versions": BY_SPACE,
}
NOT_EXPORTED: dict[str, str] = {
    "search_docs": "search index: rebuilt from the imported records",
    "search_vectors": "search index: re-embedded by the importing store's model",
    "index_meta": "search index bookkeeping of the importing store",
    "search_sessions": "conversation state: expires after idle minutes, belongs to no space",
    "nonces": "single-use tokens of the server that issued them: an imported run takes no "
              "answers",
    "protocol_metrics": "counted from this store's own runs: an imported protocol starts at "
                        "zero, since imported runs were not earned here",
    "step_metrics": "counted from this store's own runs, as protocol_metrics",
    "version_metrics": "counted from this store's own runs, as protocol_metrics",
    "search_leads": "the searches of the last minutes, kept only to learn from a run that "
                    "follows them",
}
# Rows whose key is a store-assigned integer are matched on these columns instead.
NATURAL_KEYS: dict[str, tuple[str, ...]] = {
    "attestations": ("run_id", "step_uri", "outcome", "created_at"),
}


def tables() -> list[schema.Table]:
    """Exported tables in dependency order; an unclassified table is an error."""
    unknown = sorted(set(schema.metadata.tables) - set(SCOPES) - set(NOT_EXPORTED))
    if unknown:
        raise RuntimeError(f"transfer does not know the table(s) {', '.join(unknown)}: "
                           "add each to SCOPES or NOT_EXPORTED in kairos/service/transfer.py")
    return [table for table in schema.metadata.sorted_tables if table.name in SCOPES]


def _store_key(table: schema.Table) -> str | None:
    """The integer primary key the store assigns, which never leaves the store."""
    pk = list(table.primary_key.columns)
    if len(pk) == 1 and table.name in NATURAL_KEYS:
        return pk[0].name
    return None


def _encode(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"$base64": base64.b64encode(value).decode("ascii")}
    return value


def export_records(store: Store, caller: Caller) -> Iterator[dict[str, Any]]:
    """A header, then one ``{"table": ..., "row": ...}`` per record of ``caller.space``,
    read in one transaction (a consistent snapshot)."""
    ordered = tables()
    yield {"format": FORMAT, "version": VERSION, "space": caller.space, "exported_at": now(),
           "tables": [table.name for table in ordered],
           "not_exported": sorted(NOT_EXPORTED)}
    with store.read() as repo:
        for table in ordered:
            skip = _store_key(table)
            order = [c.name for c in table.primary_key.columns if c.name != skip] or list(
                NATURAL_KEYS.get(table.name, ()))
            for row in space_rows.of_space(repo.conn, table.name, caller.space,
                                           by_run=SCOPES[table.name] == BY_RUN, order=order):
                yield {"table": table.name,
                       "row": {k: _encode(v) for k, v in row.items() if k != skip}}


__all__ = ["BY_RUN", "BY_SPACE", "FORMAT", "NATURAL_KEYS", "NOT_EXPORTED", "SCOPES",
           "VERSION", "export_records", "tables"]
