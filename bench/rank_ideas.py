"""Ranking ideas measured offline on the stores of ``match_eval.py``, each beside the
engine's recipe and plain cosine and BM25, from one collection of evidence:

    python bench/match_eval.py --split tune --stores DIR          # builds the stores once
    python bench/rank_ideas.py collect --stores DIR --out FILE    # evidence of the tuning half
    python bench/rank_ideas.py ideas FILE [--rules] [--only IDEA] [--relex]

``collect`` reads every record of the three stores (team, tldr, entries) as the engine
indexed it (``search.documents``) and asks each store's full-text index every query's
words, their document counts and the text evidence of every match; the lexical evidence
(``domain.lexical``) is computed for every record the index matched, as the unified search
with ``min_score`` 0 does.

``ideas`` embeds the texts each idea needs with the shipped model (one text per run, as the
engine does; kept in ``bench/.cache``) and ranks every record of a store for every query:
the strength of ``domain.matching`` with the idea's dense evidence and weights, an exact
title first (the emulation of the engine's own recipe gives the engine's ranking, checked
against ``match_eval.py``). It prints recall@1 / recall@5 per store and style, and for the
tldr requests the queries the idea puts first (in the top five) and the engine does not,
and the reverse. ``--rules`` also refits the match rule (``fit_match.py``) on each dense
idea's evidence of the tuning half and prints what an agent would see, under the shipped
rule and the refitted one (``rank_rules.py``). ``--only`` keeps one idea beside the engine;
``--relex`` reads the lexical evidence again from the records with the current
``domain.lexical``, to measure a change there without collecting again.

It reads the tuning half only (``collect`` asks the tuning queries): ideas are chosen there.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import rank_rules
from rank_evidence import STYLES, QueryData, Record, StoreData, collect, load

from kairos.domain import doctext, matching
from kairos.domain.lexical import RARE

# --- dense evidence --------------------------------------------------------------------------

class Vectors:
    """Texts → vectors of the shipped model, one text per run, through the bench's cache."""

    def __init__(self) -> None:
        from corpus import PrimedEmbedder, vector_cache

        from kairos.search.embedders import LocalEmbedder
        model = LocalEmbedder(threads=2).load()
        self.embedder = PrimedEmbedder(model, vector_cache(model))

    def of(self, texts: Sequence[str]) -> np.ndarray:
        from corpus import progress_bar
        from rich.console import Console
        with progress_bar(Console(stderr=True)) as progress:
            self.embedder.prime(list(dict.fromkeys(texts)), progress, "embedding")
        return self.embedder.embed(list(texts))


def _clean_title(r: Record) -> str:
    return doctext.clean(r.title)


def _label_texts(r: Record) -> list[str]:
    return [f"{_clean_title(r)}: {doctext.clean(label)}" for label, _ in r.steps]


def _step_command_texts(r: Record) -> list[str]:
    out = []
    for label, content in r.steps:
        said = doctext.step_search_body(content, 200)
        out.append(f"{_clean_title(r)}: {doctext.clean(label)}" + (f" ({said})" if said else ""))
    return out


def _description(r: Record) -> list[str]:
    return [f"{_clean_title(r)}: {doctext.clean(r.intro)}" if r.intro else _clean_title(r)]


@dataclass(frozen=True)
class Dense:
    """Which texts stand for a record beside the engine's own (``extra``; protocols only),
    and how a record's cosines fold into one number: ``max`` of all, or ``mix:w``, the
    engine's best + w × (the best extra one − the engine's best)."""

    extra: Callable[[Record], list[str]] | None = None
    fold: str = "max"
    query: Callable[[str], str] = doctext.embedding_query
    replace: bool = False         # the extra texts instead of the engine's


def _short_template(q: str) -> str:
    text = doctext.embedding_query(q)
    return f"how to {text}" if len(text.split()) <= 4 else text


def _no_stop_words(q: str) -> str:
    kept = [w for w in doctext.embedding_query(q).split() if w.lower() not in doctext.STOPWORDS]
    return " ".join(kept) or doctext.embedding_query(q)


