"""Queries, one method each, on a connection inside a transaction the Store opened."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import bindparam, delete, func, insert, select, update
from sqlalchemy.engine import Connection, RowMapping
from sqlalchemy.exc import IntegrityError
from sqlalchemy.sql import Executable

from . import schema
from .reads import PageQuery

Row = RowMapping

# --- statements built once --------------------------------------------------------------------
# The run loop (begin, next, attest) runs a handful of statements per call; building each
# anew costs more CPU than SQLite takes to run it. These are built at import and reused:
# SQLAlchemy memoizes a statement object's cache key, so each one compiles once per dialect.
# Parameters named ``b_*`` are the WHERE clause's; an UPDATE without ``values()`` sets the
# columns named by the other keys of the parameters it is executed with.

_PROTOCOL_CONTEXT = (schema.protocols.c.id.label("p_id"), schema.protocols.c.space.label("p_space"),
                     schema.protocols.c.version.label("p_version"))
#: A step with its protocol (and the protocol's current version), and the run that issued
#: ``nonce`` (NULLs when none).
_RUN_CONTEXT = (
    select(schema.steps.c.id.label("s_id"), schema.steps.c.position.label("s_position"),
           *_PROTOCOL_CONTEXT, *(c.label(f"r_{c.name}") for c in schema.runs.c))
    .select_from(schema.steps.join(schema.protocols,
                                   schema.protocols.c.id == schema.steps.c.protocol_id)
                 .outerjoin(schema.nonces, schema.nonces.c.nonce == bindparam("b_nonce"))
                 .outerjoin(schema.runs, schema.runs.c.id == schema.nonces.c.run_id))
    .where(schema.steps.c.id == bindparam("b_step")))
#: The same for a step that the current version no longer has: the protocol of the run
#: that issued ``nonce``.
_NONCE_CONTEXT = (
    select(*_PROTOCOL_CONTEXT, *(c.label(f"r_{c.name}") for c in schema.runs.c))
    .select_from(schema.nonces.join(schema.runs, schema.runs.c.id == schema.nonces.c.run_id)
                 .join(schema.protocols, schema.protocols.c.id == schema.runs.c.protocol_id))
    .where(schema.nonces.c.nonce == bindparam("b_nonce")))
_VERSION = select(schema.protocol_versions).where(
    (schema.protocol_versions.c.protocol_id == bindparam("b_protocol"))
    & (schema.protocol_versions.c.version == bindparam("b_version")))
_RUN_COLUMNS = tuple(c.name for c in schema.runs.c)
_RUN = select(schema.runs).where(schema.runs.c.id == bindparam("b_id"))
_STEPS_OF = (select(schema.steps).where(schema.steps.c.protocol_id == bindparam("b_protocol"))
             .order_by(schema.steps.c.position))
#: The run loop's compare-and-swap: the UPDATE applies only to the version of the run that
#: was read, and adds one to it. Its pending nonce is compared too, so a writer that moves
#: a run on without counting its version (one that clears the nonce) still wins over it.
#: It returns the run as written, so the writer never reads it again.
_SWAP = (update(schema.runs).where(schema.runs.c.id == bindparam("b_id"),
                              schema.runs.c.version == bindparam("b_version"),
                              schema.runs.c.nonce.is_not_distinct_from(bindparam("b_nonce")))
         .values(version=schema.runs.c.version + 1).returning(*schema.runs.c))
_LOCK_RUN = _RUN.with_for_update()
_INSERT_RUN = insert(schema.runs)
_INSERT_NONCE = insert(schema.nonces)
_PROOF_COUNT = (select(func.count()).select_from(schema.proofs)
                .where(schema.proofs.c.run_id == bindparam("b_run")))
#: A run's next proof, numbered after those it has, in one statement: it answers the
#: number given.
_PROOF_VALUES = ("step_uri", "step_index", "previous_hash", "proof_hash", "created_at")
_APPEND_PROOF = insert(schema.proofs).from_select(
    ["run_id", "seq", "record", *_PROOF_VALUES],
    select(bindparam("b_run", type_=schema.proofs.c.run_id.type), _PROOF_COUNT.scalar_subquery(),
           bindparam("record", type_=schema.proofs.c.record.type),
           *(bindparam(k, type_=schema.proofs.c[k].type) for k in _PROOF_VALUES)),
).returning(schema.proofs.c.seq)


class Repo:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        #: SQLite runs one write transaction at a time: what a writer reads stays as read
        #: until it commits, with no row locks to take.
        self.one_writer = conn.dialect.name == "sqlite"

    # --- the read model (``reads``) ----------------------------------------------------------

    def page(self, query: PageQuery) -> tuple[list[Row], int]:
        """A page's rows and the total it is a page of."""
        return self.all(query.page), int(self.conn.execute(query.total).scalar_one())

    def all(self, query: Executable, params: Mapping[str, Any] | None = None) -> list[Row]:
        """Every row of a query (such as a read built in ``reads``)."""
        return list(self.conn.execute(query, params).mappings())

    def _first(self, query: Executable, params: Mapping[str, Any] | None = None) -> Row | None:
        return self.conn.execute(query, params).mappings().first()

    # --- protocols and steps ---------------------------------------------------------------

    def protocol(self, protocol_id: str) -> Row | None:
        return self._first(select(schema.protocols).where(schema.protocols.c.id == protocol_id))

    def protocol_by_title(self, space: str, title_key: str) -> Row | None:
        p = schema.protocols
        return self._first(select(p).where(p.c.space == space, p.c.title_key == title_key))

    def insert_protocol(self, **values: Any) -> None:
        self.conn.execute(insert(schema.protocols).values(**values))

    def update_protocol(self, protocol_id: str, **values: Any) -> None:
        self.conn.execute(update(schema.protocols).where(schema.protocols.c.id == protocol_id)
                          .values(**values))

    def touch_protocol(self, protocol_id: str, seen: str, stamp: str, **values: Any) -> bool:
        """Stamp a protocol as changed at ``stamp`` if it is still as read at ``seen``."""
        p = schema.protocols
        return bool(self.conn.execute(update(p).where(p.c.id == protocol_id, p.c.updated_at == seen)
                                      .values(updated_at=stamp, **values)).rowcount)

    def delete_protocol(self, protocol_id: str) -> None:
        """A protocol, its steps, and the versions no run follows."""
        self.conn.execute(delete(schema.steps).where(schema.steps.c.protocol_id == protocol_id))
        self.conn.execute(delete(schema.protocols).where(schema.protocols.c.id == protocol_id))
        v, r = schema.protocol_versions.c, schema.runs.c
        followed = select(r.protocol_version).where(r.protocol_id == protocol_id)
        self.conn.execute(delete(schema.protocol_versions).where(
            (v.protocol_id == protocol_id) & v.version.not_in(followed)))

    # --- versions ----------------------------------------------------------------------------

    def insert_version(self, **values: Any) -> None:
        self.conn.execute(insert(schema.protocol_versions).values(**values))

    def version(self, protocol_id: str, version: int) -> Row | None:
        return self._first(_VERSION, {"b_protocol": protocol_id, "b_version": version})

    def versions_of(self, protocol_id: str) -> list[Row]:
        v = schema.protocol_versions
        return self.all(select(v).where(v.c.protocol_id == protocol_id).order_by(v.c.version))

    def step(self, step_id: str) -> Row | None:
        return self._first(select(schema.steps).where(schema.steps.c.id == step_id))

    def protocols_with_first_step(self, protocol_ids: Sequence[str]) -> dict[str, Row]:
        """Title, tags and builtin of each protocol with its first step's id and label."""
        if not protocol_ids:
            return {}
        p, s = schema.protocols.c, schema.steps.c
        first = (select(s.protocol_id, func.min(s.position).label("position"))
                 .where(s.protocol_id.in_(list(protocol_ids)))
                 .group_by(s.protocol_id).subquery())
        q = (select(p.id, p.title, p.tags, p.builtin, s.id.label("step_id"), s.label)
             .join(first, first.c.protocol_id == p.id)
             .join(schema.steps, (s.protocol_id == p.id) & (s.position == first.c.position)))
        return {r["id"]: r for r in self.conn.execute(q).mappings()}

    def steps_of(self, protocol_id: str) -> list[Row]:
        return self.all(_STEPS_OF, {"b_protocol": protocol_id})

    def run_context(self, step_id: str, nonce: str | None
                    ) -> tuple[dict[str, Any], dict[str, Any] | None] | None:
        """One query for the run loop: the step (``id``, ``position``; position None when
        the protocol's current version has no such step) with its protocol's ``p_id``,
        ``p_space`` and ``p_version``; and the run that
        issued ``nonce``, if any. None: no such step in the protocol or the run."""
        row = self.conn.execute(_RUN_CONTEXT, {"b_step": step_id, "b_nonce": nonce}).first()
        if row is None and nonce is not None:
            row = self.conn.execute(_NONCE_CONTEXT, {"b_nonce": nonce}).first()
        if row is None:
            return None
        m = row._mapping
        context = {"id": step_id, "position": m.get("s_position"),
                   **{k: m[k] for k in ("p_id", "p_space", "p_version")}}
        run = ({name: m[f"r_{name}"] for name in _RUN_COLUMNS}
               if m["r_id"] is not None else None)
        return context, run

    def insert_steps(self, rows: Sequence[dict[str, Any]]) -> None:
        if rows:
            self.conn.execute(insert(schema.steps), list(rows))

    def update_step(self, step_id: str, **values: Any) -> None:
        self.conn.execute(update(schema.steps).where(schema.steps.c.id == step_id).values(**values))

    def delete_steps(self, step_ids: Iterable[str]) -> None:
        ids = list(step_ids)
        if ids:
            self.conn.execute(delete(schema.steps).where(schema.steps.c.id.in_(ids)))

    # --- runs, nonces, proofs --------------------------------------------------------------

    def insert_run(self, **values: Any) -> None:
        self.conn.execute(_INSERT_RUN, values)

    def run(self, run_id: str) -> Row | None:
        return self._first(_RUN, {"b_id": run_id})

    def run_by_nonce(self, nonce: str) -> Row | None:
        runs, nonces = schema.runs, schema.nonces
        return self._first(select(runs).join(nonces, nonces.c.run_id == runs.c.id)
                           .where(nonces.c.nonce == nonce))

    def latest_run(self, space: str, caller: str, protocol_id: str, statuses: Sequence[str],
                   step_index: int | None = None) -> Row | None:
        r = schema.runs.c
        q = select(schema.runs).where(r.caller == caller, r.protocol_id == protocol_id,
                                      r.status.in_(list(statuses)), r.space == space)
        if step_index is not None:
            q = q.where(r.step_index == step_index)
        return self._first(q.order_by(r.updated_at.desc(), r.created_at.desc()).limit(1))

    def locked_run(self, run: Mapping[Any, Any]) -> Mapping[Any, Any] | None:
        """``run`` as it is now, locked until this write commits (PostgreSQL: another
        writer that wants it waits, then reads what this one wrote). Under SQLite's one
        writer the row read in this transaction is already that."""
        if self.one_writer:
            return run
        return self._first(_LOCK_RUN, {"b_id": run["id"]})

    def swap_run(self, run: Mapping[Any, Any], **values: Any) -> Row | None:
        """Update ``run`` only if it is still the version that was read: the one
        conditional write that makes a nonce single-use and an outcome recorded once,
        across threads and replicas. The run as written; None: another writer changed it
        first."""
        return self._first(_SWAP, {"b_id": run["id"], "b_version": run["version"],
                                   "b_nonce": run["nonce"], **values})

    def insert_nonce(self, nonce: str, run_id: str, step_index: int, attempt: int,
                     issued_at: str) -> None:
        self.conn.execute(_INSERT_NONCE, {"nonce": nonce, "run_id": run_id,
                                          "step_index": step_index, "attempt": attempt,
                                          "issued_at": issued_at})

    def append_proof(self, run_id: str, record: dict[str, Any], created_at: str) -> int:
        """Add ``record`` after the run's proofs; how many it has now."""
        seq = self.conn.execute(_APPEND_PROOF, {
            "b_run": run_id, "step_uri": record["step_uri"],
            "step_index": record["step_index"], "record": record,
            "previous_hash": record["previous_hash"], "proof_hash": record["proof_hash"],
            "created_at": created_at}).scalar_one()
        return int(seq) + 1

    def proof_count(self, run_id: str) -> int:
        return int(self.conn.execute(_PROOF_COUNT, {"b_run": run_id}).scalar_one())

    def proofs(self, run_id: str) -> list[Row]:
        p = schema.proofs
        return self.all(select(p).where(p.c.run_id == run_id).order_by(p.c.seq))

    def insert_attestation(self, **values: Any) -> None:
        self.conn.execute(insert(schema.attestations).values(**values))

    # --- quality metrics -------------------------------------------------------------------

    def protocol_metrics(self, protocol_id: str, space: str) -> Row | None:
        m = schema.protocol_metrics
        return self._first(select(m).where(m.c.protocol_id == protocol_id, m.c.space == space))

    def create_metrics(self, protocol_id: str, space: str, step_ids: Sequence[str]) -> None:
        """The statistics rows of a protocol as run in ``space`` (those missing), made with
        a protocol and its steps; an existing row is left as it is. Counting makes a row
        still missing (a built-in protocol's in a space that runs it: ``Counts.apply``)."""
        self.conn.execute(schema.insert_new(self.conn, schema.protocol_metrics).values(
            protocol_id=protocol_id, space=space, runs=0, successes=0, failures=0,
            quality_bonus=0.0, per_model={}))
        if step_ids:
            self.conn.execute(schema.insert_new(self.conn, schema.step_metrics), [
                {"step_id": s, "space": space, "protocol_id": protocol_id, "accepted": 0,
                 "refused": 0, "failures": 0} for s in step_ids])

    def version_metrics_of(self, protocol_id: str, space: str) -> dict[int, Row]:
        v = schema.version_metrics
        q = select(v).where(v.c.protocol_id == protocol_id, v.c.space == space)
        return {r["version"]: r for r in self.all(q)}

    def step_metrics_of(self, protocol_id: str, space: str) -> dict[str, Row]:
        s = schema.step_metrics
        q = select(s).where(s.c.protocol_id == protocol_id, s.c.space == space)
        return {r["step_id"]: r for r in self.all(q)}

    # --- categories and entries ------------------------------------------------------------

    def categories(self, space: str) -> list[Row]:
        table = schema.categories
        return self.all(select(table).where(table.c.space == space).order_by(table.c.code))

    def insert_categories(self, space: str, rows: Iterable[tuple[str, str, str]]) -> None:
        """Insert ``(code, name, description)`` rows, or nothing when another writer's
        identical rows won: writers racing on a new space all succeed. A savepoint keeps
        the transaction usable after the lost insert."""
        try:
            with self.conn.begin_nested():
                self.conn.execute(insert(schema.categories), [
                    {"space": space, "code": code, "name": name, "description": description}
                    for code, name, description in rows])
        except IntegrityError:
            pass

    def entry(self, kind: str, entity_id: str) -> Row | None:
        """An experience or a manual (``kind``) by id, in any space."""
        table = schema.entry_table(kind)
        return self._first(select(table).where(table.c.id == entity_id))

    def insert_entry(self, kind: str, **values: Any) -> None:
        self.conn.execute(insert(schema.entry_table(kind)).values(**values))

    def update_entry(self, kind: str, entity_id: str, seen: str, **values: Any) -> bool:
        """Apply ``values`` to the entry only if it is still the version stamped ``seen``."""
        table = schema.entry_table(kind)
        return bool(self.conn.execute(update(table).where(
            (table.c.id == entity_id) & (table.c.updated_at == seen)).values(**values)).rowcount)

    def search_body(self, rid: int) -> str | None:
        """The body a search document indexes."""
        return self.conn.execute(select(schema.search_docs.c.body).where(
            schema.search_docs.c.rid == rid)).scalar()
