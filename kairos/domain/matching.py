"""The match rule: is anything here relevant, and which candidates to show.

Evidence of a candidate (``Evidence``): **dense**, the best cosine of its vectors (its own
texts, its author triggers, its learned triggers); **text**, its share of the query's BM25
weight (``scoring.text_evidence``); and its **lexical** evidence (``domain.lexical``).

1. **Strength** ranks the candidates::

       z = dense + text·TEXT + title share·TITLE + share·SHARE
             + ALL_TITLE (every word in the title) + RARE_FULL (every word, one rare)

2. **Relevance** decides whether anything is relevant, from the candidates and the
   store, with evidence that transfers across store sizes and query lengths::

       ρ = max over candidates of (max(0, dense − SPREAD·m(N)) + lexical)
           + GAP·(best cosine − background)

   where ``dense`` and ``lexical`` are the two parts of a candidate's strength
   (``parts``). ``SPREAD·m(N)`` is how far the best of N unrelated documents' cosines
   lies above their mean: m(N) is the expected maximum of N standard normal draws
   (``expected_max``: 0 for one document, 2.25 for 50, 3.7 for 5,000) and SPREAD the
   typical spread of a query's cosines over a store, so a store of 50,000 documents asks
   more of a cosine than one of 50; the lexical part needs no such correction (a rare
   word is rare whatever the size). The background is the query's 10th best cosine in
   the store (its cosine to documents about something else). A query whose words are all
   noise (``lexical.is_noise``) is relevant to nothing.

3. **Scores and matches**: the strongest candidate scores the relevance's confidence,
   ``sigmoid(logit(anchor) + SLOPE·(ρ − BOUNDARY))``: the anchor (0.30 for kairos_search)
   exactly at the boundary. Every other candidate scores the same, less
   ``MARGIN_SLOPE`` for each unit of strength it lies more than ``MARGIN`` below the
   strongest. A candidate is a match when its score reaches the anchor: nothing matches
   when nothing is relevant; when something is, every candidate within ``MARGIN`` of the
   strongest is shown, and further ones the more confident the relevance is.

A query that is a record's title scores 1.0 (``scoring.EXACT_TITLE_SCORE``); outcomes of
proven runs move a protocol's score a little, never across the anchor
(``scoring.apply_outcome_boost``).

The constants come from ``bench/fit_match.py`` on the tuning halves of three stores (a
team's 48 protocols, the 4,613 tldr pages, 60 knowledge entries) in five query styles;
``bench/README.md`` reports the test halves. Pure functions, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from statistics import NormalDist

from . import scoring
from .lexical import Lexical

__all__ = ["HYBRID", "MAX_SCORE", "NOISE_LOGITS", "TEXT_ONLY", "Candidate", "Context",
           "Evidence", "Outcomes", "Rule", "Scored", "expected_max", "parts", "relevance",
           "score", "strength", "why"]

#: The rank of the background cosine: the query's 10th best cosine in the store.
BACKGROUND_RANK = 10


@dataclass(frozen=True, slots=True)
class Rule:
    """The constants of the match rule (see the module docstring)."""

    text: float
    title: float
    share: float
    all_title: float
    rare_full: float
    gap: float
    spread: float
    boundary: float
    slope: float
    margin: float
    margin_slope: float


#: Fitted by ``bench/fit_match.py`` on the tuning halves (``bench/README.md``, "What agents
#: send"). The strength's text and title-share weights came out 0: with vectors, the
#: lexical evidence (the share of the query's words, every word in the title) says it.
HYBRID = Rule(text=0.0, title=0.0, share=0.20, all_title=0.20, rare_full=0.20, gap=0.40,
              spread=0.086, boundary=0.1827, slope=8.25, margin=0.12, margin_slope=30.0)
#: Without vectors (embedder ``none``, or a remote provider down): text and lexical
#: evidence alone, fitted the same way on the same evidence without its dense part.
TEXT_ONLY = Rule(text=1.0, title=0.0, share=0.20, all_title=0.0, rare_full=0.0, gap=0.0,
                 spread=0.0, boundary=0.1602, slope=4.0, margin=0.08, margin_slope=8.0)


@dataclass(frozen=True, slots=True)
class Outcomes:
    """A protocol's counted outcomes (proven successes, failures)."""

    successes: int
    failures: int


@dataclass(frozen=True, slots=True)
class Evidence:
    dense: float | None        # the best cosine of its vectors; None: no vectors served
    text: float | None         # scoring.text_evidence; None: the query has no words
    lexical: Lexical = field(default_factory=Lexical)


@dataclass(frozen=True, slots=True)
class Candidate:
    evidence: Evidence
    anchor: float              # the score at the boundary (kairos_search: 0.30)
    exact_title: bool = False


@dataclass(frozen=True, slots=True)
class Scored:
    score: float
    strength: float            # z
    relevance: float           # ρ of its query (the same for every candidate)
    below_top: float           # z_top − z
    anchor: float
    boost: float = 0.0         # what outcomes added (or took)

    @property
    def match(self) -> bool:
        return self.score >= self.anchor

    def boosted(self, outcomes: Outcomes | None) -> Scored:
        """With the outcome boost of a protocol's proven runs (``scoring.outcome_boost``),
        which never moves a score across the anchor."""
        if outcomes is None:
            return self
        final = scoring.apply_outcome_boost(self.score, scoring.outcome_boost(
            outcomes.successes, outcomes.failures), threshold=self.anchor)
        return replace(self, score=final, boost=final - self.score)


