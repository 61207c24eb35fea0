"""Dump, update, delete, and the built-in protocols."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from kairos.domain import markdown
from kairos.domain.errors import KairosError
from kairos.domain.texts import CREATE_PROTOCOL_URI, REFINE_SEARCH_URI
from kairos.service import Caller, Kairos
from tests.conftest import make_kairos
from tests.domain.test_markdown_roundtrip import PROTOCOLS
from tests.fakes import HashEmbedder
from tests.spec.seedkit import mint_three, shell_ok


def test_dump_step_and_protocol(kairos: Kairos) -> None:
    steps, _ = mint_three(kairos)
    one = kairos.dump(steps[1])
    assert one["label"] == "Configure" and one["position"] == 2 and one["step_count"] == 3
    assert one["challenge"]["shell"]["cmd"] == "echo config > project/config.json"
    assert one["markdown_doc"].startswith("## Configure\n\nSet up configuration files.")
    whole = kairos.dump(steps[2], protocol=True)
    assert whole["uri"] == steps[0] and whole["chain_label"] == "Project Setup"
    # The dump mints back to the same protocol.
    again = kairos.mint(whole["markdown_doc"], force_update=True)["items"][0]
    assert [s["uri"] for s in again["steps"]] == steps
    assert kairos.dump(steps[0], protocol=True) == whole


def test_update_rereads_the_challenge_and_keeps_uris(kairos: Kairos) -> None:
    steps, _ = mint_three(kairos)
    result = kairos.update([steps[1]], markdown_doc=(
        "Write the configuration.\n\nPROOF OF WORK: timeout 9s cp a b\n"))
    assert result["total_updated"] == 1 and result["total_failed"] == 0
    step = kairos.dump(steps[1])
    assert step["uri"] == steps[1] and step["label"] == "Configure"
    assert step["challenge"]["shell"] == {"cmd": "cp a b", "timeout_seconds": 9}
    # A heading in the new markdown renames the step.
    kairos.update(steps[1], markdown_doc="## Write config\n\nPROOF OF WORK: mcp writer\n")
    step = kairos.dump(steps[1])
    assert step["label"] == "Write config" and step["challenge"]["type"] == "mcp"
    kairos.update(steps[2], updates={"content": "Look around."})
    assert kairos.dump(steps[2])["challenge"]["type"] == "comment"
    # A run begun afterwards sees the new challenge.
    begun = kairos.begin(steps[0])
    nxt = kairos.next(steps[1], shell_ok(begun["challenge"]))
    assert nxt["challenge"]["mcp"]["tool_name"] == "writer"


def test_update_reports_per_uri_errors(kairos: Kairos) -> None:
    steps, _ = mint_three(kairos)
    missing = "kairos://mem/12345678-1234-1234-1234-123456789abc"
    result = kairos.update([steps[0], missing, "nope"], updates={"label": "Renamed"})
    assert [r["status"] for r in result["results"]] == ["updated", "error", "error"]
    assert result["results"][1]["error_code"] == "NOT_FOUND"
    assert result["results"][2]["error_code"] == "INVALID_URI"
    assert (result["total_updated"], result["total_failed"]) == (1, 2)
    bad = kairos.update(steps[0], markdown_doc='```json\n{"challenge": {"type": "x"}}\n```')
    assert bad["results"][0]["error_code"] == "UNKNOWN_CHALLENGE_TYPE"
    assert kairos.dump(steps[0])["label"] == "Renamed"  # the failed update changed nothing


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"uris": []}, "uris"),
    ({"uris": "kairos://mem/x", "updates": {"colour": "red"}}, "updates.colour"),
    ({"uris": "kairos://mem/x"}, "markdown_doc"),
    ({"uris": ["a", "b"], "markdown_doc": ["only one"]}, "markdown_doc"),
])
def test_update_validation(kairos: Kairos, kwargs: dict, field: str) -> None:
    with pytest.raises(KairosError) as info:
        kairos.update(**kwargs)
    assert info.value.field == field


def test_delete_steps_and_protocols(kairos: Kairos) -> None:
    steps, _ = mint_three(kairos)
    result = kairos.delete([steps[1]])
    assert result["total_deleted"] == 1
    whole = kairos.dump(steps[0], protocol=True)
    assert [s["uri"] for s in whole["steps"]] == [steps[0], steps[2]]
    assert kairos.dump(steps[2])["position"] == 2
    result = kairos.delete(steps[0], protocol=True)
    assert result["results"][0]["removed"] == [steps[0], steps[2]]
    with pytest.raises(KairosError):
        kairos.dump(steps[2])
    again = kairos.delete([steps[0]])
    assert again["total_failed"] == 1 and again["results"][0]["error_code"] == "NOT_FOUND"


def test_other_spaces_cannot_touch_a_protocol(kairos: Kairos) -> None:
    steps, _ = mint_three(kairos)
    other = Caller(space="other")
    assert kairos.delete(steps[0], other)["total_failed"] == 1
    assert kairos.update(steps[0], other, updates={"label": "x"})["total_failed"] == 1
    with pytest.raises(KairosError):
        kairos.begin(steps[0], other)


def test_builtins_are_installed_once_and_read_only(kairos: Kairos, home) -> None:
    create = kairos.dump(CREATE_PROTOCOL_URI, protocol=True)
    refine = kairos.dump(REFINE_SEARCH_URI, protocol=True)
    assert create["chain_label"] == "Create New KAIROS Protocol Chain"
    assert refine["uri"] == REFINE_SEARCH_URI and refine["step_count"] >= 3
    # Restarting installs nothing new and keeps every step URI.
    again = make_kairos(home)
    assert again.minter.install_builtins() == []
    assert again.dump(CREATE_PROTOCOL_URI, protocol=True) == create
    # Any space may run them, nobody may change them.
    begun = kairos.begin(CREATE_PROTOCOL_URI, Caller(space="elsewhere"))
    assert begun["current_step"]["uri"] == CREATE_PROTOCOL_URI
    result = kairos.update(CREATE_PROTOCOL_URI, updates={"label": "x"})
    assert result["results"][0]["error_code"] == "BUILTIN_READ_ONLY"
    assert kairos.delete(REFINE_SEARCH_URI)["results"][0]["error_code"] == "BUILTIN_READ_ONLY"


def test_builtins_refresh_when_their_source_changes(home) -> None:
    k = make_kairos(home)
    before = k.dump(REFINE_SEARCH_URI, protocol=True)
    source = before["markdown_doc"].replace("## Search again", "## Search once more")
    changed = k.minter.install_builtins(
        {"00000000-0000-0000-0000-000000002002": source})
    assert changed == [REFINE_SEARCH_URI]
    after = k.dump(REFINE_SEARCH_URI, protocol=True)
    assert after["uri"] == REFINE_SEARCH_URI
    assert [s["uri"] for s in after["steps"]] == [s["uri"] for s in before["steps"]]
    assert "Search once more" in after["markdown_doc"]
    # The packaged text comes back on the next start, and a second start changes nothing.
    assert k.minter.install_builtins() == [REFINE_SEARCH_URI]
    assert k.minter.install_builtins() == []
    # Its text is version 1's again, as a version of its own: the history keeps the edit.
    assert k.dump(REFINE_SEARCH_URI, protocol=True) == {**before, "version": 3}




@pytest.fixture
def kairos(home: Path) -> Kairos:
    """The round trip is about markdown, not vectors: the fast deterministic embedder."""
    return make_kairos(home, HashEmbedder())


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(protocol=PROTOCOLS)
def test_mint_dump_mint_round_trip(kairos: Kairos, protocol: markdown.ProtocolDraft) -> None:
    """Through the service: a dumped protocol mints back to the same protocol, same URIs."""
    item = kairos.mint(markdown.render(protocol), force_update=True)["items"][0]
    dumped = kairos.dump(item["uri"], protocol=True)
    [parsed] = markdown.parse(dumped["markdown_doc"])
    assert (parsed.title, parsed.intro, parsed.steps) == (
        protocol.title, protocol.intro, protocol.steps)
    again = kairos.mint(dumped["markdown_doc"], force_update=True)["items"][0]
    assert [s["uri"] for s in again["steps"]] == [s["uri"] for s in item["steps"]]
    assert kairos.dump(item["uri"], protocol=True) == dumped
