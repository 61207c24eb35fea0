"""kairos_search over protocols (contract §3)."""

from __future__ import annotations

from ..domain.caller import Caller
from ..domain.limits import SEARCH_DEFAULT
from ..domain.requests import Search
from ..domain.responses import Explained, SearchResult
from ..domain.search_response import Match, search_response
from ..domain.uris import to_uri
from ..search.explain import explain
from ..search.service import SearchService
from ..store.db import Store


class ProtocolFinder:
    def __init__(self, store: Store, search: SearchService, threshold: float = 0.30) -> None:
        self.store = store
        self.search = search
        self.threshold = threshold

    def kairos_search(self, req: Search, caller: Caller, *,
                      notice: bool = False) -> SearchResult:
        text = req.query.strip()
        top_n = req.limit or SEARCH_DEFAULT
        ranked = self.search.candidates.rank(text, space=caller.space, kinds=("protocol",),
                                             boosts=True)
        self.search.learning.note(caller.space, caller.id, text, ranked)
        hits = [h for h in ranked.hits if h.score >= self.threshold][:top_n]
        with self.store.read() as repo:
            found = repo.protocols_with_first_step([h.entity_id for h in hits])
        matches = [Match(to_uri(p["step_id"]), p["label"], p["title"], hit.score, list(p["tags"]))
                   for hit in hits
                   if (p := found.get(hit.entity_id)) is not None and not p["builtin"]]
        response = search_response(matches)
        if notice and ranked.degraded:
            # The response has no place for the provider: on request (the MCP tool, the
            # command line), the unified search's fields (contract §5) say that text
            # alone served it.
            response.update({"degraded": True, "search_mode": ranked.mode,
                             "provider": self.search.embedder.name, "provider_hint": ranked.hint})
        return response

    def explain(self, req: Search, caller: Caller) -> Explained:
        text = req.query.strip()
        ranked = self.search.candidates.rank(text, space=caller.space, kinds=("protocol",),
                                             boosts=True)
        return explain(self.store, ranked, text, threshold=self.threshold,
                       limit=req.limit or SEARCH_DEFAULT, model_id=self.search.embedder.model_id)
