"""The ``kairos`` command as a script uses it: a real process whose stdout is a pipe."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PG_URL

KAIROS = str(Path(sys.executable).parent / "kairos")
LONG_LINE = ('docker run -d --name db -e POSTGRES_PASSWORD="$(openssl rand -base64 32)" '
             '-e POSTGRES_DB=kairos -v /srv/postgres/data:/var/lib/postgresql/data '
             'postgres:16')
LONG_TITLE = "Rotate the database password of the production cluster without downtime"
DOC = f"""# {LONG_TITLE}

Use this when the password has leaked or is due for rotation.

## Start a database with a fresh password

PROOF OF WORK: {LONG_LINE}

## Tell the team

PROOF OF WORK: comment min_length=20
"""


@pytest.fixture
def env(home: Path) -> dict[str, str]:
    """A process environment: the test's store, text search (the model is not what these
    tests are about), and nothing else of KAIROS from the outer shell."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("KAIROS_")}
    base.update(KAIROS_HOME=str(home), KAIROS_EMBEDDER="none",
                KAIROS_CONFIG=str(home / "absent.toml"), COLUMNS="80")
    if PG_URL:
        base["KAIROS_DATABASE_URL"] = PG_URL
    return base


def kairos(env: dict[str, str], *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KAIROS, *args], env={**env, **extra}, capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)


def one_error(result: subprocess.CompletedProcess[str], code: int) -> str:
    assert result.returncode == code, result.stdout + result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    return lines[0]


def test_output_in_a_pipe_is_unwrapped_and_round_trips(env: dict[str, str],
                                                       tmp_path: Path) -> None:
    doc = tmp_path / "rotate.md"
    doc.write_text(DOC, "utf-8")
    minted = kairos(env, "mint", str(doc))
    assert minted.returncode == 0, minted.stderr
    (line,) = minted.stdout.splitlines()
    uri = line.split()[0]  # what `awk '{print $1}'` reads
    assert line == f"{uri}\tstored\t2 steps\t{LONG_TITLE}"

    dumped = kairos(env, "dump", uri, "--protocol")
    assert dumped.returncode == 0
    assert f"PROOF OF WORK: {LONG_LINE}" in dumped.stdout.splitlines()
    copy = tmp_path / "copy.md"
    copy.write_text(dumped.stdout, "utf-8")
    again = kairos(env, "mint", "--force", str(copy))
    assert again.stdout == f"{uri}\tupdated\t2 steps\t{LONG_TITLE}\n"
    assert kairos(env, "dump", uri, "--protocol").stdout == dumped.stdout
    step = json.loads(kairos(env, "dump", "--json", uri).stdout)
    assert step["challenge"]["shell"]["cmd"] == LONG_LINE

    found = kairos(env, "search", "rotate the database password")
    assert found.stdout.splitlines()[0].split("\t")[2:] == [uri, LONG_TITLE]
    assert "text search was used" in found.stderr
    listed = kairos(env, "list")
    assert listed.stdout.split("\t")[0] == uri and listed.stdout.endswith(f"{LONG_TITLE}\n")
    walked = kairos(env, "run", uri, "--yes")
    assert walked.returncode == 0, walked.stderr
    assert f"PROOF OF WORK: {LONG_LINE}" in walked.stdout.splitlines()
    run_id = kairos(env, "runs").stdout.split("\t")[0]
    assert kairos(env, "verify", run_id).stdout == f"Run {run_id}: 2 proofs, chain valid.\n"
    assert json.loads(kairos(env, "runs", "--json").stdout)["items"][0]["step"] == 2