DENSE: dict[str, Dense] = {
    "engine": Dense(),
    "max(engine, each step '<title>: <label>')": Dense(_label_texts),
    "0.9 engine + 0.1 best step": Dense(_label_texts, "mix:0.1"),
    "0.8 engine + 0.2 best step": Dense(_label_texts, "mix:0.2"),
    "0.7 engine + 0.3 best step": Dense(_label_texts, "mix:0.3"),
    "0.8 engine + 0.2 best step with its command": Dense(_step_command_texts, "mix:0.2"),
    "0.8 engine + 0.2 best step label alone": Dense(
        lambda r: [doctext.clean(label) for label, _ in r.steps], "mix:0.2"),
    "max(engine, the title alone)": Dense(lambda r: [_clean_title(r)]),
    "0.8 engine + 0.2 title alone": Dense(lambda r: [_clean_title(r)], "mix:0.2"),
    "0.7 engine + 0.3 '<title>: <description>'": Dense(_description, "mix:0.3"),
    "the baselines' document (commands included)": Dense(lambda r: [r.plain], replace=True),
    "max(engine, the baselines' document)": Dense(lambda r: [r.plain]),
    "0.7 engine + 0.3 the baselines' document": Dense(lambda r: [r.plain], "mix:0.3"),
    "query 'how to <q>' when 4 words or fewer": Dense(query=_short_template),
    "query 'how to <q>' always": Dense(query=lambda q: f"how to {doctext.embedding_query(q)}"),
    "query without stop words": Dense(query=_no_stop_words),
}


def dense_matrix(s: StoreData, vec: Vectors, d: Dense) -> np.ndarray:
    """(queries × records) dense evidence of one idea: a record's engine cosines, folded
    with those of its extra texts."""
    qv = vec.of([d.query(q.query) for q in s.queries])

    def best(texts_of: Callable[[Record], list[str]]) -> np.ndarray:
        texts, owner = [], []
        for i, r in enumerate(s.records):
            own = texts_of(r)
            texts += own
            owner += [i] * len(own)
        out = np.full((len(s.queries), len(s.records)), np.nan)
        if texts:  # each record's texts are contiguous: the best of each run of columns
            cos = qv @ vec.of(texts).T
            starts = np.r_[0, np.nonzero(np.diff(owner))[0] + 1]
            out[:, np.asarray(owner)[starts]] = np.maximum.reduceat(cos, starts, axis=1)
        return out

    engine = best(lambda r: list(r.vector_texts))
    if d.extra is None:
        return engine
    protocols = [r.kind == "protocol" for r in s.records]
    extra = best(lambda r: d.extra(r) if r.kind == "protocol" else [])  # type: ignore[misc]
    if d.replace:
        return np.where(protocols, np.nan_to_num(extra, nan=-1.0), engine)
    extra = np.where(np.isnan(extra), engine, extra)
    if d.fold == "max":
        return np.maximum(engine, extra)
    w = float(d.fold.partition(":")[2])
    return engine + w * (extra - engine)


def feedback_matrix(s: StoreData, vec: Vectors, engine: np.ndarray, k: int, beta: float,
                    max_words: int) -> np.ndarray:
    """The engine's dense evidence with pseudo-relevance feedback for queries of at most
    ``max_words`` words: the query's vector moved by ``beta`` towards the mean of the best
    vectors of the engine's ``k`` strongest records, then normalised."""
    texts, owner = [], []
    for i, r in enumerate(s.records):
        texts += list(r.vector_texts)
        owner += [i] * len(r.vector_texts)
    vectors, owners = vec.of(texts), np.asarray(owner)
    starts = np.r_[0, np.nonzero(np.diff(owners))[0] + 1]
    qv = vec.of([doctext.embedding_query(q.query) for q in s.queries])
    out = engine.copy()
    for i, q in enumerate(s.queries):
        if len(q.query.split()) > max_words:
            continue
        top = np.argsort(-strengths(s, q, engine[i], Idea()), kind="stable")[:k]
        fed = []
        for r in top:
            cols = np.nonzero(owners == r)[0]
            fed.append(vectors[cols[np.argmax(vectors[cols] @ qv[i])]])
        moved = qv[i] + beta * np.mean(fed, axis=0)
        moved /= np.linalg.norm(moved)
        out[i, owners[starts]] = np.maximum.reduceat(vectors @ moved, starts)
    return out


