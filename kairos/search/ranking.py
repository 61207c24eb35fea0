"""Score calibration: dense cosine and BM25 evidence mapped onto one scale in [0, 1]."""

from __future__ import annotations

import math
from collections.abc import Sequence


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def dense_score(cosine: float) -> float:
    return _sigmoid((cosine - 0.42) * 11.0)


def text_scores(hits: Sequence[tuple[int, float]], n_terms: int) -> dict[int, float]:
    """BM25 per query term, squashed to [0, 1)."""
    per_term = max(1, n_terms)
    return {rid: 1.0 - math.exp(-raw / (2.5 * per_term)) for rid, raw in hits}


def fuse(cosine: float | None, text: float) -> float:
    if cosine is None:
        return text * 0.9
    d = dense_score(cosine)
    return min(1.0, 0.75 * d + 0.25 * text)


def with_outcomes(score: float, successes: int, failures: int) -> float:
    runs = successes + failures
    if runs < 3:
        return score
    boost = 0.05 * (successes - failures) / runs
    return min(1.0, max(0.0, score + boost))
