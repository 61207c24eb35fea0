"""One calibrated relevance score in [0, 1] from dense and full-text evidence.

Evidence:

* **dense**: the best cosine between the query and a record's vectors
  (``doctext.document``): the text that says most of what was asked decides.
* **text**: SQLite FTS5 ``bm25()`` over the three columns of ``doctext`` divided by the
  largest value bm25 could reach for that query (every term saturated):
  ``sum(idf(t) * (k1 + 1))``. Raw bm25 grows with the number and rarity of query words and
  with the corpus; the ratio is a share of the query's information found in the document,
  in [0, 1), comparable across queries and stores. Words the store has never seen count in
  the ceiling with the largest IDF, so gibberish in a query lowers every text score.

Calibration, per mode (both evidences, vectors only, text only), with the mode's evidence
``z`` (hybrid: ``dense + 0.25 * text``; vector: ``dense``; text: ``text``)::

    score = sigmoid(a * (z - z_star) + logit(MATCH_THRESHOLD))

All constants come from ``bench/calibrate.py`` on the tuning half of the held-out requests
(``bench/data/requests.jsonl``), from the real engine's evidence; the test half and the
tldr "describe → find" task are only reported:

* the text weight 0.25 ranked best (recall@1 + recall@5) among 0, 0.05, ..., 1;
* ``z_star``, the match boundary, is the evidence that an unseen off-topic request's best
  candidate reaches with probability at most one in ten (the split-conformal quantile of
  the tuning half's off-topic requests: one of its 28 reaches it). So 0.30 means "as
  strong as an accidental match gets"; on the tuning half the right answer cleared it for
  141 of 158 requests in the hybrid mode (text-only mode: see ``TEXT_ONLY``);
* ``a`` is the maximum-likelihood slope for "the top-ranked candidate is a right answer"
  under that pin, so above the threshold a score reads roughly as that chance.

Outcomes of attested runs move a score a little (``outcome_boost``), never across the
match threshold (``apply_outcome_boost``): outcomes reorder matches, they do not create or
hide them.

Pure functions, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

__all__ = [
    "BM25_B",
    "BM25_COLUMN_WEIGHTS",
    "BM25_K1",
    "ENTRY_HYBRID",
    "ENTRY_TEXT_ONLY",
    "ENTRY_VECTOR_ONLY",
    "EXACT_TITLE_SCORE",
    "HYBRID",
    "MATCH_THRESHOLD",
    "MAX_OUTCOME_BOOST",
    "MIN_RUNS",
    "OUTCOME_PRIOR_RUNS",
    "TEXT_ONLY",
    "VECTOR_ONLY",
    "Calibration",
    "apply_outcome_boost",
    "apply_title_match",
    "bm25_ceiling",
    "bm25_term",
    "calibrated_score",
    "dense_of",
    "dense_segments",
    "fts5_idf",
    "outcome_boost",
    "score_bound",
    "text_evidence",
]

Num = TypeVar("Num", float, np.ndarray)

#: FTS5's bm25() constants (fixed in SQLite's fts5_aux.c, not configurable).
BM25_K1 = 1.2
BM25_B = 0.75
#: bm25() column weights for (title, step labels, step contents). The title counts most; step
#: contents (commands, long bodies) least. Recall moved by under 0.01 across the weights tried.
BM25_COLUMN_WEIGHTS = (3.0, 2.0, 1.0)

#: Products show protocols scoring at least this as matches (DESIGN.md §3 rule 8).
MATCH_THRESHOLD = 0.30

#: Outcome boost: at most this much either way, nothing before MIN_RUNS attested runs, and
#: OUTCOME_PRIOR_RUNS imaginary neutral runs so that a short record moves a score less.
MAX_OUTCOME_BOOST = 0.05
MIN_RUNS = 3
OUTCOME_PRIOR_RUNS = 5


@dataclass(frozen=True, slots=True)
class Calibration:
    """Logistic calibration ``sigmoid(dense * self.dense + text * self.text + self.bias)``."""

    dense: float
    text: float
    bias: float

    def logit(self, dense: float, text: float) -> float:
        return self.dense * dense + self.text * text + self.bias


#: From ``bench/calibrate.py`` on the engine's evidence of the tuning half (see module
#: docstring), refitted 2026-11-25 on vectors embedded as the engine embeds them (one text at
#: a time), the boundary a split-conformal quantile: z* = 0.507 (hybrid, text weight 0.25),
#: 0.419 (vector). The text-only mode (no vectors: a remote provider down, or embedder
#: "none") keeps its earlier boundary z* = 0.215: the tuning half's 0.446 would refuse a
#: one-word match of a three-word query, the weak match of seed 000's scenario 3.
HYBRID = Calibration(dense=8.200, text=2.050, bias=-5.002)
VECTOR_ONLY = Calibration(dense=9.450, text=0.0, bias=-4.803)
TEXT_ONLY = Calibration(dense=0.0, text=2.280, bias=-1.337)

#: Knowledge entries (``bench/calibrate.py --entries`` on the tuning half of
#: ``bench/data/entries.jsonl``): the same slopes, and a boundary midway between the best
#: off-topic candidate and the weakest title-level answer (z* = 0.427 hybrid, 0.333 vector,
#: 0.170 text) that scores the unified search's default ``min_score``: 0.50 with vectors,
#: 0.35 with text alone.
ENTRY_HYBRID = Calibration(dense=8.200, text=2.050, bias=-3.504)
ENTRY_VECTOR_ONLY = Calibration(dense=9.450, text=0.0, bias=-3.146)
ENTRY_TEXT_ONLY = Calibration(dense=0.0, text=2.280, bias=-1.006)


def fts5_idf(n_rows: int, n_hits: int) -> float:
    """IDF exactly as FTS5's bm25() computes it, including its floor for common terms."""
    idf = math.log((n_rows - n_hits + 0.5) / (n_hits + 0.5))
    return idf if idf > 0.0 else 1e-6


