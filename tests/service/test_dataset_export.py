"""Datasets from runs, end to end: the service reads the runs with their proofs in
batches, the CLI writes files, REST streams JSON Lines; every record parsed back traces to
a run of the caller's space that verifies, and unproven successes are absent unless asked."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from kairos.domain.dataset_filters import Filters
from kairos.domain.datasets import check_trace
from kairos.service import Caller, datasets
from kairos.store import listing
from tests.client import Agent
from tests.conftest import in_process
from tests.spec.seedkit import THREE_STEPS, shell_ok
from tests.surfaces.test_cli import env, run  # noqa: F401  (the CLI's fixture)

B = Caller(space="B")


def walk(k: Agent, steps: list[str], caller: Caller = Caller(), *, prove: bool = True
         ) -> str:
    """A run to its last step, attested as a success (with the last answer: proven)."""
    response = k.begin(steps[0], caller)
    for uri in steps[1:]:
        response = k.next(uri, shell_ok(response["challenge"]), caller)
    done = k.attest(steps[-1], "success", "all done", caller,
                    solution=shell_ok(response["challenge"]) if prove else None)
    return str(done["run_id"])


@pytest.fixture
def runs(kairos: Agent) -> dict[str, Any]:
    steps = [s["uri"] for s in kairos.mint(THREE_STEPS)["items"][0]["steps"]]
    proven = walk(kairos, steps)
    failed = kairos.begin(steps[0], Caller(id="other-agent"))
    failure = str(kairos.attest(steps[0], "failure", "the disk was full",
                                Caller(id="other-agent"))["run_id"])
    assert failed["challenge"]
    unproven = walk(kairos, steps, Caller(id="third"), prove=False)
    b_steps = [s["uri"] for s in kairos.mint(THREE_STEPS, B)["items"][0]["steps"]]
    walk(kairos, b_steps, B)
    return {"steps": steps, "proven": proven, "failure": failure, "unproven": unproven}


def export(k: Agent, fmt: str, caller: Caller = Caller(), **filters: Any) -> list[Any]:
    records = k.service.export_dataset(fmt, Filters.parse(**filters), caller)
    return [json.loads(json.dumps(r)) for r in records]


def verified(k: Agent, run_id: str, head: str, caller: Caller = Caller()) -> None:
    check = k.verify_run(run_id, caller)
    assert check["valid"] is True and check["head"] == head


def test_every_record_traces_to_a_run_that_verifies(kairos: Agent, runs: dict[str, Any]
                                                    ) -> None:
    traces = export(kairos, "trace-jsonl")
    assert {t["run_id"] for t in traces} == {runs["proven"], runs["failure"]}
    for trace in traces:
        verified(kairos, trace["run_id"], trace["proof_head"])
        assert check_trace(trace) is None
        assert trace["protocol_version"] == 1 and trace["space"] == "default"
        assert trace["protocol_uri"] == runs["steps"][0]
    sft = export(kairos, "sft-jsonl")
    assert [r["run_id"] for r in sft] == [runs["proven"]]
    roles = [m["role"] for m in sft[0]["messages"]]
    assert roles[:2] == ["system", "user"] and roles[-1] == "assistant"
    verified(kairos, sft[0]["run_id"], sft[0]["proof_head"])
    pairs = export(kairos, "preference-jsonl")
    assert [(p["chosen_run_id"], p["rejected_run_id"]) for p in pairs] == [
        (runs["proven"], runs["failure"])]
    verified(kairos, pairs[0]["chosen_run_id"], pairs[0]["chosen_proof_head"])
    verified(kairos, pairs[0]["rejected_run_id"], pairs[0]["rejected_proof_head"])


def test_unproven_runs_only_when_asked_and_filters(kairos: Agent, runs: dict[str, Any]
                                                   ) -> None:
    asked = export(kairos, "trace-jsonl", proven_only=False)
    flagged = {t["run_id"]: (t["proven"], t["reward"]) for t in asked}
    assert flagged[runs["unproven"]] == (False, None)
    assert flagged[runs["proven"]] == (True, 1.0) and flagged[runs["failure"]] == (False, 0.0)
    assert [t["run_id"] for t in export(kairos, "trace-jsonl", outcome="failure")] == [
        runs["failure"]]
    assert len(export(kairos, "trace-jsonl", protocol=runs["steps"][2])) == 2
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()
    yesterday = (datetime.now(UTC) - timedelta(days=1)).date().isoformat()
    assert export(kairos, "trace-jsonl", since=tomorrow) == []
    assert export(kairos, "trace-jsonl", until=yesterday) == []
    assert len(export(kairos, "trace-jsonl", since=yesterday, until=tomorrow)) == 2
    # Another space's runs and protocols are never in; its protocol names nothing here.
    theirs = export(kairos, "trace-jsonl", B)
    assert len(theirs) == 1 and theirs[0]["space"] == "B"
    assert export(kairos, "trace-jsonl", B, protocol=runs["steps"][0]) == []


def test_runs_are_read_in_batches_not_one_query_per_run(
        kairos: Agent, runs: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    whole = export(kairos, "trace-jsonl", proven_only=False)
    statements: list[str] = []

    def seen(*args: Any) -> None:
        statements.append(str(args[2]))

    engine = kairos.service.store.engine
    event.listen(engine, "before_cursor_execute", seen)
    try:
        assert export(kairos, "trace-jsonl", proven_only=False) == whole
        per_batch = len(statements)
        statements.clear()
        monkeypatch.setattr(datasets, "BATCH", 1)  # a batch per run: same records
        assert export(kairos, "trace-jsonl", proven_only=False) == whole
    finally:
        event.remove(engine, "before_cursor_execute", seen)
    assert per_batch <= 12  # one batch of three runs: runs, proofs, attestations, …
    assert len(statements) > per_batch


def test_a_batch_reads_only_the_versions_its_runs_followed(kairos: Agent) -> None:
    steps = [s["uri"] for s in kairos.mint(THREE_STEPS)["items"][0]["steps"]]
    run_id = walk(kairos, steps)
    for text in ("Create the directories.", "Create the directories, twice."):
        kairos.update(steps[0], markdown_doc=text)  # versions 2 and 3, run by nobody
    with kairos.store.read() as repo:
        pid = repo.run(run_id)["protocol_id"]  # type: ignore[index]
        assert [v["version"] for v in repo.versions_of(pid)] == [1, 2, 3]
        read = repo.all(listing.versions_in([(pid, 1), (pid, 7)]))
    assert [(r["protocol_id"], r["version"]) for r in read] == [(pid, 1)]
    assert set(read[0]) == {"protocol_id", "version", "title", "markdown", "steps"}
    [record] = export(kairos, "trace-jsonl")
    assert record["protocol_version"] == 1


def lines(text: str) -> Iterator[dict[str, Any]]:
    return (json.loads(line) for line in text.splitlines())


@pytest.mark.usefixtures("env")
def test_the_cli_writes_each_format_to_a_file_or_a_pipe(
        env: Path, tmp_path: Path) -> None:  # noqa: F811
    from tests.conftest import make_kairos

    k = make_kairos(env)
    steps = [s["uri"] for s in k.mint(THREE_STEPS)["items"][0]["steps"]]
    proven = walk(k, steps)
    unproven = walk(k, steps, Caller(id="third"), prove=False)
    k.close()
    out = tmp_path / "trace.jsonl"
    done = run("export", "--format", "trace-jsonl", "--out", str(out))
    assert done.exit_code == 0, done.output
    assert [r["run_id"] for r in lines(out.read_text("utf-8"))] == [proven]
    assert "Exported 1 trace-jsonl record(s)." in done.stderr
    piped = run("export", "--format", "sft-jsonl", "--include-unproven")
    assert piped.exit_code == 0 and piped.stderr.count("\n") == 1
    assert {r["run_id"] for r in lines(piped.stdout)} == {proven, unproven}
    assert run("export", "--format", "preference-jsonl").stdout == ""
    k = make_kairos(env)
    try:
        verified(k, proven, next(lines(out.read_text("utf-8")))["proof_head"])
    finally:
        k.close()
    for args, field in [(("--format", "trace-jsonl", "--outcome", "maybe"), "outcome"),
                        (("--format", "trace-jsonl", "--since", "last week"), "since"),
                        (("--format", "trace-jsonl", "--protocol", "nope"), "protocol"),
                        (("--format", "csv"), "--format"),
                        (("--outcome", "success"), "--outcome")]:
        bad = run("export", *args)
        assert bad.exit_code == 2 and bad.stdout == "", args
        assert field in bad.stderr and bad.stderr.startswith("error: "), bad.stderr


@pytest.mark.anyio
async def test_rest_streams_ndjson_for_the_callers_space(kairos: Agent, runs: dict[str, Any]
                                                         ) -> None:
    async with in_process(kairos) as http:
        got = await http.get("/api/v1/datasets/trace-jsonl")
        assert got.status_code == 200
        assert got.headers["content-type"].startswith("application/x-ndjson")
        assert {r["run_id"] for r in lines(got.text)} == {runs["proven"], runs["failure"]}
        got = await http.get("/api/v1/datasets/sft-jsonl", params={
            "include_unproven": "true", "protocol": runs["steps"][1]})
        assert {r["run_id"] for r in lines(got.text)} == {runs["proven"], runs["unproven"]}
        for path, params, field in [
                ("csv", {}, "format"), ("trace-jsonl", {"outcome": "maybe"}, "outcome"),
                ("trace-jsonl", {"until": "soon"}, "until"),
                ("trace-jsonl", {"protocol": "x"}, "protocol"),
                ("trace-jsonl", {"colour": "red"}, "colour")]:
            bad = await http.get(f"/api/v1/datasets/{path}", params=params)
            assert bad.status_code == 422, (path, params)
            assert bad.json()["field"] == field
