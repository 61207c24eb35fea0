"""The pure scoring functions: range, monotonicity, the outcome boost's bounds and its
three-run rule, and the match threshold on a tiny synthetic store (real SQLite FTS5)."""

from __future__ import annotations

import itertools
import math
import sqlite3

import numpy as np
import pytest

from kairos.domain import doctext, scoring
from kairos.domain.scoring import MATCH_THRESHOLD, calibrated_score

DENSE = [x / 20 for x in range(-20, 21)]
TEXT = [x / 20 for x in range(0, 21)]
UNRELATED = "xyzqwerty nonexistent protocol foobar"


# --- range and monotonicity ------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["hybrid", "vector", "text"])
def test_scores_stay_in_the_unit_interval(mode: str) -> None:
    for d, t in itertools.product([-5.0, *DENSE, 5.0], [-1.0, *TEXT, 3.0]):
        s = calibrated_score(d if mode != "text" else None, t if mode != "vector" else None)
        assert 0.0 <= s <= 1.0


def test_no_evidence_scores_zero() -> None:
    assert calibrated_score(None, None) == 0.0


@pytest.mark.parametrize("mode", ["hybrid", "vector"])
def test_score_rises_with_cosine(mode: str) -> None:
    for t in TEXT if mode == "hybrid" else [None]:
        scores = [calibrated_score(d, t) for d in DENSE]
        assert all(a < b for a, b in itertools.pairwise(scores))


@pytest.mark.parametrize("mode", ["hybrid", "text"])
def test_score_rises_with_text_evidence(mode: str) -> None:
    for d in DENSE if mode == "hybrid" else [None]:
        scores = [calibrated_score(d, t) for t in TEXT]
        assert all(a < b for a, b in itertools.pairwise(scores))


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


def test_unrelated_query_scores_below_threshold_in_every_mode() -> None:
    ev = _text_evidence(UNRELATED)
    assert ev is not None
    unrelated_cosine = 0.15  # MiniLM cosines of unrelated texts sit around 0.0-0.2
    for t in ev.values():
        assert calibrated_score(None, t) < MATCH_THRESHOLD
        assert calibrated_score(unrelated_cosine, t) < MATCH_THRESHOLD
    assert calibrated_score(unrelated_cosine, None) < MATCH_THRESHOLD


def test_a_query_without_indexable_words_has_no_text_evidence() -> None:
    assert _text_evidence("to be or not to be") is None
    assert doctext.fts5_match(doctext.query_terms("the and of")) is None


def test_right_protocol_is_a_match_and_the_others_are_not_text_only() -> None:
    ev = _text_evidence("deploy the frontend bundle to the CDN")
    assert ev is not None
    scores = {name: calibrated_score(None, t) for name, t in ev.items()}
    assert scores["deploy-frontend"] >= MATCH_THRESHOLD
    assert scores["rotate-keys"] < MATCH_THRESHOLD
    assert scores["backup-db"] < MATCH_THRESHOLD


def test_right_protocol_is_a_match_and_the_others_are_not_hybrid() -> None:
    ev = _text_evidence("dump and compress the postgres database")
    assert ev is not None
    cosines = {"deploy-frontend": 0.12, "rotate-keys": 0.08, "backup-db": 0.62}
    scores = {name: calibrated_score(cosines[name], ev[name]) for name in PROTOCOLS}
    assert scores["backup-db"] >= MATCH_THRESHOLD
    assert max(scores["deploy-frontend"], scores["rotate-keys"]) < MATCH_THRESHOLD
    assert max(scores, key=lambda name: scores[name]) == "backup-db"


def test_vector_only_threshold_sits_between_related_and_unrelated_cosines() -> None:
    assert calibrated_score(0.15, None) < MATCH_THRESHOLD
    assert calibrated_score(0.65, None) >= MATCH_THRESHOLD


def test_an_entry_at_its_boundary_scores_the_default_min_score() -> None:
    """Knowledge entries map their match boundary to the unified search's default
    min_score (0.50 with vectors, 0.35 with text alone), protocols theirs to 0.30."""
    for cal, anchor in ((scoring.ENTRY_HYBRID, 0.50), (scoring.ENTRY_VECTOR_ONLY, 0.50)):
        z_star = (math.log(anchor / (1 - anchor)) - cal.bias) / cal.dense
        dense, text = z_star, (0.0 if cal is scoring.ENTRY_HYBRID else None)
        assert calibrated_score(dense, text, entry=True) == pytest.approx(anchor, abs=1e-6)
        assert calibrated_score(dense, text) < MATCH_THRESHOLD + 0.2
    z_text = (math.log(0.35 / 0.65) - scoring.ENTRY_TEXT_ONLY.bias) / scoring.ENTRY_TEXT_ONLY.text
    assert calibrated_score(None, z_text, entry=True) == pytest.approx(0.35, abs=1e-6)


def test_score_bound_is_never_below_a_protocol_or_an_entry_score() -> None:
    """``score_bound`` uses the entries' calibrations: each must score any evidence at
    least as high as its protocol counterpart, or the unified search could drop a protocol
    that reaches the floor."""
    dense = np.linspace(-1.0, 1.0, 41)
    for t in np.linspace(0.0, 1.0, 21):
        bound = scoring.score_bound(dense, np.full_like(dense, t))
        for d, b in zip(dense.tolist(), bound.tolist(), strict=True):
            assert b >= calibrated_score(d, t) - 1e-9
            assert b == pytest.approx(calibrated_score(d, t, entry=True))
    bound = scoring.score_bound(dense, None)
    for d, b in zip(dense.tolist(), bound.tolist(), strict=True):
        assert b >= calibrated_score(d, None) - 1e-9
    text_only = scoring.score_bound(np.full(21, np.nan), np.linspace(0.0, 1.0, 21))
    for t, b in zip(np.linspace(0.0, 1.0, 21).tolist(), text_only.tolist(), strict=True):
        assert b >= calibrated_score(None, t) - 1e-9
