"""The writes that close idle runs: one conditional UPDATE each, safe with any number of
processes and replicas (see ``service.expiry``)."""

from __future__ import annotations

from sqlalchemy import and_, text, update

from . import schema
from .reads import equal
from .repo import Repo

#: The key of the PostgreSQL advisory lock one sweep at a time holds ("kairos" + 1).
SWEEP_LOCK_KEY = 0x6B6169726F74


def try_sweep_lock(repo: Repo) -> bool:
    """PostgreSQL: whether this transaction took the sweep lock (another replica holding it
    is sweeping now: skip). SQLite: always, its write lock already serialises writers."""
    if repo.conn.dialect.name != "postgresql":
        return True
    return bool(repo.conn.execute(text("SELECT pg_try_advisory_xact_lock(:key)"),
                                  {"key": SWEEP_LOCK_KEY}).scalar_one())


def abandon(repo: Repo, *, status: str, active: str, stamp: str, message: str,
            idle_before: str | None = None, run_id: str | None = None) -> int:
    """Close the active runs idle since before ``idle_before`` (or the one ``run_id``):
    status ``status``, no pending challenge, the reason in ``message``. The condition is
    checked in the UPDATE itself, so a run answered meanwhile (a fresh ``updated_at``, a
    new status) is left alone, and each run is closed once however many sweep at once.
    The run's version moves on, as with every change of a run (``Repo.swap_run``).
    Returns how many runs were closed."""
    r = schema.runs.c
    cond = and_(r.status == active, *equal(r, id=run_id))
    if idle_before is not None:
        cond = and_(cond, r.updated_at < idle_before)
    result = repo.conn.execute(update(schema.runs).where(cond).values(
        status=status, challenge=None, nonce=None, message=message, updated_at=stamp,
        version=r.version + 1))
    return int(result.rowcount)


__all__ = ["SWEEP_LOCK_KEY", "abandon", "try_sweep_lock"]
