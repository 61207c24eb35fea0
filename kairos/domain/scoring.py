"""The evidence a search score is made of, and the bounds around it.

* **dense**: the best cosine between the query and a record's vectors
  (``doctext.document``, author and learned triggers included): the text that says most of
  what was asked decides.
* **text**: SQLite FTS5 ``bm25()`` over the three columns of ``doctext`` divided by the
  largest value bm25 could reach for that query (every term saturated):
  ``sum(idf(t) * (k1 + 1))``. Raw bm25 grows with the number and rarity of query words and
  with the corpus; the ratio is a share of the query's information found in the document,
  in [0, 1), comparable across queries and stores. Words the store has never seen count in
  the ceiling with the largest IDF, so gibberish in a query lowers every text score.

``domain.matching`` turns them, with the lexical evidence of ``domain.lexical``, into one
score in [0, 1] whose anchor (``anchor``) is each surface's default threshold: 0.30 for
kairos_search, the unified search's default ``min_score`` for knowledge entries.

Outcomes of attested runs move a score a little (``outcome_boost``), never across the
anchor (``apply_outcome_boost``): outcomes reorder matches, they do not create or hide
them.

Pure functions, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TypeVar

import numpy as np

__all__ = ["BM25_B", "BM25_COLUMN_WEIGHTS", "BM25_K1", "ENTRY_MIN_SCORE",
           "ENTRY_MIN_SCORE_TEXT", "EXACT_TITLE_SCORE", "MATCH_THRESHOLD", "MAX_OUTCOME_BOOST",
           "MIN_RUNS", "OUTCOME_PRIOR_RUNS", "anchor", "apply_outcome_boost",
           "apply_title_match", "bm25_ceiling", "bm25_term", "dense_of", "dense_segments",
           "fts5_idf", "outcome_boost", "text_evidence"]

Num = TypeVar("Num", float, np.ndarray)

#: FTS5's bm25() constants (fixed in SQLite's fts5_aux.c, not configurable).
BM25_K1 = 1.2
BM25_B = 0.75
#: bm25() column weights for (title, step labels, step contents). The title counts most; step
#: contents (commands, long bodies) least. Recall moved by under 0.01 across the weights tried.
BM25_COLUMN_WEIGHTS = (3.0, 2.0, 1.0)

#: Products show protocols scoring at least this as matches (contract §3, R8).
MATCH_THRESHOLD = 0.30

#: Outcome boost: at most this much either way, nothing before MIN_RUNS attested runs, and
#: OUTCOME_PRIOR_RUNS imaginary neutral runs so that a short record moves a score less.
MAX_OUTCOME_BOOST = 0.05
MIN_RUNS = 3
OUTCOME_PRIOR_RUNS = 5


#: The unified search's default ``min_score`` for knowledge entries, with vectors and with
#: text alone: their scores are anchored there (``anchor``).
ENTRY_MIN_SCORE = 0.50
ENTRY_MIN_SCORE_TEXT = 0.35


def anchor(kind: str, *, text_only: bool = False) -> float:
    """The score at a kind's match boundary: the threshold its surface lists by default."""
    if kind == "protocol":
        return MATCH_THRESHOLD
    return ENTRY_MIN_SCORE_TEXT if text_only else ENTRY_MIN_SCORE


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


def apply_outcome_boost(score: float, boost: float,
                        threshold: float = MATCH_THRESHOLD) -> float:
    """``score + boost`` for a match, kept within [threshold, 1].

    A score below the threshold is returned unchanged: a record of successes must not turn
    an unrelated protocol into a match, nor failures hide a relevant one.
    """
    if score < threshold:
        return score
    return min(1.0, max(threshold, score + boost))

