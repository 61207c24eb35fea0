"""Ranking, pure: evidence in, scores out — driven here with evidence made up in memory,
no store and no model."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Collection

from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.domain import matching
from kairos.search import ranking
from kairos.store.text_index import Terms

Text = namedtuple("Text", "rid kind title labels body")
TITLES = ["Renew TLS certificates", "Clean full disks", "Rotate signing keys",
          "Restart the web tier", "Page the on-call engineer"]


class Texts:
    """``ranking.TextsOf`` over records held in memory; it remembers what it was asked."""

    def __init__(self, n: int, gone: Collection[int] = ()) -> None:
        self.records = {rid: Text(rid, "experience", TITLES[rid % len(TITLES)], "",
                                  f"step {rid}: {TITLES[rid % len(TITLES)].lower()}")
                        for rid in range(n) if rid not in gone}
        self.asked: list[tuple[set[int], bool]] = []

    def __call__(self, rids: Collection[int], lexical: bool) -> list[Text]:
        self.asked.append((set(rids), lexical))
        return [self.records[r] for r in sorted(rids) if r in self.records]


def _terms(query: str, n: int) -> Terms:
    words = tuple(query.lower().split())
    return Terms(words, tuple(1 for _ in words), n, n)


evidence = st.integers(1, 240).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.floats(-0.2, 1.0), min_size=n, max_size=n),
    st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n)))


@settings(max_examples=60, deadline=None)
@given(evidence, st.sampled_from([None, 0.0, 0.3, 0.9]), st.booleans())
def test_scores_are_bounded_and_the_candidates_read(case: tuple[int, list[float], list[float]],
                                                    floor: float | None, text: bool) -> None:
    n, dense, texts = case
    reader = Texts(n)
    found = ranking.score("renew tls certificates", "experience", dict(enumerate(dense)),
                          dict(enumerate(texts)) if text else None,
                          _terms("renew tls certificates", n) if text else None, n, floor,
                          False, reader)
    assert set(found.scores) == set(found.evidence) <= set(found.titles)
    if floor is None:
        assert len(found.scores) == min(n, ranking.CANDIDATES)
    if floor == 0.0:
        assert len(found.scores) == n  # every candidate can score 0
    assert all(0.0 <= s.score <= 1.0 for s in found.scores.values())
    if text:  # the first read is the lexical pool's
        first, lexical = reader.asked[0]
        assert lexical and len(first) <= ranking.LEXICAL_POOL + ranking.LEXICAL_TEXT
    else:  # no words asked: titles only
        assert not any(lexical for _, lexical in reader.asked)


def test_a_record_gone_since_the_indexes_were_read_is_dropped() -> None:
    dense = {0: 0.9, 1: 0.8, 2: 0.1}
    found = ranking.score("renew tls certificates", "experience", dense, None, None, 3, None,
                          False, Texts(3, gone={1}))
    assert set(found.scores) == {0, 2}


def test_the_title_asked_for_scores_first_and_hits_come_best_first() -> None:
    dense = {0: 0.60, 1: 0.62, 2: 0.61}
    texts = {0: 0.5, 1: 0.5, 2: 0.5}
    query = TITLES[0]
    found = ranking.score(query, "experience", dense, texts, _terms(query, 3), 3, None,
                          False, Texts(3))
    rows = [{"rid": r, "kind": "experience", "entity_id": f"e{r}", "title": TITLES[r]}
            for r in found.scores]
    hits = ranking.hits(found, rows)
    assert hits[0].entity_id == "e0"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_outcomes_move_a_protocols_score_but_never_across_its_anchor() -> None:
    dense = {0: 0.7, 1: 0.3}
    found = ranking.score("restart web", "protocol", dense, None, None, 2, None, True,
                          Texts(2))
    plain = ranking.hits(found, [{"rid": 1, "kind": "protocol", "entity_id": "p1",
                                  "title": "x"}])[0]
    proven = ranking.hits(found, [{"rid": 1, "kind": "protocol", "entity_id": "p1",
                                   "title": "x", "successes": 20, "failures": 0}])[0]
    assert proven.outcomes == matching.Outcomes(20, 0)
    assert proven.score >= plain.score
    assert (proven.score >= proven.evidence.anchor) == (plain.score >= plain.evidence.anchor)


def test_two_families_merge_best_first_with_both_contexts() -> None:
    made = {}
    for family, kind in ((True, "protocol"), (False, "experience")):
        found = ranking.score("rotate keys", kind, {0: 0.5, 1: 0.9}, None, None, 2, None,
                              False, Texts(2))
        hits = ranking.hits(found, [{"rid": r, "kind": kind, "entity_id": f"{kind}{r}",
                                     "title": TITLES[r]} for r in found.scores])
        made[family] = ranking.Ranked(hits, "hybrid", False, None,
                                      contexts={family: found.context})
    both = ranking.merged(made[True], made[False], None)
    assert len(both.hits) == 4 and set(both.contexts) == {True, False}
    assert [ranking.order(h) for h in both.hits] == sorted(ranking.order(h) for h in both.hits)
