"""The port through which the service says what a write changed: the space and the URIs
of the resources whose text is no longer what a reader saw (a protocol minted over with
``force_update``, updated or deleted). Listeners are set at the composition root (the MCP
surface tells its subscribers); the service never knows who listens.

On PostgreSQL the change is also sent to every other process on the database
(``store.notices``), whose listeners hear it too; on SQLite, a process hears its own."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable

from ..domain.errors import ValidationError
from ..domain.uris import parse_uri, to_uri
from ..store import listing
from ..store.db import Store
from ..store.notices import PgNotices

log = logging.getLogger("kairos.changes")

Listener = Callable[[str, "tuple[str, ...]"], None]
"""Told ``(space, uris)`` after the write committed, on the writer's thread (or on the
notices thread, for another process's write)."""


class Changes:
    def __init__(self, relay: PgNotices | None = None) -> None:
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()
        self._relay = relay
        #: Set once this process hears other processes' changes (at once without a relay).
        self.hearing = threading.Event()
        if relay is None:
            self.hearing.set()

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Add ``listener``; the function returned removes it. The first listener starts
        hearing the other processes (a process nobody listens to only sends)."""
        with self._lock:
            self._listeners.append(listener)
        if self._relay is not None:
            self._relay.start(self._tell, self.hearing)

        def stop() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return stop

    @property
    def wanted(self) -> bool:
        """Whether a change has anyone to tell: a listener here, or other processes."""
        return self._relay is not None or bool(self._listeners)

    def touched(self, store: Store, uris: Iterable[str], space: str) -> list[str]:
        """Every step URI of the protocols of ``uris`` in ``space`` (read before a write
        that may remove them), when anyone is told of the change; text that names no step
        is skipped."""
        ids = []
        for uri in uris if self.wanted else ():
            try:
                ids.append(parse_uri(uri))
            except ValidationError:
                continue
        if not ids:
            return []
        with store.read() as repo:
            return [to_uri(r["id"]) for r in repo.all(listing.steps_beside(ids, space))]

    def publish(self, space: str, uris: Iterable[str]) -> None:
        """Tell every listener here, and the other processes; a failure is logged and
        never fails the write that was made."""
        changed = tuple(dict.fromkeys(uris))
        if not changed:
            return
        self._tell(space, changed)
        if self._relay is not None:
            try:
                self._relay.send(space, changed)
            except Exception:
                log.exception("could not tell the other processes of a change")

    def _tell(self, space: str, changed: tuple[str, ...]) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(space, changed)
            except Exception:
                log.exception("a change listener failed")

    def close(self) -> None:
        if self._relay is not None:
            self._relay.stop()


__all__ = ["Changes", "Listener"]
