"""The match rule refitted (``fit_match.py``) on a ranking idea's evidence of the tuning
half (``rank_ideas.py ideas --rules``), and what an agent would see with it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kairos.domain import doctext, matching, scoring
from kairos.domain.lexical import Lexical
from kairos.search import ranking as engine_ranking

if TYPE_CHECKING:
    from rank_evidence import StoreData
    from rank_ideas import Idea


def evidence_rows(s: StoreData, dense: np.ndarray, idea: Idea) -> list[dict[str, Any]]:
    """What ``match_eval.py --evidence`` writes, under this idea: each query's candidates
    as ``search.ranking`` picks them for kairos_search (the lexical pool, then the
    ``CANDIDATES`` strongest) with their evidence."""
    rule, out = idea.rule, []
    for qi, q in enumerate(s.queries):
        d = dense[qi]
        text = np.zeros(len(d))
        text[list(q.text)] = list(q.text.values())
        partial = d + rule.text * text
        matched = [i for i in q.text if q.text[i] > 0]
        pool = set(sorted(matched, key=lambda i: -partial[i])[:engine_ranking.LEXICAL_POOL])
        pool |= set(sorted(q.text, key=lambda i: -q.text[i])[:engine_ranking.LEXICAL_TEXT])
        none = Lexical(informative=q.informative)
        lex = {i: Lexical(*q.lexical[i]) for i in pool if i in q.lexical}
        z = partial + np.array([matching.parts(matching.Evidence(None, None, lex.get(i, none)),
                                               rule)[1] for i in range(len(d))])
        kept = np.argsort(-z, kind="stable")[:engine_ranking.CANDIDATES]
        cands = [{"id": s.records[i].id, "kind": s.records[i].kind, "dense": float(d[i]),
                  "text": float(text[i]) if q.terms else None,
                  "exact_title": doctext.title_form(s.records[i].title)
                  == doctext.title_form(q.query), **lex.get(int(i), none).to_dict()}
                 for i in kept]
        out.append({"store": s.name, "id": q.id, "query": q.query, "style": q.style,
                    "split": "tune", "expected": q.expected, "n_docs": len(d),
                    "terms": None if q.terms is None else [*q.terms, None],
                    "candidates": cands, "dense_all": np.sort(d)[::-1][:50].tolist(),
                    "dense_mean": float(d.mean()), "dense_std": float(d.std())})
    return out


def _matches_r5(queries: list[Any], rule: matching.Rule) -> float:
    """Recall@5 of the matches (what ``match_eval.py`` reports as the agent's R@5)."""
    import fit_match
    hits = []
    for q in queries:
        scores, z, _ = fit_match.vector_scores(q, rule)
        order = np.lexsort((-z, -scores))
        shown = order[scores[order] >= scoring.MATCH_THRESHOLD][:5]
        hits.append(bool(q.right[shown].any()))
    return float(np.mean(hits))


def rules(rows_of: dict[str, list[dict[str, Any]]], refit: bool = True) -> None:
    """What an agent sees with each idea's evidence under the shipped rule
    (``matching.HYBRID``) and, with ``refit``, under the rule refitted on it
    (``fit_match.fit``): per store, tldr's requests (with the matches' recall@5) and
    every store's rare step terms (first match right)."""
    import tempfile

    import fit_match
    print("\n| idea | rule | store | first match right | right among matches | hidden | "
          "off-topic, no match | matches per query |\n|---|---|---|---|---|---|---|---|")
    for label, rows in rows_of.items():
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as f:
            f.write("\n".join(json.dumps(r) for r in rows) + "\n")
            f.flush()
            queries = fit_match.load([Path(f.name)])
        fitted = [("shipped", matching.HYBRID)]
        if refit:
            fitted.append(("refitted", fit_match.fit(queries, matching.HYBRID, text_only=False)))
        for how, rule in fitted:
            cells = f"| {label} | {how} |"
            for store, fig in fit_match.figures(queries, rule).items():
                print(f"{cells} {store} | {fig['first']:.3f} | {fig['among']:.3f} | "
                      f"{fig['hidden']:.3f} | {fig.get('off_no_match', float('nan')):.3f} | "
                      f"{fig['matches']:.2f} |")
            requests = [q for q in queries if q.store == "tldr" and q.style == "request"]
            fig = fit_match.figures(requests, rule)["tldr"]
            print(f"{cells} tldr requests | {fig['first']:.3f} | {fig['among']:.3f} (in the "
                  f"first five: {_matches_r5(requests, rule):.3f}) | {fig['hidden']:.3f} | — | "
                  f"{fig['matches']:.2f} |")
            rare = [q for q in queries if q.style == "rare"]
            for store, fig in fit_match.figures(rare, rule).items():
                print(f"{cells} {store} rare | {fig['first']:.3f} | {fig['among']:.3f} | "
                      f"{fig['hidden']:.3f} | — | {fig['matches']:.2f} |")
            if how == "refitted":
                print(f"<!-- {label}: {rule} -->")
