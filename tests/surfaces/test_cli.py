"""The ``kairos`` command line through typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from kairos.cli import main as cli
from kairos.config import Settings, load_settings
from kairos.service import Caller, Kairos
from kairos.service.transfer import NOT_EXPORTED, SCOPES
from kairos.store import schema
from kairos.store.db import Store
from tests.conftest import _empty, make_kairos
from tests.spec.seedkit import THREE_STEPS, shell_ok

runner = CliRunner()


@pytest.fixture
def env(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The CLI reads its configuration from the environment, like a user's shell; its
    service gets the tests' deterministic embedder."""
    monkeypatch.setenv("KAIROS_HOME", str(home))
    monkeypatch.setenv("KAIROS_EMBEDDER", "none")
    monkeypatch.setenv("KAIROS_CONFIG", str(home / "absent.toml"))
    for name in ("KAIROS_SPACE", "KAIROS_API_TOKENS", "KAIROS_TOKENS_FILE", "KAIROS_HOST"):
        monkeypatch.delenv(name, raising=False)

    def service(settings: Settings | None = None, *, background: bool = False) -> Kairos:
        return make_kairos((settings or load_settings()).home_path)

    monkeypatch.setattr(cli, "_service", service)
    # A wide terminal, so tables keep whole words and ids on one line.
    monkeypatch.setattr(cli, "console", Console(width=200))
    monkeypatch.setattr(cli, "err", Console(stderr=True, width=200))
    return home


def run(*args: str) -> Any:
    return runner.invoke(cli.app, list(args))


def three_steps_file(tmp_path: Path) -> Path:
    path = tmp_path / "setup.md"
    path.write_text(THREE_STEPS, "utf-8")
    return path


def finish_a_run(k: Kairos, steps: list[str], caller: Caller = Caller()) -> str:
    response = k.begin(steps[0], caller)
    for uri in steps[1:]:
        response = k.next(uri, shell_ok(response["challenge"]), caller)
    done = k.attest(steps[-1], "success", "finished from the test", caller,
                    solution=shell_ok(response["challenge"]))
    return str(done["run_id"])


def test_mint_dump_runs_and_verify(env: Path, tmp_path: Path) -> None:
    minted = run("mint", str(three_steps_file(tmp_path)))
    assert minted.exit_code == 0, minted.output
    first = minted.stdout.split()[0]
    assert first.startswith("kairos://mem/") and "Project Setup" in minted.stdout
    step = run("dump", first)
    assert step.exit_code == 0 and "Create the project directory structure." in step.stdout
    whole = run("dump", "--protocol", first)
    assert whole.stdout.startswith("# Project Setup")
    as_json = json.loads(run("dump", "--json", first).stdout)
    assert as_json["uri"] == first
    bad = run("dump", "kairos://mem/nope")
    assert bad.exit_code == 1 and json.loads(bad.stderr)["error_code"] == "INVALID_URI"

    k = make_kairos(env)
    steps = [s["uri"] for s in k.dump(first, protocol=True)["steps"]]
    run_id = finish_a_run(k, steps)
    k.close()
    listed = run("runs")
    assert listed.exit_code == 0 and "finished" in listed.stdout and "success" in listed.stdout
    verified = run("verify", run_id)
    assert verified.exit_code == 0
    assert json.loads(verified.stdout) == {**json.loads(verified.stdout), "valid": True,
                                           "proofs": 3, "first_broken": None}
    unknown = run("verify", "no-such-run")
    assert unknown.exit_code == 1 and json.loads(unknown.stderr)["error_code"] == "NOT_FOUND"