def parts(e: Evidence, rule: Rule) -> tuple[float, float]:
    """A candidate's strength in two parts: what its vectors and its text share say, and
    what its lexical evidence says."""
    lex = e.lexical
    return ((e.dense or 0.0) + (e.text or 0.0) * rule.text,
            lex.title_share * rule.title + lex.share * rule.share
            + rule.all_title * lex.all_title + rule.rare_full * lex.rare_full)


def strength(e: Evidence, rule: Rule) -> float:
    dense, lexical = parts(e, rule)
    return dense + lexical


def relevance(candidates: Iterable[tuple[float, float]], best_dense: float | None,
              background: float | None, n_docs: int, rule: Rule) -> float:
    """ρ of a query whose candidates' strengths are in ``parts``; ``best_dense`` and
    ``background`` are the query's best and ``BACKGROUND_RANK``-th best cosine in the
    store of ``n_docs`` documents (None without vectors). The chance term lowers what the
    vectors say, never below nothing: a rare word found is evidence whatever the size."""
    gap = 0.0 if best_dense is None or background is None else best_dense - background
    chance = rule.spread * expected_max(n_docs)
    best = max((max(0.0, dense - chance) + lexical for dense, lexical in candidates),
               default=0.0)
    return best + rule.gap * gap


def expected_max(n: int) -> float:
    """The expected maximum of ``n`` standard normal draws (Blom's approximation)."""
    n = max(n, 1)
    return NormalDist().inv_cdf((n - 0.375) / (n + 0.25))


def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@dataclass(frozen=True, slots=True)
class Context:
    """What a query's scores depend on beyond its candidates' evidence: the rule (with
    vectors or without), the query's best and ``BACKGROUND_RANK``-th best cosine in the
    store (None without vectors), the store's size and whether the query is all noise."""

    rule: Rule
    best_dense: float | None
    background: float | None
    n_docs: int
    noise: bool = False

    def confidence(self, rho: float) -> float:
        """The logit the strongest candidate's score lies above its anchor's; a query of
        noise lies below it, however strong its evidence."""
        rule = self.rule
        value = rule.slope * (rho - rule.boundary)
        return min(value, 0.0) - NOISE_LOGITS if self.noise else value

    def reach(self, rho: float, anchor: float, threshold: float) -> float:
        """How far below the strongest candidate one may lie and still score
        ``threshold`` (negative: not even the strongest does)."""
        rule = self.rule
        spare = _logit(anchor) + self.confidence(rho) - _logit(threshold)
        return rule.margin + spare / rule.margin_slope if spare >= 0 else spare


def score(candidates: Sequence[Candidate], context: Context) -> list[Scored]:
    """Every candidate's score, on one query."""
    if not candidates:
        return []
    rule = context.rule
    split = [parts(c.evidence, rule) for c in candidates]
    z = [dense + lexical for dense, lexical in split]
    z_top = max(z)
    rho = relevance(split, context.best_dense, context.background, context.n_docs, rule)
    confidence = context.confidence(rho)
    out = []
    for c, zi in zip(candidates, z, strict=True):
        below = z_top - zi
        logit = _logit(c.anchor) + confidence - rule.margin_slope * max(0.0, below - rule.margin)
        value = scoring.apply_title_match(min(_sigmoid(logit), MAX_SCORE),
                                          c.exact_title and not context.noise)
        out.append(Scored(value, zi, rho, below, c.anchor))
    return out


def why(scored: Scored, context: Context, threshold: float, *, exact_title: bool = False
        ) -> str:
    """Why a candidate is, or is not, listed at ``threshold``: a person's reading of its
    scores."""
    rule = context.rule
    rho, listed = scored.relevance, scored.score >= threshold
    if exact_title and listed and not context.noise:
        return "listed: the query is this record's title"
    if context.noise:
        return "not listed: every word of the query is a number or random characters"
    relevant = rho >= rule.boundary
    head = (f"the query is relevant here (relevance {rho:.3f} ≥ boundary {rule.boundary:.3f})"
            if relevant else f"nothing here is relevant enough (relevance {rho:.3f} < "
                             f"boundary {rule.boundary:.3f})")
    reach = context.reach(rho, scored.anchor, threshold)
    place = ("it is the strongest candidate" if scored.below_top <= 1e-9 else
             f"it lies {scored.below_top:.3f} below the strongest")
    if listed:
        extra = (f"; outcomes moved its score by {scored.boost:+.3f}" if scored.boost else "")
        return f"listed: {head}, and {place} (listed up to {reach:.3f} below){extra}"
    if reach < 0:
        return f"not listed: {head}; not even the strongest candidate scores {threshold:.2f}"
    return (f"not listed: {head}, but {place}, further than {reach:.3f}, how far this "
            f"query's confidence reaches")


#: How far below its anchor a query made only of noise lies at least (a score of 0.01).
NOISE_LOGITS = 4.0
#: The highest score of a record whose title the query is not: only a title scores 1.0
#: (``scoring.EXACT_TITLE_SCORE``), even after rounding to two decimals.
MAX_SCORE = 0.99
