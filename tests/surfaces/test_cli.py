"""The ``kairos`` command line through typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kairos.cli import main as cli
from kairos.service import Caller, Kairos
from kairos.service.transfer import NOT_EXPORTED, SCOPES
from kairos.store import schema
from kairos.store.db import Store
from tests.conftest import PG_URL, _empty, make_kairos
from tests.spec.seedkit import THREE_STEPS, shell_ok

runner = CliRunner()


@pytest.fixture
def env(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The CLI reads its configuration from the environment, like a user's shell: the
    test's store (on PostgreSQL, the suite's database) and the shipped model."""
    monkeypatch.setenv("KAIROS_HOME", str(home))
    monkeypatch.setenv("KAIROS_EMBEDDER", "local")
    monkeypatch.setenv("KAIROS_CONFIG", str(home / "absent.toml"))
    if PG_URL:
        monkeypatch.setenv("KAIROS_DATABASE_URL", PG_URL)
    for name in ("KAIROS_SPACE", "KAIROS_API_TOKENS", "KAIROS_TOKENS_FILE", "KAIROS_HOST"):
        monkeypatch.delenv(name, raising=False)
    return home


def run(*args: str, input: str | None = None) -> Any:
    return runner.invoke(cli.app, list(args), input=input, prog_name="kairos")


def one_error(stderr: str) -> str:
    """The one line an error is: ``error: …``."""
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    return lines[0]


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
    assert bad.exit_code == 2 and bad.stdout == ""
    assert one_error(bad.stderr).endswith("[INVALID_URI]")
    bad_json = run("dump", "--json", "kairos://mem/nope")
    assert json.loads(bad_json.stdout)["error_code"] == "INVALID_URI"

    k = make_kairos(env)
    steps = [s["uri"] for s in k.dump(first, protocol=True)["steps"]]
    run_id = finish_a_run(k, steps)
    k.close()
    listed = run("runs")
    assert listed.exit_code == 0
    assert listed.stdout.split("\t")[:6] == [run_id, "finished", "success", "yes", "3/3",
                                             listed.stdout.split("\t")[5]]
    verified = run("verify", run_id)
    assert verified.exit_code == 0
    assert verified.stdout == f"Run {run_id}: 3 proofs, chain valid.\n"
    as_json = json.loads(run("verify", "--json", run_id).stdout)
    assert as_json == {**as_json, "valid": True, "proofs": 3, "first_broken": None}
    unknown = run("verify", "no-such-run")
    assert unknown.exit_code == 2 and one_error(unknown.stderr).endswith("[INVALID_INPUT]")
    absent = run("verify", "0123abcd")
    assert absent.exit_code == 1 and one_error(absent.stderr).endswith("[NOT_FOUND]")


TASKS = ("Rotate the TLS certificate on every edge node.",
         "Back up the orders database to the archive bucket.",
         "Publish the documentation site after a release.")


