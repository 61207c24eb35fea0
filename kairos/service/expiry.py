"""Idle runs expire: a run still active after ``run_idle_minutes`` without an answer is
recorded as abandoned.

People walk away from a guided run and agents stop half-way; without an end such runs
stay active for ever. An abandoned run keeps its steps and proofs, has no outcome, and can
no longer be answered (its pending nonce is gone: the next answer gets NO_ACTIVE_RUN and
starts again with kairos_begin). It counts neither as a success nor as a failure: nobody
said the protocol failed (a step may simply take long, or a page was left open), so a
protocol's success rate and its search ranking do not move; its runs counter, which
counts runs started, keeps it.

Only ``active`` runs expire. A ``completed`` run has shown its last step, and contract §4
makes that a finished run (attesting it is optional), so it keeps its recorded outcome.

Every serving process sweeps once a minute (``start``); ``kairos runs`` sweeps before it
lists. Sweeps are safe with any number of processes and replicas: each run is closed by
one conditional UPDATE that re-checks "still active and idle", and on PostgreSQL one
sweep at a time takes an advisory lock (the others skip that round).
"""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime, timedelta

from ..domain import engine
from ..store import expiry as expiry_queries
from ..store.db import Store
from ..store.schema import stamp
from .clock import now

SWEEP_EVERY = 60.0  # seconds between two sweeps of a serving process
log = logging.getLogger("kairos.expiry")


class RunExpiry:
    def __init__(self, store: Store, minutes: int) -> None:
        self.store = store
        self.minutes = int(minutes)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sweep(self, at: datetime | None = None) -> int:
        """Record every run active and idle for longer than the setting as abandoned (as
        of ``at``, default now); how many this call closed. 0 when runs never expire."""
        if self.minutes <= 0:
            return 0
        moment = at or datetime.now(UTC)
        cutoff = stamp(moment - timedelta(minutes=self.minutes))
        with self.store.write() as repo:
            if not expiry_queries.try_sweep_lock(repo):
                return 0
            return expiry_queries.abandon(
                repo, status=engine.ABANDONED, active=engine.ACTIVE, stamp=stamp(moment),
                message=f"Abandoned: no answer for {self.minutes} minutes.", idle_before=cutoff)

    def abandon(self, run_id: str, reason: str) -> bool:
        """Record one active run as abandoned now (nobody is left to answer it); False
        when it is not active any more."""
        with self.store.write() as repo:
            return expiry_queries.abandon(
                repo, status=engine.ABANDONED, active=engine.ACTIVE, stamp=now(),
                message=reason, run_id=run_id) == 1

    def start(self, every: float = SWEEP_EVERY) -> None:
        """Sweep now and then every ``every`` seconds until ``stop``."""
        if self.minutes <= 0 or self._thread is not None:
            return

        def work() -> None:
            while not self._stop.is_set():
                try:
                    self.sweep()
                except Exception:  # a busy or unreachable database: the next round retries
                    log.warning("expiring idle runs failed; retrying in %.0f s", every,
                                exc_info=True)
                self._stop.wait(every)

        self._thread = threading.Thread(target=work, name="kairos-expiry", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)


__all__ = ["SWEEP_EVERY", "RunExpiry"]
