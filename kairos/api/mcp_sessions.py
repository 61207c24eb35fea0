"""The MCP endpoint's sessions, per credential.

A session belongs to the credential that opened it (a token, or without tokens the server's
one local principal): a request that names it with another credential is answered like a
request naming no such session (404), so a session id read from one space's logs opens
nothing in another. A credential holds at most ``limit`` sessions at once; the request
that would open one more is refused (429 TOO_MANY_SESSIONS), so one client cannot use up
the sessions (and the memory) of every other. A session ends when its client DELETEs it,
or when it idles out; either way it no longer counts.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

from ..domain.errors import SessionLimitError
from .auth import MCP_SESSION_HEADER, PRINCIPAL, Principal, refuse

_HEADER = MCP_SESSION_HEADER.encode("latin-1")


class McpSessions:
    """ASGI middleware in front of the SDK's streamable HTTP app (stateful mode)."""

    def __init__(self, app: Any, live: Callable[[], Any], limit: Callable[[], int],
                 path: str) -> None:
        self.app = app
        self.live = live  # the session ids the SDK still serves
        self.limit = limit
        self.path = path
        self.owners: dict[str, Principal] = {}
        self.opening: Counter[Principal] = Counter()  # opening requests not yet answered

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        principal: Principal = scope.get(PRINCIPAL) or Principal("default")
        named = dict(scope.get("headers") or ()).get(_HEADER)
        if named is not None:
            session = named.decode("latin-1")
            owner = self.owners.get(session)
            if owner is not None and owner != principal:
                # Answered by the SDK as for a session it never opened: the same 404.
                unknown = uuid.uuid4().hex.encode("latin-1")
                scope = {**scope, "headers": [(k, unknown if k.lower() == _HEADER else v)
                                              for k, v in scope["headers"]]}
            await self.app(scope, receive, send)
            if session not in self.live():  # ended by this request (DELETE)
                self.owners.pop(session, None)
            return
        live = self.live()
        for ended in [s for s in self.owners if s not in live]:
            del self.owners[ended]
        limit = self.limit()
        held = sum(1 for p in self.owners.values() if p == principal)
        if held + self.opening[principal] >= limit:
            await refuse(scope, send, SessionLimitError(limit), mcp_path=self.path)
            return

        async def opened(message: Any) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                for key, value in message.get("headers") or ():
                    if key.lower() == _HEADER:
                        self.owners[value.decode("latin-1")] = principal
            await send(message)

        self.opening[principal] += 1
        try:
            await self.app(scope, receive, opened)
        finally:
            self.opening[principal] -= 1
            if not self.opening[principal]:
                del self.opening[principal]


__all__ = ["McpSessions"]
