"""Export and import carry protocol versions, and each run's version and chain rule; the
import checks them as the trust boundary it is: a version's hash is its text's, its steps
are what its text mints, a run follows a version the file (or the store) holds."""

from __future__ import annotations

import copy
from typing import Any

from kairos.service import Kairos
from tests.service.test_import import A, B, exported, lines, populate, refused, rows_of
from tests.spec.seedkit import THREE_STEPS, shell_ok


def _two_versions(k: Kairos) -> list[str]:
    """``populate`` (a proven run and an active one on version 1), then version 2 and a
    run on it."""
    steps = populate(k)
    k.mint(THREE_STEPS.replace("## Step 1", "Set the stage first.\n\n## Step 1", 1), A,
           force_update=True)
    response = k.begin(steps[0], A)
    for uri in steps[1:]:
        response = k.next(uri, shell_ok(response["challenge"]), A)
    return steps


def test_versions_and_runs_survive_export_and_import(kairos: Kairos) -> None:
    steps = _two_versions(kairos)
    records = exported(kairos)
    assert len(rows_of(records, "protocol_versions")) == 2
    assert {r["protocol_version"] for r in rows_of(records, "runs")} == {1, 2}
    assert {r["chain_rule"] for r in rows_of(records, "runs")} == {"rfc8785"}
    done = kairos.import_records(lines(records), B)
    assert done["inserted"]["protocol_versions"] == 2
    before = kairos.versions(steps[0], A)["versions"]
    uri = kairos.list_protocols(B)["items"][0]["uri"]
    after = kairos.versions(uri, B)["versions"]
    assert [(v["version"], v["content_hash"]) for v in after] == [
        (v["version"], v["content_hash"]) for v in before]
    for run in kairos.list_runs(B)["items"]:
        assert kairos.verify_run(run["run_id"], B)["valid"] is True
        assert kairos.run_detail(run["run_id"], B)["protocol_version"] in (1, 2)
    assert kairos.import_records(lines(records), B)["inserted"] == {}  # twice: no change


def test_an_export_without_versions_still_imports_as_version_one(kairos: Kairos) -> None:
    """A file written before versions: its runs read as version 1 and the first rule
    (their records hash alike under both rules, so they verify)."""
    populate(kairos)
    records = [r for r in exported(kairos) if r.get("table") != "protocol_versions"]
    for r in records:
        for column in ("protocol_version", "chain_rule", "version"):
            if r.get("table") in ("runs", "protocols"):
                r["row"].pop(column, None)
    kairos.import_records(lines(records), B)
    uri = kairos.list_protocols(B)["items"][0]["uri"]
    assert [v["version"] for v in kairos.versions(uri, B)["versions"]] == [1]


def _bad(records: list[dict[str, Any]], table: str, **change: Any) -> list[dict[str, Any]]:
    out = copy.deepcopy(records)
    next(r for r in out if r.get("table") == table)["row"].update(change)
    return out


def test_bad_version_rows_are_refused_naming_the_field(kairos: Kairos) -> None:
    _two_versions(kairos)
    records = exported(kairos)
    version = rows_of(records, "protocol_versions")[0]
    cases = {
        "protocol_versions.content_hash": _bad(records, "protocol_versions",
                                               markdown=version["markdown"] + "\nMore.\n"),
        "protocol_versions.steps": _bad(records, "protocol_versions", steps=[
            {**version["steps"][0], "label": "Another label"}, *version["steps"][1:]]),
        "protocol_versions.version": _bad(records, "protocol_versions", version=0),
        "runs.protocol_version": _bad(records, "runs", protocol_version=7),
        "runs.chain_rule": _bad(records, "runs", chain_rule="sha1"),
        "protocols.version": _bad(records, "protocols", version=1),
    }
    for field, bad in cases.items():
        error = refused(kairos, bad, B)
        assert error["field"] == field, (field, error)
        assert error["line"] >= 2
