"""Writers of one space, one at a time: across threads, processes and replicas.

A write that checks before it commits (a mint's duplicate check, an edit's read of the
protocol) and meets another such write of its space would have to check again, perhaps
again and again under load. Taken in turn instead, each one checks what the one before it
committed and then commits: nothing is retried and no conflict reaches the client.

- In a process: one lock per space (threads queue on it, first come first served).
- Across processes on one SQLite file: a byte-range lock (``fcntl.lockf``) on a file
  beside the database, one byte per space (by hash).
- Across replicas on PostgreSQL: an advisory lock per space, held by a transaction of its
  own for as long as the write takes (released at its end, or if the process dies).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, text

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows: processes then rely on the guard
    fcntl = None  # type: ignore[assignment]

_RANGE = 2**31 - 1  # byte offsets of the lock file that spaces hash to


def space_key(space: str) -> int:
    """A signed 64-bit key for ``space`` (PostgreSQL's advisory lock keys are bigint)."""
    digest = hashlib.sha256(f"kairos-space-writes:{space}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def lock_file(sqlite_file: Path | None) -> Path | None:
    """The file beside an SQLite database that its writers lock (None: no such locks)."""
    return Path(f"{sqlite_file}.locks") if sqlite_file is not None and fcntl else None


class _LockFile:
    """One descriptor of a lock file for a store's life, opened on first use. Its holder
    guards it with a lock of its own."""

    def __init__(self, path: Path | None) -> None:
        self._path = path
        self._fd: Any = None

    def open(self) -> Any:
        """The descriptor; None when there is no such file to lock."""
        if self._fd is None and self._path is not None:
            try:
                self._fd = self._path.open("a+b")
            except OSError:  # a read-only home: there are no writes to queue
                self._path = None
        return self._fd

    def close(self) -> None:
        if self._fd is not None:
            self._fd.close()
            self._fd = None


class WriterLock:
    """SQLite's one writer at a time. This process's writers queue on a lock, so the next
    wakes the moment the last commits; SQLite's busy handler would sleep it in growing
    steps (up to 100 ms) instead. When several server processes share the file
    (``shared``), their writers queue the same way on a lock of the whole lock file
    (``flock``, which leaves the byte-range locks of ``SpaceLocks`` alone). Other
    processes, such as a ``kairos`` command, still meet SQLite's ``busy_timeout``."""

    def __init__(self, sqlite_file: Path | None, *, shared: bool) -> None:
        self._lock = threading.Lock()
        self._file = _LockFile(lock_file(sqlite_file) if shared else None)

    @contextmanager
    def hold(self) -> Iterator[None]:
        with self._lock:
            fd = self._file.open()
            if fd is None:
                yield
                return
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        with self._lock:
            self._file.close()


class SpaceLocks:
    def __init__(self, engine: Engine, sqlite_file: Path | None) -> None:
        self.engine = engine
        self.postgres = engine.dialect.name == "postgresql"
        self._guard = threading.Lock()
        self._locks: dict[str, list[Any]] = {}  # space → [lock, holders and waiters]
        size = getattr(engine.pool, "size", lambda: 8)()
        self._holders = threading.BoundedSemaphore(max(1, size // 2))
        # One descriptor for the store's life: closing any descriptor of a file drops
        # every byte-range lock the process holds on it.
        self._file = _LockFile(lock_file(sqlite_file))

    @contextmanager
    def hold(self, space: str) -> Iterator[None]:
        with self._local(space):
            if self.postgres:
                # Each holder keeps a connection besides the ones its write uses: at most
                # half the pool holds one, so the writes always find a connection.
                with self._holders, self.engine.connect() as conn, conn.begin():
                    conn.execute(text("SELECT pg_advisory_xact_lock(:key)"),
                                 {"key": space_key(space)})
                    yield
            else:
                with self._across_processes(space):
                    yield

    @contextmanager
    def _local(self, space: str) -> Iterator[None]:
        with self._guard:
            entry = self._locks.setdefault(space, [threading.Lock(), 0])
            entry[1] += 1
        try:
            with entry[0]:
                yield
        finally:
            with self._guard:
                entry[1] -= 1
                if not entry[1]:
                    del self._locks[space]

    @contextmanager
    def _across_processes(self, space: str) -> Iterator[None]:
        with self._guard:
            fd = self._file.open()
        if fd is None:
            yield
            return
        offset = space_key(space) % _RANGE
        fcntl.lockf(fd, fcntl.LOCK_EX, 1, offset)
        try:
            yield
        finally:
            fcntl.lockf(fd, fcntl.LOCK_UN, 1, offset)

    def close(self) -> None:
        with self._guard:
            self._file.close()


__all__ = ["SpaceLocks", "WriterLock", "lock_file", "space_key"]
