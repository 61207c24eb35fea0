"""What other KAIROS clients rely on: a degraded kairos_search says so over MCP, a
markdown_doc sent as a JSON string literal mints, and /health says "healthy"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client

from kairos.api import create_app
from kairos.mcp import ServiceRef, build_server, local_identity
from kairos.service import Kairos
from tests.conftest import make_kairos
from tests.spec.seedkit import THREE_STEPS

pytestmark = pytest.mark.anyio


@pytest.fixture
def text_only(home: Path) -> Kairos:
    return make_kairos(home, KAIROS_EMBEDDER="none")


@pytest.fixture
def with_vectors(home: Path) -> Kairos:
    return make_kairos(home)


async def mcp_call(k: Kairos, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    server = build_server(ServiceRef.of(k.service), limits=k.limits,
                          identify=local_identity("default", "s-1"))
    async with Client(server) as client:
        result = await client.call_tool(tool, args)
    assert not result.is_error, result.structured_content
    assert json.loads(result.content[0].text) == result.structured_content
    return dict(result.structured_content or {})


async def test_kairos_search_says_when_it_answered_from_text_only(text_only: Kairos) -> None:
    text_only.mint(THREE_STEPS)
    found = await mcp_call(text_only, "kairos_search", {"query": "project setup"})
    assert found["choices"][0]["role"] == "match"
    assert {k: found[k] for k in ("degraded", "search_mode", "provider", "provider_hint")} == {
        "degraded": True, "search_mode": "text", "provider": "none",
        "provider_hint": "Vector search is disabled (embedder 'none'); text search was used."}


async def test_kairos_search_with_vectors_keeps_the_seed_shape(with_vectors: Kairos) -> None:
    with_vectors.mint(THREE_STEPS)
    found = await mcp_call(with_vectors, "kairos_search", {"query": "project setup"})
    assert set(found) == {"must_obey", "message", "next_action", "choices"}


async def test_a_markdown_doc_sent_as_a_json_string_literal_is_decoded(
        with_vectors: Kairos) -> None:
    minted = await mcp_call(with_vectors, "kairos_mint",
                            {"markdown_doc": json.dumps(THREE_STEPS)})
    assert minted["items"][0]["chain_label"] == "Project Setup"
    assert minted["items"][0]["step_count"] == 3
    first = minted["items"][0]["uri"]
    assert with_vectors.dump(first, protocol=True)["markdown_doc"].startswith(
        "# Project Setup\n")
    # A quoted line that is not a JSON string stays markdown (and has no heading).
    with pytest.raises(Exception, match="heading"):
        with_vectors.mint('"# not json \\q"')


async def test_health_says_healthy(with_vectors: Kairos) -> None:
    app = create_app(with_vectors.service)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app),
                                 base_url="http://test") as http:
        health = await http.get("/health")
    assert health.status_code == 200 and health.json()["status"] == "healthy"

