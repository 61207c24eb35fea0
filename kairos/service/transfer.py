"""Export and import every record of one space, as JSON-serialisable dicts (one per line
of a JSON Lines file): protocols and steps, runs with their nonces, proofs and
attestations, metrics, categories, experiences and manuals.

Each table of ``store.schema`` is either exported (with the rule that selects one space's
rows) or stays with its store, for a stated reason: the search index is rebuilt from the
imported records (its row ids, full-text index and vectors belong to the store and the
model that made them), and search sessions are short-lived conversation state with no
space. A table that is neither refuses to export, so a new table is never silently
dropped.

An import is one transaction: it writes everything or nothing. Rows whose key already
exists are skipped, so importing the same file twice changes nothing.
"""

from __future__ import annotations

import base64
from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from sqlalchemy import Table, and_, insert, select
from sqlalchemy.exc import IntegrityError

from ..domain.errors import CONFLICT, ConflictError, ValidationError
from ..search.documents import draft_of, entry_doc, protocol_doc
from ..search.service import DocSpec
from ..store import schema as t
from .clock import now
from .protocols import Caller

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from .app import Kairos

FORMAT = "kairos-export"
VERSION = 1

# How one space's rows are selected, per exported table.
BY_SPACE = "space"          # the table has a ``space`` column
BY_RUN = "run"              # rows of the space's runs (``run_id``)
BY_PROTOCOL = "protocol"    # rows of the space's protocols (``protocol_id``)
SCOPES: dict[str, str] = {
    "protocols": BY_SPACE,
    "steps": BY_SPACE,
    "runs": BY_SPACE,
    "nonces": BY_RUN,
    "proofs": BY_RUN,
    "attestations": BY_SPACE,
    "protocol_metrics": BY_SPACE,
    "step_metrics": BY_PROTOCOL,
    "categories": BY_SPACE,
    "experiences": BY_SPACE,
    "manuals": BY_SPACE,
    "learned_triggers": BY_SPACE,
}
NOT_EXPORTED: dict[str, str] = {
    "search_docs": "search index: rebuilt from the imported records",
    "search_vectors": "search index: re-embedded by the importing store's model",
    "index_meta": "search index bookkeeping of the importing store",
    "search_sessions": "conversation state: expires after idle minutes, belongs to no space",
    "search_leads": "the searches of the last minutes, kept only to learn from a run that "
                    "follows them",
}
# Rows whose key is a store-assigned integer are matched on these columns instead.
NATURAL_KEYS: dict[str, tuple[str, ...]] = {
    "attestations": ("run_id", "step_uri", "outcome", "created_at"),
}
INDEXED = {"protocols": "protocol", "experiences": "experience", "manuals": "manual"}


def tables() -> list[Table]:
    """Exported tables in dependency order; an unclassified table is an error."""
    unknown = sorted(set(t.metadata.tables) - set(SCOPES) - set(NOT_EXPORTED))
    if unknown:
        raise RuntimeError(f"transfer does not know the table(s) {', '.join(unknown)}: "
                           "add each to SCOPES or NOT_EXPORTED in kairos/service/transfer.py")
    return [table for table in t.metadata.sorted_tables if table.name in SCOPES]


def _store_key(table: Table) -> str | None:
    """The integer primary key the store assigns, which never leaves the store."""
    pk = list(table.primary_key.columns)
    if len(pk) == 1 and table.name in NATURAL_KEYS:
        return pk[0].name
    return None


def _where(table: Table, space: str) -> Any:
    scope = SCOPES[table.name]
    if scope == BY_SPACE:
        return table.c.space == space
    if scope == BY_RUN:
        return table.c.run_id.in_(select(t.runs.c.id).where(t.runs.c.space == space))
    return table.c.protocol_id.in_(select(t.protocols.c.id).where(t.protocols.c.space == space))


def _encode(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"$base64": base64.b64encode(value).decode("ascii")}
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"$base64"}:
        return base64.b64decode(value["$base64"])
    return value


def export_records(kairos: Kairos, caller: Caller) -> Iterator[dict[str, Any]]:
    """A header, then one ``{"table": ..., "row": ...}`` per record of ``caller.space``,
    read in one transaction (a consistent snapshot)."""
    ordered = tables()
    yield {"format": FORMAT, "version": VERSION, "space": caller.space, "exported_at": now(),
           "tables": [table.name for table in ordered],
           "not_exported": sorted(NOT_EXPORTED)}
    with kairos.store.read() as repo:
        for table in ordered:
            skip = _store_key(table)
            order = [c for c in table.primary_key.columns if c.name != skip] or [
                table.c[n] for n in NATURAL_KEYS.get(table.name, ())]
            query = select(table).where(_where(table, caller.space)).order_by(*order)
            for row in repo.conn.execute(query).mappings():
                yield {"table": table.name,
                       "row": {k: _encode(v) for k, v in row.items() if k != skip}}


