"""What a score means: an exact title wins, and a title-level match of a knowledge entry
clears the unified search's default ``min_score`` (the real local model)."""

from __future__ import annotations

from pathlib import Path

from kairos.domain.scoring import EXACT_TITLE_SCORE, MATCH_THRESHOLD
from tests.conftest import make_kairos

RULES = "# {title}\n\n## Read the rules\n\nRead the coding rules before writing code.\n"


def test_a_query_that_is_a_title_ranks_that_protocol_first(home: Path) -> None:
    k = make_kairos(home)
    for title in ("AI CODING RULES 2026-11-20T10:00", "AI CODING RULES 2026-11-21T09:30",
                  "AI CODING RULES"):
        k.mint(RULES.format(title=title), force_update=True)
    for query in ("AI CODING RULES", "ai coding rules.", "  AI   coding RULES "):
        matches = [c for c in k.search(query)["choices"] if c["role"] == "match"]
        assert matches[0]["chain_label"] == "AI CODING RULES", query
        assert matches[0]["score"] >= EXACT_TITLE_SCORE
        assert all(c["score"] < matches[0]["score"] for c in matches[1:])
        assert len(matches) == 3  # the timestamped ones still match, below it


def test_a_title_match_is_not_invented_for_other_queries(home: Path) -> None:
    k = make_kairos(home)
    k.mint(RULES.format(title="AI CODING RULES"))
    choices = k.search("bake sourdough bread")["choices"]
    assert all(c["role"] != "match" or c["score"] < MATCH_THRESHOLD for c in choices)
def test_title_level_matches_of_entries_clear_the_default_min_score(home: Path) -> None:
    k = make_kairos(home)
    for title, playbook in (
            ("Flaky pytest in CI", "Tests that pass locally fail on the CI runner one time "
                                   "in five; pin the random seed and isolate the temp dirs."),
            ("Release runbook", "Tag the commit, build the wheel, upload it and announce "
                                "the version in the changelog."),
            ("Rotate database passwords quarterly", "Rotate the password every quarter and "
                                                    "restart the workers.")):
        k.write_entry({"entity_type": "experience", "category": "coding", "title": title,
                       "playbook": playbook, "author": "ana"})
    for query, title in (("flaky tests", "Flaky pytest in CI"),
                         ("release process", "Release runbook")):
        response = k.search_entries({"query": query})
        assert response["results"], (query, response["top_score"])
        assert response["results"][0]["title"] == title
        assert response["top_score"] >= response["min_score"]
    assert not k.search_entries({"query": "bake sourdough bread"})["results"]