# --- ranking ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Idea:
    dense: str = "engine"                 # a key of DENSE
    rule: matching.Rule = matching.HYBRID
    rrf: float = 0.0                      # + rrf × reciprocal-rank fusion of dense and text
    only_rrf: bool = False                # the fusion alone, the evidence's weights aside
    feedback: tuple[int, float, int] | None = None  # feedback_matrix's k, beta, max_words


def text_and_lexical(s: StoreData, q: QueryData) -> tuple[np.ndarray, np.ndarray]:
    n = len(s.records)
    text = np.zeros(n)
    lex = np.zeros((n, 4))
    lex[:, 3] = q.informative
    for i, v in q.text.items():
        text[i] = v
    for i, x in q.lexical.items():
        lex[i] = x
    return text, lex


def strengths(s: StoreData, q: QueryData, dense: np.ndarray, idea: Idea) -> np.ndarray:
    """``matching.strength`` of every record (``Lexical.all_title`` and ``rare_full`` as
    arrays), with the idea's fusion; an exact title above everything."""
    rule = idea.rule
    text, lex = text_and_lexical(s, q)
    some = lex[:, 3] > 0
    all_title = some & (lex[:, 0] >= 1 - 1e-9)
    rare_full = some & (lex[:, 1] >= 1 - 1e-9) & (lex[:, 2] >= RARE)
    z = (dense + rule.text * text + rule.title * lex[:, 0] + rule.share * lex[:, 1]
         + rule.all_title * all_title + rule.rare_full * rare_full)
    if idea.rrf:
        n = len(z)
        dense_rank = np.empty(n)
        dense_rank[np.argsort(-dense, kind="stable")] = np.arange(1, n + 1)
        text_rank = np.full(n, np.inf)
        matched = [i for i in np.argsort(-text, kind="stable") if text[i] > 0]
        text_rank[matched] = np.arange(1, len(matched) + 1)
        fused = 1 / (10 + dense_rank) + 1 / (10 + text_rank)
        z = fused if idea.only_rrf else z + idea.rrf * fused
    exact = np.array([doctext.title_form(r.title) == doctext.title_form(q.query)
                      for r in s.records])
    return np.where(exact, 1e3, z)


def _strengths_of(s: StoreData, dense: np.ndarray, idea: Idea, i: int, q: QueryData
                  ) -> np.ndarray:
    return strengths(s, q, dense[i], idea)


def first_right(scores: np.ndarray, right: np.ndarray) -> int | None:
    """The rank (1-10) of the first right record, None beyond the tenth."""
    order = np.argsort(-scores, kind="stable")[:10]
    hits = np.nonzero(right[order])[0]
    return int(hits[0]) + 1 if len(hits) else None


def _right(s: StoreData, q: QueryData) -> np.ndarray:
    return np.array([r.id in q.expected for r in s.records])


def ranks(s: StoreData, scores: Callable[[int, QueryData], np.ndarray]) -> dict[str, int | None]:
    return {q.id: first_right(scores(i, q), _right(s, q))
            for i, q in enumerate(s.queries) if q.expected}


def _figures(s: StoreData, got: dict[str, int | None], style: str | None) -> str:
    sel = [got[q.id] for q in s.queries if q.id in got and style in (None, q.style)]
    return (f"{np.mean([r == 1 for r in sel]):.3f} / "
            f"{np.mean([r is not None and r <= 5 for r in sel]):.3f}")


def _wins(s: StoreData, got: dict[str, int | None], base: dict[str, int | None]) -> str:
    """Requests of the store put first (in the top five) by the idea and not by the
    engine, and the reverse: "w1/l1, w5/l5"."""
    req = [q.id for q in s.queries if q.id in got and q.style == "request"]

    def at(r: int | None, k: int) -> bool:
        return r is not None and r <= k
    return ", ".join(f"{sum(at(got[i], k) and not at(base[i], k) for i in req)}/"
                     f"{sum(at(base[i], k) and not at(got[i], k) for i in req)}" for k in (1, 5))


def _row(label: str, s: StoreData, got: dict[str, int | None],
         base: dict[str, int | None] | None) -> str:
    cells = [_figures(s, got, st) for st in (None, *STYLES)]
    return f"| {label} | {s.name} | " + " | ".join(cells) + (
        f" | {_wins(s, got, base)} |" if base else " | — |")


