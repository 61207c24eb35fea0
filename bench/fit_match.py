"""Fit the constants of ``kairos.domain.matching`` on the tuning halves of the evaluation
sets (``agent_sets.py``), from the engine's own evidence:

    python bench/match_eval.py --split tune --evidence bench/results/match_evidence.jsonl
    python bench/fit_match.py bench/results/match_evidence.jsonl

It refuses evidence of the test half. Every figure below is computed by the engine's own
functions (``matching.score``), pooled over the three stores (each store weighs the same),
one step at a time:

1. **spread**: not fitted on outcomes: the median over every tuning query of the spread
   (standard deviation) of its cosines over its store;
2. **strength** weights (text, title share, share, every word in the title, rare and
   complete) and the **gap** weight, on a grid: each grid point's **boundary** is the
   highest that keeps at least ``ACCEPT`` of every store's on-topic queries relevant (a
   query judged irrelevant hides its right answer); among the points that rank within
   ``RANK_SLACK`` of the best ranking (the mean over stores of (recall@1 + recall@5) / 2
   of the on-topic queries), the one kept ranks the most rare-term queries' protocol
   first (a rare word found in a step decides), then judges the most off-topic queries
   irrelevant (the worst store first, then the mean), then ranks best;
3. **slope**: the maximum-likelihood slope of "the strongest candidate is a right answer"
   in ``sigmoid(logit(anchor) + slope * (ρ - boundary))``;
4. **margin** and **margin slope**: those that show the fewest matches while at most
   ``HIDDEN`` of every store's on-topic queries have a right answer in the engine's top
   five that is not a match.

The text-only rule (no vectors) is fitted the same way on the same evidence without its
dense part, its strength's text weight 1.

Both rules must also keep the contract: the scenarios of contract §3 (``CONTRACT``, as
``tests/spec/test_seed_000_search.py`` runs them), ranked by the real engine with and
without vectors, must give exactly the seed's matches; a grid point that breaks one is
not kept.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kairos.domain import matching, scoring
from kairos.domain.lexical import Lexical, is_noise

ACCEPT = 0.985    # on-topic queries of every store judged relevant, at least
HIDDEN = 0.015    # on-topic queries of every store with a right answer hidden, at most
RANK_SLACK = 0.01  # how much ranking quality the relevance may cost
STORES = ("team", "tldr", "entries")


JIRA = ("# Create Jira Ticket in BIB - {0}\n\n## Core Principles / Discovery & Pattern "
        "Analysis\n\n{1}\n\nPROOF OF WORK: mcp jira_create_issue\n")
#: The kairos_search scenarios of contract §3: (documents, query, the titles that must be
#: the matches).
CONTRACT = (
    (["# Deploy the coding extension\n\n## Ship it\n\nDeploy the extension to production."
      "\n\nPROOF OF WORK: make deploy\n",
      "# Bake sourdough bread\n\n## Knead\n\nKnead the dough for ten minutes.\n"],
     "coding deploy", {"Deploy the coding extension"}),
    ([JIRA.format("Bug", "Reproduce the defect first, attach logs and screenshots, set "
                         "severity."),
      JIRA.format("Story", "Write the user story with acceptance criteria and story points."),
      JIRA.format("Task", "Describe the chore, link the parent epic and assign an owner."),
      "# Water the garden\n\n## Hose\n\nWater the tomatoes at dawn.\n"],
     "Jira create ticket", {f"Create Jira Ticket in BIB - {k}" for k in ("Bug", "Story",
                                                                          "Task")}),
    (["# Database Migration Workflow\n\n## Migration Steps\n\nApply the schema migration "
      "with alembic.\n", "# Emergency Rollback Protocol\n\n## Rollback Procedures\n\n"
      "Roll back the release when errors spike.\n"],
     "database migration rollback", {"Database Migration Workflow",
                                     "Emergency Rollback Protocol"}),
    ([JIRA.format("Bug", "Reproduce the defect first, attach logs and screenshots, set "
                         "severity.")], "xyzqwerty nonexistent protocol foobar", set()),
)


@dataclass
class Query:
    store: str
    style: str
    expected: set[str]
    ids: list[str]
    kinds: list[str]
    evidence: list[matching.Evidence]
    exact: list[bool]
    n_docs: int
    noise: bool
    spread: float | None
    features: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 6)))
    right: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, bool))

    @property
    def on_topic(self) -> bool:
        return bool(self.expected)

    def __post_init__(self) -> None:
        """The strength's terms as a matrix (``matching.strength`` is linear in them)."""
        self.features = np.array([[e.dense or 0.0, e.text or 0.0, e.lexical.title_share,
                                   e.lexical.share, e.lexical.all_title,
                                   e.lexical.rare_full] for e in self.evidence],
                                 dtype=float).reshape(-1, 6)
        self.right = np.array([i in self.expected for i in self.ids], dtype=bool)
        cosines = sorted((e.dense for e in self.evidence if e.dense is not None), reverse=True)
        self.best_dense = cosines[0] if cosines else None
        self.background = (cosines[min(matching.BACKGROUND_RANK, len(cosines)) - 1]
                           if len(cosines) > 1 else None)