def test_mint_a_directory_with_a_progress_bar(env: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(3):
        (docs / f"p{i}.md").write_text(f"# Protocol {i}\n\n## Only step\n\nDo thing {i}.\n"
                                       "\nPROOF OF WORK: comment min_length=20\n", "utf-8")
    (docs / "broken.md").write_text("no heading here\n", "utf-8")
    result = run("mint", str(docs))
    assert result.exit_code == 1
    assert result.stdout.count("kairos://mem/") == 3
    assert "broken.md" in result.stderr and "3 of 4 file(s) minted." in result.stderr
    missing = run("mint", str(tmp_path / "absent"))
    assert missing.exit_code == 2


def test_search(env: Path, tmp_path: Path) -> None:
    run("mint", str(three_steps_file(tmp_path)))
    shown = run("search", "project setup")
    assert shown.exit_code == 0 and "match" in shown.stdout and "Project Setup" in shown.stdout
    raw = json.loads(run("search", "--json", "project setup").stdout)
    assert raw["choices"][0]["role"] == "match"
    empty = run("search", "")
    assert empty.exit_code == 1 and json.loads(empty.stderr)["field"] == "query"


def test_doctor_shows_values_their_sources_and_health(env: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAIROS_API_TOKENS", "very-secret-token:A")
    result = run("doctor")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "env KAIROS_HOME" in out and "env KAIROS_EMBEDDER" in out and "default" in out
    assert "very-secret-token" not in out and "***" in out
    assert "data directory:" in out and "exists" in out
    assert "store: backend=" in out and "embedder:" in out and "index:" in out
    assert "status: ok" in out


def test_demo(env: Path) -> None:
    result = run("demo")
    assert result.exit_code == 0, result.output
    assert '"valid": true' in result.stdout


def test_serve_refuses_an_open_address_without_tokens(env: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    refused = run("serve", "--host", "0.0.0.0", "--port", "1")
    assert refused.exit_code == 2
    assert "Refusing to listen on 0.0.0.0" in refused.stderr
    monkeypatch.setenv("KAIROS_API_TOKENS", "token-without-space")
    misconfigured = run("serve", "--port", "1")
    assert misconfigured.exit_code == 2 and "KAIROS_API_TOKENS" in misconfigured.stderr


def test_reindex_reports_progress_and_result(env: Path, tmp_path: Path) -> None:
    run("mint", str(three_steps_file(tmp_path)))
    result = run("reindex")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["embedded"] >= 1


# --- export and import -------------------------------------------------------------------

def test_transfer_classifies_every_table() -> None:
    assert not set(SCOPES) & set(NOT_EXPORTED)
    assert set(SCOPES) | set(NOT_EXPORTED) == set(schema.metadata.tables)


def populate(k: Kairos) -> None:
    """Something in every exported table: protocols, a finished and an active run,
    metrics, categories, an experience and a manual."""
    steps = [s["uri"] for s in k.mint(THREE_STEPS)["items"][0]["steps"]]
    finish_a_run(k, steps, Caller(id="agent-1"))
    k.begin(steps[0], Caller(id="agent-2"))
    k.mint("# Single\n\n## Only\n\nConfirm it.\n\nPROOF OF WORK: comment min_length=20\n")
    code = k.list_categories()["categories"][0]["code"]
    k.write_entry({"entity_type": "experience", "category": code, "title": "Pin images",
                   "playbook": "Pin container image tags so upgrades are deliberate."})
    k.write_entry({"entity_type": "manual", "category": code, "title": "Release guide",
                   "content": "Tag, build, publish, announce."})


def empty_store(tmp_path: Path, pg_store: Store | None) -> Path:
    """A home whose store is empty: a fresh directory on SQLite; on PostgreSQL the one
    shared test database, emptied."""
    if pg_store is not None:
        _empty(pg_store)
    other = tmp_path / "other"
    other.mkdir()
    return other


def rows(path: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    assert lines[0]["format"] == "kairos-export"
    return lines[1:]


def test_export_then_import_into_an_empty_store_reproduces_every_record(
        env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        pg_store: Store | None) -> None:
    k = make_kairos(env)
    populate(k)
    k.close()
    first = tmp_path / "first.jsonl"
    exported = run("export", "--out", str(first))
    assert exported.exit_code == 0, exported.output
    records = rows(first)
    assert {r["table"] for r in records} == set(SCOPES)  # every table has records

    other = empty_store(tmp_path, pg_store)
    monkeypatch.setenv("KAIROS_HOME", str(other))
    imported = run("import", str(first))
    assert imported.exit_code == 0, imported.output
    report = json.loads(imported.stdout)
    assert sum(report["inserted"].values()) == len(records) and report["skipped"] == {}
    second = tmp_path / "second.jsonl"
    assert run("export", "--out", str(second)).exit_code == 0
    assert rows(second) == records

    # The imported records are searchable: the index was rebuilt from them.
    k2 = make_kairos(other)
    try:
        found = k2.search("project setup")
        assert found["choices"][0]["role"] == "match"
        hits = k2.search_entries({"query": "release guide", "min_score": 0.0})
        assert any(r["title"] == "Release guide" for r in hits["results"])
    finally:
        k2.close()

    again = json.loads(run("import", str(first)).stdout)
    assert again["inserted"] == {} and sum(again["skipped"].values()) == len(records)


def test_import_into_another_space_and_bad_files(env: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 pg_store: Store | None) -> None:
    k = make_kairos(env)
    populate(k)
    k.close()
    out = tmp_path / "export.jsonl"
    run("export", "--out", str(out))
    other = empty_store(tmp_path, pg_store)
    monkeypatch.setenv("KAIROS_HOME", str(other))
    assert run("import", "--space", "team-b", str(out)).exit_code == 0
    moved = make_kairos(other)
    try:
        assert len(moved.run_history(Caller("team-b"))) == 2
        assert moved.run_history(Caller("default")) == []
    finally:
        moved.close()

    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text('{"format": "kairos-export", "version": 1}\n{oops\n', "utf-8")
    bad = run("import", str(garbage))
    assert bad.exit_code == 1 and json.loads(bad.stderr)["line"] == 2
    headless = tmp_path / "headless.jsonl"
    headless.write_text('{"table": "protocols", "row": {}}\n', "utf-8")
    refused = run("import", str(headless))
    assert refused.exit_code == 1 and json.loads(refused.stderr)["field"] == "header"
    assert run("import", str(tmp_path / "absent.jsonl")).exit_code == 2
