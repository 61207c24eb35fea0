"""The match rule: relevance apart from which candidates to show, scores in [0, 1]."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.domain import matching, scoring
from kairos.domain.lexical import Lexical
from kairos.domain.matching import HYBRID, Candidate, Context, Evidence, expected_max

ANCHOR = scoring.MATCH_THRESHOLD


def _scores(dense: list[float], *, n_docs: int = 48, noise: bool = False,
            exact: int | None = None) -> list[matching.Scored]:
    cands = [Candidate(Evidence(d, 0.0, Lexical(informative=1)), ANCHOR, i == exact)
             for i, d in enumerate(dense)]
    ranked = sorted(dense, reverse=True)
    context = Context(HYBRID, ranked[0], ranked[min(9, len(ranked) - 1)], n_docs, noise)
    return matching.score(cands, context)


def test_the_expected_best_of_many_unrelated_documents_grows_with_the_store() -> None:
    values = [expected_max(n) for n in (1, 2, 10, 48, 4613, 50_000)]
    assert values[0] == 0.0 and values == sorted(values)
    assert math.isclose(expected_max(50), 2.25, abs_tol=0.02)


def test_nothing_matches_when_nothing_is_relevant() -> None:
    found = _scores([0.15, 0.12, 0.10] + [0.05] * 20)
    assert not any(s.match for s in found)
    assert all(s.relevance < HYBRID.boundary for s in found)


def test_the_same_evidence_is_relevant_in_a_small_store_and_not_in_a_large_one() -> None:
    """The best of 50,000 unrelated documents lies higher than the best of 48."""
    dense = [0.38] + [0.10] * 20
    assert _scores(dense, n_docs=48)[0].match
    assert not _scores(dense, n_docs=50_000)[0].match


def test_candidates_close_to_a_relevant_top_are_shown_and_far_ones_are_not() -> None:
    found = _scores([0.80, 0.78, 0.35] + [0.05] * 20)
    assert found[0].match and found[1].match and not found[2].match
    assert found[0].score >= found[1].score > found[2].score
    # at the boundary the strongest scores the anchor: the threshold means the boundary
    at_boundary = Context(HYBRID, None, None, 1)
    assert math.isclose(at_boundary.confidence(HYBRID.boundary), 0.0)
    assert found[0].relevance > HYBRID.boundary


def test_a_rare_word_found_is_evidence_whatever_the_store_size() -> None:
    """The chance term lowers what the cosines say, not the lexical evidence: a record
    holding the query's one rare word is relevant in a large store even when the model
    has no cosine for the word."""
    rare = Lexical(0.0, 1.0, 1.0, 1)
    for n_docs in (48, 5_000, 50_000):
        found = matching.score([Candidate(Evidence(0.0, 0.3, rare), ANCHOR),
                                Candidate(Evidence(0.30, 0.0, Lexical(informative=1)), ANCHOR)],
                               Context(HYBRID, 0.30, 0.25, n_docs))
        assert found[0].match and found[0].score >= found[1].score, n_docs


def test_a_query_of_noise_matches_nothing_even_with_a_close_cosine() -> None:
    assert not any(s.match for s in _scores([0.6, 0.5] + [0.05] * 20, noise=True))


def test_only_a_title_scores_one() -> None:
    found = _scores([0.99, 0.99] + [0.05] * 20, exact=1)
    assert found[1].score == scoring.EXACT_TITLE_SCORE
    assert round(found[0].score, 2) < 1.0


def test_why_says_what_decided() -> None:
    found = _scores([0.80, 0.78, 0.35] + [0.05] * 20)
    context = Context(HYBRID, 0.80, 0.05, 48)
    assert matching.why(found[0], context, ANCHOR).startswith("listed: the query is relevant")
    assert "below the strongest" in matching.why(found[2], context, ANCHOR)
    off = _scores([0.15] + [0.05] * 20)
    assert "nothing here is relevant" in matching.why(off[0], Context(HYBRID, 0.15, 0.05, 48),
                                                      ANCHOR)
    assert "random" in matching.why(off[0], Context(HYBRID, 0.15, 0.05, 48, True), ANCHOR)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(min_value=-0.2, max_value=1.0), min_size=1, max_size=30),
       st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=30),
       st.integers(min_value=1, max_value=100_000), st.booleans())
def test_scores_are_confidences_in_zero_one_ordered_by_strength(
        dense: list[float], text: list[float], n_docs: int, noise: bool) -> None:
    n = min(len(dense), len(text))
    cands = [Candidate(Evidence(d, x, Lexical(x, x, x, 2)), ANCHOR)
             for d, x in zip(dense[:n], text[:n], strict=True)]
    ranked = sorted(dense[:n], reverse=True)
    found = matching.score(cands, Context(HYBRID, ranked[0], ranked[-1], n_docs, noise))
    assert all(0.0 <= s.score <= matching.MAX_SCORE for s in found)
    by_strength = sorted(found, key=lambda s: -s.strength)
    assert [s.score for s in by_strength] == sorted((s.score for s in found), reverse=True)
    assert all(s.match == (s.score >= ANCHOR) for s in found)
    if any(s.match for s in found):  # a match only when the strongest is relevant
        assert by_strength[0].relevance >= HYBRID.boundary and not noise
