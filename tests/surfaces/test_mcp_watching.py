"""What a caller may watch is what it may read, checked without doing the read's work; and
the prompts' arguments are held to the limits the server is configured with."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from sqlalchemy import update

from kairos.domain.resources import run_uri
from kairos.store import schema
from tests.client import Agent
from tests.conftest import make_kairos
from tests.spec.seedkit import THREE_STEPS
from tests.surfaces.test_mcp_resources import refused, refused_subscribe, server_of

pytestmark = pytest.mark.anyio


def bundle_uri(run_id: str) -> str:
    return run_uri(run_id) + "/bundle"


def textless_run(kairos: Agent) -> str:
    """A run of the caller's whose protocol version this store does not hold (as a run
    imported without one): its bundle has no text to sign."""
    steps = [s["uri"] for s in kairos.mint(THREE_STEPS)["items"][0]["steps"]]
    kairos.begin(steps[0])
    run_id = str(kairos.run_history()[0]["run_id"])
    with kairos.store.write() as repo:
        repo.conn.execute(update(schema.runs).where(schema.runs.c.id == run_id)
                          .values(protocol_version=99))
    return run_id


async def test_a_bundle_is_watched_without_being_built(kairos: Agent) -> None:
    run_id = textless_run(kairos)
    async with Client(server_of(kairos), mode="legacy") as client:
        with pytest.raises(MCPError) as caught:  # reading it builds it: there is no text
            await client.read_resource(bundle_uri(run_id))
        assert caught.value.error.data["error_code"] == "CONFLICT"
        with pytest.warns(MCPDeprecationWarning):
            await client.subscribe_resource(bundle_uri(run_id))
        with pytest.warns(MCPDeprecationWarning):
            await client.subscribe_resource(run_uri(run_id))
        other = Client(server_of(kairos, space="other"), mode="legacy")
        async with other:
            for uri in (bundle_uri(run_id), run_uri(run_id)):
                body = await refused_subscribe(other, uri)
                assert (body["error_code"], body["field"]) == ("NOT_FOUND", "uri")
    async with Client(server_of(kairos)) as client, \
            client.listen(resource_subscriptions=[bundle_uri(run_id)]) as sub:
        assert sub.honored.resource_subscriptions == [bundle_uri(run_id)]


async def test_prompt_titles_follow_the_configured_title_limit(home: Path) -> None:
    kairos = make_kairos(home, KAIROS_MAX_TITLE_CHARS="24")
    async with Client(server_of(kairos)) as client:
        fits = await client.get_prompt("write-protocol", {"procedure": "Back up the data.",
                                                          "title": "x" * 24})
        assert "# " + "x" * 24 in fits.messages[0].content.text  # type: ignore[union-attr]
        for name, args in [("write-protocol", {"procedure": "Back up.", "title": "x" * 25}),
                           ("review-runs", {"protocol": "x" * 25})]:
            body = await refused(client.get_prompt(name, args))
            assert body["error_code"] == "INVALID_INPUT" and body["field"] in args
            assert "up to 24 characters" in body["message"]
