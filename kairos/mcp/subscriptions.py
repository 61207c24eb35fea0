"""Who is told when a resource changes, in both protocol eras.

- 2026-07-28 (``subscriptions/listen``): one bus and one ``ListenHandler`` per space, so
  an event of one space never reaches a listener of another; the URIs a listener asks for
  are filtered to those its caller may read before the handler sees them.
- Handshake era (``resources/subscribe``): the subscriber's ``ServerSession`` is kept per
  (space, uri, connection); it reaches the client on the connection's standalone channel
  after the subscribe request ended. Stateless HTTP has no such channel.

Changes come from the service (``Kairos.changes``) on whatever thread wrote them (on
PostgreSQL, other processes' changes too, from its notices thread); they are handed to the
event loop the server runs on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Hashable
from typing import Any

from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.subscriptions import ResourceUpdated

log = logging.getLogger("kairos.mcp")
LEGACY_MAX = 10_000  # handshake-era subscriptions kept by one server


class Subscriptions:
    def __init__(self) -> None:
        self._spaces: dict[str, tuple[InMemorySubscriptionBus, ListenHandler]] = {}
        self._legacy: dict[tuple[str, str], dict[Hashable, Any]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def bind(self) -> None:
        """Remember the loop the server runs on (called from its handlers)."""
        self._loop = asyncio.get_running_loop()

    def listener(self, space: str) -> ListenHandler:
        """The ``subscriptions/listen`` handler of ``space``."""
        if space not in self._spaces:
            bus = InMemorySubscriptionBus()
            self._spaces[space] = (bus, ListenHandler(bus))
        return self._spaces[space][1]

    def subscribe(self, space: str, uri: str, connection: Hashable, session: Any) -> bool:
        """Keep ``session`` to tell it when ``uri`` changes; False when full."""
        sessions = self._legacy.setdefault((space, uri), {})
        if connection not in sessions and sum(map(len, self._legacy.values())) >= LEGACY_MAX:
            return False
        sessions[connection] = session
        return True

    def unsubscribe(self, space: str, uri: str, connection: Hashable) -> None:
        sessions = self._legacy.get((space, uri), {})
        sessions.pop(connection, None)
        if not sessions:
            self._legacy.pop((space, uri), None)

    def changed(self, space: str, uris: tuple[str, ...]) -> None:
        """The service's listener: safe from any thread."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return  # no request was ever served: nobody subscribed
        with contextlib.suppress(RuntimeError):  # the loop closed in between
            loop.call_soon_threadsafe(lambda: loop.create_task(self.publish(space, uris)))

    async def publish(self, space: str, uris: tuple[str, ...]) -> None:
        """Tell the listeners and subscribers of ``space`` that ``uris`` changed."""
        bus = self._spaces.get(space)
        for uri in uris:
            if bus is not None:
                await bus[0].publish(ResourceUpdated(uri=uri))
            for connection, session in list(self._legacy.get((space, uri), {}).items()):
                try:
                    await session.send_resource_updated(uri)
                except Exception:  # a connection that is gone: forget it
                    log.debug("dropping a subscriber of %s", uri, exc_info=True)
                    self.unsubscribe(space, uri, connection)

    def close(self) -> None:
        """End every listen stream (they would hold a server's graceful stop)."""
        for _, handler in self._spaces.values():
            handler.close()


__all__ = ["Subscriptions"]
