"""Running a service call from an MCP handler: off the event loop, with every exception
turned into what the client may see. The low-level server sends an exception's own text to
the client (code 0 in the handshake era), so nothing is let through as it is."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR as JSONRPC_INTERNAL
from mcp_types import INVALID_PARAMS

from ..domain.errors import INTERNAL_ERROR, KairosError

log = logging.getLogger("kairos.mcp")
T = TypeVar("T")

INTERNAL_BODY = {
    "error_code": INTERNAL_ERROR,
    "message": "The server failed while handling this call. The failure was logged; "
               "retry later or report it.",
}


def mcp_error(exc: KairosError) -> MCPError:
    """A KAIROS error as a JSON-RPC error: its message, and its body as ``data``."""
    return MCPError(INVALID_PARAMS, exc.message, data=exc.to_dict())


async def guarded(what: str, work: Callable[[], T]) -> T:
    """``work()`` in a worker thread; a ``KairosError`` becomes ``INVALID_PARAMS`` with the
    error's body, anything else a logged ``INTERNAL_ERROR`` that says nothing more."""
    try:
        return await anyio.to_thread.run_sync(work)
    except KairosError as exc:
        raise mcp_error(exc) from None
    except Exception:
        log.exception("%s failed", what)
        raise MCPError(JSONRPC_INTERNAL, INTERNAL_BODY["message"]) from None


def connection_of(ctx: Any) -> tuple[int, str | None]:
    """The connection a request came on: the server's lifespan is entered once per
    connection on stdio and in memory, once per app on HTTP, where the transport's session
    id tells the connections apart."""
    request = ctx.request
    session = request.headers.get("mcp-session-id") if request is not None else None
    return id(ctx.lifespan_context), session


__all__ = ["INTERNAL_BODY", "connection_of", "guarded", "mcp_error"]