def contract(*, text_only: bool) -> list[Query]:
    """Contract §3's scenarios as queries (store "contract"), ranked by the real engine."""
    import tempfile

    from corpus import open_kairos

    from kairos.search.embedders import LocalEmbedder, NoEmbedder

    out = []
    for docs, query, expected in CONTRACT:
        with tempfile.TemporaryDirectory() as home:
            k = open_kairos(Path(home), NoEmbedder() if text_only else LocalEmbedder().load())
            for doc in docs:
                k.mint(doc)
            ranked = k.search_engine.candidates.rank(query, space="default", kinds=("protocol",))
            terms = ranked.terms
            out.append(Query(
                "contract", "seed", set(expected), [h.row["title"] for h in ranked.hits],
                [h.kind for h in ranked.hits],
                [matching.Evidence(h.dense, h.text, h.lexical) for h in ranked.hits],
                [h.evidence is not None and h.evidence.score >= 1.0 for h in ranked.hits],
                terms.n_scope if terms and terms.n_scope is not None else len(docs),
                bool(terms) and all(is_noise(w) for w in terms.words), None))
            k.close()
    return out


def keeps_contract(cases: list[Query], rule: matching.Rule) -> bool:
    """Each seed scenario gives exactly its matches."""
    for q in cases:
        s, _z, _ = vector_scores(q, rule)
        anchor = scoring.anchor("protocol", text_only=rule.spread == 0.0)
        if {q.ids[i] for i in range(len(s)) if s[i] >= anchor} != q.expected:
            return False
    return True


def load(paths: list[Path], *, text_only: bool = False) -> list[Query]:
    out = []
    for path in paths:
        for line in path.read_text("utf-8").splitlines():
            if not line:
                continue
            row = json.loads(line)
            if row["split"] != "tune":
                sys.exit(f"{path}: holds {row['split']} queries; fit on the tuning half only")
            cands = row["candidates"]
            if text_only:
                cands = [c for c in cands if c["text"]]
            terms = row["terms"]
            out.append(Query(
                row["store"], row["style"], set(row["expected"]),
                [c["id"] for c in cands], [c["kind"] for c in cands],
                [matching.Evidence(None if text_only else c["dense"], c["text"], Lexical(
                    c["title_share"], c["share"], c["rare"], c["informative_words"]))
                 for c in cands],
                [c["exact_title"] for c in cands],
                terms[3] if terms and terms[3] is not None else row["n_docs"],
                bool(terms) and all(is_noise(w) for w in terms[0]),
                row["dense_std"]))
    return out


def weights(rule: matching.Rule) -> np.ndarray:
    return np.array([1.0, rule.text, rule.title, rule.share, rule.all_title, rule.rare_full])


def vector_scores(q: Query, rule: matching.Rule) -> tuple[np.ndarray, np.ndarray, float]:
    """(scores, strengths, ρ) of every candidate: ``matching.score`` for many candidates
    at once (``check`` compares the two)."""
    w = weights(rule)
    dense = q.features[:, :2] @ w[:2]
    lexical = q.features[:, 2:] @ w[2:]
    z = dense + lexical
    if not len(z):
        return z, z, -math.inf
    z_top = float(z.max())
    chance = rule.spread * matching.expected_max(q.n_docs)
    gap = (0.0 if q.best_dense is None or q.background is None
           else q.best_dense - q.background)
    rho = float((np.maximum(0.0, dense - chance) + lexical).max()) + rule.gap * gap
    anchor = scoring.anchor(q.kinds[0], text_only=rule.spread == 0.0)
    confidence = matching.Context(rule, q.best_dense, q.background, q.n_docs,
                                  q.noise).confidence(rho)
    logit = (math.log(anchor / (1 - anchor)) + confidence
             - rule.margin_slope * np.maximum(0.0, (z_top - z) - rule.margin))
    s = np.minimum(1.0 / (1.0 + np.exp(-logit)), matching.MAX_SCORE)
    s = np.where(np.array(q.exact) & (not q.noise), scoring.EXACT_TITLE_SCORE, s)
    return s, z, rho


def check(queries: list[Query], rule: matching.Rule) -> None:
    """``vector_scores`` gives what the engine's ``matching.score`` gives."""
    for q in queries[::25]:
        if not q.ids:
            continue
        anchor = scoring.anchor(q.kinds[0], text_only=rule.spread == 0.0)
        found = matching.score([matching.Candidate(e, anchor, x)
                                for e, x in zip(q.evidence, q.exact, strict=True)],
                               matching.Context(rule, q.best_dense, q.background, q.n_docs,
                                                q.noise))
        mine, _, _ = vector_scores(q, rule)
        assert np.allclose(mine, [f.score for f in found]), q


