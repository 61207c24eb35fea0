"""The unified search over experiences, manuals and protocols (contract §5), with the
session memory that hides or downranks what a conversation already saw."""

from __future__ import annotations

from typing import Any

from ..domain import limits, scoring
from ..domain.caller import Caller, valid_session_id
from ..domain.errors import NotFoundError, ValidationError
from ..domain.requests import ALL_FIELDS, ENTRY_TYPES, Cite, SearchEntries
from ..domain.responses import SessionInfo, UnifiedResult
from ..domain.uris import to_uri
from ..search.explain import explain
from ..search.ranking import Hit
from ..search.service import SearchService
from ..search.snippets import make_snippet
from ..store.db import Store
from ..store.repo import Repo

DOWNRANK_FACTOR = 0.5
#: The field that holds each kind's body.
BODY = {"experience": "playbook", "manual": "content", "protocol": "content"}


class EntrySearch:
    def __init__(self, store: Store, search: SearchService) -> None:
        self.store = store
        self.search = search

    # --- the unified search ------------------------------------------------------------------

    def search_entries(self, req: SearchEntries, caller: Caller, *,
                       session_id: str | None = None) -> UnifiedResult:
        fields = known_fields(req.fields, ALL_FIELDS)
        query, types = req.query.strip(), tuple(dict.fromkeys(req.types or ENTRY_TYPES))
        offset, limit = req.offset or 0, req.limit or limits.SEARCH_DEFAULT
        sid = valid_session_id(session_id) or valid_session_id(req.session_id)
        key = session_key(caller, sid) if sid else None
        sessions = self.search.sessions
        viewed = sessions.viewed(key) if key else set()
        filters = req.filters.model_dump(exclude_none=True) if req.filters else {}
        if req.category is not None:
            filters["category"] = req.category
        hide = bool(req.hide_viewed)
        # Every record that can reach the threshold is scored: totals and pages are exact.
        floor = req.min_score if req.min_score is not None else min(
            scoring.ENTRY_MIN_SCORE_TEXT, scoring.ENTRY_MIN_SCORE)
        ranked = self.search.candidates.rank(query, space=caller.space, kinds=types,
                                             filters=filters, exclude=viewed if hide else None,
                                             boosts="protocol" in types, floor=floor)
        min_score = req.min_score
        if min_score is None:
            min_score = scoring.ENTRY_MIN_SCORE_TEXT if ranked.degraded else scoring.ENTRY_MIN_SCORE
        downranked = viewed if not hide and req.downrank_viewed is not False else set()
        scored = [(hit.score * DOWNRANK_FACTOR, hit, True) if hit.entity_id in downranked
                  else (hit.score, hit, False) for hit in ranked.hits]
        scored.sort(key=lambda s: (-s[0], -(s[1].evidence.strength if s[1].evidence else 0.0),
                                   s[1].row["title"]))
        best = scored[0][0] if scored else None
        kept = [s for s in scored if s[0] >= min_score]
        total = len(kept)
        page = kept[offset:offset + limit]
        warnings: list[str] = []
        hint = ranked.hint
        if best is not None and best < min_score:
            warnings.append(f"low_confidence: top_score {best:.2f} is below min_score "
                            f"{min_score:.2f}")
            if hint is None:
                hint = "Low confidence: the top score is below min_score."
        results = self._results(page, ranked, hint, offset=offset, query=query, fields=fields,
                                snippet_len=req.snippet_len or limits.SNIPPET_DEFAULT)
        if key:
            sessions.record(key, query=query, viewed=[r["entity_id"] for r in results])
        result: UnifiedResult = {
            "results": results,
            "count": len(results),
            "total": total,
            "has_more": offset + len(page) < total,
            "top_score": round(best, 4) if best is not None else None,
            "min_score": min_score,
            "warnings": warnings,
            "session_applied": sid is not None,
            "provider": self.search.embedder.name,
            "search_mode": ranked.mode,
            "degraded": ranked.degraded,
            "provider_hint": hint,
        }
        if req.explain:
            result["explain"] = explain(self.store, ranked, query, threshold=min_score,
                                        limit=limit, model_id=self.search.embedder.model_id)
        return result

    def _results(self, page: list[tuple[float, Hit, bool]], ranked: Any, hint: str | None, *,
                 offset: int, query: str, fields: list[str] | None, snippet_len: int
                 ) -> list[dict[str, Any]]:
        results = []
        with self.store.read() as repo:
            for i, (score, hit, penalised) in enumerate(page):
                record = self._record(repo, hit)
                if record is None:
                    continue
                body = record.get(BODY[hit.kind]) or ""
                matched = ("keyword" if hit.dense is None else
                           "semantic and keyword" if hit.text else "semantic")
                reasons = [f"{matched} match"]
                if penalised:
                    reasons.append(f"viewed earlier in this session (score ×{DOWNRANK_FACTOR})")
                result = {
                    "entity_id": record["entity_id"],
                    "entity_type": hit.kind,
                    "title": hit.row["title"],
                    "section": hit.row.get("section"),
                    "score": round(score, 4),
                    "rank": offset + i + 1,
                    "reason": "; ".join(reasons),
                    "provider": self.search.embedder.name,
                    "degraded": ranked.degraded,
                    "hint": hint,
                    "provider_hint": hint,
                    "heading": hit.row["title"],
                    "snippet": make_snippet(body, query, snippet_len),
                    "author": hit.row.get("author"),
                    "updated_at": hit.row["updated_at"],
                }
                for f in fields or []:
                    if f in record and f not in result:
                        result[f] = record[f]
                results.append(result)
        return results

    def _record(self, repo: Repo, hit: Hit) -> dict[str, Any] | None:
        if hit.kind == "protocol":
            proto = repo.protocol(hit.entity_id)
            steps = repo.steps_of(hit.entity_id)
            if proto is None or not steps:
                return None
            body = repo.search_body(hit.rid)
            return {"entity_id": to_uri(steps[0]["id"]), "content": body or "",
                    "tags": proto["tags"], "title": proto["title"]}
        row = repo.entry(hit.kind, hit.entity_id)
        if row is None:
            return None
        return {"entity_id": row["id"], **dict(row)}

    # --- sessions ----------------------------------------------------------------------------

    def session_info(self, session_id: str | None, caller: Caller) -> SessionInfo:
        sid = valid_session_id(session_id)
        info = self.search.sessions.get(session_key(caller, sid)) if sid else None
        if sid is None or info is None:
            raise NotFoundError(f"No session {session_id!r} (unknown or expired).",
                                field="session_id")
        return {**info, "session_id": sid}  # the id as the caller named it, not its key

    def cite(self, req: Cite, caller: Caller) -> SessionInfo:
        sid, ids = req.session_id, req.ids
        key = session_key(caller, sid)
        if self.search.sessions.get(key) is None:  # citing never creates a session
            raise NotFoundError(f"No session {sid!r} (unknown or expired): search in it "
                                "first.", field="session_id")
        return {**self.search.sessions.cite(key, ids), "session_id": sid}


def session_key(caller: Caller, session_id: str) -> str:
    """Sessions belong to a space: the same id in another space is another session."""
    return f"{caller.space}/{session_id}"


def known_fields(fields: list[str] | None, allowed: list[str]) -> list[str] | None:
    unknown = [f for f in fields or () if f not in allowed]
    if unknown:
        names = ", ".join(allowed)
        raise ValidationError("fields", f"fields from: {names}",
                              message=f"Unknown field '{unknown[0]}'; allowed: {names}.")
    return fields
