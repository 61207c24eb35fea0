"""The pure scoring functions: range, monotonicity, the outcome boost's bounds and its
three-run rule, and the match threshold on a tiny synthetic store (real SQLite FTS5)."""

from __future__ import annotations

import itertools
import math
import sqlite3

import numpy as np
import pytest

from kairos.domain import doctext, matching, scoring
from kairos.domain.lexical import words
from kairos.domain.matching import HYBRID, TEXT_ONLY, Candidate, Context, Evidence
from kairos.domain.scoring import MATCH_THRESHOLD

UNRELATED = "xyzqwerty nonexistent protocol foobar"


def test_dense_evidence_is_the_best_cosine() -> None:
    assert scoring.dense_of(np.array([0.2, 0.7, -0.1], dtype=np.float32)) == pytest.approx(0.7)
    assert scoring.dense_of(np.array([], dtype=np.float32)) == 0.0


def test_dense_segments_scores_each_document_from_its_own_vectors_only() -> None:
    rng = np.random.default_rng(7)
    sizes = np.array([1, 2, 3, 6, 4, 1])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    cosines = rng.uniform(-0.2, 0.9, int(sizes.sum())).astype(np.float32)
    together = scoring.dense_segments(cosines, starts, sizes)
    alone = [scoring.dense_of(cosines[s:s + n]) for s, n in zip(starts, sizes, strict=True)]
    assert together == pytest.approx(alone, abs=1e-6)


def test_fts5_idf_matches_sqlite_formula_and_floor() -> None:
    assert math.isclose(scoring.fts5_idf(100, 9), math.log(91.5 / 9.5))
    assert scoring.fts5_idf(10, 5) == 1e-6  # log(1) = 0 -> FTS5's floor
    assert scoring.fts5_idf(10, 9) == 1e-6
    assert scoring.fts5_idf(10, 0) > scoring.fts5_idf(10, 1)


def test_text_evidence_is_bm25_over_its_ceiling() -> None:
    ceiling = scoring.bm25_ceiling([2.0, 1.0])
    assert math.isclose(ceiling, 3.0 * (scoring.BM25_K1 + 1))
    assert math.isclose(scoring.text_evidence(-3.3, ceiling), 0.5)  # FTS5 sign
    assert math.isclose(scoring.text_evidence(3.3, ceiling), 0.5)
    assert scoring.text_evidence(-100.0, ceiling) == 1.0
    assert scoring.text_evidence(-1.0, 0.0) == 0.0
    arr = scoring.text_evidence(np.array([0.0, -3.3, -99.0]), ceiling)
    assert np.allclose(arr, [0.0, 0.5, 1.0])


# --- the outcome boost -----------------------------------------------------------------------

def test_boost_needs_three_runs() -> None:
    for s, f in [(0, 0), (1, 0), (0, 1), (2, 0), (0, 2), (1, 1)]:
        assert scoring.outcome_boost(s, f) == 0.0
    assert scoring.outcome_boost(3, 0) > 0.0
    assert scoring.outcome_boost(0, 3) < 0.0
    assert scoring.outcome_boost(2, 1) > 0.0
    assert scoring.outcome_boost(1, 2) < 0.0


def test_boost_is_bounded() -> None:
    for s, f in itertools.product([0, 1, 3, 10, 100, 10**6], repeat=2):
        assert abs(scoring.outcome_boost(s, f)) < scoring.MAX_OUTCOME_BOOST
    assert scoring.MAX_OUTCOME_BOOST <= 0.05
    assert scoring.outcome_boost(10**6, 0) > 0.99 * scoring.MAX_OUTCOME_BOOST


def test_boost_is_monotone_from_three_runs_on() -> None:
    for s, f in itertools.product(range(0, 30), repeat=2):
        if s + f < scoring.MIN_RUNS:
            continue
        assert scoring.outcome_boost(s + 1, f) > scoring.outcome_boost(s, f)
        assert scoring.outcome_boost(s, f + 1) < scoring.outcome_boost(s, f)


def test_boost_ignores_negative_counts() -> None:
    assert scoring.outcome_boost(-5, 0) == 0.0
    assert scoring.outcome_boost(3, -2) == scoring.outcome_boost(3, 0)


def test_boost_never_crosses_the_match_threshold() -> None:
    big = scoring.MAX_OUTCOME_BOOST
    assert scoring.apply_outcome_boost(MATCH_THRESHOLD - 0.01, big) == MATCH_THRESHOLD - 0.01
    assert scoring.apply_outcome_boost(MATCH_THRESHOLD + 0.01, -big) == MATCH_THRESHOLD
    assert scoring.apply_outcome_boost(0.6, big) == pytest.approx(0.6 + big)
    assert scoring.apply_outcome_boost(0.6, -big) == pytest.approx(0.6 - big)
    assert scoring.apply_outcome_boost(0.99, big) == 1.0
    for score in np.linspace(0, 1, 41):
        for boost in (-big, 0.0, big):
            out = scoring.apply_outcome_boost(float(score), boost)
            assert 0.0 <= out <= 1.0
            assert (out >= MATCH_THRESHOLD) == (score >= MATCH_THRESHOLD)


# --- the threshold on a tiny store -----------------------------------------------------------