def figures(queries: list[Query], rule: matching.Rule) -> dict[str, dict[str, float]]:
    """Per store: recall@1 and @5 of the ranking, first match right, a right answer among
    the matches, hidden, off-topic with no match, matches per query."""
    acc: dict[str, dict[str, list[float]]] = {s: {} for s in STORES}
    for q in queries:
        s, z, rho = vector_scores(q, rule)
        order = np.lexsort((-z, -s))
        shown = order[s[order] >= scoring.anchor(q.kinds[0] if q.kinds else "protocol",
                                                 text_only=rule.spread == 0.0)][:10]
        f = acc[q.store]
        if not q.on_topic:
            f.setdefault("off_no_match", []).append(float(not len(shown)))
            continue
        right = q.right
        f.setdefault("r1", []).append(float(len(order) > 0 and right[order[0]]))
        f.setdefault("r5", []).append(float(right[order[:5]].any()))
        f.setdefault("first", []).append(float(len(shown) > 0 and right[shown[0]]))
        f.setdefault("among", []).append(float(right[shown].any()))
        top = next((i for i in order[:5] if right[i]), None)
        f.setdefault("hidden", []).append(float(top is not None and top not in set(shown)))
        f.setdefault("matches", []).append(float(len(shown)))
        f.setdefault("relevant", []).append(float(rho >= rule.boundary and not q.noise))
    return {s: {k: float(np.mean(v)) for k, v in f.items()} for s, f in acc.items() if f}


def rare_first(queries: list[Query], rule: matching.Rule) -> float:
    """The share of rare-term queries whose right answer ranks first."""
    w = weights(rule)
    rows = [q.right[int(np.argmax(q.features @ w))] for q in queries
            if q.style == "rare" and len(q.ids)]
    return float(np.mean(rows)) if rows else 1.0


def ranking(queries: list[Query], rule: matching.Rule) -> float:
    """The mean over stores of (recall@1 + recall@5) / 2, on-topic queries."""
    per: dict[str, list[float]] = {}
    w = weights(rule)
    for q in queries:
        if not q.on_topic or not len(q.ids):
            continue
        z = q.features @ w
        order = np.argsort(-z, kind="stable")
        per.setdefault(q.store, []).append(
            (float(q.right[order[0]]) + float(q.right[order[:5]].any())) / 2)
    return float(np.mean([np.mean(v) for v in per.values()]))


def _mean(fig: dict[str, dict[str, float]], key: str) -> float:
    return float(np.mean([f[key] for f in fig.values() if key in f]))


def _worst(fig: dict[str, dict[str, float]], key: str, low: bool = True) -> float:
    values = [f[key] for f in fig.values() if key in f]
    return min(values) if low else max(values)


def grid(base: matching.Rule) -> Iterator[matching.Rule]:
    for text, title, share, all_title, rare, gap in itertools.product(
            (0.0, 0.1, 0.25), (0.0, 0.1), (0.0, 0.1, 0.2, 0.3), (0.0, 0.1, 0.2, 0.3, 0.5),
            (0.0, 0.1, 0.2, 0.3, 0.5, 1.0), (0.0, 0.2, 0.4)):
        yield dataclasses.replace(base, text=text, title=title, share=share,
                                  all_title=all_title, rare_full=rare, gap=gap)


def relevance_of(q: Query, rule: matching.Rule) -> float:
    _, _, rho = vector_scores(q, rule)
    return -math.inf if q.noise else rho


def fit_boundary(queries: list[Query], rule: matching.Rule) -> tuple[float, dict[str, float]]:
    """The highest boundary keeping ``ACCEPT`` of every store's answerable on-topic queries
    (a right answer among the candidates) relevant, and the share of each store's
    off-topic queries judged irrelevant with it."""
    per_store = {}
    for store in STORES:
        rho = sorted(relevance_of(q, rule) for q in queries
                     if q.store == store and q.on_topic and q.right.any())
        if rho:
            # just below the quantile's own relevance, so that the query itself is kept
            per_store[store] = rho[math.floor((1 - ACCEPT) * len(rho))] - 1e-4
    boundary = min(per_store.values())
    rejected = {store: float(np.mean([relevance_of(q, rule) < boundary for q in queries
                                      if q.store == store and not q.on_topic]))
                for store in STORES if any(q.store == store and not q.on_topic
                                           for q in queries)}
    return boundary, rejected


