"""The kairos_search response (contract §3, rule R7), from ranked matches."""

from __future__ import annotations

from dataclasses import dataclass

from . import texts
from .responses import Choice, SearchResult


@dataclass(frozen=True)
class Match:
    uri: str           # the protocol's step 1
    label: str         # step 1's label
    chain_label: str   # the protocol's title
    score: float       # calibrated, in [0, 1]
    tags: list[str]


def search_response(matches: list[Match]) -> SearchResult:
    choices: list[Choice] = [{
        "uri": m.uri,
        "label": m.label,
        "chain_label": m.chain_label,
        "score": round(min(1.0, max(0.0, m.score)), 2),
        "role": "match",
        "tags": list(m.tags),
        "next_action": texts.match_next_action(m.uri),
    } for m in matches]
    if len(matches) == 1:
        return {"must_obey": True, "message": texts.SEARCH_MSG_ONE,
                "next_action": texts.SEARCH_NEXT_ACTION_SINGLE, "choices": choices}
    if matches:
        message = texts.search_message_many(len(matches), max(m.score for m in matches))
    else:
        message = texts.SEARCH_MSG_NONE
    choices += [texts.refine_choice(), texts.create_choice()]
    return {"must_obey": True, "message": message, "next_action": texts.SEARCH_NEXT_ACTION,
            "choices": choices}