PROTOCOLS = {
    "deploy-frontend": ("Deploy the frontend", ["Build the production bundle",
                                                 "Upload the bundle to the CDN bucket",
                                                 "Invalidate the CDN cache"],
                        ["npm run build", "aws s3 sync dist/ s3://site", "aws cloudfront"]),
    "rotate-keys": ("Rotate API keys", ["Create a new API key", "Update the secret store",
                                        "Revoke the old key"],
                    ["keyctl new", "vault kv put secret/api key=...", "keyctl revoke"]),
    "backup-db": ("Back up the database", ["Dump the PostgreSQL database",
                                           "Compress the dump", "Copy it off-site"],
                  ["pg_dump app > app.sql", "gzip app.sql", "rclone copy app.sql.gz remote:"]),
}


def _text_evidence(query: str) -> dict[str, float] | None:
    """Text evidence per protocol from a real FTS5 table built from doctext's columns."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE doc USING fts5(name UNINDEXED, title, labels, contents, "
               "tokenize='porter unicode61 remove_diacritics 2')")
    for name, (title, labels, contents) in PROTOCOLS.items():
        d = doctext.document(title, "", list(zip(labels, contents, strict=True)))
        db.execute("INSERT INTO doc VALUES (?,?,?,?)", (name, d.title, d.labels, d.body))
    terms = doctext.query_terms(query)
    match = doctext.fts5_match(terms)
    if match is None:
        return None
    n = len(PROTOCOLS)
    idfs = [scoring.fts5_idf(n, db.execute("SELECT count(*) FROM doc WHERE doc MATCH ?",
                                           (doctext.fts5_match([t]),)).fetchone()[0])
            for t in terms]
    ceiling = scoring.bm25_ceiling(idfs)
    w = ", ".join(["0", *(str(x) for x in scoring.BM25_COLUMN_WEIGHTS)])
    rows = db.execute(f"SELECT name, bm25(doc, {w}) FROM doc WHERE doc MATCH ?", (match,))
    out = dict.fromkeys(PROTOCOLS, 0.0)
    out.update({name: float(scoring.text_evidence(bm, ceiling)) for name, bm in rows})
    return out


def test_bm25_never_exceeds_its_ceiling() -> None:
    for query in ("deploy the frontend bundle to the cdn", "bundle bundle cdn cache",
                  "rotate keys", "database dump", UNRELATED):
        ev = _text_evidence(query)
        assert ev is not None
        assert all(0.0 <= v < 1.0 for v in ev.values())


def _scores(query: str, cosines: dict[str, float] | None) -> dict[str, float]:
    """The scores of the three protocols for ``query``, with these cosines (None: text
    alone), their text evidence and lexical evidence from a real FTS5 table."""
    ev = _text_evidence(query)
    assert ev is not None
    terms = doctext.query_terms(query)
    db_counts = [sum(all(w in " ".join([t, *ls, *cs]).lower() for w in [term])
                     for t, ls, cs in PROTOCOLS.values()) for term in terms]
    asked = words(terms, db_counts, len(PROTOCOLS))
    names = list(PROTOCOLS)
    cands = []
    for name in names:
        title, labels, contents = PROTOCOLS[name]
        lex = asked.of(*asked.holds(title, " ".join(labels + contents)))
        cands.append(Candidate(Evidence(None if cosines is None else cosines[name], ev[name],
                                        lex), MATCH_THRESHOLD))
    ranked = sorted((cosines or {}).values(), reverse=True)
    context = Context(TEXT_ONLY if cosines is None else HYBRID,
                      ranked[0] if ranked else None, ranked[-1] if ranked else None,
                      len(PROTOCOLS))
    return {n: s.score for n, s in zip(names, matching.score(cands, context), strict=True)}


def test_unrelated_query_matches_nothing_in_every_mode() -> None:
    assert max(_scores(UNRELATED, None).values()) < MATCH_THRESHOLD
    unrelated = dict.fromkeys(PROTOCOLS, 0.10)  # MiniLM cosines of unrelated texts
    assert max(_scores(UNRELATED, unrelated).values()) < MATCH_THRESHOLD


def test_a_query_without_indexable_words_has_no_text_evidence() -> None:
    assert _text_evidence("to be or not to be") is None
    assert doctext.fts5_match(doctext.query_terms("the and of")) is None


def test_right_protocol_is_a_match_and_the_others_are_not_text_only() -> None:
    scores = _scores("deploy the frontend bundle to the CDN", None)
    assert scores["deploy-frontend"] >= MATCH_THRESHOLD
    assert scores["rotate-keys"] < MATCH_THRESHOLD
    assert scores["backup-db"] < MATCH_THRESHOLD


def test_right_protocol_is_a_match_and_the_others_are_not_hybrid() -> None:
    cosines = {"deploy-frontend": 0.12, "rotate-keys": 0.08, "backup-db": 0.62}
    scores = _scores("dump and compress the postgres database", cosines)
    assert scores["backup-db"] >= MATCH_THRESHOLD
    assert max(scores["deploy-frontend"], scores["rotate-keys"]) < MATCH_THRESHOLD
    assert max(scores, key=lambda name: scores[name]) == "backup-db"