def test_errors_are_one_line(env: dict[str, str], tmp_path: Path) -> None:
    assert one_error(kairos(env, "serve", "--port", "99999"), 2) == (
        "error: configuration: --port=99999: expected an integer from 1 to 65535")
    assert "KAIROS_PORT='abc'" in one_error(kairos(env, "doctor", KAIROS_PORT="abc"), 2)
    toml = tmp_path / "kairos.toml"
    toml.write_text('port = "abc"\nsearch_treshold = 0.5\n', "utf-8")
    line = one_error(kairos(env, "runs", KAIROS_CONFIG=str(toml)), 2)
    assert "port in" in line and "'search_treshold'" in line
    toml.write_text("port = [\n", "utf-8")
    assert "not a readable TOML file" in one_error(
        kairos(env, "list", KAIROS_CONFIG=str(toml)), 2)
    for args in (["search", "deploy"], ["doctor"]):
        line = one_error(kairos(env, *args, KAIROS_EMBEDDER="nonee"), 2)
        assert "KAIROS_EMBEDDER='nonee': expected local, openai or none" in line
    assert "KAIROS_SEARCH_THRESHOLD" in one_error(
        kairos(env, "doctor", KAIROS_SEARCH_THRESHOLD="2"), 2)
    assert "[INVALID_URI]" in one_error(kairos(env, "dump", "kairos://mem/nope"), 2)
    assert "'nope' is not a protocol step id" in one_error(kairos(env, "dump", "nope"), 2)
    statuses = "one of 'active', 'completed', 'finished', 'abandoned' or 'imported'"
    assert f"Invalid status: expected {statuses}" in one_error(
        kairos(env, "runs", "--status", "bogus"), 2)
    assert "[INVALID_INPUT]" in one_error(kairos(env, "search", ""), 2)
    assert "[NOT_FOUND]" in one_error(kairos(env, "verify", "0123abcd"), 1)
    assert "No such option" in one_error(kairos(env, "list", "--colour"), 2)
    version = kairos(env, "--version")
    assert version.returncode == 0 and version.stdout.startswith("kairos ")
    assert kairos(env, "runs", "-h").stdout.startswith("Usage: kairos runs [OPTIONS]")


def test_serve_reports_an_address_in_use_before_anything_else(env: dict[str, str]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        result = kairos(env, "serve", "--port", str(port))
    assert one_error(result, 1) == (f"error: cannot listen on 127.0.0.1:{port}: "
                                    "Address already in use")
    assert result.stdout == ""


def test_mint_reads_stdin_and_runs_pipe_in_full(env: dict[str, str]) -> None:
    piped = subprocess.run([KAIROS, "mint", "-"], env=env, input=DOC, capture_output=True,
                           text=True, timeout=60)
    assert piped.returncode == 0, piped.stderr
    (line,) = piped.stdout.splitlines()
    uri, *rest = line.split("\t")
    assert uri.startswith("kairos://mem/") and rest == ["stored", "2 steps", LONG_TITLE]
    broken = subprocess.run([KAIROS, "mint", "-"], env=env, input="no heading\n",
                            capture_output=True, text=True, timeout=60)
    assert broken.returncode == 1 and broken.stderr.startswith("error: <stdin>:1: ")
    assert kairos(env, "run", "--yes", uri).returncode == 0
    (run,) = kairos(env, "runs").stdout.splitlines()
    run_id, *cells = run.split("\t")
    assert len(run_id) == 36 and cells[:4] == ["finished", "success", "yes", "2/2"]
    assert cells[-1] == LONG_TITLE
    listed = kairos(env, "list").stdout
    assert listed.startswith(uri + "\t") and "…" not in listed


def test_what_the_environment_gets_wrong_is_one_line(env: dict[str, str],
                                                     tmp_path: Path) -> None:
    typo = kairos(env, "list", KAIROS_EMBEDDR="none")
    assert typo.returncode == 0
    assert typo.stderr.splitlines() == [
        "warning: KAIROS_EMBEDDR is not a KAIROS setting (ignored); did you mean "
        "KAIROS_EMBEDDER?", "No protocols."]
    a_file = tmp_path / "not-a-directory"
    a_file.write_text("", "utf-8")
    assert one_error(kairos(env, "list", KAIROS_HOME=str(a_file)), 2) == (
        f"error: configuration: KAIROS_HOME='{a_file}': expected a directory, but it is a "
        "file")
    # PostgreSQL without its driver (as after `pip install -e .` without the extra)
    without = subprocess.run(
        [sys.executable, "-c", "import sys; sys.modules['psycopg'] = None; "
         "from kairos.cli.main import app; app()", "list"],
        env={**env, "KAIROS_DATABASE_URL": "postgresql://kairos:secret@db:5432/kairos"},
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    line = one_error(without, 2)
    assert "pip install -e '.[postgres]'" in line and "secret" not in line
    assert line.startswith("error: configuration: KAIROS_DATABASE_URL="
                           "'postgresql://kairos:***@db:5432/kairos': PostgreSQL needs its "
                           "driver")
