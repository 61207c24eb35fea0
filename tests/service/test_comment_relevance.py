"""COMMENT_IRRELEVANT works against the embedder interface and is skipped without vectors."""

from __future__ import annotations

from pathlib import Path

import pytest

from kairos.service import Kairos
from tests.conftest import make_kairos
from tests.fakes import HashEmbedder

DOC = """# Security review

## Read the checklist

Read the security checklist and verify the three items on it.

PROOF OF WORK: comment min_length=20

## Done

Finished.
"""
RELEVANT = "I read the security checklist and verified the three items."
UNRELATED = "Bananas are yellow fruit grown in warm tropical places."


def _service(home: Path, embedder: HashEmbedder) -> Kairos:
    return make_kairos(home, embedder)


def _answer(k: Kairos, text: str) -> dict:
    uris = [s["uri"] for s in k.mint(DOC, force_update=True)["items"][0]["steps"]]
    ch = k.begin(uris[0])["challenge"]
    return k.next(uris[1], {"type": "comment", "nonce": ch["nonce"],
                            "proof_hash": ch["proof_hash"], "comment": {"text": text}})


@pytest.mark.req("S003-6")
def test_unrelated_comment_is_refused_with_vectors(home: Path) -> None:
    k = _service(home, HashEmbedder())
    response = _answer(k, UNRELATED)
    assert response["error_code"] == "COMMENT_IRRELEVANT"
    assert response["retry_count"] == 1 and response["must_obey"] is True
    assert "error_code" not in _answer(k, RELEVANT)


def test_relevance_is_skipped_when_vectors_are_unavailable(home: Path) -> None:
    k = _service(home, HashEmbedder(ready=False))
    assert "error_code" not in _answer(k, UNRELATED)


def test_relevance_is_skipped_with_the_none_provider(home: Path) -> None:
    k = make_kairos(home, KAIROS_EMBEDDER="none")
    assert not k.search_engine.vectors_ready
    assert "error_code" not in _answer(k, UNRELATED)


def test_short_comment_fails_before_relevance(home: Path) -> None:
    k = _service(home, HashEmbedder())
    assert _answer(k, "bananas")["error_code"] == "COMMENT_TOO_SHORT"