def _parse(records: Iterable[Any]) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    it = iter(records)
    header = next(it, None)
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValidationError("header", f'a first record {{"format": "{FORMAT}", ...}}',
                              message="Not a KAIROS export: the first record must be its "
                                      "header.")
    if header.get("version") != VERSION:
        raise ValidationError("version", f"export version {VERSION}",
                              message=f"Unsupported export version {header.get('version')!r}.")
    known = {table.name: table for table in tables()}
    rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for n, record in enumerate(it, 2):
        name = record.get("table") if isinstance(record, dict) else None
        row = record.get("row") if isinstance(record, dict) else None
        if name in NOT_EXPORTED:
            continue
        if name not in known or not isinstance(row, dict):
            raise ValidationError(f"records[{n}]", "{\"table\": <exported table>, \"row\": {...}}",
                                  line=n)
        extra = sorted(set(row) - set(known[name].c.keys()))
        if extra:
            raise ValidationError(f"records[{n}].row.{extra[0]}", f"a column of {name}",
                                  message=f"Record {n}: {name} has no column {extra[0]!r}.",
                                  line=n)
        rows[name].append({k: _decode(v) for k, v in row.items()})
    return header, rows


def _exists(conn: Connection, table: Table, row: dict[str, Any]) -> bool:
    skip = _store_key(table)
    names = NATURAL_KEYS.get(table.name) if skip else [c.name for c in table.primary_key]
    if not names or any(n not in row for n in names):
        return False
    found = conn.execute(select(table).where(and_(*(table.c[n] == row[n] for n in names)))
                         .limit(1)).first()
    return found is not None


def _specs(kairos: Kairos, rows: dict[str, list[dict[str, Any]]], space: str
           ) -> dict[str, DocSpec]:
    """The search documents of an export's protocols and entries, as they will be stored
    in ``space``: built from the rows themselves, so they are embedded before the write."""
    steps: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for step in rows.get("steps", []):
        steps[step["protocol_id"]].append(step)
    out: dict[str, DocSpec] = {}
    for proto in rows.get("protocols", []):
        if proto.get("builtin") or not steps.get(proto["id"]):
            continue
        ordered = sorted(steps[proto["id"]], key=lambda r: r["position"])
        out[proto["id"]] = protocol_doc(proto["id"], space, draft_of(proto, ordered),
                                         proto["updated_at"])
    for kind, table in (("experience", "experiences"), ("manual", "manuals")):
        for row in rows.get(table, []):
            out[row["id"]] = entry_doc(kind, {**row, "space": space})
    return out


def import_records(kairos: Kairos, records: Iterable[Any], caller: Caller) -> dict[str, Any]:
    """Write an export into ``caller.space`` (space columns are rewritten), then index the
    imported protocols, experiences and manuals for search."""
    header, rows = _parse(records)
    engine = kairos.search_engine
    specs = _specs(kairos, rows, caller.space)
    vectors = dict(zip(specs, engine.embed_each(list(specs.values())), strict=True))
    inserted: dict[str, int] = {}
    skipped: dict[str, int] = {}
    fresh: dict[str, list[str]] = defaultdict(list)
    try:
        with kairos.store.write() as repo:
            conn = repo.conn
            for table in tables():
                skip = _store_key(table)
                for row in rows.get(table.name, []):
                    values = {k: v for k, v in row.items() if k != skip}
                    if "space" in table.c:
                        values["space"] = caller.space
                    if _exists(conn, table, values):
                        skipped[table.name] = skipped.get(table.name, 0) + 1
                        continue
                    conn.execute(insert(table).values(**values))
                    inserted[table.name] = inserted.get(table.name, 0) + 1
                    if table.name in INDEXED:
                        fresh[INDEXED[table.name]].append(values["id"])
            indexed = [i for ids in fresh.values() for i in ids if i in specs]
            for i in indexed:
                engine.index(repo, [specs[i]], vectors[i])
    except IntegrityError as exc:
        reason = str(exc.orig).splitlines()[0] if exc.orig else "constraint violated"
        raise ConflictError(CONFLICT, f"The export conflicts with records already in space "
                            f"'{caller.space}' ({reason}); nothing was imported.",
                            field="records") from None
    return {"status": "imported", "space": caller.space, "from_space": header.get("space"),
            "inserted": inserted, "skipped": skipped, "indexed": len(indexed)}


__all__ = ["FORMAT", "NOT_EXPORTED", "SCOPES", "VERSION", "export_records", "import_records",
           "tables"]
