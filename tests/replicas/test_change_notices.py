"""What a write changed reaches the listeners of the process that made it and, on
PostgreSQL, of every other process on the database (LISTEN/NOTIFY): an MCP subscriber of
one replica hears an update made through another."""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.shared.subscriptions import ResourceUpdated

from kairos.mcp import ServiceRef, build_server, local_identity
from kairos.service import Caller
from tests.conftest import PG_URL, make_kairos
from tests.spec.seedkit import THREE_STEPS

across = pytest.mark.skipif(not PG_URL, reason="SQLite processes hear only their own writes")


class Heard:
    def __init__(self) -> None:
        self.changes: list[tuple[str, tuple[str, ...]]] = []
        self.event = threading.Event()

    def __call__(self, space: str, uris: tuple[str, ...]) -> None:
        self.changes.append((space, uris))
        self.event.set()

    def wait(self) -> None:
        assert self.event.wait(10), "no change was heard"
        self.event.clear()


def test_a_process_hears_its_own_changes_once(home: Path) -> None:
    one = make_kairos(home, KAIROS_EMBEDDER="none")
    heard = Heard()
    one.changes.listen(heard)
    steps = [s["uri"] for s in one.mint(THREE_STEPS)["items"][0]["steps"]]
    assert heard.changes == []  # a new protocol has no reader yet
    one.update(steps[1], markdown_doc="Configure it.")
    heard.wait()
    assert heard.changes == [("default", tuple(steps))]
    one.mint(THREE_STEPS, Caller(space="other"))  # another space's new protocol: nothing
    assert heard.changes == [("default", tuple(steps))]


@across
def test_another_process_on_the_database_is_heard(home: Path) -> None:
    one, two = make_kairos(home, KAIROS_EMBEDDER="none"), make_kairos(home,
                                                                      KAIROS_EMBEDDER="none")
    heard = Heard()
    one.changes.listen(heard)
    assert one.changes.hearing.wait(10)
    steps = [s["uri"] for s in two.mint(THREE_STEPS)["items"][0]["steps"]]
    two.delete(steps[2])
    heard.wait()
    assert heard.changes == [("default", tuple(steps))]
    one.update(steps[0], markdown_doc="Make the directories.")  # its own: heard once
    heard.wait()
    assert heard.changes[1:] == [("default", tuple(steps[:2]))]


@across
@pytest.mark.anyio
async def test_a_listener_of_one_replica_hears_an_update_through_another(home: Path) -> None:
    one, two = make_kairos(home, KAIROS_EMBEDDER="none"), make_kairos(home,
                                                                      KAIROS_EMBEDDER="none")
    steps = [s["uri"] for s in two.mint(THREE_STEPS)["items"][0]["steps"]]
    server = build_server(ServiceRef.of(one.service), limits=one.limits,
                          identify=local_identity("default", "conversation-1"))
    async with Client(server) as client, \
            client.listen(resource_subscriptions=[steps[0]]) as sub:
        await anyio.to_thread.run_sync(lambda: one.changes.hearing.wait(10))
        await anyio.to_thread.run_sync(lambda: two.update(steps[1], markdown_doc="Again."))
        with anyio.fail_after(10):
            assert await anext(aiter(sub)) == ResourceUpdated(uri=steps[0])
