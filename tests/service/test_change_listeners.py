"""A write reads what it changed for change notices only when someone is told of them."""

from __future__ import annotations

from kairos.domain.caller import BUILTIN_SPACE, Caller
from kairos.service.changes import Changes
from tests.client import Agent
from tests.spec.seedkit import THREE_STEPS


def test_what_a_write_touched_is_read_only_while_someone_listens(kairos: Agent) -> None:
    steps = [s["uri"] for s in kairos.mint(THREE_STEPS)["items"][0]["steps"]]
    changes = Changes()  # one process: nobody else to tell
    assert not changes.wanted
    assert changes.touched(kairos.store, [steps[1]], "default") == []
    heard: list[tuple[str, tuple[str, ...]]] = []
    stop = changes.listen(lambda space, uris: heard.append((space, uris)))
    assert changes.wanted
    assert changes.touched(kairos.store, [steps[1], "not a uri"], "default") == steps
    assert changes.touched(kairos.store, [steps[1]], "other") == []
    changes.publish("default", [steps[0], steps[0]])
    stop()
    assert not changes.wanted
    assert heard == [("default", (steps[0],))]


def test_updates_and_deletes_tell_listeners_of_every_step_they_changed(kairos: Agent) -> None:
    steps = [s["uri"] for s in kairos.mint(THREE_STEPS)["items"][0]["steps"]]
    kairos.update(steps[1], markdown_doc="Nobody listens yet.")
    heard: list[tuple[str, tuple[str, ...]]] = []
    stop = kairos.changes.listen(lambda space, uris: heard.append((space, uris)))
    try:
        kairos.update(steps[1], markdown_doc="Configure, twice.")
        kairos.delete(steps[2])
    finally:
        stop()
    assert heard == [("default", tuple(steps)), ("default", tuple(steps))]


def test_a_caller_sees_its_own_space_and_the_builtins() -> None:
    caller = Caller(space="team")
    assert caller.visible_spaces == ("team", BUILTIN_SPACE)
    assert caller.sees("team") and caller.sees(BUILTIN_SPACE) and not caller.sees("other")
