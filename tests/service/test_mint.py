"""Minting: structure, challenges, tags, duplicates, force_update, and malformed input."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from sqlalchemy import func, select

from kairos.domain.caller import BUILTIN_SPACE
from kairos.domain.errors import KairosError
from kairos.service import Caller, Kairos
from kairos.store import schema
from tests.conftest import make_kairos
from tests.fakes import HashEmbedder


def _count(k: Kairos, table: str) -> int:
    with k.store.read() as repo:
        return int(repo.conn.execute(
            select(func.count()).select_from(schema.metadata.tables[table])).scalar_one())


DOC = """# Deploy the web app

Use this when shipping the web app to staging.

## Step 1 — Build

Build the image.

PROOF OF WORK: timeout 2m docker build -t app .

## 2. Push

PROOF OF WORK: docker push app

## 007 — Announce

Tell the team.
"""


def test_one_h1_is_a_protocol_and_h2s_are_steps(kairos: Kairos) -> None:
    item = kairos.mint(DOC)["items"][0]
    assert item["chain_label"] == "Deploy the web app"
    assert [s["label"] for s in item["steps"]] == ["Build", "Push", "Announce"]
    assert all(s["uri"].startswith("kairos://mem/") for s in item["steps"])
    assert item["uri"] == item["steps"][0]["uri"]
    assert "deploy" in item["tags"] and len(item["tags"]) <= 5
    build = kairos.dump(item["steps"][0]["uri"])
    assert build["challenge"]["shell"] == {"cmd": "docker build -t app .", "timeout_seconds": 120}
    assert build["content"] == "Build the image.\n\nPROOF OF WORK: timeout 2m docker build -t app ."
    push = kairos.dump(item["steps"][1]["uri"])
    assert push["challenge"]["shell"] == {"cmd": "docker push app", "timeout_seconds": 30}
    announce = kairos.dump(item["steps"][2]["uri"])
    assert announce["challenge"]["comment"] == {"min_length": 20}


def test_several_h1s_are_several_protocols(kairos: Kairos) -> None:
    doc = "# One\n\n## A\n\nx\n\n# Two\n\n## B\n\ny\n\n## C\n\nz\n"
    items = kairos.mint(doc)["items"]
    assert [(i["chain_label"], i["step_count"]) for i in items] == [("One", 1), ("Two", 2)]


def test_same_title_is_duplicate_chain_unless_force_update(kairos: Kairos) -> None:
    first = kairos.mint(DOC)["items"][0]
    with pytest.raises(KairosError) as info:
        kairos.mint(DOC.replace("Build the image.", "Build it."))
    assert info.value.code == "DUPLICATE_CHAIN"
    assert info.value.details == {"uri": first["uri"]}
    # Whitespace and case do not make a new title.
    with pytest.raises(KairosError):
        kairos.mint(DOC.replace("# Deploy the web app", "#   deploy THE web app"))
    changed = DOC.replace("Tell the team.", "Tell everyone.").replace(
        "## 2. Push\n\nPROOF OF WORK: docker push app\n\n", "")
    second = kairos.mint(changed, force_update=True)["items"][0]
    assert second["updated"] is True
    assert [s["uri"] for s in second["steps"]] == [first["steps"][0]["uri"],
                                                   first["steps"][2]["uri"]]
    assert kairos.dump(second["steps"][1]["uri"])["content"] == "Tell everyone."
    assert _count(kairos, "steps") - _builtin_steps(kairos) == 2


def _builtin_steps(k: Kairos) -> int:
    with k.store.read() as repo:
        return len(repo.all(select(schema.steps).where(schema.steps.c.space == BUILTIN_SPACE)))


def test_same_title_in_another_space_is_fine(kairos: Kairos) -> None:
    kairos.mint(DOC)
    other = kairos.mint(DOC, Caller(space="team-b"))["items"][0]
    with pytest.raises(KairosError) as info:
        kairos.dump(other["uri"])  # the default space cannot see team-b's protocol
    assert info.value.code == "NOT_FOUND"


@pytest.mark.req("D3-12")
@pytest.mark.parametrize(("doc", "code", "line", "field"), [
    ("just text, no heading", "NO_HEADING", 1, "markdown_doc"),
    ("# T\n\n## S\n\n```json\n{\"challenge\": {oops}}\n```\n", "INVALID_CHALLENGE_JSON", 6,
     "challenge"),
    ("# T\n\n## S\n\n```json\n{\"challenge\": {\"type\": \"video\"}}\n```\n",
     "UNKNOWN_CHALLENGE_TYPE", 6, "challenge.type"),
    ("# T\n\n## S\n\n```json\n{\"challenge\": {\"type\": \"shell\", \"shell\": {}}}\n```\n",
     "MISSING_CHALLENGE_FIELD", 6, "challenge.shell.cmd"),
    ("# T\n\n## S\n\n```json\n{\"challenge\": {\"type\": \"mcp\"}}\n```\n",
     "MISSING_CHALLENGE_FIELD", 6, "challenge.mcp"),
    ("# T\n\n## A\n\nok\n\n## B\n\nPROOF OF WORK: user_input\n", "MISSING_CHALLENGE_FIELD", 9,
     "challenge.user_input.prompt"),
    ("# T\n\n## S\n\nPROOF OF WORK: comment min_length=lots\n", "MISSING_CHALLENGE_FIELD", 5,
     "challenge.comment.min_length"),
    ("## Orphan\n\nx\n\n# Title\n\n## S\n\ny\n", "NO_HEADING", 1, "markdown_doc"),
])
def test_malformed_documents_name_the_problem_and_store_nothing(
        kairos: Kairos, doc: str, code: str, line: int, field: str) -> None:
    before = (_count(kairos, "protocols"), _count(kairos, "steps"))
    # A valid protocol first: the failure later in the document must roll it back too.
    with pytest.raises(KairosError) as info:
        kairos.mint("# Valid first\n\n## Fine\n\nok\n\n" + doc if doc.startswith("# ") else doc)
    err = info.value.to_dict()
    assert err["error_code"] == code
    assert err["field"] == field
    offset = 6 if doc.startswith("# ") else 0
    assert err["line"] == line + offset
    assert str(line + offset) in err["message"]
    assert (_count(kairos, "protocols"), _count(kairos, "steps")) == before


def test_oversize_document(kairos: Kairos) -> None:
    with pytest.raises(KairosError) as info:
        kairos.mint("# Big\n\n## S\n\n" + "x" * 1_000_001)
    assert info.value.to_dict()["error_code"] == "DOCUMENT_TOO_LARGE"
    assert info.value.field == "markdown_doc"


@pytest.mark.parametrize("bad", [None, "", "   ", 42, ["# T"]])
def test_markdown_doc_must_be_text(kairos: Kairos, bad: object) -> None:
    with pytest.raises(KairosError) as info:
        kairos.mint(bad)
    assert info.value.field == "markdown_doc" and info.value.status == 422


def test_two_protocols_with_one_title_in_one_document(kairos: Kairos) -> None:
    with pytest.raises(KairosError) as info:
        kairos.mint("# Same\n\n## A\n\nx\n\n# Same\n\n## B\n\ny\n")
    assert info.value.code == "DUPLICATE_CHAIN" and info.value.line == 7


class _CountingEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[int] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        return super().embed(texts)


def test_bulk_mint_embeds_once_and_keeps_each_error_to_its_own_document(home: Path) -> None:
    embedder = _CountingEmbedder()
    k = make_kairos(home, embedder)
    embedder.calls.clear()
    docs = [f"# Rotate key {name}\n\n## Rotate\n\nPROOF OF WORK: rotate-key --name {name}\n\n"
            f"## Check\n\nPROOF OF WORK: check-key --name {name}\n"
            for name in ("alpha", "bravo", "charlie")]
    results = k.mint_many([docs[0], "no heading here\n", docs[1], docs[0], docs[2]])
    assert len(embedder.calls) == 1  # one pass of the model for every draft
    assert isinstance(results[1], KairosError)
    assert isinstance(results[3], KairosError) and results[3].code == "DUPLICATE_CHAIN"
    minted = [r for r in results if isinstance(r, dict)]
    assert [r["items"][0]["chain_label"] for r in minted] == [
        "Rotate key alpha", "Rotate key bravo", "Rotate key charlie"]
    for name in ("alpha", "bravo", "charlie"):
        found = k.search(f"rotate key {name}")["choices"][0]
        assert found["role"] == "match" and found["chain_label"] == f"Rotate key {name}"
    assert k.search_engine.background.index_state()["with_vectors"] == 3
