"""Protocol versions: every change makes an immutable, numbered version with its content
hash; a run follows the version it began on to its end and hashes its chain with its own
rule; dump reads any version; statistics are kept per version and sum to the protocol's;
a delete keeps the versions runs follow."""

from __future__ import annotations

from typing import Any

import pytest

from kairos.domain import errors
from kairos.domain.bundle_format import content_hash
from kairos.domain.canonical import RFC8785
from kairos.domain.errors import KairosError
from kairos.domain.proof import verify_chain
from kairos.service import Caller
from tests.client import Agent
from tests.spec.seedkit import shell_ok

DOC = """# Ship Release

## Build

Build the artifact.

PROOF OF WORK: timeout 30s make build

## Test

Run the tests.

PROOF OF WORK: timeout 30s make test

## Publish

Publish it.

PROOF OF WORK: timeout 30s make publish
"""


def _mint(k: Agent) -> list[str]:
    return [s["uri"] for s in k.mint(DOC)["items"][0]["steps"]]


def _finish(k: Agent, steps: list[str], begun: dict[str, Any], caller: Caller) -> Any:
    """Answer every step after the one ``begun`` shows, then attest with the last proof."""
    shown = begun
    for uri in steps[1:]:
        shown = k.next(uri, shell_ok(shown["challenge"]), caller)
        assert "error_code" not in shown, shown
    return k.attest(steps[-1], "success", "done", caller,
                    solution=shell_ok(shown["challenge"]))


def test_every_change_makes_a_version_and_a_no_op_keeps_it(kairos: Agent) -> None:
    steps = _mint(kairos)
    first = kairos.versions(steps[0])
    assert first["current_version"] == 1 and len(first["versions"]) == 1
    v1 = kairos.dump(steps[0], protocol=True)
    assert v1["version"] == 1
    assert first["versions"][0]["content_hash"] == content_hash(v1["markdown_doc"])
    kairos.mint(DOC, force_update=True)  # the same text: nothing a run follows changed
    assert kairos.versions(steps[0])["current_version"] == 1
    kairos.mint(DOC.replace("Run the tests.", "Run every test."), force_update=True)
    kairos.update(steps[2], updates={"content": "Publish to the registry.\n\n"
                                                "PROOF OF WORK: timeout 9s make push"})
    kairos.delete(steps[1])
    listed = kairos.versions(steps[0])
    assert [v["version"] for v in listed["versions"]] == [1, 2, 3, 4]
    assert [v["current"] for v in listed["versions"]] == [False, False, False, True]
    assert [v["step_count"] for v in listed["versions"]] == [3, 3, 3, 2]
    for v in listed["versions"]:  # each hash is its own text's
        text = kairos.dump(steps[0], protocol=True, version=v["version"])["markdown_doc"]
        assert v["content_hash"] == content_hash(text)
    assert "Run every test." in kairos.dump(steps[0], protocol=True, version=2)["markdown_doc"]
    old = kairos.dump(steps[2], version=1)
    assert (old["content"].startswith("Publish it."), old["position"], old["version"]) == (
        True, 3, 1)
    assert kairos.dump(steps[2])["position"] == 2  # step 2 is gone from version 4
    assert kairos.dump(steps[0], protocol=True)["version"] == 4


def test_unknown_versions_are_refused_naming_the_field(kairos: Agent) -> None:
    steps = _mint(kairos)
    with pytest.raises(KairosError) as caught:
        kairos.dump(steps[0], version=2)
    assert (caught.value.code, caught.value.field) == (errors.NOT_FOUND, "version")
    with pytest.raises(KairosError) as caught:
        kairos.dump(steps[0], version=0)
    assert caught.value.field == "version"
    with pytest.raises(KairosError) as caught:
        kairos.diff_versions(steps[0], 1, 7)
    assert (caught.value.code, caught.value.field) == (errors.NOT_FOUND, "to")
    added = kairos.mint(DOC + "\n## Announce\n\nTell the team.\n\nPROOF OF WORK: comment "
                              "min_length=10\n", force_update=True)["items"][0]["steps"][3]
    with pytest.raises(KairosError) as caught:  # the step added in version 2
        kairos.dump(added["uri"], version=1)
    assert (caught.value.code, caught.value.field) == (errors.NOT_FOUND, "version")
    # Its protocol as it was then: the three steps it had.
    whole = kairos.dump(added["uri"], protocol=True, version=1)
    assert (whole["version"], whole["step_count"], whole["uri"]) == (1, 3, steps[0])


