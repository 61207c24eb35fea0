"""kairos_search (seed 000) over protocols."""

from __future__ import annotations

from typing import Any

from ..domain.errors import ValidationError
from ..domain.search_response import Match, search_response
from ..domain.uris import to_uri
from ..search.service import SearchService
from ..store.db import Store
from .protocols import Caller

MAX_QUERY = 2000
DEFAULT_LIMIT = 10
MAX_LIMIT = 25


def check_query(query: Any) -> str:
    if not isinstance(query, str) or not query.strip():
        raise ValidationError("query", "a non-empty search string")
    if len(query) > MAX_QUERY:
        raise ValidationError("query", f"at most {MAX_QUERY} characters",
                              message=f"query is {len(query)} characters; the limit is "
                                      f"{MAX_QUERY}.")
    return query.strip()


def check_limit(limit: Any, default: int = DEFAULT_LIMIT, maximum: int = MAX_LIMIT) -> int:
    if limit is None:
        return default
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= maximum:
        raise ValidationError("limit", f"an integer from 1 to {maximum}")
    return limit


class ProtocolFinder:
    def __init__(self, store: Store, search: SearchService, threshold: float = 0.30) -> None:
        self.store = store
        self.search = search
        self.threshold = threshold

    def kairos_search(self, query: Any, caller: Caller, *, limit: Any = None,
                      notice: bool = False) -> dict[str, Any]:
        text = check_query(query)
        top_n = check_limit(limit)
        ranked = self.search.rank(text, space=caller.space, kinds=("protocol",), boosts=True)
        hits = [h for h in ranked.hits if h.score >= self.threshold][:top_n]
        with self.store.read() as repo:
            found = repo.protocols_with_first_step([h.entity_id for h in hits])
        matches = [Match(to_uri(p["step_id"]), p["label"], p["title"], hit.score, list(p["tags"]))
                   for hit in hits
                   if (p := found.get(hit.entity_id)) is not None and not p["builtin"]]
        response = search_response(matches)
        if notice and ranked.degraded:
            # Seed 000 has no place for the provider: on request (the MCP tool, the command
            # line), the unified search's fields (seed 002) say that text alone served it.
            response |= {"degraded": True, "search_mode": ranked.mode,
                         "provider": self.search.provider, "provider_hint": ranked.hint}
        return response