def test_mint_a_directory_with_a_progress_bar(env: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i, task in enumerate(TASKS):
        (docs / f"p{i}.md").write_text(f"# Protocol {i}\n\n## Only step\n\n{task}\n"
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
    assert empty.exit_code == 2 and one_error(empty.stderr).endswith("[INVALID_INPUT]")
    assert json.loads(run("search", "--json", "").stdout)["field"] == "query"


def test_search_explain_and_triggers(env: Path, tmp_path: Path) -> None:
    doc = tmp_path / "outage.md"
    doc.write_text("---\ntriggers:\n  - the site is down\n---\n" + THREE_STEPS, "utf-8")
    assert run("mint", str(doc)).exit_code == 0
    shown = run("search", "--explain", "project setup")
    assert shown.exit_code == 0, shown.output
    first = shown.stdout.splitlines()[0].split("\t")
    assert first[0] == "yes" and first[3] == "Project Setup"
    assert first[-1] == "listed: the query is this record's title"
    assert "protocols: relevant" in shown.stderr
    raw = json.loads(run("search", "--explain", "--json", "project setup").stdout)
    assert raw["candidates"][0]["evidence"]["every_word_in_title"] is True
    uri = raw["candidates"][0]["uri"]
    listed = run("triggers", uri)
    assert listed.exit_code == 0 and listed.stdout == "author\t\t\t\tthe site is down\n"
    k = make_kairos(env)
    k.search("set the project up", Caller(id="local"))
    k.search_engine.learning.flush()
    finish_a_run(k, [s["uri"] for s in k.dump(uri, protocol=True)["steps"]])
    k.close()
    learned = json.loads(run("triggers", "--json", uri).stdout)["learned"]
    assert [x["text"] for x in learned] == ["set the project up"]
    assert learned[0]["id"] in run("triggers", uri).stdout
    forgot = json.loads(run("triggers", "--json", "--forget", learned[0]["id"], uri).stdout)
    assert forgot["removed"] == 1 and forgot["learned"] == []
    missing = run("triggers", "--forget", learned[0]["id"], uri)
    assert missing.exit_code == 1 and "[NOT_FOUND]" in one_error(missing.stderr)


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
    assert out.endswith("status: healthy\n")
    report = json.loads(run("doctor", "--json").stdout)
    assert report["status"] == "healthy" and report["problems"] == []
    assert report["settings"]["home"] == {"value": str(env), "source": "env KAIROS_HOME"}


def test_demo_labels_every_call_and_shows_the_answers(env: Path) -> None:
    result = run("demo")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    calls = [line.split("(")[0] for line in lines[::2]]
    assert calls == ["kairos_mint", "kairos_begin", "kairos_next", "kairos_next",
                     "kairos_attest", "verify"]
    assert all(line.startswith("  -> ") for line in lines[1::2])
    assert '"shell":{"exit_code":0' in lines[4] and '"comment":{"text":' in lines[8]
    assert lines[-1].startswith("  -> chain valid (3 proofs)")
    as_json = json.loads(run("demo", "--json").stdout)
    assert [c["call"] for c in as_json["calls"]] == calls
    assert as_json["calls"][-1]["response"]["valid"] is True


def test_serve_refuses_an_open_address_without_tokens(env: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    refused = run("serve", "--host", "0.0.0.0", "--port", "1")
    assert refused.exit_code == 2
    assert "Refusing to listen on 0.0.0.0" in one_error(refused.stderr)
    monkeypatch.setenv("KAIROS_API_TOKENS", "token-without-space")
    misconfigured = run("serve", "--port", "1")
    assert misconfigured.exit_code == 2 and "KAIROS_API_TOKENS" in one_error(
        misconfigured.stderr)


def test_reindex_reports_progress_and_result(env: Path, tmp_path: Path) -> None:
    run("mint", str(three_steps_file(tmp_path)))
    result = run("reindex")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Re-embedded ") and "local:all-MiniLM" in result.stdout
    assert json.loads(run("reindex", "--json").stdout)["embedded"] >= 1


# --- export and import -------------------------------------------------------------------

def test_transfer_classifies_every_table() -> None:
    assert not set(SCOPES) & set(NOT_EXPORTED)
    assert set(SCOPES) | set(NOT_EXPORTED) == set(schema.metadata.tables)


def populate(k: Kairos) -> None:
    """Something in every exported table: protocols, a finished and an active run,
    metrics, a learned trigger, categories, an experience and a manual."""
    steps = [s["uri"] for s in k.mint(THREE_STEPS)["items"][0]["steps"]]
    k.search("set up a new project", Caller(id="agent-1"))  # learned by the run that follows
    k.search_engine.learning.flush()
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


def as_imported(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records as an import stores them: runs (and their attestations) as history, not
    proven here, taking no answers, at the first version of this store."""
    marks = {"runs": {"status": "imported", "proven": False, "nonce": None, "version": 0},
             "attestations": {"proven": False}}
    return [{"table": r["table"], "row": {**r["row"], **marks.get(r["table"], {})}}
            for r in records]


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
    imported = run("import", "--json", str(first))
    assert imported.exit_code == 0, imported.output
    report = json.loads(imported.stdout)
    assert sum(report["inserted"].values()) == len(records) and report["skipped"] == {}
    second = tmp_path / "second.jsonl"
    assert run("export", "--out", str(second)).exit_code == 0
    assert rows(second) == as_imported(records)

    # The imported records are searchable: the index was rebuilt from them.
    k2 = make_kairos(other)
    try:
        found = k2.search("project setup")
        assert found["choices"][0]["role"] == "match"
        hits = k2.search_entries({"query": "release guide", "min_score": 0.0})
        assert any(r["title"] == "Release guide" for r in hits["results"])
    finally:
        k2.close()

    again = json.loads(run("import", "--json", str(first)).stdout)
    assert again["inserted"] == {} and sum(again["skipped"].values()) == len(records)
    plain = run("import", str(first))
    assert plain.stdout.startswith("Imported into space default: nothing; kept existing: ")


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
    assert bad.exit_code == 1 and "garbage.jsonl:2: not JSON" in one_error(bad.stderr)
    assert json.loads(run("import", "--json", str(garbage)).stdout)["line"] == 2
    headless = tmp_path / "headless.jsonl"
    headless.write_text('{"table": "protocols", "row": {}}\n', "utf-8")
    refused = run("import", "--json", str(headless))
    assert refused.exit_code == 1 and json.loads(refused.stdout)["field"] == "header"
    one_error(refused.stderr)
    absent = run("import", str(tmp_path / "absent.jsonl"))
    assert absent.exit_code == 2 and one_error(absent.stderr).endswith("no such file")


# --- the verbs: list, update, delete, abort, runs, run ------------------------------------

DEPLOY = """# Deploy the service

## Build

Build the release artefacts.

PROOF OF WORK: make build

## Approve

PROOF OF WORK: user_input "Approve deployment?"

## Check

Check the health page.

PROOF OF WORK: make check
"""


def mint_text(tmp_path: Path, text: str, name: str = "doc.md") -> list[str]:
    path = tmp_path / name
    path.write_text(text, "utf-8")
    minted = run("mint", str(path))
    assert minted.exit_code == 0, minted.output
    first = minted.stdout.split("\t")[0]
    return [s["uri"] for s in json.loads(run("dump", "--json", "--protocol", first).stdout)
            ["steps"]]


def runs_json() -> list[dict[str, Any]]:
    listed = run("runs", "--json")
    assert listed.exit_code == 0, listed.output
    return list(json.loads(listed.stdout)["items"])


def test_list_pages_filters_and_json(env: Path, tmp_path: Path) -> None:
    for i, (name, task) in enumerate(zip(("alpha", "bravo", "charlie"), TASKS, strict=True)):
        mint_text(tmp_path, f"# Protocol number {i}\n\n## Only step\n\nCheck {name} and "
                            f"{name} again. {task}\n\nPROOF OF WORK: comment min_length=20\n",
                  f"p{i}.md")
    listed = run("list")
    assert listed.exit_code == 0 and listed.stderr == ""
    lines = listed.stdout.splitlines()
    assert len(lines) == 3 and all(line.startswith("kairos://mem/") for line in lines)
    assert [line.split("\t")[-1] for line in lines] == [
        "Protocol number 2", "Protocol number 1", "Protocol number 0"]  # newest first
    assert lines[0].split("\t")[1:5] == ["1", "0", "0", "0"]
    first_page = run("list", "--limit", "2")
    assert len(first_page.stdout.splitlines()) == 2
    assert "next page: --offset 2" in first_page.stderr
    assert run("list", "--limit", "2", "--offset", "2").stdout.splitlines() == lines[2:]
    assert run("list", "--title", "NUMBER 1").stdout.splitlines() == lines[1:2]
    items = json.loads(run("list", "--json").stdout)["items"]
    for tag in {t for p in items for t in p["tags"]}:
        tagged = run("list", "--tag", tag).stdout.splitlines()
        assert tagged == [line for line, p in zip(lines, items, strict=True)
                          if tag in p["tags"]]
    assert run("list", "--tag", "bravo").stdout.splitlines() == lines[1:2]
    assert run("list", "--tag", "no-such-tag").stdout == ""
    page = json.loads(run("list", "--json", "--limit", "1").stdout)
    assert page["total"] == 3 and page["has_more"] is True and len(page["items"]) == 1
    assert set(page["items"][0]) >= {"uri", "chain_label", "step_count", "stats", "tags"}
    assert set(page["items"][0]["stats"]) >= {"runs", "successes", "failures"}
    with_builtins = json.loads(run("list", "--json", "--builtin").stdout)
    assert with_builtins["total"] == 5
    assert sum(p["builtin"] for p in with_builtins["items"]) == 2
    bad = run("list", "--limit", "0")
    assert bad.exit_code == 2 and "--limit" in one_error(bad.stderr)


def test_update_a_step_from_a_file_and_delete(env: Path, tmp_path: Path) -> None:
    steps = mint_text(tmp_path, DEPLOY)
    step_file = tmp_path / "step.md"
    dumped = run("dump", steps[2])
    step_file.write_text(dumped.stdout.replace("make check", "curl -f localhost/health"),
                         "utf-8")
    updated = run("update", steps[2], str(step_file))
    assert updated.exit_code == 0, updated.output
    assert updated.stdout == f"{steps[2]}\tupdated\tshell: curl -f localhost/health\tCheck\n"
    shown = json.loads(run("dump", "--json", steps[2]).stdout)
    assert shown["challenge"]["shell"]["cmd"] == "curl -f localhost/health"
    from_stdin = run("update", "--json", steps[2], "-", input="## Verify\n\nLook at it.\n")
    assert json.loads(from_stdin.stdout)["results"][0]["label"] == "Verify"
    missing = run("update", steps[2], str(tmp_path / "absent.md"))
    assert missing.exit_code == 2 and one_error(missing.stderr).endswith("no such file")

    deleted = run("delete", steps[1])
    assert deleted.exit_code == 0 and deleted.stdout == f"{steps[1]}\tdeleted\t1 step(s) removed\n"
    assert json.loads(run("dump", "--json", steps[0]).stdout)["step_count"] == 2
    mixed = run("delete", "--protocol", steps[0], "kairos://mem/nope")
    assert mixed.exit_code == 1
    assert mixed.stdout == f"{steps[0]}\tdeleted\t2 step(s) removed\n"
    assert one_error(mixed.stderr).startswith("error: kairos://mem/nope: ")
    assert run("list", "--json").stdout.count('"uri"') == 0


def test_abort_a_run(env: Path, tmp_path: Path) -> None:
    steps = mint_text(tmp_path, DEPLOY)
    k = make_kairos(env)
    k.begin(steps[0])
    k.close()
    (active,) = runs_json()
    assert active["status"] == "active" and active["step"] == 1 and active["step_count"] == 3
    aborted = run("abort", active["run_id"], "--message", "wrong branch")
    assert aborted.exit_code == 0, aborted.output
    assert aborted.stdout == f"Run {active['run_id']} aborted at {steps[0]}: outcome failure.\n"
    (finished,) = runs_json()
    assert finished == {**finished, "status": "finished", "outcome": "failure",
                        "message": "wrong branch", "step": 1}
    again = run("abort", "--json", active["run_id"])
    assert again.exit_code == 1 and json.loads(again.stdout)["error_code"] == "CONFLICT"
    assert "already finished" in one_error(again.stderr)
    assert run("abort", "no-such-run").exit_code == 2
    k = make_kairos(env)
    try:
        assert k.metrics(steps[0])["failures"] == 1
        assert k.metrics(steps[0])["steps"][0]["failures"] == 1
    finally:
        k.close()


def test_run_with_yes_and_the_runs_table(env: Path, tmp_path: Path) -> None:
    steps = mint_text(tmp_path, DEPLOY)
    walked = run("run", steps[0], "--yes")
    assert walked.exit_code == 0, walked.output
    assert "Step 2/3: Approve" in walked.stdout
    assert walked.stdout.rstrip().splitlines()[-1].endswith("3 proofs, chain valid.")
    (finished,) = runs_json()
    assert finished["step"] == 3 and finished["step_count"] == 3  # never step 4 of 3
    assert run("runs").stdout.split("\t")[1:5] == ["finished", "success", "yes", "3/3"]
    assert run("runs", "--status", "active").stdout == ""
    assert run("runs", "--status", "nope").exit_code == 2
    as_json = run("run", steps[0], "--yes", "--json")
    assert json.loads(as_json.stdout)["verification"]["valid"] is True
    assert "Step 1/3" in as_json.stderr


def test_run_declining_a_confirmation_aborts_the_run(env: Path, tmp_path: Path) -> None:
    steps = mint_text(tmp_path, DEPLOY)
    walked = run("run", steps[0], input="0\nn\n")
    assert walked.exit_code == 1
    assert "Approve deployment?" in walked.stderr
    # (the test runner does not echo the answers typed after the prompts)
    assert walked.stderr.endswith('aborted: you declined "Approve deployment?"\n')
    assert walked.stderr.count("error: ") == 1
    (finished,) = runs_json()
    assert finished == {**finished, "status": "finished", "outcome": "failure", "step": 2,
                        "message": "Declined at step 2: Approve deployment?"}


def test_run_after_three_refused_answers_asks_a_person(env: Path, tmp_path: Path) -> None:
    steps = mint_text(tmp_path, DEPLOY)
    gave_up = run("run", steps[0], input="1\n1\n1\nn\n")
    assert gave_up.exit_code == 1
    assert "refused 3 times" in gave_up.stdout and "kairos_update" not in gave_up.output
    assert gave_up.stderr.count("error: ") == 1
    reason = gave_up.stderr.split("error: ")[1]  # the command failed, not the step
    assert "`make build` failed three times (Command failed with exit code 1.)" in reason
    assert "fix what makes it fail" in reason and "kairos update" not in reason
    (aborted,) = runs_json()
    assert aborted["outcome"] == "failure" and aborted["step"] == 1

    # Trying again after three refusals, and a refused last answer asked again.
    kept_on = run("run", steps[0], input="1\n1\n1\ny\n0\ny\n1\n0\n")
    assert kept_on.exit_code == 0, kept_on.output
    assert kept_on.stdout.count("Not accepted:") == 3
    assert kept_on.stdout.rstrip().endswith("3 proofs, chain valid.")


# --- help, errors, configuration ----------------------------------------------------------

def test_help_is_plain_and_shows_defaults() -> None:
    top = run("-h")
    assert top.exit_code == 0 and "Usage: kairos [OPTIONS] COMMAND [ARGS]..." in top.stdout
    assert "--version" in top.stdout and "..." not in top.stdout.split("Commands:")[1]
    serve = run("serve", "-h").stdout
    assert "--host HOST" in serve and "[default: KAIROS_HOST or 127.0.0.1]" in serve
    assert "--log-level LEVEL" in serve and "[default: info]" in serve
    assert "--stateless " in serve
    dump = run("dump", "--help").stdout
    assert "Usage: kairos dump [OPTIONS] URI\n" in dump
    for text in (top.stdout, serve, dump, run("delete", "-h").stdout):
        assert "<bool>" not in text and "<str>" not in text and "{" not in text
    version = run("--version")
    assert version.exit_code == 0 and version.stdout.startswith("kairos ")
    unknown = run("frobnicate")
    assert unknown.exit_code == 2 and one_error(unknown.stderr)
    assert run().exit_code == 0 and "Commands:" in run().stdout


@pytest.mark.parametrize(("variables", "named"), [
    ({"KAIROS_PORT": "abc"}, ["KAIROS_PORT='abc': expected an integer from 1 to 65535"]),
    ({"KAIROS_SEARCH_THRESHOLD": "2"}, ["KAIROS_SEARCH_THRESHOLD='2': expected a number"]),
    ({"KAIROS_EMBEDDER": "nonee", "KAIROS_SPACE": "x" * 65},
     ["KAIROS_EMBEDDER='nonee': expected local, openai or none", "KAIROS_SPACE="]),
])
def test_bad_settings_stop_every_command(env: Path, monkeypatch: pytest.MonkeyPatch,
                                         variables: dict[str, str], named: list[str]) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    for args in (["search", "deploy"], ["runs"], ["list"], ["serve"], ["mint", str(env)]):
        result = run(*args)
        assert result.exit_code == 2, (args, result.output)
        line = one_error(result.stderr)
        assert all(n in line for n in named), line
    doctor = run("doctor")
    assert doctor.exit_code == 2
    assert all(any(n in line for line in doctor.stdout.splitlines()
                   if line.startswith("problem: ")) for n in named)


def test_a_bad_config_file_is_named(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    toml = env / "kairos.toml"
    monkeypatch.setenv("KAIROS_CONFIG", str(toml))
    toml.write_text('port = "abc"\ncolour = "blue"\n', "utf-8")
    line = one_error(run("runs").stderr)
    assert f"port in {toml}='abc': expected an integer from 1 to 65535" in line
    assert f"{toml}: unknown key 'colour'" in line
    toml.write_text("[kairos]\nport = \n", "utf-8")
    broken = run("runs")
    assert broken.exit_code == 2 and f"{toml}: not a readable TOML file" in one_error(
        broken.stderr)
    toml.write_text('[kairos]\nport = 9000\nsearch_threshold = 0.4\n', "utf-8")
    report = json.loads(run("doctor", "--json").stdout)
    assert report["settings"]["port"] == {"value": 9000, "source": f"file {toml}"}


def test_doctor_warns_about_unknown_variables(env: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAIROS_EMBEDER", "none")
    result = run("doctor")
    assert result.exit_code == 0
    assert "warning: KAIROS_EMBEDER is not a KAIROS setting (ignored)" in result.stdout


def test_search_says_when_it_answered_from_text_only(env: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    run("mint", str(three_steps_file(tmp_path)))
    monkeypatch.setenv("KAIROS_EMBEDDER", "none")
    shown = run("search", "project setup")
    assert shown.exit_code == 0
    assert "note: Vector search is disabled (embedder 'none'); text search was used." \
        in shown.stderr
    assert shown.stdout.split("\t")[:1] == ["match"]
    raw = json.loads(run("search", "--json", "project setup").stdout)
    assert raw["degraded"] is True and raw["search_mode"] == "text"
    assert raw["provider"] == "none"


def test_run_ended_without_answers_records_it_as_abandoned(env: Path, tmp_path: Path) -> None:
    steps = mint_text(tmp_path, DEPLOY)
    walked = run("run", steps[0], input="")
    (abandoned,) = runs_json()
    assert walked.exit_code == 1 and abandoned["status"] == "abandoned"
    assert abandoned["outcome"] is None and not abandoned["proven"]
    assert abandoned["message"] == "Abandoned: the terminal's input ended at step 1."
    assert walked.stderr.count("error: ") == 1
    assert walked.stderr.splitlines()[-1] == (
        f"error: no input left to answer step 1 (stdin ended): run {abandoned['run_id']} "
        "recorded as abandoned; answer at a terminal, or pass --yes")
