"""Ranking, pure: a query's candidates of one kind of record scored on one scale in [0, 1]
from their evidence (``domain.matching``), and the hits put in order. No I/O: the texts
of the candidates are read by whoever ranks (``candidates``), through ``TextsOf``.

* Every candidate's **partial strength** (dense and text evidence) costs nothing to have.
* The **lexical evidence** needs the record's text: it is read for the lexical pool (the
  strongest candidates the full-text index matched, and the best by text alone); a record
  the full-text index did not match holds none of the query's words.
* Without a floor (kairos_search) the ``CANDIDATES`` strongest are scored. With a floor
  (the unified search's ``min_score``) every candidate that can reach it is, so that its
  totals and pages are exact: those within the reach of the strongest
  (``matching.Context.reach``), counting the most lexical evidence a record outside the
  pool could add, read for at most ``EXTRA_LEXICAL`` more records.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..domain import doctext, matching, scoring
from ..domain.lexical import Lexical, Words, is_noise, words

if TYPE_CHECKING:
    import numpy as np

    from ..store.text_index import Terms

CANDIDATES = 100
#: Candidates whose text is read for lexical evidence: the strongest by dense and text
#: evidence that the full-text index matched, and the best by text alone.
LEXICAL_POOL, LEXICAL_TEXT = 60, 30
#: With a floor, at most this many more records are read for their lexical evidence.
EXTRA_LEXICAL = 2_000

#: The texts of records by rid: rows with ``rid``, ``kind`` and ``title``, and with
#: ``labels`` and ``body`` too when the second argument is True.
TextsOf = Callable[[Collection[int], bool], Iterable[Any]]


@dataclass(frozen=True)
class Found:
    """The scored candidates of one query: their evidence, kinds and titles, scores, and
    the scoring context."""

    evidence: dict[int, matching.Evidence]
    kinds: dict[int, str]
    titles: dict[int, str]
    scores: dict[int, matching.Scored]
    context: matching.Context


@dataclass
class Hit:
    rid: int
    kind: str
    entity_id: str
    score: float
    dense: float | None
    text: float | None
    row: dict[str, Any] = field(default_factory=dict)
    lexical: Lexical = field(default_factory=Lexical)
    outcomes: matching.Outcomes | None = None
    evidence: matching.Scored | None = None


@dataclass(frozen=True)
class Ranked:
    hits: list[Hit]
    mode: str            # "hybrid" | "text"
    degraded: bool
    hint: str | None
    query_vector: np.ndarray | None = None
    terms: Terms | None = None
    #: The scoring context of protocols (True) and of knowledge entries (False).
    contexts: Mapping[bool, matching.Context] = field(default_factory=dict)


def score(query: str, kind: str, dense: Mapping[int, float], text: Mapping[int, float] | None,
          terms: Terms | None, n_docs: int, floor: float | None, boosts: bool,
          texts_of: TextsOf) -> Found:
    """The candidates of one kind of record (``kind``: one of them) worth scoring, scored."""
    rule = matching.HYBRID if dense else matching.TEXT_ONLY
    texts = text or {}
    partial = {rid: dense.get(rid, 0.0) + rule.text * texts.get(rid, 0.0)
               for rid in set(dense) | set(texts)}
    matched = {rid: p for rid, p in partial.items() if texts.get(rid, 0.0) > 0.0}
    pool = set(heapq.nlargest(LEXICAL_POOL, matched, key=matched.__getitem__))
    pool |= set(heapq.nlargest(LEXICAL_TEXT, texts, key=texts.__getitem__))
    asked = None if terms is None else words(terms.words, terms.counts, terms.n_docs)
    none = Lexical() if asked is None else asked.of(0, 0)
    lex: dict[int, Lexical] = {}
    titles: dict[int, str] = {}
    kinds: dict[int, str] = {}
    _read(texts_of, pool, asked, lex, titles, kinds)
    nothing = _lexical_part(none, rule)
    lexical = {rid: _lexical_part(lex[rid], rule) if rid in lex else nothing for rid in partial}
    cosines = sorted(dense.values(), reverse=True)
    context = matching.Context(
        rule, cosines[0] if cosines else None,
        cosines[min(matching.BACKGROUND_RANK, len(cosines)) - 1] if len(cosines) > 1 else None,
        n_docs, terms is not None and all(is_noise(w) for w in terms.words))
    anchor = scoring.anchor(kind, text_only=rule is matching.TEXT_ONLY)
    kept = set(heapq.nlargest(CANDIDATES, partial,
                              key=lambda r: partial[r] + lexical[r]))
    if floor is not None:
        lowest = floor - (scoring.MAX_OUTCOME_BOOST if boosts else 0.0)
        reach = _reach(partial, lexical, context, anchor, lowest)
        most = rule.title + rule.share + rule.all_title + rule.rare_full
        unread = [r for r in matched if r not in pool and partial[r] + most >= reach]
        extra = set(heapq.nlargest(EXTRA_LEXICAL, unread, key=partial.__getitem__))
        _read(texts_of, extra, asked, lex, titles, kinds)
        lexical.update({rid: _lexical_part(lex.get(rid, none), rule) for rid in extra})
        reach = _reach(partial, lexical, context, anchor, lowest)
        kept |= {rid for rid in partial if partial[rid] + lexical[rid] >= reach}
    _read(texts_of, {rid for rid in kept if rid not in titles}, None, lex, titles, kinds)
    kept = {rid for rid in kept if rid in titles}  # a record deleted since
    evidence = {rid: matching.Evidence(dense.get(rid), None if text is None else
                                       texts.get(rid, 0.0), lex.get(rid, none))
                for rid in kept}
    asked_title = doctext.title_form(query)
    order = list(kept)
    found = matching.score([matching.Candidate(evidence[r], anchor,
                                               _is_title(titles[r], asked_title))
                            for r in order], context)
    return Found(evidence, kinds, titles, dict(zip(order, found, strict=True)), context)


def hits(found: Found, rows: Iterable[dict[str, Any]]) -> list[Hit]:
    """The hits of the candidates ``rows`` (what each shows, with a protocol's
    ``successes`` and ``failures`` when outcomes count), best first."""
    out = []
    for row in rows:
        rid = row["rid"]
        wins, losses = row.pop("successes", None), row.pop("failures", None)
        outcomes = None if wins is None else matching.Outcomes(wins, losses)
        scored = found.scores[rid].boosted(outcomes)
        e = found.evidence[rid]
        out.append(Hit(rid, row["kind"], row["entity_id"], scored.score, e.dense, e.text,
                       row, e.lexical, outcomes, scored))
    out.sort(key=order)
    return out


def merged(first: Ranked, second: Ranked, query_vector: np.ndarray | None) -> Ranked:
    """The protocols' and the knowledge entries' rankings as one."""
    terms = first.terms if first.terms is not None else second.terms
    return Ranked(sorted(first.hits + second.hits, key=order), first.mode, first.degraded,
                  first.hint, query_vector, terms, {**first.contexts, **second.contexts})


def order(hit: Hit) -> tuple[float, float, str]:
    """Best first: by score, then by strength (candidates close to the strongest share
    its score), then by title."""
    return (-hit.score, -(hit.evidence.strength if hit.evidence else 0.0), hit.row["title"])


def _lexical_part(lex: Lexical, rule: matching.Rule) -> float:
    """The lexical part of ``matching.parts``."""
    return matching.parts(matching.Evidence(None, None, lex), rule)[1]


def _reach(partial: Mapping[int, float], lexical: Mapping[int, float],
           context: matching.Context, anchor: float, floor: float) -> float:
    """The least strength that can score ``floor`` (minus infinity for a floor of 0)."""
    if floor <= 0.0 or not partial:
        return -float("inf")
    z_top = max(partial[r] + lexical[r] for r in partial)
    rho = matching.relevance(((partial[r], lexical[r]) for r in partial), context.best_dense,
                             context.background, context.n_docs, context.rule)
    distance = context.reach(rho, anchor, min(floor, matching.MAX_SCORE))
    return z_top - distance if distance >= 0 else float("inf")


def _read(texts_of: TextsOf, rids: set[int], asked: Words | None, lex: dict[int, Lexical],
          titles: dict[int, str], kinds: dict[int, str]) -> None:
    """Titles and kinds of ``rids``, and with ``asked`` their lexical evidence."""
    if not rids:
        return
    informative = asked is not None and bool(asked.informative)
    for row in texts_of(rids, informative):
        kinds[row.rid], titles[row.rid] = row.kind, row.title
        if asked is not None and informative:
            lex[row.rid] = asked.of(*asked.holds(row.title, f"{row.labels}\n{row.body}"))


def _is_title(title: str, asked: str) -> bool:
    """Whether a query (``asked``, in ``doctext.title_form``) is this title; a title of
    another length cannot be (template noise and spacing aside)."""
    return abs(len(title) - len(asked)) <= 8 and doctext.title_form(title) == asked
