"""MCP resources, templates, subscriptions and prompts with the official client: in memory
in both protocol eras, and every error as a JSON-RPC error naming its field."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import mcp_types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.subscriptions import ResourceUpdated

from kairos.domain import keys
from kairos.domain.bundle import verify_bundle
from kairos.domain.resources import GUIDE_URI, Cursor, entry_uri, run_uri
from kairos.domain.texts import CREATE_PROTOCOL_URI, REFINE_SEARCH_URI
from kairos.mcp import ServiceRef, build_server, local_identity
from kairos.mcp.resources import guide
from kairos.service import Caller, Kairos
from tests.spec.seedkit import THREE_STEPS
from tests.surfaces.conftest import run_three

pytestmark = pytest.mark.anyio
MODES = ["legacy", "auto"]
ERA = {"legacy": "2025-11-25", "auto": "2026-07-28"}


def server_of(kairos: Any, space: str = "default") -> Any:
    return build_server(ServiceRef.of(kairos.service), limits=kairos.limits,
                        identify=local_identity(space, "conversation-1"))


@pytest.fixture(params=MODES)
async def client(request: pytest.FixtureRequest, kairos: Kairos) -> AsyncIterator[Client]:
    async with Client(server_of(kairos), mode=request.param) as c:
        assert c.protocol_version == ERA[request.param]
        yield c


def caller_tool(client: Client) -> Callable[[str, dict[str, Any]], Any]:
    async def call(tool: str, args: dict[str, Any]) -> dict[str, Any]:
        result = await client.call_tool(tool, args)
        assert not result.is_error, result.structured_content
        return dict(result.structured_content or {})
    return call


async def every_resource(client: Client) -> list[mcp_types.Resource]:
    found, cursor = [], None
    while True:
        page = await client.list_resources(cursor=cursor)
        found += page.resources
        if page.next_cursor is None:
            return found
        cursor = page.next_cursor


async def refused(work: Any) -> dict[str, Any]:
    """A JSON-RPC error's data: INVALID_PARAMS carrying the KAIROS error body."""
    with pytest.raises(MCPError) as caught:
        await work
    assert caught.value.code == mcp_types.INVALID_PARAMS
    data = caught.value.error.data
    assert data["message"] == caught.value.error.message
    return dict(data)


