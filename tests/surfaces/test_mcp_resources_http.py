"""MCP resources and prompts over real transports: streamable HTTP (stateful and
stateless, both eras) with two tokens whose spaces must never see each other's resources,
and stdio as a host spawns it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.subscriptions import ResourceUpdated

from kairos.api import create_app
from kairos.domain.requests import NonceRef
from kairos.domain.resources import GUIDE_URI, TEMPLATES, run_uri
from kairos.mcp import ServiceRef, build_server
from kairos.mcp.resources import guide
from kairos.service import Caller
from tests.client import Agent
from tests.spec.seedkit import THREE_STEPS
from tests.surfaces.conftest import live_server
from tests.surfaces.test_mcp_resources import every_resource, refused
from tests.surfaces.test_mcp_stdio import stdio_params

pytestmark = pytest.mark.anyio
TOKENS = {"alpha-secret": "A", "beta-secret": "B"}
TRANSPORTS = [("stateful", "legacy"), ("stateful", "auto"), ("stateless", "legacy"),
              ("stateless", "auto")]


@asynccontextmanager
async def served(kairos: Agent, stateless: bool) -> AsyncIterator[str]:
    app = create_app(kairos.service, tokens=TOKENS, mcp_stateless=stateless,
                     mcp_factory=partial(build_server, ServiceRef.of(kairos.service)))
    async with live_server(app) as base:
        yield base


@asynccontextmanager
async def client(base: str, token: str, mode: str, **options: Any) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                  timeout=httpx2.Timeout(30, read=60)) as raw, Client(
            streamable_http_client(f"{base}/mcp", http_client=raw), mode=mode,
            **options) as c:
        yield c


def minted(kairos: Agent, space: str) -> list[str]:
    return [s["uri"] for s in kairos.mint(THREE_STEPS, Caller(space=space),
                                          force_update=True)["items"][0]["steps"]]


@pytest.mark.parametrize(("transport", "mode"), TRANSPORTS)
async def test_two_tokens_never_see_each_others_resources(
        kairos: Agent, transport: str, mode: str) -> None:
    mine, theirs = minted(kairos, "A"), minted(kairos, "B")
    run = kairos.begin(theirs[0], Caller(space="B"))
    their_run = kairos.service.run_of_nonce(NonceRef(nonce=run["challenge"]["nonce"]),
                                            Caller(space="B"))["run_id"]
    their_entry = kairos.write_entry({"entity_type": "experience", "category": "general",
                                      "title": "B's lesson", "playbook": "Only for B."},
                                     Caller(space="B"))["entity_id"]
    async with served(kairos, transport == "stateless") as base, \
            client(base, "alpha-secret", mode) as a, client(base, "beta-secret", mode) as b:
        a_uris = {r.uri for r in await every_resource(a)}
        b_uris = {r.uri for r in await every_resource(b)}
        assert mine[0] in a_uris and theirs[0] in b_uris
        assert not (a_uris - {GUIDE_URI}) & set(theirs) and theirs[0] not in a_uris
        assert f"kairos://entries/{their_entry}" in b_uris
        assert not any(u.startswith("kairos://entries/") for u in a_uris)
        assert (await a.list_resource_templates()).resource_templates == \
            (await b.list_resource_templates()).resource_templates
        for uri in (*theirs, f"kairos://entries/{their_entry}", run_uri(their_run)):
            body = await refused(a.read_resource(uri))
            assert (body["error_code"], body["field"]) == ("NOT_FOUND", "uri"), uri
            assert (await b.read_resource(uri)).contents[0].text
        assert (await a.read_resource(GUIDE_URI)).contents[0].text == guide()
        body = await refused(a.get_prompt("review-runs", {"protocol": theirs[0]}))
        assert (body["error_code"], body["field"]) == ("NOT_FOUND", "protocol")
        text = (await a.get_prompt("run-protocol", {"request": "project setup"})
                ).messages[0].content.text  # type: ignore[union-attr]
        assert mine[0] in text and theirs[0] not in text
        if mode == "auto":
            async with a.listen(resource_subscriptions=[theirs[0], mine[0]]) as sub:
                assert sub.honored.resource_subscriptions == [mine[0]]
                await anyio.to_thread.run_sync(lambda: kairos.update(
                    theirs[1], Caller(space="B"), markdown_doc="B's change."))
                await anyio.to_thread.run_sync(lambda: kairos.update(
                    mine[1], Caller(space="A"), markdown_doc="A's change."))
                with anyio.fail_after(10):  # B's change came first and never arrived
                    assert await anext(aiter(sub)) == ResourceUpdated(uri=mine[0])
        elif transport == "stateful":
            with pytest.warns(MCPDeprecationWarning):
                body = await refused(a.subscribe_resource(theirs[0]))
            assert body["error_code"] == "NOT_FOUND"
        else:  # stateless: nothing could carry the notification, so nothing is promised
            assert not a.server_capabilities.resources.subscribe  # type: ignore[union-attr]
            with pytest.warns(MCPDeprecationWarning), pytest.raises(MCPError) as caught:
                await a.subscribe_resource(mine[0])
            assert caught.value.code == mcp_types.METHOD_NOT_FOUND


async def test_a_handshake_subscriber_over_stateful_http_is_told(kairos: Agent) -> None:
    mine = minted(kairos, "A")
    told = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, mcp_types.ResourceUpdatedNotification) and \
                str(message.params.uri) == mine[0]:
            told.set()

    async with served(kairos, False) as base, \
            client(base, "alpha-secret", "legacy", message_handler=on_message) as a:
        with pytest.warns(MCPDeprecationWarning):
            await a.subscribe_resource(mine[0])
        # The client opens its notification stream as a task: change until it is told.
        for attempt in range(20):
            await anyio.to_thread.run_sync(lambda n=attempt: kairos.update(
                mine[1], Caller(space="A"), markdown_doc=f"Change {n}."))
            with anyio.move_on_after(0.5):
                await told.wait()
            if told.is_set():
                break
        assert told.is_set()


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_stdio_lists_reads_and_prompts(home: Path, mode: str) -> None:
    params = stdio_params(home)
    with anyio.fail_after(60):
        async with Client(params, mode=mode) as c:
            stored = await c.call_tool("kairos_mint", {"markdown_doc": THREE_STEPS})
            first = (stored.structured_content or {})["items"][0]["uri"]
            uris = [r.uri for r in await every_resource(c)]
            assert uris[0] == GUIDE_URI and first in uris
            text = (await c.read_resource(first)).contents[0].text  # type: ignore[union-attr]
            assert text.startswith("# Project Setup")
            assert len((await c.list_resource_templates()).resource_templates) == len(TEMPLATES)
            assert [p.name for p in (await c.list_prompts()).prompts] == [
                "run-protocol", "write-protocol", "review-runs"]
            got = await c.get_prompt("write-protocol", {"procedure": "Rotate the keys."})
            assert "Rotate the keys." in got.messages[0].content.text  # type: ignore[union-attr]
            body = await refused(c.get_prompt("run-protocol", {}))
            assert body["field"] == "request"
            if mode == "auto":
                async with c.listen(resource_subscriptions=[first]) as sub:
                    await c.call_tool("kairos_update", {"uris": first,
                                                        "markdown_doc": "Make the dirs."})
                    with anyio.fail_after(10):
                        assert await anext(aiter(sub)) == ResourceUpdated(uri=first)
