"""What a person needs to understand a search: each candidate's evidence and why it is, or
is not, listed (``domain.matching.why``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..domain import doctext, matching
from ..domain.responses import Explained
from ..domain.uris import to_uri
from ..store import search_docs
from ..store.db import Store
from .ranking import Hit, Ranked

ROLES = ("doc", "trigger", "learned")


def role_cosines(store: Store, query: np.ndarray | None, rids: Sequence[int],
                 model_id: str) -> dict[int, dict[str, float | None]]:
    """Each document's best cosine per kind of vector: its own texts (``doc``), its author
    triggers, its learned triggers (None: it has none of that kind)."""
    out: dict[int, dict[str, float | None]] = {rid: dict.fromkeys(ROLES) for rid in rids}
    if query is None or not rids:
        return out
    with store.read() as repo:
        rows = search_docs.vectors_of(repo.conn, rids, model_id)
    for rid, role, blob in rows:
        cosine = float(np.frombuffer(blob, np.float32) @ query)
        best = out[rid].get(role)
        out[rid][role] = cosine if best is None else max(best, cosine)
    return out


def names(store: Store, hits: Sequence[Hit]) -> dict[int, dict[str, Any]]:
    """Each hit's identity as the surfaces show it: a protocol's step-1 URI, an entry's
    entity id."""
    with store.read() as repo:
        first = repo.protocols_with_first_step([h.entity_id for h in hits
                                                if h.kind == "protocol"])
    out: dict[int, dict[str, Any]] = {}
    for h in hits:
        if h.kind != "protocol":
            out[h.rid] = {"entity_id": h.entity_id}
        elif (p := first.get(h.entity_id)) is not None:
            out[h.rid] = {"uri": to_uri(p["step_id"])}
    return out


def explain(store: Store, ranked: Ranked, query: str, *, threshold: float, limit: int,
            model_id: str) -> Explained:
    """The explanation of a ranked query: its relevance, and its ``limit`` best candidates
    with their evidence and why each is or is not listed at ``threshold``."""
    hits = ranked.hits[:limit]
    shown = names(store, hits)
    cosines = role_cosines(store, ranked.query_vector, [h.rid for h in hits], model_id)
    asked = doctext.title_form(query)
    relevance: dict[str, Any] = {}
    for family, context in ranked.contexts.items():
        top = next((h for h in ranked.hits if (h.kind == "protocol") is family), None)
        if top is None or top.evidence is None:
            continue
        relevance["protocols" if family else "entries"] = {
            "value": round(top.evidence.relevance, 4),
            "boundary": context.rule.boundary, "relevant": not context.noise and (
                top.evidence.relevance >= context.rule.boundary),
            "best_cosine": _round(context.best_dense),
            "background_cosine": _round(context.background),
            "documents": context.n_docs, "all_noise": context.noise,
            "strongest": top.row["title"]}
    return {"query": query, "search_mode": ranked.mode, "threshold": threshold,
            "relevance": relevance,
            "candidates": [_candidate(h, ranked, cosines[h.rid], threshold, asked,
                                      shown.get(h.rid, {})) for h in hits]}


def _candidate(hit: Hit, ranked: Ranked, cosines: dict[str, float | None], threshold: float,
               asked: str, name: dict[str, Any]) -> dict[str, Any]:
    scored = hit.evidence
    assert scored is not None
    context = ranked.contexts[hit.kind == "protocol"]
    lex = hit.lexical
    return {
        **name, "kind": hit.kind, "title": hit.row["title"], "score": round(hit.score, 4),
        "listed": hit.score >= threshold,
        "why": matching.why(scored, context, threshold,
                            exact_title=doctext.title_form(hit.row["title"]) == asked),
        "evidence": {
            "dense": _round(hit.dense),
            "dense_by_role": {role: _round(cosines.get(role)) for role in ROLES},
            "text": _round(hit.text), **lex.to_dict(),
            "strength": round(scored.strength, 4),
            "below_strongest": round(scored.below_top, 4),
            "quality_boost": round(scored.boost, 4),
        },
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
