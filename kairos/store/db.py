"""Engines, migrations and transactions. The backend is chosen here and nowhere else."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, create_engine, event, make_url, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError, DisconnectionError, IntegrityError

from ..domain.errors import (
    DATABASE_UNAVAILABLE,
    STORAGE_FULL,
    STORAGE_READ_ONLY,
    StorageError,
)
from .faults import Clash, Refused, Standing, fault_of
from .repo import Repo
from .serial import SpaceLocks, WriterLock
from .text_index import SQLITE_MATCHES, PgFts, SqliteFts, TextIndex
from .vector_index import MemoryVectorIndex, PgVectorIndex, VectorIndex

_HERE = Path(__file__).parent
_MIGRATE_LOCK = threading.Lock()
#: Free bytes below which ``/health`` reports an SQLite store's disk as full.
MIN_FREE_BYTES = 1 << 20


def _sqlite_engine(url: str) -> Engine:
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 60},
                           pool_size=8, max_overflow=16)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # SQLAlchemy's "begin" event emits BEGIN itself
        cur = dbapi_conn.cursor()
        for statement in ("PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL",
                          "PRAGMA foreign_keys=ON", "PRAGMA busy_timeout=60000",
                          SQLITE_MATCHES):
            cur.execute(statement)
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # Writers take the lock up front so two writers never deadlock on an upgrade.
        write = conn.get_execution_options().get("kairos_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


#: Seconds a pooled database connection may sit unused and still be handed out without a
#: liveness check (see ``_ping_when_idle``).
PING_AFTER_IDLE = 1.0


def _ping_when_idle(engine: Engine) -> None:
    """Check a pooled connection before use only when it sat unused for a while: a server
    that restarted, or a network that dropped, shows on connections left idle. A ping is a
    round trip, about a sixth of what a ``kairos_next`` makes, so connections in steady
    use skip it (a connection that dies while busy is found by the statement that meets
    it, and SQLAlchemy then renews the whole pool)."""

    @event.listens_for(engine, "checkin")
    def _unused(_dbapi_conn: Any, record: Any) -> None:
        record.info["unused_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _check(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        since = record.info.pop("unused_since", None)
        if since is None or time.monotonic() - since < PING_AFTER_IDLE:
            return
        try:
            engine.dialect.do_ping(dbapi_conn)
        except Exception as exc:  # the pool drops it and hands out a fresh connection
            raise DisconnectionError(str(exc)) from exc


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        return _sqlite_engine(url)
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
    engine = create_engine(url, pool_size=16, max_overflow=16)
    _ping_when_idle(engine)
    return engine


def make_indexes(dialect: str) -> tuple[TextIndex, VectorIndex, bool]:
    """The search indexes of a backend, and whether search sessions must live in the
    database (several replicas): chosen here and nowhere else."""
    if dialect == "sqlite":
        return SqliteFts(), MemoryVectorIndex(), False
    if dialect == "postgresql":
        return PgFts(), PgVectorIndex(), True
    raise ValueError(f"unsupported database backend {dialect!r}: use SQLite or PostgreSQL")


#: The key of the PostgreSQL advisory lock that one migration at a time holds.
MIGRATION_LOCK_KEY = 0x6B6169726F73  # "kairos"


def migrate(engine: Engine, revision: str = "head") -> str | None:
    """Bring the schema to the newest migration, or to ``revision`` (idempotent), and
    return the revision it is at.

    One migration at a time, across processes too: replicas that start together would
    otherwise race to create the same tables. PostgreSQL: an advisory lock held by the
    migrating transaction (DDL is transactional there, so a waiter then finds the schema
    at head). SQLite: the transaction begins IMMEDIATE, which takes the file's write lock
    up front."""
    cfg = Config(str(_HERE / "alembic.ini"))
    cfg.set_main_option("script_location", str(_HERE / "migrations"))
    with (_MIGRATE_LOCK, engine.connect().execution_options(kairos_write=True) as conn,
          conn.begin()):
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)
        return MigrationContext.configure(conn).get_current_revision()


class Store:
    """One database. ``read()`` and ``write()`` each give a Repo inside one transaction:
    a write either commits whole or leaves nothing behind. A storage fault (full,
    read-only, unreachable) comes out of them as a ``StorageError`` naming it, and is
    remembered for ``health`` until a write succeeds. ``workers``: the server processes
    that share the database (``WriterLock``)."""

    def __init__(self, url: str, *, migrate_schema: bool = True, workers: int = 1) -> None:
        self.engine = make_engine(url)
        self.dialect = self.engine.dialect.name
        self.text_index, self.vector_index, self.shared_sessions = make_indexes(self.dialect)
        database = self.engine.url.database if self.dialect == "sqlite" else None
        self.path = Path(database) if database and database != ":memory:" else None
        self.where = (str(self.path) if self.dialect == "sqlite"
                      else make_url(url).render_as_string(hide_password=True))
        self.standing = Standing()
        self._writer = WriterLock(self.path, shared=workers > 1) if self.dialect == "sqlite" \
            else None
        self._spaces = SpaceLocks(self.engine, self.path)
        if migrate_schema:
            with self.faults():
                migrate(self.engine)

    @contextmanager
    def faults(self) -> Iterator[None]:
        """Turn a storage fault met inside into a ``StorageError`` (and remember it), any
        other error of the database into a ``faults.Refused``."""
        try:
            yield
        except (DBAPIError, OSError) as exc:
            code = fault_of(exc)
            orig = getattr(exc, "orig", None) or exc
            reason = (str(orig).strip().splitlines() or [""])[0][:200]
            if code is None and isinstance(exc, DBAPIError):
                raise (Clash if isinstance(exc, IntegrityError) else Refused)(reason) from exc
            if code is None:
                raise
            if (code == DATABASE_UNAVAILABLE and self.path is not None
                    and not os.access(self.path.parent, os.W_OK)):
                code = STORAGE_READ_ONLY  # SQLite cannot open its files for writing
            self.standing.met(code, reason)
            raise StorageError(code, self.where, reason) from exc

    @contextmanager
    def write(self) -> Iterator[Repo]:
        with self.faults(), self._writer.hold() if self._writer else nullcontext(), \
                self.engine.connect().execution_options(kairos_write=True) as conn:
            transaction = conn.begin()
            try:
                yield Repo(conn)
            except BaseException:
                self.vector_index.rollback(conn)
                transaction.rollback()
                raise
            with self.vector_index.committing(conn):
                transaction.commit()
        self.standing.cleared()

    @contextmanager
    def read(self) -> Iterator[Repo]:
        with self.faults(), self.engine.connect() as conn, conn.begin():
            yield Repo(conn)

    @contextmanager
    def serial(self, space: str) -> Iterator[None]:
        """Held while one writer of ``space`` checks and then writes: the space's other
        such writers wait their turn, in this process and in any other (``serial``)."""
        with self.faults(), self._spaces.hold(space):
            yield

    def health(self) -> dict[str, Any]:
        """The store's state: ``ok``, and the ``fault`` (a code of ``StorageError``) with
        its ``message`` when it cannot serve writes: unreachable or read-only now; for
        SQLite, its disk full or not writable now; for a database server, full as a write
        found it in the last minute, unless a write has succeeded since."""
        state: dict[str, Any] = {"backend": self.dialect, "ok": True, "fault": None,
                                 "message": None}
        try:
            with self.read() as repo:
                repo.conn.exec_driver_sql("SELECT 1")
                read_only = (self.dialect == "postgresql" and repo.conn.exec_driver_sql(
                    "SHOW transaction_read_only").scalar() == "on")
        except StorageError as exc:
            return {**state, "ok": False, "fault": exc.code, "message": exc.message}
        if read_only:
            found: tuple[str, str] | None = (STORAGE_READ_ONLY,
                                             "the database does not accept writes")
        else:  # SQLite's disk is looked at; a server's, known from the writes it failed
            found = self._probe() if self.path is not None else self.standing.current()
        if found is not None:
            code, reason = found
            error = StorageError(code, self.where, reason)
            state.update(ok=False, fault=code, message=error.message)
        return state

    def _probe(self) -> tuple[str, str] | None:
        """SQLite: whether its directory and file can be written, and its disk has room."""
        if self.path is None:
            return None
        for path in (self.path.parent, self.path):
            if path.exists() and not os.access(path, os.W_OK):
                return STORAGE_READ_ONLY, f"{path} is not writable"
        free = shutil.disk_usage(self.path.parent).free
        if free < MIN_FREE_BYTES:
            return STORAGE_FULL, f"{free} bytes free"
        return None

    def close(self) -> None:
        self._spaces.close()
        if self._writer is not None:
            self._writer.close()
        self.engine.dispose()
