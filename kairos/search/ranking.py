"""Score calibration: dense cosine and keyword evidence mapped onto one scale in [0, 1]
that means the same whether vectors, text or both served the query.

Keyword evidence is the share of the query's words a document contains (title words count
fully, body words a little less), not raw BM25, whose scale depends on the corpus size: in a
store of three protocols BM25 is near zero for a perfect match. BM25 still chooses which
documents are candidates.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

_TOKEN = re.compile(r"\w+", re.UNICODE)
_SUFFIXES = (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", ""), ("ly", ""),
             ("s", ""))
STOPWORDS = frozenset(
    "a an and are as at be by for from how i in is it of on or that the this to was what "
    "when where which who why will with you your me my do does can".split()
)
BODY_WEIGHT = 0.8
TEXT_CEILING = 0.85   # keywords alone never claim certainty
TEXT_POWER = 0.8
TEXT_IN_HYBRID = 0.8  # with vectors present, keywords are corroborating evidence


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """A light suffix stripper: enough to match deploy/deploys/deploying/deployed."""
    word = word.lower()
    for suffix, repl in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: len(word) - len(suffix)] + repl
    return word


def stems(text: str) -> set[str]:
    return {stem(w) for w in set(_TOKEN.findall(text.lower()))}


def query_stems(query: str) -> list[str]:
    words = [w.lower() for w in _TOKEN.findall(query)]
    kept = [w for w in words if w not in STOPWORDS] or words
    return list(dict.fromkeys(stem(w) for w in kept))


def coverage(terms: Sequence[str], title: Iterable[str] | set[str],
             body: Iterable[str] | set[str]) -> float:
    """Share of query terms found: 1 for a title hit, BODY_WEIGHT for a body-only hit."""
    if not terms:
        return 0.0
    title_set, body_set = set(title), set(body)
    got = sum(1.0 if t in title_set else BODY_WEIGHT if t in body_set else 0.0 for t in terms)
    return got / len(terms)


def text_score(cov: float) -> float:
    return TEXT_CEILING * cov ** TEXT_POWER


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def dense_score(cosine: float) -> float:
    """MiniLM cosine → probability-like: 0.42 ↦ 0.5, 0.2 ↦ 0.08, 0.65 ↦ 0.93."""
    return _sigmoid((cosine - 0.42) * 11.0)


def fuse(cosine: float | None, text: float) -> float:
    """Dense and keyword evidence as a noisy-OR (either strong signal suffices, both
    together score higher); keywords alone when there are no vectors."""
    if cosine is None:
        return text
    d = dense_score(cosine)
    return min(1.0, max(0.0, 1.0 - (1.0 - d) * (1.0 - TEXT_IN_HYBRID * text)))


def with_outcomes(score: float, successes: int, failures: int) -> float:
    """A small bounded nudge from attested outcomes: at most ±0.05, and nothing before
    three runs, so a single lucky or unlucky run moves nothing."""
    runs = successes + failures
    if runs < 3:
        return score
    boost = 0.05 * (successes - failures) / runs * min(1.0, runs / 10)
    return min(1.0, max(0.0, score + boost))
