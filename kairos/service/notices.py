"""The notice a kairos_search answer carries when it came from text search alone.

kairos_search's response (seed 000) has no place for the provider; when vectors could not
serve the query it gains ``degraded``, ``search_mode``, ``provider`` and
``provider_hint``, the fields the unified search (seed 002) reports, so an agent knows the
ranking is weaker. Nothing is added when vectors served the query.
"""

from __future__ import annotations

from typing import Any

from ..search.service import SearchService


def degraded_notice(engine: SearchService) -> dict[str, Any]:
    """The notice for the provider's state right after a search: vectors are not ready,
    or the provider failed on its last call (a remote provider that is down)."""
    state = str(getattr(engine.embedder, "state", "ready"))
    if engine.vectors_ready and not state.startswith("failed"):
        return {}
    if engine.provider == "none":
        hint = "Vector search is disabled (embedder 'none'); text search was used."
    else:
        hint = f"Vector search unavailable ({state}); text fallback used."
    return {"degraded": True, "search_mode": "text", "provider": engine.provider,
            "provider_hint": hint}


__all__ = ["degraded_notice"]
