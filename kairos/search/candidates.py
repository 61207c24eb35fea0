"""Which candidates of a query are scored, with what evidence: one kind of record at a
time (protocols, or knowledge entries), since each has its own anchor.

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
from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.engine import Connection

from ..domain import doctext, matching, scoring
from ..domain.lexical import Lexical, Words, is_noise, words
from ..store import schema
from ..store.text_index import Terms

CANDIDATES = 100
#: Candidates whose text is read for lexical evidence: the strongest by dense and text
#: evidence that the full-text index matched, and the best by text alone.
LEXICAL_POOL, LEXICAL_TEXT = 60, 30
#: With a floor, at most this many more records are read for their lexical evidence.
EXTRA_LEXICAL = 2_000


@dataclass(frozen=True)
class Found:
    """The scored candidates of one query: their evidence, kinds and titles, scores, and
    the scoring context."""

    evidence: dict[int, matching.Evidence]
    kinds: dict[int, str]
    titles: dict[int, str]
    scores: dict[int, matching.Scored]
    context: matching.Context


def score(conn: Connection, query: str, kind: str, dense: Mapping[int, float],
          text: Mapping[int, float] | None, terms: Terms | None, n_docs: int,
          floor: float | None, boosts: bool) -> Found:
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
    _read(conn, pool, asked, lex, titles, kinds)
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
        _read(conn, extra, asked, lex, titles, kinds)
        lexical.update({rid: _lexical_part(lex.get(rid, none), rule) for rid in extra})
        reach = _reach(partial, lexical, context, anchor, lowest)
        kept |= {rid for rid in partial if partial[rid] + lexical[rid] >= reach}
    _read(conn, {rid for rid in kept if rid not in titles}, None, lex, titles, kinds)
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


def _read(conn: Connection, rids: set[int], asked: Words | None, lex: dict[int, Lexical],
          titles: dict[int, str], kinds: dict[int, str]) -> None:
    """Titles and kinds of ``rids``, and with ``asked`` their lexical evidence."""
    if not rids:
        return
    c = schema.search_docs.c
    if asked is None or not asked.informative:
        for rid, kind, title in conn.execute(
                select(c.rid, c.kind, c.title).where(c.rid.in_(list(rids)))):
            kinds[rid], titles[rid] = kind, title
        return
    for rid, kind, title, labels, body in conn.execute(
            select(c.rid, c.kind, c.title, c.labels, c.body).where(c.rid.in_(list(rids)))):
        kinds[rid], titles[rid] = kind, title
        lex[rid] = asked.of(*asked.holds(title, f"{labels}\n{body}"))


def _is_title(title: str, asked: str) -> bool:
    """Whether a query (``asked``, in ``doctext.title_form``) is this title; a title of
    another length cannot be (template noise and spacing aside)."""
    return abs(len(title) - len(asked)) <= 8 and doctext.title_form(title) == asked
