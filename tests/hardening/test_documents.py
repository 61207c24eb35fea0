"""Documents: malformed ones are refused with the line and nothing is stored; the limits of
``domain.limits`` hold; parsing and minting stay linear in the size of the document."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy import func, select

from kairos.domain import limits
from kairos.domain.errors import KairosError
from kairos.service import Kairos
from kairos.store import schema
from tests.conftest import make_kairos


def _count(k: Kairos, table: str) -> int:
    with k.store.read() as repo:
        return int(repo.conn.execute(
            select(func.count()).select_from(schema.metadata.tables[table])).scalar_one())


def _refusal(kairos: Kairos, doc: str, **kw: object) -> dict[str, object]:
    before = (_count(kairos, "protocols"), _count(kairos, "steps"))
    with pytest.raises(KairosError) as info:
        kairos.mint(doc, **kw)  # type: ignore[arg-type]
    assert (_count(kairos, "protocols"), _count(kairos, "steps")) == before
    return info.value.to_dict()


@pytest.mark.parametrize(("doc", "code", "field", "line"), [
    ("# T\n\n## \n\n## \n", "NO_HEADING", "markdown_doc", 3),
    ("# T\n\n## S\n\nPROOF OF WORK: comment min_length=999999999999999999999999\n",
     "MISSING_CHALLENGE_FIELD", "challenge.comment.min_length", 5),
    ("# T\n\n## S\n\nPROOF OF WORK: comment min_length=10001\n",
     "MISSING_CHALLENGE_FIELD", "challenge.comment.min_length", 5),
    ("# T\n\n## S\n\nPROOF OF WORK: make\n\nPROOF OF WORK: make test\n",
     "DUPLICATE_CHALLENGE", "challenge", 7),
    ("# T\n\n## S\n\nPROOF OF WORK: timeout 10x make\n",
     "MISSING_CHALLENGE_FIELD", "challenge.shell.timeout_seconds", 5),
    ("# T\n\n## S\n\nPROOF OF WORK: timeout " + "9" * 400 + " make\n",
     "MISSING_CHALLENGE_FIELD", "challenge.shell.timeout_seconds", 5),
    ("# T\n\n## S\n\n```json\n{\"challenge\": {\"type\": \"shell\", \"shell\": {\"cmd\": \"x\","
     " \"timeout_seconds\": Infinity}}}\n```\n", "INVALID_CHALLENGE_JSON", "challenge", 6),
    ("# T\n\n## S\n\n```json\n{\"challenge\": {\"type\": \"comment\", \"comment\": "
     "{\"min_length\": 99999999}}}\n```\n", "MISSING_CHALLENGE_FIELD",
     "challenge.comment.min_length", 6),
    ("## Step one\n\nno title anywhere\n\n## Step two\n\nx\n", "NO_HEADING", "markdown_doc", 1),
    ("# T\n\n## S\n\nbad \x00 byte\n", "INVALID_INPUT", "markdown_doc", 5),
    ("# " + "t" * 201 + "\n\n## S\n\nx\n", "INVALID_INPUT", "markdown_doc", 1),
    ("# T\n\n## " + "s" * 201 + "\n\nx\n", "INVALID_INPUT", "markdown_doc", 3),
])
def test_malformed_documents_are_refused_with_the_line(
        kairos: Kairos, doc: str, code: str, field: str, line: int) -> None:
    error = _refusal(kairos, doc)
    assert (error["error_code"], error["field"], error["line"]) == (code, field, line)
    assert str(line) in str(error["message"])


def test_the_steps_limit_names_the_first_step_too_many(home: Path) -> None:
    kairos = make_kairos(home, KAIROS_MAX_STEPS="3")
    doc = "# Four\n\n" + "".join(f"## S{i}\n\nx\n\n" for i in range(4))
    error = _refusal(kairos, doc)
    assert (error["error_code"], error["line"]) == ("DOCUMENT_TOO_LARGE", 15)
    assert "at most 3 steps" in str(error["expected"])
    assert len(kairos.mint(doc.replace("## S3\n\nx\n\n", ""))["items"][0]["steps"]) == 3


def test_the_default_steps_limit(kairos: Kairos) -> None:
    doc = "# Many\n\n" + "".join(f"## S{i}\n\nx\n\n" for i in range(limits.Limits().steps + 1))
    assert _refusal(kairos, doc)["error_code"] == "DOCUMENT_TOO_LARGE"


# --- linear time ---------------------------------------------------------------------------

PATHOLOGICAL = {
    "spaces in a heading": "# T\n\n## a" + " " * 300_000 + "b\n\nx\n",
    "spaces after a proof line": "# T\n\n## S\n\nPROOF OF WORK: make" + " " * 300_000 + "x\n",
    "blank lines in a step": "# T\n\n## S\n" + "\n" * 300_000 + "x\n",
    "unclosed link brackets": "# T\n\n## S\n\n" + "[" * 300_000 + "\n",
    "unclosed link targets": "# T\n\n## S\n\n" + "[a](" * 75_000 + "\n",
    "unclosed json fences": "# T\n\n## S\n\n" + "```json {\n" * 30_000 + "x\n",
    "proof prefixes": "# T\n\n## S\n\n" + "- - proof of wor\n" * 30_000 + "x\n",
}


def _minting(kairos: Kairos, doc: str) -> float:
    """Wall seconds to mint ``doc`` (or to have it refused), the best of three."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        try:
            kairos.mint(doc, force_update=True)  # type: ignore[arg-type]
        except KairosError as exc:  # a heading that long is refused, quickly
            assert exc.code == "INVALID_INPUT"
        best = min(best, time.perf_counter() - started)
    return best


@pytest.mark.parametrize("doc", PATHOLOGICAL.values(), ids=PATHOLOGICAL.keys())
def test_pathological_documents_mint_in_linear_time(kairos: Kairos, doc: str) -> None:
    """Four times the document costs about four times a quarter of it, measured in the
    same run (so a loaded machine slows both); a quadratic path would cost sixteen."""
    assert _minting(kairos, doc) < 10 * _minting(kairos, doc[: len(doc) // 4])


def test_a_thousand_steps_mint_in_linear_time(home: Path) -> None:
    """A thousand steps cost about ten times a hundred (the time outside the model)."""
    kairos = make_kairos(home, KAIROS_EMBEDDER="none", KAIROS_MAX_STEPS="1000")

    def doc(n: int) -> str:
        return f"# Big {n}\n\n" + "".join(
            f"## Step {i} do {i}\n\nRun thing {i}.\n\nPROOF OF WORK: timeout 30s echo {i}\n\n"
            for i in range(n))

    assert kairos.mint(doc(1000))["items"][0]["step_count"] == 1000
    assert _minting(kairos, doc(1000)) < 30 * _minting(kairos, doc(100))
