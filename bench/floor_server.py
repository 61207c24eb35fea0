"""The smallest MCP server over stdio (one tool, no store, no model): the cold-start floor
that `kairos mcp` is compared with."""

from __future__ import annotations

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

TOOLS = [types.Tool(name="echo", description="Echo.", input_schema={"type": "object"})]


async def list_tools(ctx: ServerRequestContext,
                     params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def main() -> None:
    server = Server("floor", on_list_tools=list_tools)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
