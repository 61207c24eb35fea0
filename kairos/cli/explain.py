"""The command line's view of search evidence: ``kairos search --explain``."""

from __future__ import annotations

from typing import Any

from ..domain.responses import Explained
from . import output as out
from .table import Col, short_id


def _num(value: Any) -> str:
    return "" if value is None else f"{value:.2f}"


def show_explain(result: Explained) -> None:
    """``Kairos.explain_search`` for a person: the query's relevance on stderr, then one
    row per candidate (tab-separated in a pipe), its reason last."""
    for kind, rel in result["relevance"].items():
        verdict = "relevant" if rel["relevant"] else "not relevant"
        out.note(f"{kind}: {verdict} (relevance {rel['value']:.3f}, boundary "
                 f"{rel['boundary']:.3f}; best cosine {_num(rel['best_cosine'])}, "
                 f"background {_num(rel['background_cosine'])}, {rel['documents']} "
                 f"documents); strongest: {rel['strongest']}")
    full, brief = [], []
    for c in result["candidates"]:
        e = c["evidence"]
        roles = e["dense_by_role"]
        uri = c.get("uri") or c.get("entity_id") or ""
        full.append([
            "yes" if c["listed"] else "no", f"{c['score']:.2f}", uri, c["title"],
            _num(roles["doc"]), _num(roles["trigger"]), _num(roles["learned"]),
            _num(e["text"]), _num(e["title_share"]), _num(e["share"]),
            "yes" if e["rare_and_complete"] else "", f"{e['strength']:.3f}",
            f"{e['below_strongest']:.3f}",
            f"{e['quality_boost']:+.3f}" if e["quality_boost"] else "", c["why"]])
        brief.append(["yes" if c["listed"] else "no", f"{c['score']:.2f}", uri,
                      _num(roles["doc"]), _num(e["share"]), f"{e['below_strongest']:.3f}",
                      f"{c['title']}: {c['why']}"])
    if not out.is_terminal():  # every figure, tab-separated, the reason last
        out.table([Col(name) for name in EVIDENCE], full)
        return
    out.table([Col("match"), Col("score", right=True), Col("id", short_id),
               Col("dense", right=True), Col("words", right=True), Col("below", right=True),
               Col("protocol: why", flex=True)], brief)


#: The columns of ``--explain`` in a pipe (and of its ``--json`` candidates' evidence).
EVIDENCE = ("match", "score", "uri", "protocol", "dense", "trigger", "learned", "text",
            "title", "words", "rare", "strength", "below", "boost", "why")