def test_diff_marks_added_and_removed_lines(kairos: Agent) -> None:
    steps = _mint(kairos)
    kairos.mint(DOC.replace("Run the tests.", "Run every test."), force_update=True)
    diff = kairos.diff_versions(steps[0], 1, 2)
    assert diff["from_hash"] != diff["to_hash"]
    assert {"kind": "removed", "text": "-Run the tests."} in diff["lines"]
    assert {"kind": "added", "text": "+Run every test."} in diff["lines"]
    assert diff["diff"].startswith("--- version 1\n+++ version 2\n")
    same = kairos.diff_versions(steps[0], 2, 2)
    assert same["diff"] == "" and same["lines"] == []


def test_a_run_finishes_on_its_version_when_the_protocol_changes(kairos: Agent) -> None:
    steps = _mint(kairos)
    me = Caller(id="me")
    begun = kairos.begin(steps[0], me)
    second = kairos.next(steps[1], shell_ok(begun["challenge"]), me)
    # The protocol loses its last step and its second step's challenge changes.
    kairos.mint(DOC.replace("make test", "make check")
                .split("## Publish")[0], force_update=True)
    assert kairos.versions(steps[0])["current_version"] == 2
    third = kairos.next(steps[2], shell_ok(second["challenge"]), me)
    assert third["current_step"]["uri"] == steps[2]  # version 1 still has step 3
    assert third["challenge"]["shell"]["cmd"] == "make publish"
    done = kairos.attest(steps[2], "success", "done", me,
                         solution=shell_ok(third["challenge"]))
    assert done["proven"] is True and done["proofs"] == 3
    assert kairos.verify_run(done["run_id"])["valid"] is True
    detail = kairos.run_detail(done["run_id"])
    assert (detail["protocol_version"], detail["chain_rule"]) == (1, RFC8785)
    assert [s["uri"] for s in detail["steps"]] == steps
    proofs = kairos.proof_log(done["run_id"])["proofs"]
    assert verify_chain(proofs, RFC8785)[2] is None
    # A new run follows version 2: two steps, the new challenge.
    fresh = kairos.begin(steps[0], Caller(id="you"))
    fresh = kairos.next(steps[1], shell_ok(fresh["challenge"]), Caller(id="you"))
    assert fresh["challenge"]["shell"]["cmd"] == "make check"
    assert "kairos_attest" in fresh["next_action"]
    counts = {r["caller"]: r["step_count"] for r in kairos.list_runs()["items"]}
    assert counts == {"me": 3, "you": 2}  # each run's own version's steps


def test_statistics_per_version_sum_to_the_protocols(kairos: Agent) -> None:
    steps = _mint(kairos)
    _finish(kairos, steps, kairos.begin(steps[0], Caller(id="a")), Caller(id="a"))
    kairos.mint(DOC.replace("Publish it.", "Publish it now."), force_update=True)
    _finish(kairos, steps, kairos.begin(steps[0], Caller(id="b")), Caller(id="b"))
    run = kairos.begin(steps[0], Caller(id="c"))
    kairos.attest(steps[0], "failure", "broke", Caller(id="c"))
    del run
    versions = kairos.versions(steps[0])["versions"]
    assert [(v["runs"], v["successes"], v["failures"]) for v in versions] == [
        (1, 1, 0), (2, 1, 1)]
    metrics = kairos.metrics(steps[0])
    assert (metrics["runs"], metrics["successes"], metrics["failures"]) == (
        sum(v["runs"] for v in versions), sum(v["successes"] for v in versions),
        sum(v["failures"] for v in versions))


def test_delete_keeps_the_versions_runs_follow(kairos: Agent) -> None:
    steps = _mint(kairos)
    kairos.mint(DOC.replace("Publish it.", "Publish it now."), force_update=True)
    done = _finish(kairos, steps, kairos.begin(steps[0]), Caller(id="anyone"))
    kairos.delete(steps[0], protocol=True)
    assert kairos.list_protocols()["total"] == 0
    assert not [r for r in kairos.search("ship release")["choices"]
                if r.get("chain_label") == "Ship Release"]
    with pytest.raises(KairosError):
        kairos.begin(steps[0])
    assert kairos.verify_run(done["run_id"])["valid"] is True
    detail = kairos.run_detail(done["run_id"])
    assert detail["protocol"]["chain_label"] == "Ship Release"
    assert [s["uri"] for s in detail["steps"]] == steps
    left = kairos.store.engine.connect()
    try:
        from sqlalchemy import text
        rows = left.execute(text("SELECT version FROM protocol_versions WHERE protocol_id = "
                                 "(SELECT protocol_id FROM runs WHERE id = :r)"),
                            {"r": done["run_id"]}).scalars().all()
    finally:
        left.close()
    assert rows == [2]  # version 1 had no run: it went with the protocol