async def test_every_resource_kind_is_listed_templated_and_read(
        client: Client, kairos: Kairos) -> None:
    done = await run_three(caller_tool(client))
    steps = done["steps"]
    manual = kairos.write_entry({"entity_type": "manual", "category": "operations",
                                 "title": "Release checklist", "summary": "What it needs.",
                                 "content": "# Release\n\n1. Tag it."})
    listed = await every_resource(client)
    uris = [r.uri for r in listed]
    assert uris[0] == GUIDE_URI
    assert {CREATE_PROTOCOL_URI, REFINE_SEARCH_URI, steps[0],
            entry_uri(manual["entity_id"])} <= set(uris)
    assert len(uris) == len(set(uris))
    protocol = next(r for r in listed if r.uri == steps[0])
    assert (protocol.title, protocol.mime_type) == ("Project Setup", "text/markdown")
    assert protocol.annotations and protocol.annotations.last_modified
    for resource in listed:  # every listed resource reads, as its MIME type says
        contents = (await client.read_resource(resource.uri)).contents[0]
        assert contents.mime_type == resource.mime_type and contents.text
    templates = (await client.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == [
        "kairos://mem/{uuid}{?version}", "kairos://entries/{id}", "kairos://runs/{id}",
        "kairos://runs/{id}/bundle"]

    assert (await client.read_resource(GUIDE_URI)).contents[0].text == guide()
    whole = (await client.read_resource(steps[0])).contents[0].text
    assert whole == kairos.dump(steps[0], protocol=True)["markdown_doc"]
    assert whole.startswith("# Project Setup")
    step2 = (await client.read_resource(steps[1])).contents[0].text
    assert step2 == kairos.dump(steps[1])["markdown_doc"] and "# Project" not in step2
    assert (await client.read_resource(steps[0] + "?version=1")).contents[0].text == whole
    entry = json.loads((await client.read_resource(entry_uri(manual["entity_id"])))
                       .contents[0].text)
    assert entry["entity_id"] == manual["entity_id"] and entry["content"].startswith("# Rel")

    run_id = kairos.list_runs_items()[0]["run_id"] if hasattr(kairos, "list_runs_items") \
        else kairos.run_history()[0]["run_id"]
    run = json.loads((await client.read_resource(run_uri(run_id))).contents[0].text)
    assert (run["run_id"], run["outcome"], run["proven"]) == (run_id, "success", True)
    assert len(run["proofs"]) == 3 and all(p["proof_hash"] for p in run["proofs"])
    assert run["verify"]["valid"] is True and run["verify"]["head"] == run["head"]
    assert run["head"] == run["proofs"][-1]["proof_hash"]
    bundle = json.loads((await client.read_resource(f"{run_uri(run_id)}/bundle"))
                        .contents[0].text)
    trusted = keys.public_keys(json.dumps(kairos.service.key_set()))
    assert bundle["run"]["id"] == run_id and verify_bundle(bundle, trusted).valid

    kairos.mint(THREE_STEPS.replace("Check that everything works.", "Check it all."),
                force_update=True)
    assert (await client.read_resource(steps[0] + "?version=1")).contents[0].text == whole
    newer = (await client.read_resource(steps[0] + "?version=2")).contents[0].text
    assert "Check it all." in newer and newer == (
        await client.read_resource(steps[0])).contents[0].text


async def test_unknown_malformed_and_versioned_uris_are_refused_with_their_field(
        client: Client, kairos: Kairos) -> None:
    steps = [s["uri"] for s in kairos.mint(THREE_STEPS)["items"][0]["steps"]]
    gone = "kairos://mem/00000000-0000-4000-8000-000000000000"
    for uri in (gone, "kairos://entries/00000000-0000-4000-8000-000000000000",
                "kairos://runs/00000000-0000-4000-8000-000000000000"):
        body = await refused(client.read_resource(uri))
        assert (body["error_code"], body["field"]) == ("NOT_FOUND", "uri")
    for uri in ("https://example.com", "kairos://mem/nope", "kairos://runs/", "kairos://"):
        body = await refused(client.read_resource(uri))
        assert (body["error_code"], body["field"]) == ("INVALID_URI", "uri")
    body = await refused(client.read_resource(steps[0] + "?version=2"))
    assert (body["error_code"], body["field"]) == ("NOT_FOUND", "version")
    body = await refused(client.read_resource(steps[0] + "?version=x"))
    assert (body["error_code"], body["field"]) == ("INVALID_INPUT", "version")
    body = await refused(client.list_resources(cursor="not a cursor"))
    assert (body["error_code"], body["field"]) == ("INVALID_INPUT", "cursor")


def test_pages_walk_every_section_once_with_keyset_cursors(kairos: Kairos) -> None:
    """Pages of two: the built-ins, the protocols by title, the experiences, the manuals,
    each once, in order, across the sections' boundaries."""
    titles = ["Deploy the web app", "Archive old logs", "Compile the docs", "Email the team",
              "Back up the database"]
    for title in titles:
        kairos.mint(f"# {title}\n\n## Do it\n\n{title}.\n", force_update=True)
    bodies = {"experience": {"playbook": "Keep it short."}, "manual": {"content": "Text."}}
    made = [kairos.write_entry({"entity_type": kind, "category": "general",
                                "title": f"{kind} {i}", **bodies[kind]})["entity_id"]
            for kind in ("experience", "manual") for i in range(3)]
    who, cursor, seen, pages = Caller(), None, [], 0
    while True:
        page = kairos.service.resources.page(cursor, who, size=2)
        pages += 1
        seen += [(r["title"], r["uri"]) for r in page["resources"]]
        assert len(page["resources"]) <= 2 or cursor is None
        cursor = page["next_cursor"]
        if cursor is None:
            break
        Cursor.decode(cursor)
    names = [t for t, _ in seen]
    builtins = len(seen) - len(titles) - len(made)
    assert builtins == 2
    assert names[builtins:builtins + 5] == sorted(titles)
    assert [u for _, u in seen[builtins + 5:]] == (
        sorted(entry_uri(i) for i in made[:3]) + sorted(entry_uri(i) for i in made[3:]))
    assert len(set(seen)) == len(seen)
    other = kairos.service.resources.page(None, Caller(space="elsewhere"), size=100)
    assert len(other["resources"]) == 2 and other["next_cursor"] is None


async def test_every_prompt_with_good_and_bad_arguments(client: Client, kairos: Kairos
                                                        ) -> None:
    prompts = {p.name: p for p in (await client.list_prompts()).prompts}
    assert list(prompts) == ["run-protocol", "write-protocol", "review-runs"]
    assert [(a.name, a.required) for a in prompts["write-protocol"].arguments or []] == [
        ("procedure", True), ("title", False)]

    steps = [s["uri"] for s in kairos.mint(THREE_STEPS)["items"][0]["steps"]]
    got = await client.get_prompt("run-protocol", {"request": "set up the project"})
    text = got.messages[0].content.text  # type: ignore[union-attr]
    assert got.messages[0].role == "user"
    assert steps[0] in text and "[match] Project Setup" in text and "kairos_begin" in text

    got = await client.get_prompt("write-protocol", {"procedure": "Back up the database, "
                                                     "then check the dump.", "title": "Backup"})
    text = got.messages[0].content.text  # type: ignore[union-attr]
    assert "# Backup" in text and "PROOF OF WORK:" in text and "kairos_mint" in text
    assert "Back up the database" in text

    begun = kairos.begin(steps[0])
    kairos.attest(steps[0], "failure", "the disk was full")
    assert begun["challenge"]
    got = await client.get_prompt("review-runs", {"protocol": steps[1], "days": "3"})
    text = got.messages[0].content.text  # type: ignore[union-attr]
    assert "1 runs of" in text and "the disk was full" in text and "kairos_update" in text
    got = await client.get_prompt("review-runs", {})
    assert "the disk was full" in got.messages[0].content.text  # type: ignore[union-attr]

    for name, args, field, code in [
            ("run-protocol", {}, "request", "INVALID_INPUT"),
            ("run-protocol", {"request": "   "}, "request", "INVALID_INPUT"),
            ("run-protocol", {"request": "x" * 3000}, "request", "INVALID_INPUT"),
            ("write-protocol", {"title": "T"}, "procedure", "INVALID_INPUT"),
            ("write-protocol", {"procedure": "p", "colour": "red"}, "colour", "INVALID_INPUT"),
            ("review-runs", {"days": "0"}, "days", "INVALID_INPUT"),
            ("review-runs", {"days": "seven"}, "days", "INVALID_INPUT"),
            ("review-runs", {"protocol": "nope"}, "protocol", "INVALID_URI"),
            ("review-runs", {"protocol": "kairos://mem/00000000-0000-4000-8000-000000000000"},
             "protocol", "NOT_FOUND"),
            ("no-such-prompt", {}, "name", "NOT_FOUND")]:
        body = await refused(client.get_prompt(name, args))
        assert (body["error_code"], body["field"]) == (code, field), (name, args)


async def wait_for(event: anyio.Event, change: Callable[[], Any]) -> None:
    """Make the change, then wait (bounded) for its notification."""
    await change()
    with anyio.fail_after(10):
        await event.wait()


async def test_handshake_subscribers_hear_changes_from_any_session_and_the_service(
        kairos: Kairos) -> None:
    server = server_of(kairos)
    heard: dict[str, list[str]] = {"one": [], "two": []}
    events = {"one": anyio.Event(), "two": anyio.Event()}

    def handler(name: str) -> Any:
        async def on_message(message: Any) -> None:
            if isinstance(message, mcp_types.ResourceUpdatedNotification):
                heard[name].append(str(message.params.uri))
                events[name].set()
        return on_message

    steps = [s["uri"] for s in kairos.mint(THREE_STEPS)["items"][0]["steps"]]
    async with Client(server, mode="legacy", message_handler=handler("one")) as one, \
            Client(server, mode="legacy", message_handler=handler("two")) as two:
        assert one.server_capabilities.resources.subscribe is True  # type: ignore[union-attr]
        with pytest.warns(MCPDeprecationWarning):
            await one.subscribe_resource(steps[0])
        with pytest.warns(MCPDeprecationWarning):
            await two.subscribe_resource(steps[0])
        # The same session's tool call, then another session's, then the service itself.
        await wait_for(events["one"], lambda: one.call_tool("kairos_update", {
            "uris": steps[1], "markdown_doc": "Set up the configuration files, twice."}))
        await wait_for(events["two"], anyio.lowlevel.checkpoint)
        for name in events:
            events[name] = anyio.Event()
        await wait_for(events["one"], lambda: two.call_tool("kairos_mint", {
            "markdown_doc": THREE_STEPS, "force_update": True}))
        events["one"] = anyio.Event()

        async def by_the_service() -> None:
            await anyio.to_thread.run_sync(lambda: kairos.delete(steps[2]))
        await wait_for(events["one"], by_the_service)
        assert set(heard["one"]) == {steps[0]}
        with pytest.warns(MCPDeprecationWarning):
            await two.unsubscribe_resource(steps[0])
        body = await refused_subscribe(one, "kairos://mem/00000000-0000-4000-8000-000000000000")
        assert body["error_code"] == "NOT_FOUND"


async def refused_subscribe(client: Client, uri: str) -> dict[str, Any]:
    with pytest.warns(MCPDeprecationWarning):
        return await refused(client.subscribe_resource(uri))


async def test_listeners_hear_changes_from_any_session_and_the_service(kairos: Kairos
                                                                       ) -> None:
    server = server_of(kairos)
    steps = [s["uri"] for s in kairos.mint(THREE_STEPS)["items"][0]["steps"]]
    other = kairos.mint("# Other\n\n## Only\n\nJust one.\n")["items"][0]["uri"]
    async with Client(server) as one, Client(server) as two, \
            one.listen(resource_subscriptions=[steps[0], steps[2]]) as sub:
        assert sub.honored.resource_subscriptions == [steps[0], steps[2]]
        events = aiter(sub)
        await one.call_tool("kairos_update", {"uris": steps[1],
                                              "markdown_doc": "Configure, twice."})
        with anyio.fail_after(10):
            assert {await anext(events), await anext(events)} == {
                ResourceUpdated(uri=steps[0]), ResourceUpdated(uri=steps[2])}
        await two.call_tool("kairos_delete", {"uris": other})  # no one listens to it
        await anyio.to_thread.run_sync(lambda: kairos.update(
            steps[0], markdown_doc="Create the directories."))
        with anyio.fail_after(10):
            assert {await anext(events), await anext(events)} == {
                ResourceUpdated(uri=steps[0]), ResourceUpdated(uri=steps[2])}
