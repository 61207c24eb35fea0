"""``kairos mcp`` as a real subprocess on stdio, as an agent host runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.conftest import PG_URL, make_kairos
from tests.spec.seedkit import THREE_STEPS, shell_ok

ROOT = Path(__file__).resolve().parents[2]
# (The SDK itself imports starlette and uvicorn; those are its cost, not ours.)
HEAVY = ("onnxruntime", "tokenizers", "numpy", "sqlalchemy", "alembic", "fastapi",
         "prometheus_client", "kairos.service", "kairos.store", "kairos.search", "kairos.api")


def stdio_params(home: Path, *args: str, **env: str) -> StdioServerParameters:
    store = {"KAIROS_DATABASE_URL": PG_URL} if PG_URL else {}
    return StdioServerParameters(
        command=sys.executable, args=["-m", "kairos.cli.main", "mcp", *args], cwd=str(ROOT),
        env={"KAIROS_HOME": str(home), "KAIROS_EMBEDDER": "none",
             "KAIROS_CONFIG": str(home / "absent.toml"), **store, **env})


@pytest.mark.anyio
async def test_stdio_runs_a_protocol_as_the_hosts_session(home: Path) -> None:
    params = stdio_params(home, CHL_SESSION_ID="host-conversation-7")
    with anyio.fail_after(60):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            init = await s.initialize()
            assert init.server_info.name == "kairos"
            assert "kairos_search" in (init.instructions or "")
            assert len((await s.list_tools()).tools) == 13
            minted = await s.call_tool("kairos_mint", {"markdown_doc": THREE_STEPS})
            assert not minted.is_error, minted.structured_content
            steps = [x["uri"] for x in (minted.structured_content or {})["items"][0]["steps"]]
            begun = await s.call_tool("kairos_begin", {"uri": steps[0]})
            challenge = (begun.structured_content or {})["challenge"]
            moved = await s.call_tool("kairos_next", {"uri": steps[1],
                                                      "solution": shell_ok(challenge)})
            assert "error_code" not in (moved.structured_content or {})
            bad = await s.call_tool("kairos_begin", {"uri": "nope"})
            assert bad.is_error and (bad.structured_content or {})["error_code"] == "INVALID_URI"
    # The run belongs to the session id the host gave the process.
    k = make_kairos(home, KAIROS_EMBEDDER="none")
    try:
        assert k.run_history()[0]["caller"] == "host-conversation-7"
    finally:
        k.close()


def test_the_stdio_start_path_imports_nothing_heavy() -> None:
    """What ``kairos mcp`` imports before it answers: the SDK, not the database layer, the
    web stack or the embedding model (those load on the first tool call)."""
    code = ("import sys, kairos.cli.main, kairos.mcp.stdio; "
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, check=True)
    assert out.stdout.strip() == ""
