"""COMMENT_IRRELEVANT: a comment must report its step (``domain.relevance``). The verdict
is the same whatever search provider is configured or reachable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kairos.domain import doctext, relevance
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
RELEVANT = "Went through SECURITY.md: 2FA, key rotation and backups are all in place."
PARROT = "I read the security checklist and verified the three items."
FILLER = "Step completed successfully as instructed."


def _answer(k: Kairos, text: str) -> dict[str, Any]:
    uris = [s["uri"] for s in k.mint(DOC, force_update=True)["items"][0]["steps"]]
    ch = k.begin(uris[0])["challenge"]
    return k.next(uris[1], {"type": "comment", "nonce": ch["nonce"],
                            "proof_hash": ch["proof_hash"], "comment": {"text": text}})


@pytest.mark.req("S003-6")
@pytest.mark.parametrize("provider", ["fake", "fake-down", "none"])
def test_verdicts_do_not_depend_on_the_search_provider(home: Path, provider: str) -> None:
    k = (make_kairos(home, KAIROS_EMBEDDER="none") if provider == "none"
         else make_kairos(home, HashEmbedder(ready=provider == "fake")))
    for filler in (PARROT, FILLER):
        refused = _answer(k, filler)
        assert refused["error_code"] == "COMMENT_IRRELEVANT"
        assert refused["retry_count"] == 1 and refused["must_obey"] is True
        assert "does not say what was done" in refused["message"]
    assert "error_code" not in _answer(k, RELEVANT)


def test_the_step_text_leaves_the_challenge_line_out() -> None:
    content = "Summarize what you learned from this step.\n\nPROOF OF WORK: comment min_length=20"
    prose = doctext.step_prose("Reflect", content)
    assert "PROOF" not in prose and "min_length" not in prose
    assert prose == "Reflect. Summarize what you learned from this step"


@pytest.mark.parametrize(("comment", "step", "refused"), [
    # the contract's own example answer to a reflection step
    ("I reviewed the security checklist and verified all three items.",
     "Summarize what you learned from this step.", False),
    ("Fixed the login crash by checking for a missing session before using it.",
     "Write down what the hotfix changes and why.", False),
    ("Done as described: the hotfix changes are written down.",
     "Write down what the hotfix changes and why.", True),
    ("Created ./build (exit code 0).", "Create the build directory.", False),
])
def test_reports_pass_and_filler_does_not(comment: str, step: str, refused: bool) -> None:
    prose = doctext.step_prose("Step", step + "\n\nPROOF OF WORK: comment min_length=20")
    assert relevance.refuses(comment, prose) is refused


def test_short_comment_fails_before_relevance(home: Path) -> None:
    k = make_kairos(home, HashEmbedder())
    assert _answer(k, "bananas")["error_code"] == "COMMENT_TOO_SHORT"
