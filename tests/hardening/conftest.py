"""Fixtures for the hardening tests: the HTTP app in process and the MCP server in memory,
both on the test's store (SQLite, or PostgreSQL with KAIROS_TEST_DATABASE_URL)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client

from kairos.mcp import ServiceRef, build_server, local_identity
from kairos.service import Kairos


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def mcp(kairos: Kairos) -> AsyncIterator[Client]:
    server = build_server(ServiceRef.of(kairos.service), limits=kairos.limits,
                          identify=local_identity("default", "s-1"))
    async with Client(server) as client:
        yield client


async def tool(client: Client, name: str, args: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    """(is_error, body) of an MCP tool call."""
    result = await client.call_tool(name, args)
    body = result.structured_content or json.loads(result.content[0].text)
    return bool(result.is_error), dict(body)