def fit_relevance(queries: list[Query], base: matching.Rule, cases: list[Query], *,
                  text_only: bool) -> matching.Rule:
    """Steps 1 and 3: the strength weights and the gap weight that judge the most
    off-topic queries irrelevant, among those that rank within ``RANK_SLACK`` of the best
    ranking, each with its boundary."""
    rules = list(grid(base))
    if text_only:
        rules = [dataclasses.replace(r, text=1.0, gap=0.0) for r in rules if r.gap == 0.0]
    quality = {r: ranking(queries, r) for r in rules}
    best_rank = max(quality.values())
    chosen: tuple[tuple[float, float, float, float], matching.Rule] | None = None
    for rule in rules:
        if quality[rule] < best_rank - RANK_SLACK:
            continue
        boundary, rejected = fit_boundary(queries, rule)
        key = (rare_first(queries, rule), min(rejected.values()),
               float(np.mean(list(rejected.values()))), quality[rule])
        fitted = dataclasses.replace(rule, boundary=round(boundary, 4))
        # the contract's relevance: scenarios 1-3 relevant, scenario 4 not
        relevant = [relevance_of(q, fitted) >= fitted.boundary for q in cases]
        if relevant != [bool(q.expected) for q in cases]:
            continue
        if chosen is None or key > chosen[0]:
            chosen = (key, fitted)
    assert chosen is not None
    return chosen[1]


def fit_slope(queries: list[Query], rule: matching.Rule) -> float:
    """Maximum likelihood of "the strongest candidate is right", each store weighing
    the same, over a grid."""
    rows = []
    for q in queries:
        if len(q.ids) and not q.noise:
            s, z, rho = vector_scores(q, rule)
            rows.append((q.store, rho - rule.boundary,
                         bool(q.right[int(np.lexsort((-z, -s))[0])])))
    weights = {s: 1 / max(1, sum(r[0] == s for r in rows)) for s in STORES}
    base = math.log(scoring.MATCH_THRESHOLD / (1 - scoring.MATCH_THRESHOLD))

    def nll(a: float) -> float:
        total = 0.0
        for store, x, right in rows:
            p = 1 / (1 + math.exp(-(base + a * x)))
            p = min(max(p, 1e-9), 1 - 1e-9)
            total -= weights[store] * (math.log(p) if right else math.log(1 - p))
        return total

    return min(np.arange(0.5, 20.01, 0.25), key=nll)


def fit_margin(queries: list[Query], rule: matching.Rule, cases: list[Query]
               ) -> matching.Rule:
    """The margin and margin slope that show the fewest matches (the mean over stores of
    the matches per on-topic query) while hiding a right answer of at most ``HIDDEN`` of
    every store's on-topic queries."""
    best: tuple[float, matching.Rule] | None = None
    for margin, steep in itertools.product(np.arange(0.0, 0.41, 0.02),
                                           (40.0, 30.0, 20.0, 15.0, 10.0, 8.0, 6.0, 4.0)):
        candidate = dataclasses.replace(rule, margin=round(float(margin), 2),
                                        margin_slope=steep)
        fig = figures(queries, candidate)
        if _worst(fig, "hidden", low=False) <= HIDDEN and keeps_contract(cases, candidate):
            shown = _mean(fig, "matches")
            if best is None or shown < best[0]:
                best = (shown, candidate)
    return best[1] if best is not None else dataclasses.replace(rule, margin=0.4,
                                                                margin_slope=4.0)


def fit(queries: list[Query], base: matching.Rule, *, text_only: bool) -> matching.Rule:
    cases = contract(text_only=text_only)
    if text_only:
        base = dataclasses.replace(base, gap=0.0, spread=0.0)
    else:
        spreads = [q.spread for q in queries if q.spread]
        base = dataclasses.replace(base, spread=round(float(np.median(spreads)), 3))
    rule = fit_relevance(queries, base, cases, text_only=text_only)
    rule = dataclasses.replace(rule, slope=float(fit_slope(queries, rule)))
    return fit_margin(queries, rule, cases)


def report(name: str, queries: list[Query], rule: matching.Rule) -> dict[str, Any]:
    check(queries, rule)
    fig = figures(queries, rule)
    print(f"{name}: {rule}")
    for store, f in fig.items():
        print(f"  {store:8} " + "  ".join(f"{k} {v:.3f}" for k, v in f.items()))
    return {"rule": dataclasses.asdict(rule), "figures": fig}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("evidence", type=Path, nargs="+")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    out = {}
    queries = load(args.evidence)
    out["current hybrid"] = report("in the engine now", queries, matching.HYBRID)
    hybrid = fit(queries, matching.HYBRID, text_only=False)
    out["hybrid"] = report("fitted, hybrid", queries, hybrid)
    text_queries = load(args.evidence, text_only=True)
    text_base = dataclasses.replace(hybrid, text=1.0)
    text = fit(text_queries, text_base, text_only=True)
    out["text"] = report("fitted, text only", text_queries, text)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
