"""The port through which the service says what a write changed: the space and the URIs
of the resources whose text is no longer what a reader saw (a protocol minted over with
``force_update``, updated or deleted). Listeners are set at the composition root (the MCP
surface tells its subscribers); the service never knows who listens."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable

from ..domain.errors import ValidationError
from ..domain.uris import parse_uri, to_uri
from ..store import listing
from ..store.db import Store

log = logging.getLogger("kairos.changes")

Listener = Callable[[str, "tuple[str, ...]"], None]
"""Told ``(space, uris)`` after the write committed, on the writer's thread."""


class Changes:
    def __init__(self) -> None:
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Add ``listener``; the function returned removes it."""
        with self._lock:
            self._listeners.append(listener)

        def stop() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return stop

    def publish(self, space: str, uris: Iterable[str]) -> None:
        """Tell every listener; one that fails is logged and never fails the write."""
        changed = tuple(dict.fromkeys(uris))
        if not changed:
            return
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(space, changed)
            except Exception:
                log.exception("a change listener failed")


def protocol_uris(store: Store, uris: Iterable[str], space: str) -> list[str]:
    """Every step URI of the protocols of ``uris`` in ``space`` (read before a write that
    may remove them); text that names no step is skipped."""
    ids = []
    for uri in uris:
        try:
            ids.append(parse_uri(uri))
        except ValidationError:
            continue
    if not ids:
        return []
    with store.read() as repo:
        return [to_uri(r["id"]) for r in repo.all(listing.steps_beside(ids, space))]


__all__ = ["Changes", "Listener", "protocol_uris"]
