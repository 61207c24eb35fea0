"""The ``kairos`` command at a real terminal (a pseudo-terminal of a set width): tables fit
the window without wrapping, ids are short and accepted back, and ``kairos run`` asks a
person sensible questions."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from rich.cells import cell_len

from tests.conftest import PG_URL
from tests.surfaces.terminal import Screen, in_terminal

LONG_TITLE = "Back up the PostgreSQL database of the orders service to S3 every night"
DOC = f"""# {LONG_TITLE}

Use this before any schema change.

## Dump the database

PROOF OF WORK: pg_dump --format=custom --file=/srv/backups/orders.dump orders

## Upload the dump

PROOF OF WORK: aws s3 cp /srv/backups/orders.dump s3://backups/orders/

## Confirm

PROOF OF WORK: user_input "Is the dump in the bucket?"
"""
SHORT = re.compile(r"^[0-9a-f]{8}$")


@pytest.fixture
def env(home: Path, tmp_path: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items()
            if not k.startswith("KAIROS_") and k not in ("COLUMNS", "LINES")}
    base.update(KAIROS_HOME=str(home), KAIROS_EMBEDDER="none",
                KAIROS_CONFIG=str(home / "absent.toml"), TERM="xterm")
    if PG_URL:
        base["KAIROS_DATABASE_URL"] = PG_URL
    (tmp_path / "backup.md").write_text(DOC, "utf-8")
    return base


def table(screen: Screen, header: str) -> list[str]:
    """The lines of the table whose header starts with ``header``."""
    lines = screen.lines
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


def fits(lines: list[str], width: int) -> None:
    assert lines and all(cell_len(line) <= width for line in lines), lines


def minted(env: dict[str, str], tmp_path: Path) -> str:
    screen = in_terminal(env, "mint", str(tmp_path / "backup.md"))
    assert screen.code == 0, screen.text
    rows = table(screen, "id ")
    assert rows[0].split() == ["id", "result", "steps", "protocol"]
    sid = rows[1].split()[0]
    assert SHORT.match(sid) and "kairos://" not in screen.text
    return sid


def test_tables_fit_80_columns_and_give_the_title_the_room(env: dict[str, str],
                                                           tmp_path: Path) -> None:
    sid = minted(env, tmp_path)
    walked = in_terminal(env, "run", "--yes", sid)
    assert walked.code == 0, walked.text
    assert f"Step 1/3: Dump the database  ({sid})" in walked.lines  # short ids here too
    assert "kairos://mem/" not in walked.text
    in_terminal(env, "run", sid, answers="0\n")  # input ends at step 2: abandoned

    listed = table(in_terminal(env, "list"), "id ")
    fits(listed, 80)
    assert len(listed) == 2  # one line per protocol: nothing wraps
    cells = listed[1].split()
    assert cells[:5] == [sid, "3", "2", "1", "0"] and re.match(r"\d{4}-\d\d-\d\d$", cells[5])
    title = listed[1].split(cells[5], 1)[1].strip()
    assert len(title) >= 30 and LONG_TITLE.startswith(title.rstrip("…"))

    runs = table(in_terminal(env, "runs"), "run ")
    fits(runs, 80)
    assert runs[0].split() == ["run", "status", "outcome", "proven", "step", "updated",
                               "protocol"]
    assert [r.split()[1:5] for r in runs[1:]] == [["abandoned", "-", "no", "2/3"],
                                                   ["finished", "success", "yes", "3/3"]]
    assert all(SHORT.match(r.split()[0]) for r in runs[1:])
    assert all("Back up the PostgreSQL" in r for r in runs[1:])

    found = table(in_terminal(env, "search", "back up the orders database"), "role ")
    fits(found, 80)
    assert found[1].split()[2] == sid

    doctor = in_terminal(env, "doctor").lines
    settings = doctor[:next(i for i, line in enumerate(doctor) if line.startswith("config"))]
    fits(settings, 80)
    assert settings[0].split() == ["setting", "value", "source"]

    wide = table(in_terminal(env, "list", columns=130), "id ")
    assert wide[1].endswith(LONG_TITLE) and re.search(r"\d\d:\d\d  ", wide[1])
    narrow = table(in_terminal({**env, "COLUMNS": "80"}, "list", columns=200), "id ")
    fits(narrow, 80)  # COLUMNS wins over the window, as in any shell


def test_short_ids_are_accepted_back(env: dict[str, str], tmp_path: Path) -> None:
    sid = minted(env, tmp_path)
    dumped = in_terminal(env, "dump", sid)
    assert dumped.code == 0 and dumped.lines[0] == "## Dump the database"
    in_terminal(env, "run", "--yes", sid)
    run_id = table(in_terminal(env, "runs"), "run ")[1].split()[0]
    verified = in_terminal(env, "verify", run_id)
    assert verified.code == 0 and verified.text.endswith("3 proofs, chain valid.\n")
    both = in_terminal(env, "dump", "00000000")  # the two built-ins' step 1 start alike
    assert both.code == 2
    assert both.lines[-1] == ("error: 00000000 starts 2 protocol step ids; give more "
                              "characters of the one you mean. [INVALID_INPUT]")
    none = in_terminal(env, "verify", "abcdef12")
    assert none.code == 1 and "No run id starts with abcdef12" in none.text


def test_a_person_at_the_terminal(env: dict[str, str], tmp_path: Path) -> None:
    sid = minted(env, tmp_path)
    # Enter alone at the confirmation does not decline it: it asks again.
    walked = in_terminal(env, "run", sid, answers="0\n0\n\n\ny\n")
    assert walked.code == 0, walked.text
    assert walked.text.count("Is the dump in the bucket? [y/n]:") == 3
    assert walked.text.count("Answer y or n.") == 2
    assert walked.lines[-1].endswith("3 proofs, chain valid.")

    ended = in_terminal(env, "run", sid, answers="0\n")  # then the input ends
    assert ended.code == 1
    shown = re.search(r"^Run ([0-9a-f]{8}):", ended.text, re.MULTILINE)
    said = re.fullmatch(r"error: no input left to answer step 2 \(stdin ended\): run "
                        r"([0-9a-f-]{36}) recorded as abandoned; answer at a terminal, or "
                        r"pass --yes", ended.lines[-1])
    assert shown and said and said.group(1).startswith(shown.group(1))
    runs = table(in_terminal(env, "runs"), "run ")
    assert runs[1].split()[:3] == [shown.group(1), "abandoned", "-"]
