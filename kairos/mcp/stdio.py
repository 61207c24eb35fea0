"""``kairos mcp``: one agent host spawns this process and talks MCP over stdin/stdout.

The process is one conversation: it makes one session id at start (contract §5
R10), which is both the caller id that owns its runs and the search session of
search_entries/read_entries. The service (database, search, embedding model) is built
after the first ``tools/list`` so the handshake answers at once.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING

import anyio

from ..domain.caller import valid_session_id
from .server import ServiceRef, build_server, local_identity

if TYPE_CHECKING:
    from ..config import Settings
    from ..service import Kairos

SESSION_ENV = ("KAIROS_SESSION_ID", "CHL_SESSION_ID")
log = logging.getLogger("kairos.mcp")


def process_session_id(env: Mapping[str, str] | None = None) -> str:
    """The session id of this process: ``KAIROS_SESSION_ID`` or ``CHL_SESSION_ID`` when
    set and well formed (it becomes a caller id and a search session id, both limited to
    128 letters, digits and ``. _ : -``), else a fresh uuid4 hex."""
    env = os.environ if env is None else env
    for name in SESSION_ENV:
        value = env.get(name, "").strip()
        if valid_session_id(value):
            return value
        if value:
            log.warning("ignoring %s=%r: expected up to 128 letters, digits and . _ : -",
                        name, value[:40])
    return uuid.uuid4().hex


def run_stdio(settings: Settings, session_id: str) -> None:
    """Serve MCP on stdin/stdout until the host closes the pipe."""
    from mcp.server.stdio import stdio_server

    def make() -> Kairos:
        from ..service.wiring import open_service, settle

        service = open_service(settings)
        settle()
        return service

    service = ServiceRef(make)
    server = build_server(service, identify=local_identity(settings.space, session_id),
                          limits=settings.limits)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        service.close()


__all__ = ["SESSION_ENV", "process_session_id", "run_stdio"]
