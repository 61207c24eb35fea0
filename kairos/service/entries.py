"""Experiences and manuals (contract §5): write, update, read, categories, the unified search,
session memory and the duplicate check on every write."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import insert, select, update
from sqlalchemy.exc import IntegrityError

from ..domain import limits, scoring
from ..domain.caller import Caller, valid_session_id
from ..domain.errors import CONFLICT, ConflictError, NotFoundError, ValidationError
from ..domain.requests import (
    ENTRY_TYPES,
    FIELDS,
    SECTIONS,
    STARTER_CATEGORIES,
    Cite,
    ReadEntries,
    SearchEntries,
    UpdateEntry,
    WriteEntry,
)
from ..domain.responses import (
    Category,
    CategoryList,
    DuplicateCheck,
    EntriesRead,
    EntryKind,
    EntryWritten,
    SessionInfo,
    UnifiedResult,
)
from ..domain.uris import new_id, to_uri
from ..search.documents import DocSpec, entry_doc, entry_table
from ..search.explain import explain
from ..search.ranking import Hit
from ..search.service import DUPLICATE_SEQ, SearchService
from ..search.snippets import make_snippet, truncate
from ..store import schema as t
from ..store.db import Store
from ..store.repo import Repo
from .clock import now
from .turns import GUARD_ATTEMPTS, in_turn

DOWNRANK_FACTOR = 0.5
MIN_SCORE_VECTOR = scoring.ENTRY_MIN_SCORE
MIN_SCORE_TEXT = scoring.ENTRY_MIN_SCORE_TEXT
_BODY = {"experience": "playbook", "manual": "content", "protocol": "content"}


def _text(value: Any, field: str, *, required: bool, limit: int) -> str | None:
    if value is None or (isinstance(value, str) and not value.strip() and not required):
        if required:
            raise ValidationError(field, "a non-empty string")
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(field, "a non-empty string")
    if len(value) > limit:
        raise ValidationError(field, f"at most {limit} characters",
                              message=f"{field} is {len(value)} characters; the limit is "
                                      f"{limit}.")
    return value.strip()


def validated_entry(kind: Any, data: dict[str, Any], categories: set[str],
                    current: dict[str, Any] | None = None) -> dict[str, Any]:
    """An experience's or a manual's fields as a write stores them, or the ValidationError
    naming the first wrong one (``categories``: the codes of the space)."""
    if kind not in ("experience", "manual"):
        raise ValidationError("entity_type", "'experience' or 'manual'")
    merged = {**(current or {}), **{k: v for k, v in data.items() if k in FIELDS[kind]}}
    unknown = set(data) - set(FIELDS[kind]) - {"entity_type", "entity_id", "updates"}
    if unknown:
        name = sorted(unknown)[0]
        raise ValidationError(name, f"one of the {kind} fields: "
                              f"{', '.join(f for f in FIELDS[kind] if f != 'preview')}",
                              message=f"Unknown field '{name}' for a {kind}.")
    category = merged.get("category")
    if not isinstance(category, str) or category not in categories:
        raise ValidationError("category", f"one of: {', '.join(sorted(categories))}",
                              message=f"Unknown category {category!r}; expected one of: "
                                      f"{', '.join(sorted(categories))}.")
    out: dict[str, Any] = {
        "category": category,
        "title": _text(merged.get("title"), "title", required=True,
                       limit=limits.ENTRY_TITLE_CHARS),
        "author": _text(merged.get("author"), "author", required=False,
                        limit=limits.AUTHOR_CHARS),
    }
    if kind == "experience":
        section = merged.get("section") or "useful"
        if section not in SECTIONS:
            raise ValidationError("section", "'useful', 'harmful' or 'contextual'")
        out["section"] = section
        out["playbook"] = _text(merged.get("playbook"), "playbook", required=True,
                                limit=limits.PLAYBOOK_CHARS)
        out["context"] = _text(merged.get("context"), "context",
                               required=section == "contextual", limit=limits.PLAYBOOK_CHARS)
    else:
        out["content"] = _text(merged.get("content"), "content", required=True,
                               limit=limits.CONTENT_CHARS)
        out["summary"] = _text(merged.get("summary"), "summary", required=False,
                               limit=limits.PLAYBOOK_CHARS)
    return out


class EntryService:
    def __init__(self, store: Store, search: SearchService) -> None:
        self.store = store
        self.search = search

    # --- categories --------------------------------------------------------------------------

    def _ensure_categories(self, repo: Repo, space: str) -> list[Category]:
        rows = repo.categories(space)
        if not rows:
            # Idempotent: writers racing on a new space all succeed. A savepoint keeps the
            # transaction usable when another writer's identical rows won the insert.
            try:
                with repo.conn.begin_nested():
                    for code, name, description in STARTER_CATEGORIES:
                        repo.insert_category(space=space, code=code, name=name,
                                             description=description)
            except IntegrityError:
                pass
            rows = repo.categories(space)
        return [{"code": r["code"], "name": r["name"], "description": r["description"]}
                for r in rows]

    def _category_codes(self, space: str) -> set[str]:
        with self.store.read() as repo:
            codes = {r["code"] for r in repo.categories(space)}
        if not codes:
            with self.store.write() as repo:
                codes = {c["code"] for c in self._ensure_categories(repo, space)}
        return codes

    def list_categories(self, caller: Caller) -> CategoryList:
        with self.store.write() as repo:
            cats = self._ensure_categories(repo, caller.space)
        return {"categories": cats, "count": len(cats)}

    # --- writes ------------------------------------------------------------------------------

    def write_entry(self, req: WriteEntry, caller: Caller) -> EntryWritten:
        kind = req.entity_type
        values = validated_entry(kind, req.model_dump(exclude_unset=True),
                                 self._category_codes(caller.space))
        stamp = now()
        row = {"id": new_id(), "space": caller.space, "created_at": stamp,
               "updated_at": stamp, **values}
        spec = entry_doc(kind, row)
        vectors = self.search.embed_docs([spec])
        return self._store_new(kind, row, values, spec, vectors, caller)

    @in_turn
    def _store_new(self, kind: EntryKind, row: dict[str, Any], values: dict[str, Any],
                   spec: DocSpec, vectors: np.ndarray | None, caller: Caller
                   ) -> EntryWritten:
        for _ in range(GUARD_ATTEMPTS):
            seen = self.search.version(caller.space, kind)
            check = self._duplicates(kind, caller.space, values, None, vectors)
            with self.store.write() as repo:
                if not self.search.guard(repo, caller.space, kind, seen):
                    continue
                repo.conn.execute(insert(entry_table(kind)).values(**row))
                self.search.index(repo, [spec], vectors)
            return {"status": "stored", "entity_id": row["id"], "entity_type": kind,
                    "entry": self._public(kind, row, None), **check}
        raise ConflictError(CONFLICT, "Other writers kept changing this space; retry.",
                            field="request")

    @in_turn
    def update_entry(self, req: UpdateEntry, caller: Caller) -> EntryWritten:
        entity_id = req.entity_id
        updates = req.updates.model_dump(exclude_unset=True)
        if not updates:
            raise ValidationError("updates", "an object with the fields to change")
        cats = self._category_codes(caller.space)
        for _ in range(GUARD_ATTEMPTS):
            with self.store.read() as repo:
                kind, current = self._load(repo, entity_id, caller)
            values = validated_entry(kind, updates, cats, current)
            stamp = now()
            row = {**current, **values, "updated_at": stamp}
            spec = entry_doc(kind, row)
            vectors = self.search.embed_docs([spec])
            seen = self.search.version(caller.space, kind)
            check = self._duplicates(kind, caller.space, values, entity_id, vectors)
            table = entry_table(kind)
            with self.store.write() as repo:
                if not self.search.guard(repo, caller.space, kind, seen):
                    continue
                if not repo.conn.execute(update(table).where(
                        (table.c.id == entity_id) & (table.c.updated_at == current["updated_at"]))
                        .values(updated_at=stamp, **values)).rowcount:
                    continue  # changed since it was read: apply the updates to the new one
                self.search.index(repo, [spec], vectors)
            return {"status": "updated", "entity_id": entity_id, "entity_type": kind,
                    "entry": self._public(kind, row, None), **check}
        raise ConflictError(CONFLICT, "The entry kept changing; retry.", field="entity_id")

    def _load(self, repo: Repo, entity_id: str, caller: Caller
              ) -> tuple[EntryKind, dict[str, Any]]:
        if limits.BAD_CHAR.search(entity_id):  # no id holds one; PostgreSQL cannot compare it
            raise NotFoundError(f"No entry {entity_id!r}.", field="entity_id")
        for kind in ("experience", "manual"):
            row = repo.conn.execute(select(entry_table(kind)).where(
                entry_table(kind).c.id == entity_id)).mappings().first()
            if row is not None and row["space"] == caller.space:
                return kind, dict(row)
        raise NotFoundError(f"No entry {entity_id}.", field="entity_id")

    def _duplicates(self, kind: str, space: str, values: dict[str, Any],
                    exclude: str | None, vectors: np.ndarray | None) -> DuplicateCheck:
        """The advisory duplicate check (a read, before the write): ≥ 0.85 → review_first,
        0.50–0.84 → listed as FYI."""
        body = values.get("playbook") or values.get("content") or ""
        return self.search.duplicate_check(kind, space, values["title"], body, exclude,
                                           query_vector=None if vectors is None
                                           else vectors[DUPLICATE_SEQ])

    # --- reads -------------------------------------------------------------------------------

    def _public(self, kind: str, row: dict[str, Any], fields: list[str] | None,
                *, snippet_len: int = limits.SNIPPET_DEFAULT, query: str = "") -> dict[str, Any]:
        body = row.get(_BODY[kind]) or ""
        preview = make_snippet(body, query, snippet_len) if query else truncate(
            " ".join(body.split()), snippet_len)
        full = {"entity_id": row["id"], "entity_type": kind, **{
            f: row.get(f) for f in FIELDS[kind]
            if f not in ("entity_id", "entity_type", "preview")}, "preview": preview}
        if fields is None:
            full.pop("preview")
            return full
        keep = {"entity_id", "entity_type", "title", *fields}
        return {k: v for k, v in full.items() if k in keep}

    def read_entries(self, req: ReadEntries, caller: Caller, *,
                     session_id: str | None = None) -> EntriesRead:
        ids = [req.ids] if isinstance(req.ids, str) else req.ids
        fields = _known_fields(req.fields, (*FIELDS["experience"], *FIELDS["manual"]))
        snippet_len = req.snippet_len or limits.SNIPPET_DEFAULT
        entries, missing = [], []
        with self.store.read() as repo:
            for entry_id in ids:
                try:
                    kind, row = self._load(repo, entry_id, caller)
                except NotFoundError:
                    missing.append(entry_id)
                    continue
                entries.append(self._public(kind, row, fields, snippet_len=snippet_len))
        sid = valid_session_id(session_id or req.session_id)
        if sid:
            self.search.sessions.record(_session_key(caller, sid),
                                        viewed=[e["entity_id"] for e in entries])
        return {"entries": entries, "count": len(entries), "missing": missing}

    # --- the unified search ------------------------------------------------------------------

    def search_entries(self, request: SearchEntries, caller: Caller, *,
                       session_id: str | None = None) -> UnifiedResult:
        req = _Unified.of(request)
        sid = valid_session_id(session_id) or valid_session_id(req.session_id)
        key = _session_key(caller, sid) if sid else None
        sessions = self.search.sessions
        viewed = sessions.viewed(key) if key else set()
        filters = dict(req.filters)
        if req.category is not None:
            filters["category"] = req.category
        hide = req.hide_viewed
        # Every record that can reach the threshold is scored: totals and pages are exact.
        floor = req.min_score if req.min_score is not None else min(MIN_SCORE_TEXT,
                                                                     MIN_SCORE_VECTOR)
        ranked = self.search.rank(req.query, space=caller.space, kinds=req.types,
                                  filters=filters, exclude=viewed if hide else None,
                                  boosts="protocol" in req.types, floor=floor)
        min_score = req.min_score
        if min_score is None:
            min_score = MIN_SCORE_TEXT if ranked.degraded else MIN_SCORE_VECTOR
        scored: list[tuple[float, Hit, bool]] = []
        for hit in ranked.hits:
            penalised = (not hide and req.downrank_viewed and hit.entity_id in viewed)
            score = hit.score * DOWNRANK_FACTOR if penalised else hit.score
            scored.append((score, hit, penalised))
        scored.sort(key=lambda s: (-s[0], -(s[1].evidence.strength if s[1].evidence else 0.0),
                                   s[1].row["title"]))
        best = scored[0][0] if scored else None
        kept = [s for s in scored if s[0] >= min_score]
        total = len(kept)
        page = kept[req.offset:req.offset + req.limit]
        warnings: list[str] = []
        if best is not None and best < min_score:
            warnings.append(f"low_confidence: top_score {best:.2f} is below min_score "
                            f"{min_score:.2f}")
        hint = ranked.hint
        if best is not None and best < min_score and hint is None:
            hint = "Low confidence: the top score is below min_score."
        results = self._results(page, req, ranked, hint)
        if key:
            sessions.record(key, query=req.query, viewed=[r["entity_id"] for r in results])
        result: UnifiedResult = {
            "results": results,
            "count": len(results),
            "total": total,
            "has_more": req.offset + len(page) < total,
            "top_score": round(best, 4) if best is not None else None,
            "min_score": min_score,
            "warnings": warnings,
            "session_applied": sid is not None,
            "provider": self.search.provider,
            "search_mode": ranked.mode,
            "degraded": ranked.degraded,
            "provider_hint": hint,
        }
        if req.explain:
            result["explain"] = explain(
                self.store, ranked, req.query, threshold=min_score, limit=req.limit,
                model_id=self.search.embedder.model_id if self.search.vectors_ready else None)
        return result

    def _results(self, page: list[tuple[float, Hit, bool]], req: _Unified,
                 ranked: Any, hint: str | None) -> list[dict[str, Any]]:
        results = []
        with self.store.read() as repo:
            for i, (score, hit, penalised) in enumerate(page):
                record = self._record(repo, hit)
                if record is None:
                    continue
                body = record.get(_BODY[hit.kind]) or ""
                reasons = []
                if hit.dense is not None and hit.text:
                    reasons.append("semantic and keyword match")
                elif hit.dense is not None:
                    reasons.append("semantic match")
                else:
                    reasons.append("keyword match")
                if penalised:
                    reasons.append(f"viewed earlier in this session (score ×{DOWNRANK_FACTOR})")
                result = {
                    "entity_id": record["entity_id"],
                    "entity_type": hit.kind,
                    "title": hit.row["title"],
                    "section": hit.row.get("section"),
                    "score": round(score, 4),
                    "rank": req.offset + i + 1,
                    "reason": "; ".join(reasons),
                    "provider": self.search.provider,
                    "degraded": ranked.degraded,
                    "hint": hint,
                    "provider_hint": hint,
                    "heading": hit.row["title"],
                    "snippet": make_snippet(body, req.query, req.snippet_len),
                    "author": hit.row.get("author"),
                    "updated_at": hit.row["updated_at"],
                }
                for f in req.fields or []:
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
            body = repo.conn.execute(select(t.search_docs.c.body).where(
                t.search_docs.c.rid == hit.rid)).scalar()
            return {"entity_id": to_uri(steps[0]["id"]), "content": body or "",
                    "tags": proto["tags"], "title": proto["title"]}
        row = repo.conn.execute(select(entry_table(hit.kind)).where(
            entry_table(hit.kind).c.id == hit.entity_id)).mappings().first()
        if row is None:
            return None
        return {"entity_id": row["id"], **dict(row)}

    # --- sessions ----------------------------------------------------------------------------

    def session_info(self, session_id: str | None, caller: Caller) -> SessionInfo:
        sid = valid_session_id(session_id)
        info = self.search.sessions.get(_session_key(caller, sid)) if sid else None
        if sid is None or info is None:
            raise NotFoundError(f"No session {session_id!r} (unknown or expired).",
                                field="session_id")
        return {**info, "session_id": sid}  # the id as the caller named it, not its key

    def cite(self, req: Cite, caller: Caller) -> SessionInfo:
        sid, ids = req.session_id, req.ids
        key = _session_key(caller, sid)
        if self.search.sessions.get(key) is None:  # citing never creates a session
            raise NotFoundError(f"No session {sid!r} (unknown or expired): search in it "
                                "first.", field="session_id")
        return {**self.search.sessions.cite(key, ids), "session_id": sid}


def _session_key(caller: Caller, session_id: str) -> str:
    """Sessions belong to a space: the same id in another space is another session."""
    return f"{caller.space}/{session_id}"


def _known_fields(fields: list[str] | None, allowed: tuple[str, ...]) -> list[str] | None:
    unknown = [f for f in fields or () if f not in allowed]
    if unknown:
        names = ", ".join(sorted(set(allowed)))
        raise ValidationError("fields", f"fields from: {names}",
                              message=f"Unknown field '{unknown[0]}'; allowed: {names}.")
    return fields


@dataclass(frozen=True)
class _Unified:
    """A unified search request with its defaults applied (contract §5)."""

    query: str
    types: tuple[str, ...]
    category: str | None
    limit: int
    offset: int
    min_score: float | None
    filters: dict[str, str]
    snippet_len: int
    fields: list[str] | None
    hide_viewed: bool
    downrank_viewed: bool
    session_id: str | None
    explain: bool

    @classmethod
    def of(cls, r: SearchEntries) -> _Unified:
        filters = r.filters.model_dump(exclude_none=True) if r.filters else {}
        return cls(query=r.query.strip(), types=tuple(dict.fromkeys(r.types or ENTRY_TYPES)),
                   category=r.category, limit=r.limit or limits.SEARCH_DEFAULT,
                   offset=r.offset or 0,
                   min_score=r.min_score, filters=filters,
                   snippet_len=r.snippet_len or limits.SNIPPET_DEFAULT,
                   fields=_known_fields(r.fields, tuple(f for fs in FIELDS.values() for f in fs)),
                   hide_viewed=bool(r.hide_viewed),
                   downrank_viewed=r.downrank_viewed is not False, session_id=r.session_id,
                   explain=bool(r.explain))