def bm25_ceiling(idfs: Iterable[float]) -> float:
    """The supremum of FTS5 bm25() for a query whose terms have these IDFs."""
    return sum(idfs) * (BM25_K1 + 1.0)


def text_evidence(bm25: Num, ceiling: float) -> Num:
    """bm25() as FTS5 returns it (negative: smaller is better) scaled into [0, 1]."""
    if ceiling <= 0.0:
        return np.abs(bm25) * 0.0
    return np.minimum(np.abs(bm25) / ceiling, 1.0)


def dense_of(cosines: np.ndarray) -> float:
    """The dense evidence of one document: the best of its cosines (0 without vectors)."""
    c = np.asarray(cosines, dtype=np.float32)
    return float(c.max()) if len(c) else 0.0


def dense_segments(cosines: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """``dense_of`` for many documents at once: ``cosines`` holds every vector's cosine,
    each document's contiguous from ``starts`` with ``sizes`` rows (all sizes >= 1, so
    each document's maximum is over its own rows only)."""
    return np.maximum.reduceat(cosines, starts) if len(starts) else cosines[:0]


def bm25_term(idf: float, weighted_tf: float, doc_len: float, avg_len: float) -> float:
    """One term's share of FTS5's bm25(): ``weighted_tf`` is the column-weighted term count
    (``BM25_COLUMN_WEIGHTS``), ``doc_len`` the document's tokens. PostgreSQL uses it to
    compute the same text evidence from its tsvectors as SQLite gets from FTS5."""
    if weighted_tf <= 0.0:
        return 0.0
    norm = 1.0 - BM25_B + BM25_B * (doc_len / avg_len if avg_len > 0 else 1.0)
    return idf * weighted_tf * (BM25_K1 + 1.0) / (weighted_tf + BM25_K1 * norm)


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def calibrated_score(dense: float | None, text: float | None, *, entry: bool = False) -> float:
    """The score in [0, 1] from whatever evidence served the query, for a protocol or
    (``entry``) a knowledge entry.

    ``dense`` is the dense evidence (None when vectors were unavailable); ``text`` is
    ``text_evidence`` (None when the query had no indexable words, 0.0 when it had some
    and none matched this record). With neither, the score is 0.
    """
    if dense is not None and text is not None:
        return _sigmoid((ENTRY_HYBRID if entry else HYBRID).logit(dense, text))
    if dense is not None:
        return _sigmoid((ENTRY_VECTOR_ONLY if entry else VECTOR_ONLY).logit(dense, 0.0))
    if text is not None:
        return _sigmoid((ENTRY_TEXT_ONLY if entry else TEXT_ONLY).logit(0.0, text))
    return 0.0


def score_bound(dense: np.ndarray, text: np.ndarray | None) -> np.ndarray:
    """The highest score a record with this evidence can have before an outcome boost,
    for many at once: ``calibrated_score`` as a knowledge entry (whose calibration scores
    any evidence at least as high as a protocol's). ``dense`` is NaN where a record has
    no vectors."""
    has = ~np.isnan(dense)
    d = np.where(has, dense, 0.0)
    h, v, x = ENTRY_HYBRID, ENTRY_VECTOR_ONLY, ENTRY_TEXT_ONLY
    if text is None:
        logit = np.where(has, v.dense * d + v.bias, -np.inf)
    else:
        logit = np.where(has, h.dense * d + h.text * text + h.bias, x.text * text + x.bias)
    return np.asarray(1.0 / (1.0 + np.exp(-logit)))


#: A query that is a record's title (``doctext.title_form``) names that record: it scores
#: this, above every record it merely resembles (titles that only start with the query,
#: such as "<title> <timestamp>", included).
EXACT_TITLE_SCORE = 1.0


def apply_title_match(score: float, exact_title: bool) -> float:
    return EXACT_TITLE_SCORE if exact_title else score


def outcome_boost(successes: int, failures: int) -> float:
    """A bounded nudge from attested outcomes, in (-MAX_OUTCOME_BOOST, MAX_OUTCOME_BOOST).

    ``MAX * (s - f) / (s + f + OUTCOME_PRIOR_RUNS)``, and 0 before ``MIN_RUNS`` runs: one
    lucky or unlucky run says little, and a long record approaches the bound without ever
    reaching it. From three runs on it rises with every success and falls with every
    failure.
    """
    s, f = max(0, successes), max(0, failures)
    if s + f < MIN_RUNS:
        return 0.0
    return MAX_OUTCOME_BOOST * (s - f) / (s + f + OUTCOME_PRIOR_RUNS)


def apply_outcome_boost(score: float, boost: float) -> float:
    """``score + boost`` for a match, kept within [MATCH_THRESHOLD, 1].

    A score below the threshold is returned unchanged: a record of successes must not turn
    an unrelated protocol into a match, nor failures hide a relevant one.
    """
    if score < MATCH_THRESHOLD:
        return score
    return min(1.0, max(MATCH_THRESHOLD, score + boost))

