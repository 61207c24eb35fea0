"""Experiences and manuals (contract §5): write, update, read, categories and the duplicate
check on every write; the unified search is ``entry_search``'s."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..domain import limits, responses
from ..domain.caller import Caller, valid_session_id
from ..domain.errors import CONFLICT, ConflictError, NotFoundError, ValidationError
from ..domain.requests import (
    ENTRY_FIELDS,
    FIELDS,
    SECTIONS,
    STARTER_CATEGORIES,
    ReadEntries,
    UpdateEntry,
    WriteEntry,
)
from ..domain.uris import new_id
from ..search.documents import DocSpec, entry_doc
from ..search.duplicates import DUPLICATE_SEQ
from ..search.snippets import make_snippet, truncate
from ..store.repo import Repo
from .clock import now
from .entry_search import BODY, EntrySearch, known_fields, session_key
from .turns import GUARD_ATTEMPTS, in_turn


def _text(fields: dict[str, Any], field: str, limit: int, *, required: bool = False
          ) -> str | None:
    value = fields.get(field)
    blank = value is None or (isinstance(value, str) and not value.strip())
    if blank and not required:
        return None
    if blank or not isinstance(value, str):
        raise ValidationError(field, "a non-empty string")
    limits.check_length(value, field, limit)
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
        "title": _text(merged, "title", limits.ENTRY_TITLE_CHARS, required=True),
        "author": _text(merged, "author", limits.AUTHOR_CHARS),
    }
    if kind == "experience":
        section = merged.get("section") or "useful"
        if section not in SECTIONS:
            raise ValidationError("section", "'useful', 'harmful' or 'contextual'")
        out["section"] = section
        out["playbook"] = _text(merged, "playbook", limits.PLAYBOOK_CHARS, required=True)
        out["context"] = _text(merged, "context", limits.PLAYBOOK_CHARS,
                               required=section == "contextual")
    else:
        out["content"] = _text(merged, "content", limits.CONTENT_CHARS, required=True)
        out["summary"] = _text(merged, "summary", limits.PLAYBOOK_CHARS)
    return out


class EntryService(EntrySearch):
    """Writes, reads and categories of entries; the unified search and its sessions are
    ``EntrySearch``'s."""

    # --- categories --------------------------------------------------------------------------

    def _ensure_categories(self, repo: Repo, space: str) -> list[responses.Category]:
        rows = repo.categories(space)
        if not rows:
            repo.insert_categories(space, STARTER_CATEGORIES)
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

    def list_categories(self, caller: Caller) -> responses.CategoryList:
        with self.store.write() as repo:
            cats = self._ensure_categories(repo, caller.space)
        return {"categories": cats, "count": len(cats)}

    # --- writes ------------------------------------------------------------------------------

    def write_entry(self, req: WriteEntry, caller: Caller) -> responses.EntryWritten:
        kind = req.entity_type
        values = validated_entry(kind, req.model_dump(exclude_unset=True),
                                 self._category_codes(caller.space))
        stamp = now()
        row = {"id": new_id(), "space": caller.space, "created_at": stamp,
               "updated_at": stamp, **values}
        spec = entry_doc(kind, row)
        vectors = self.search.indexing.embed_docs([spec])
        return self._store_new(kind, row, values, spec, vectors, caller)

    @in_turn
    def _store_new(self, kind: responses.EntryKind, row: dict[str, Any], values: dict[str, Any],
                   spec: DocSpec, vectors: np.ndarray | None, caller: Caller
                   ) -> responses.EntryWritten:
        for _ in range(GUARD_ATTEMPTS):
            seen = self.search.duplicates.version(caller.space, kind)
            check = self._duplicates(kind, caller.space, values, None, vectors)
            with self.store.write() as repo:
                if not self.search.duplicates.guard(repo, caller.space, kind, seen):
                    continue
                repo.insert_entry(kind, **row)
                self.search.indexing.index(repo, [spec], vectors)
            return {"status": "stored", "entity_id": row["id"], "entity_type": kind,
                    "entry": self._public(kind, row, None), **check}
        raise ConflictError(CONFLICT, "Other writers kept changing this space; retry.",
                            field="request")

    @in_turn
    def update_entry(self, req: UpdateEntry, caller: Caller) -> responses.EntryWritten:
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
            vectors = self.search.indexing.embed_docs([spec])
            seen = self.search.duplicates.version(caller.space, kind)
            check = self._duplicates(kind, caller.space, values, entity_id, vectors)
            with self.store.write() as repo:
                if not self.search.duplicates.guard(repo, caller.space, kind, seen):
                    continue
                if not repo.update_entry(kind, entity_id, current["updated_at"],
                                         updated_at=stamp, **values):
                    continue  # changed since it was read: apply the updates to the new one
                self.search.indexing.index(repo, [spec], vectors)
            return {"status": "updated", "entity_id": entity_id, "entity_type": kind,
                    "entry": self._public(kind, row, None), **check}
        raise ConflictError(CONFLICT, "The entry kept changing; retry.", field="entity_id")

    def _load(self, repo: Repo, entity_id: str, caller: Caller
              ) -> tuple[responses.EntryKind, dict[str, Any]]:
        if limits.BAD_CHAR.search(entity_id):  # no id holds one; PostgreSQL cannot compare it
            raise NotFoundError(f"No entry {entity_id!r}.", field="entity_id")
        for kind in ("experience", "manual"):
            row = repo.entry(kind, entity_id)
            if row is not None and row["space"] == caller.space:
                return kind, dict(row)
        raise NotFoundError(f"No entry {entity_id}.", field="entity_id")

    def _duplicates(self, kind: str, space: str, values: dict[str, Any],
                    exclude: str | None, vectors: np.ndarray | None) -> responses.DuplicateCheck:
        """The advisory duplicate check (a read, before the write): ≥ 0.85 → review_first,
        0.50–0.84 → listed as FYI."""
        body = values.get("playbook") or values.get("content") or ""
        return self.search.duplicates.check(kind, space, values["title"], body, exclude,
                                            query_vector=None if vectors is None
                                            else vectors[DUPLICATE_SEQ])

    # --- reads -------------------------------------------------------------------------------

    def _public(self, kind: str, row: dict[str, Any], fields: list[str] | None,
                *, snippet_len: int = limits.SNIPPET_DEFAULT, query: str = "") -> dict[str, Any]:
        body = row.get(BODY[kind]) or ""
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
                     session_id: str | None = None) -> responses.EntriesRead:
        fields = known_fields(req.fields, ENTRY_FIELDS)
        snippet_len = req.snippet_len or limits.SNIPPET_DEFAULT
        entries, missing = [], []
        with self.store.read() as repo:
            for entry_id in req.ids:
                try:
                    kind, row = self._load(repo, entry_id, caller)
                except NotFoundError:
                    missing.append(entry_id)
                    continue
                entries.append(self._public(kind, row, fields, snippet_len=snippet_len))
        sid = valid_session_id(session_id or req.session_id)
        if sid:
            self.search.sessions.record(session_key(caller, sid),
                                        viewed=[e["entity_id"] for e in entries])
        return {"entries": entries, "count": len(entries), "missing": missing}