def _ideas() -> list[tuple[str, Idea]]:
    h = matching.HYBRID
    out = [(name, Idea(dense=name)) for name in DENSE]
    out[1:1] = [
        ("no lexical evidence (dense alone)", Idea(rule=dataclasses.replace(
            h, share=0, all_title=0, rare_full=0))),
        ("text (BM25 share) weight 0.1", Idea(rule=dataclasses.replace(h, text=0.1))),
        ("text weight 0.25", Idea(rule=dataclasses.replace(h, text=0.25))),
        ("share weight 0.1", Idea(rule=dataclasses.replace(h, share=0.1))),
        ("share weight 0.3", Idea(rule=dataclasses.replace(h, share=0.3))),
        ("title share weight 0.1", Idea(rule=dataclasses.replace(h, title=0.1))),
        ("+ 1 × reciprocal-rank fusion (k = 10)", Idea(rrf=1.0)),
        ("+ 3 × reciprocal-rank fusion", Idea(rrf=3.0)),
        ("reciprocal-rank fusion of dense and text alone", Idea(rrf=1.0, only_rrf=True)),
        ("feedback: short queries (≤ 4 words) + 0.3 × top record", Idea(feedback=(1, 0.3, 4))),
        ("feedback: short queries + 0.5 × top 3", Idea(feedback=(3, 0.5, 4))),
        ("feedback: every query + 0.3 × top record", Idea(feedback=(1, 0.3, 99))),
        ("feedback: every query + 0.5 × top 3", Idea(feedback=(3, 0.5, 99))),
        ("feedback: every query + 0.3 × top 5", Idea(feedback=(5, 0.3, 99))),
    ]
    return out


def _row_of(matrix: np.ndarray, i: int, _q: QueryData) -> np.ndarray:
    return np.asarray(matrix[i])


def _bm25_of(bm25: Any, _i: int, q: QueryData) -> np.ndarray:
    return np.asarray(bm25.scores(q.query))


def ideas(args: argparse.Namespace) -> None:
    from search_quality import BM25
    stores = load(args.evidence, args.relex)
    vec = Vectors()
    print("| idea | store | all | keyword | intent | request | rare | requests won/lost "
          "vs engine at 1, at 5 |\n|---|---|---|---|---|---|---|---|")
    rule_rows: dict[str, list[dict[str, Any]]] = {}
    for s in stores:
        qv = vec.of([doctext.embedding_query(q.query) for q in s.queries])
        cos = qv @ vec.of([r.plain for r in s.records]).T
        bm25 = BM25([r.plain for r in s.records])
        print(_row("plain MiniLM cosine (baseline)", s, ranks(s, partial(_row_of, cos)), None))
        print(_row("BM25 (baseline)", s, ranks(s, partial(_bm25_of, bm25)), None))
        mats: dict[str, np.ndarray] = {}
        base = None
        for label, idea in _ideas():
            if args.only and label not in args.only and label != "engine":
                continue
            if idea.dense not in mats:
                mats[idea.dense] = dense_matrix(s, vec, DENSE[idea.dense])
            m = mats[idea.dense]
            if idea.feedback:
                m = feedback_matrix(s, vec, m, *idea.feedback)
            got = ranks(s, partial(_strengths_of, s, m, idea))
            base = base or got
            print(_row(label, s, got, base if label != "engine" else None))
            if args.rules and idea.rule is matching.HYBRID and not idea.rrf and (
                    not args.only or label in (*args.only, "engine")):
                rule_rows.setdefault(label, []).extend(rank_rules.evidence_rows(s, m, idea))
    if args.rules:
        rank_rules.rules(rule_rows, not args.shipped)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect", help="the tuning half's evidence of the three stores")
    c.add_argument("--stores", type=Path, required=True)
    c.add_argument("--out", type=Path, required=True)
    i = sub.add_parser("ideas", help="every idea's figures")
    i.add_argument("evidence", type=Path)
    i.add_argument("--rules", action="store_true", help="also refit the match rule per idea")
    i.add_argument("--shipped", action="store_true",
                   help="with --rules, the shipped rule only (no refit)")
    i.add_argument("--relex", action="store_true",
                   help="read the lexical evidence again with the current domain.lexical")
    i.add_argument("--only", action="append", default=[],
                   help="this idea (its label) beside the engine's; repeatable")
    args = parser.parse_args()
    {"collect": collect, "ideas": ideas}[args.cmd](args)


if __name__ == "__main__":
    main()
