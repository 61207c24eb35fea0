"""Fixtures for the surfaces: the anyio backend, a real port for uvicorn, and a driver that
runs the three-step seed protocol through any surface."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import pytest
import uvicorn

from tests.conftest import loopback_socket
from tests.spec.seedkit import THREE_STEPS, shell_ok

Call = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
"""(operation, arguments) → response body; operation is the MCP tool name."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@contextlib.asynccontextmanager
async def live_server(app: Any) -> AsyncIterator[str]:
    """Serve ``app`` with uvicorn on a free port of 127.0.0.1 and yield its base URL.

    The socket is bound and listening before uvicorn starts, so a client may connect at
    once: the kernel queues the connection until uvicorn accepts it. No polling, no sleep.
    """
    sock, port = loopback_socket()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning",
                                           timeout_graceful_shutdown=5))
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock])
            try:
                yield f"http://127.0.0.1:{port}"
            finally:
                server.should_exit = True
    finally:
        sock.close()


async def run_three(call: Call, *, force: bool = True) -> dict[str, Any]:
    """Mint the seed's three-step protocol and run it to the end; returns the step URIs,
    every response and the final attestation."""
    minted = await call("kairos_mint", {"markdown_doc": THREE_STEPS, "force_update": force})
    steps = [s["uri"] for s in minted["items"][0]["steps"]]
    responses = [await call("kairos_begin", {"uri": steps[0]})]
    for uri in steps[1:]:
        responses.append(await call("kairos_next", {
            "uri": uri, "solution": shell_ok(responses[-1]["challenge"])}))
    final = await call("kairos_attest", {
        "uri": steps[-1], "outcome": "success", "message": "all three steps done",
        "solution": shell_ok(responses[-1]["challenge"])})
    return {"steps": steps, "responses": responses, "final": final}
