"""``kairos mcp --server URL``: a stdio MCP process that forwards every tool call to a
shared ``kairos serve`` over streamable HTTP (``tools/list`` is answered from the local
tool table, so the handshake is as fast as the local server's).

The agent host sees an ordinary stdio server; the remote server sees one stable identity
per process: the session id made at start, sent as ``X-CHL-Session`` on every request
(contract §5 R10), plus ``Authorization: Bearer $KAIROS_TOKEN`` when a token is set. Each
call opens its own short MCP connection, so a restarted or load-balanced server is
simply reached again on the next call; identity never depends on a connection.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext

from kairos.domain.errors import UNAUTHORIZED, UPSTREAM_UNAVAILABLE

from .server import result, tool_list
from .tools import INSTRUCTIONS

SESSION_HEADER = "X-CHL-Session"


def proxy_headers(session_id: str, token: str | None) -> dict[str, str]:
    headers = {SESSION_HEADER: session_id}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


def describe(url: str, exc: BaseException) -> dict[str, Any]:
    """A tool error body that tells the agent (and its user) why the call did not reach
    the server: the server's own error when it sent one (a refused token), else what
    failed on the way."""
    from mcp import MCPError

    leaves = _leaves(exc)
    for leaf in leaves:
        data = leaf.data if isinstance(leaf, MCPError) else None
        if isinstance(data, dict) and "error_code" in data:
            body = dict(data)
            if body.get("error_code") == UNAUTHORIZED:
                body["message"] = (f"The KAIROS server at {url} refused the call: "
                                   f"{body.get('message', '')} Set KAIROS_TOKEN to a token "
                                   "it accepts.")
            return body
    first = leaves[0]
    return {"error_code": UPSTREAM_UNAVAILABLE,
            "message": f"The KAIROS server at {url} could not be reached or failed "
                       f"({type(first).__name__}: {first}). Is `kairos serve` running there?"}


def build_proxy_server(url: str, http: Any) -> Server[Any]:
    """A server that forwards each tool call to ``url`` over its own short connection.
    ``http`` is an ``httpx2.AsyncClient`` carrying the identity headers."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    def connect() -> Client:
        return Client(streamable_http_client(url, http_client=http))

    tools = tool_list()

    async def list_tools(ctx: ServerRequestContext[Any, Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        # The tool table ships with this package, so the host gets it at once, without a
        # round trip, even before the server is reachable.
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any, Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            async with connect() as remote:
                return await remote.call_tool(params.name, dict(params.arguments or {}))
        except Exception as exc:
            return result(describe(url, exc), error=True)

    return Server("kairos", instructions=INSTRUCTIONS, on_list_tools=list_tools,
                  on_call_tool=call_tool)


def run_proxy(url: str, *, session_id: str, token: str | None) -> None:
    """Serve MCP on stdin/stdout, forwarding to ``url`` until the host closes the pipe."""
    import httpx2
    from mcp.server.stdio import stdio_server

    async def main() -> None:
        async with httpx2.AsyncClient(headers=proxy_headers(session_id, token),
                                      timeout=httpx2.Timeout(30, read=300)) as http:
            server = build_proxy_server(url, http)
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


__all__ = ["SESSION_HEADER", "UPSTREAM_UNAVAILABLE", "build_proxy_server", "describe",
           "proxy_headers", "run_proxy"]
