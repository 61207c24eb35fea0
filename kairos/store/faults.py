"""Storage faults as states: what an error of the database driver (or of a file the
store writes) says about the storage behind it — full, read-only, or out of reach — as
one of the codes of ``domain.errors``, or None when it says something else (a constraint,
a bug), which stays what it was."""

from __future__ import annotations

import errno
import sqlite3
import time
from dataclasses import dataclass

from sqlalchemy.exc import DBAPIError

from ..domain.errors import DATABASE_UNAVAILABLE, STORAGE_FULL, STORAGE_READ_ONLY

# SQLite's primary result codes (the low byte of an extended code).
_SQLITE = {13: STORAGE_FULL,              # SQLITE_FULL
           8: STORAGE_READ_ONLY,          # SQLITE_READONLY
           14: DATABASE_UNAVAILABLE,      # SQLITE_CANTOPEN (the store refines it)
           10: DATABASE_UNAVAILABLE,      # SQLITE_IOERR
           5: DATABASE_UNAVAILABLE,       # SQLITE_BUSY, past busy_timeout
           6: DATABASE_UNAVAILABLE}       # SQLITE_LOCKED
# PostgreSQL's SQLSTATEs; class 08 (connection exception) is out of reach too.
_POSTGRES = {"53100": STORAGE_FULL,            # disk_full
             "25006": STORAGE_READ_ONLY,       # read_only_sql_transaction (a standby)
             "57P01": DATABASE_UNAVAILABLE,    # admin_shutdown
             "57P02": DATABASE_UNAVAILABLE,    # crash_shutdown
             "57P03": DATABASE_UNAVAILABLE,    # cannot_connect_now
             "53300": DATABASE_UNAVAILABLE}    # too_many_connections
_ERRNO = {errno.ENOSPC: STORAGE_FULL, errno.EDQUOT: STORAGE_FULL,
          errno.EROFS: STORAGE_READ_ONLY, errno.EACCES: STORAGE_READ_ONLY,
          errno.EPERM: STORAGE_READ_ONLY}
#: How long a write's fault is reported by ``/health`` unless a write succeeds since.
REMEMBER_SECONDS = 60.0


class Refused(Exception):
    """The database refused a statement for what it asked, not for the storage behind it:
    a row another writer stored first, a lost race (PostgreSQL: a deadlock), a bug."""


class Clash(Refused):
    """A key or constraint the statement broke: another writer stored the same first."""


def fault_of(exc: BaseException) -> str | None:
    if isinstance(exc, DBAPIError):
        if exc.connection_invalidated:
            return DATABASE_UNAVAILABLE
        orig = exc.orig
        if isinstance(orig, sqlite3.Error):
            code = getattr(orig, "sqlite_errorcode", None)
            return None if code is None else _SQLITE.get(code & 0xFF)
        state = getattr(orig, "sqlstate", None)
        if state is not None:
            return _POSTGRES.get(state) or (DATABASE_UNAVAILABLE if state.startswith("08")
                                            else None)
        # psycopg's OperationalError without a state: the server could not be reached.
        return DATABASE_UNAVAILABLE if type(orig).__name__ == "OperationalError" else None
    if isinstance(exc, OSError):
        return _ERRNO.get(exc.errno or 0)
    return None


@dataclass
class Standing:
    """The last fault a write met, until a write succeeds or it is old."""

    code: str | None = None
    reason: str = ""
    at: float = 0.0

    def met(self, code: str, reason: str) -> None:
        self.code, self.reason, self.at = code, reason, time.monotonic()

    def cleared(self) -> None:
        if self.code is not None:
            self.code = None

    def current(self) -> tuple[str, str] | None:
        if self.code is None or time.monotonic() - self.at > REMEMBER_SECONDS:
            return None
        return self.code, self.reason


__all__ = ["REMEMBER_SECONDS", "Clash", "Refused", "Standing", "fault_of"]
