"""What writes changed, told to every process on one PostgreSQL database: ``pg_notify`` on
the channel ``kairos_changes`` after a write, and a ``LISTEN`` connection on a thread that
hands the other processes' notices to this one's listeners. SQLite has no such channel
(its processes hear only their own writes)."""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Callable, Iterable

from sqlalchemy import Engine, text

log = logging.getLogger("kairos.store")
CHANNEL = "kairos_changes"
URIS_PER_NOTICE = 60  # a payload stays well under PostgreSQL's 8,000 bytes
RETRY_SECONDS = 2.0
Deliver = Callable[[str, "tuple[str, ...]"], None]


class PgNotices:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.origin = uuid.uuid4().hex  # this process's own notices come back: skip them
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def send(self, space: str, uris: Iterable[str]) -> None:
        """Tell the other processes that ``uris`` of ``space`` changed."""
        changed = list(uris)
        with self.engine.begin() as conn:
            for i in range(0, len(changed), URIS_PER_NOTICE):
                payload = json.dumps({"origin": self.origin, "space": space,
                                      "uris": changed[i:i + URIS_PER_NOTICE]})
                conn.execute(text("SELECT pg_notify(:channel, :payload)"),
                             {"channel": CHANNEL, "payload": payload})

    def start(self, deliver: Deliver, listening: threading.Event) -> None:
        """Listen on a thread of its own (once), handing other processes' notices to
        ``deliver``; ``listening`` is set once the first ``LISTEN`` is in place."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._listen, args=(deliver, listening),
                                            name="kairos-notices", daemon=True)
            self._thread.start()

    def _listen(self, deliver: Deliver, listening: threading.Event) -> None:
        import psycopg  # only where PostgreSQL is used: an SQLite install may lack it

        dsn = self.engine.url.set(drivername="postgresql").render_as_string(
            hide_password=False)
        while not self._stop.is_set():
            try:
                with psycopg.connect(dsn, autocommit=True) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    listening.set()
                    while not self._stop.is_set():
                        for notice in conn.notifies(timeout=0.5):
                            self._hand(notice.payload, deliver)
            except psycopg.Error:
                log.warning("change notices: connection lost; listening again shortly",
                            exc_info=True)
                self._stop.wait(RETRY_SECONDS)

    def _hand(self, payload: str, deliver: Deliver) -> None:
        try:
            notice = json.loads(payload)
            if notice["origin"] != self.origin:
                deliver(str(notice["space"]), tuple(str(u) for u in notice["uris"]))
        except Exception:  # a malformed notice, or a listener that failed: never the thread
            log.exception("change notices: cannot hand on %r", payload[:200])

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None


def notices_for(engine: Engine) -> PgNotices | None:
    """The cross-process channel of a database, or None where there is none."""
    return PgNotices(engine) if engine.dialect.name == "postgresql" else None


__all__ = ["CHANNEL", "PgNotices", "notices_for"]
