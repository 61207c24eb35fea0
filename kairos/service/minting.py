"""Minting: markdown in, protocols stored — one document (``kairos_mint``), many in one
pass of the model (a bulk mint), a document checked without storing it (``validate``), and
the built-in protocols installed at start."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import replace
from importlib import resources
from typing import Any

from ..domain import errors, markdown, responses
from ..domain.caller import Caller
from ..domain.errors import ConflictError, KairosError, ValidationError
from ..domain.markdown import title_key
from ..domain.requests import Mint
from ..domain.uris import new_id, to_uri
from ..search.documents import protocol_doc
from ..search.duplicates import DUPLICATE_SEQ
from ..search.service import SearchService
from ..store.db import Store
from ..store.faults import Clash
from ..store.repo import Repo, Row
from .clock import now
from .protocols import BUILTIN_SPACE, Indexed, ProtocolService
from .turns import GUARD_ATTEMPTS, in_turn
from .versions import record_version

SIMILAR_THRESHOLD = 0.9
BUILTINS = {
    "00000000-0000-0000-0000-000000002001": "create_protocol.md",
    "00000000-0000-0000-0000-000000002002": "refine_search.md",
}


class Minter:
    def __init__(self, store: Store, search: SearchService, protocols: ProtocolService
                 ) -> None:
        self.store = store
        self.search = search
        self.protocols = protocols

    def mint(self, req: Mint, caller: Caller) -> responses.MintResult:
        drafts = self._drafts(req.markdown_doc)
        return self._mint(drafts, self._prepare(drafts, caller.space), caller,
                          req.llm_model_id, req.force_update)

    def mint_many(self, docs: Sequence[str], caller: Caller, *, force_update: bool = False
                  ) -> list[responses.MintResult | KairosError]:
        parsed: list[list[markdown.ProtocolDraft] | KairosError] = []
        for doc in docs:
            try:
                parsed.append(self._drafts(doc))
            except KairosError as exc:
                parsed.append(exc)
        prepared = iter(self._prepare(
            [d for p in parsed if not isinstance(p, KairosError) for d in p], caller.space))
        out: list[responses.MintResult | KairosError] = []
        for p in parsed:
            if isinstance(p, KairosError):
                out.append(p)
                continue
            mine = [next(prepared) for _ in p]
            try:
                out.append(self._mint(p, mine, caller, None, force_update))
            except KairosError as exc:
                out.append(exc)
        return out

    def _drafts(self, markdown_doc: str) -> list[markdown.ProtocolDraft]:
        if not markdown_doc.strip():
            raise ValidationError("markdown_doc", "a non-empty markdown string")
        markdown_doc = _unquoted(markdown_doc)
        drafts = self.protocols.parser.parse(markdown_doc)
        seen: set[str] = set()
        for d in drafts:
            if title_key(d.title) in seen:
                raise ConflictError(errors.DUPLICATE_CHAIN,
                                    f"The document has two protocols titled '{d.title}'.",
                                    field="markdown_doc", line=d.line)
            seen.add(title_key(d.title))
        return drafts

    @in_turn
    def _mint(self, drafts: list[markdown.ProtocolDraft], prepared: Sequence[Indexed],
              caller: Caller, llm_model_id: str | None, force_update: bool) -> responses.MintResult:
        """Check, then commit, in the space's turn: the duplicate checks are plain reads
        before the write, and the write guard (``search.duplicates``) sends a mint back
        to check again should a writer that did not wait its turn have committed since."""
        for _ in range(GUARD_ATTEMPTS):
            seen = self.search.duplicates.version(caller.space, "protocol")
            checks = [self._check(d, p, caller.space, force_update)
                      for d, p in zip(drafts, prepared, strict=True)]
            items: list[responses.Minted] = []
            try:
                with self.store.write() as repo:
                    if not self.search.duplicates.guard(repo, caller.space, "protocol", seen):
                        continue  # another checked write came since the check: check again
                    for draft, indexed, check in zip(drafts, prepared, checks, strict=True):
                        items.append(self._store_draft(repo, draft, caller.space,
                                                       llm_model_id, force_update,
                                                       indexed=indexed, check=check))
            except Clash:
                # Another writer stored the same title between our check and our insert.
                raise ConflictError(errors.DUPLICATE_CHAIN,
                                    "A protocol with this title was just stored by another "
                                    "writer. Pass force_update=true to replace it.",
                                    field="markdown_doc") from None
            return {"status": "stored", "items": items, "total": len(items)}
        raise ConflictError(errors.CONFLICT, "Other writers kept changing this space; retry.",
                            field="markdown_doc")

    def _similar(self, repo: Repo, draft: markdown.ProtocolDraft, indexed: Indexed,
                 space: str) -> tuple[Row | None, responses.DuplicateCheck]:
        """The protocol of the space with the draft's title (None: none), and the
        advisory duplicate check of the draft against the others (a read), each duplicate
        named by its step 1 (``uri``) and title (``chain_label``)."""
        existing = repo.protocol_by_title(space, title_key(draft.title))
        spec, vectors = indexed
        check = self.search.duplicates.check(
            "protocol", space, spec.title, spec.body,
            existing["id"] if existing is not None else None,
            query_vector=None if vectors is None else vectors[DUPLICATE_SEQ])
        for dup in check["duplicates"]:
            dup["uri"] = self._first_uri(repo, dup.pop("entity_id"))
            dup["chain_label"] = dup.pop("title")
            dup.pop("entity_type", None)
        return existing, check

    def _check(self, draft: markdown.ProtocolDraft, indexed: Indexed, space: str,
               force_update: bool) -> responses.DuplicateCheck:
        """The advisory duplicate check of a draft (a read), refusing a near-copy of
        another protocol with SIMILAR_MEMORY_FOUND unless ``force_update``."""
        with self.store.read() as repo:
            _, check = self._similar(repo, draft, indexed, space)
        top = check["duplicates"][0] if check["duplicates"] else None
        if top is not None and top["score"] >= SIMILAR_THRESHOLD and not force_update:
            raise ConflictError(
                errors.SIMILAR_MEMORY_FOUND,
                f"'{draft.title}' is {top['score']:.0%} similar to the existing protocol "
                f"'{top['chain_label']}' ({top['uri']}). Update that protocol, or pass "
                "force_update=true to mint anyway.",
                field="markdown_doc", line=draft.line, details=dict(top))
        return check

    def _prepare(self, drafts: list[markdown.ProtocolDraft], space: str) -> list[Indexed]:
        """Every draft's search document and vectors, from one call to the model, made
        before the write transaction so that no writer waits on the model."""
        specs = [protocol_doc("", space, d, "") for d in drafts]
        return list(zip(specs, self.search.indexing.embed_each(specs), strict=True))

    def _store_draft(self, repo: Repo, draft: markdown.ProtocolDraft, space: str,
                     llm_model_id: str | None, force_update: bool, *,
                     indexed: Indexed | None = None, check: responses.DuplicateCheck | None = None,
                     builtin: bool = False, protocol_id: str | None = None,
                     step_ids: list[str] | None = None,
                     source_hash: str | None = None) -> responses.Minted:
        stamp = now()
        key = title_key(draft.title)
        existing = (repo.protocol(protocol_id) if protocol_id
                    else repo.protocol_by_title(space, key))
        updated = existing is not None
        if existing is not None and not force_update:
            uri = self._first_uri(repo, existing["id"])
            raise ConflictError(
                errors.DUPLICATE_CHAIN,
                f"A protocol titled '{draft.title}' already exists in space '{space}' "
                f"({uri or existing['id']}). Pass force_update=true to replace it.",
                field="markdown_doc", line=draft.line, details={"uri": uri})
        values = {"title": draft.title, "title_key": key, "intro": draft.intro,
                  "tags": draft.tags, "triggers": list(draft.triggers), "updated_at": stamp,
                  "llm_model_id": llm_model_id, "source_hash": source_hash}
        if existing is None:
            pid = protocol_id or new_id()
            repo.insert_protocol(id=pid, space=space, builtin=builtin, created_at=stamp,
                                 **values)
            old_steps: list[Row] = []
        else:
            pid = existing["id"]
            repo.update_protocol(pid, **values)
            old_steps = repo.steps_of(pid)
        ids = step_ids or self._reuse_ids(old_steps, draft)
        new_rows: list[dict[str, Any]] = [
            {"id": ids[i], "protocol_id": pid, "space": space, "position": i, "label": s.label,
             "content": s.content, "challenge": s.challenge.to_dict(), "updated_at": stamp}
            for i, s in enumerate(draft.steps)]
        repo.delete_steps(r["id"] for r in old_steps)
        repo.insert_steps(new_rows)
        record_version(repo, existing, pid, space, draft, new_rows, stamp)
        if not builtin:  # a built-in's statistics are made per space that runs it
            repo.create_metrics(pid, space, [r["id"] for r in new_rows])
        if indexed is not None:
            spec, vectors = indexed
            self.search.indexing.index(repo, [replace(spec, entity_id=pid, updated_at=stamp)],
                                       vectors)
        minted: responses.Minted = {
            "uri": to_uri(new_rows[0]["id"]),
            "chain_label": draft.title,
            "label": draft.steps[0].label,
            "tags": draft.tags,
            "step_count": len(new_rows),
            "steps": [{"uri": to_uri(r["id"]), "label": r["label"]} for r in new_rows],
            "updated": updated,
        }
        return {**minted, **check} if check is not None else minted

    @staticmethod
    def _first_uri(repo: Repo, protocol_id: str) -> str | None:
        rows = repo.steps_of(protocol_id)
        return to_uri(rows[0]["id"]) if rows else None

    @staticmethod
    def _reuse_ids(old: list[Row], draft: markdown.ProtocolDraft) -> list[str]:
        """Steps keep their URI when their label survives (first unused match wins), and
        otherwise when the same content stands at the same position."""
        free = {r["id"]: r for r in old}
        ids: list[str] = []
        for pos, step in enumerate(draft.steps):
            by_label = (i for i, r in free.items() if r["label"] == step.label)
            in_place = (i for i, r in free.items()
                        if r["content"] == step.content and r["position"] == pos)
            match = next(by_label, None) or next(in_place, None) or new_id()
            free.pop(match, None)
            ids.append(match)
        return ids

    # --- checking without storing ---------------------------------------------------------

    def validate(self, markdown_doc: str, caller: Caller) -> responses.Validation:
        """Parse as a mint would, store nothing: the errors with their line, and for each
        protocol the title clash and similar protocols a mint would report."""
        if not markdown_doc.strip():
            return {"valid": False, "errors": [{"error_code": errors.NO_HEADING, "line": 1,
                                                "message": "The document is empty."}],
                    "protocols": []}
        drafts, found = self.protocols.parser.problems(markdown_doc)
        if found:
            return {"valid": False, "protocols": [], "errors": [
                {"error_code": exc.code, "line": exc.line, "message": exc.message}
                for exc in found]}
        problems: list[responses.Problem] = []
        seen: dict[str, int] = {}
        out: list[responses.DraftCheck] = []
        with self.store.read() as repo:
            for d in drafts:
                key = title_key(d.title)
                if key in seen:
                    problems.append({"error_code": errors.DUPLICATE_CHAIN, "line": d.line,
                                     "message": f"The document has two protocols titled "
                                                f"'{d.title}' (lines {seen[key]} and "
                                                f"{d.line}): give each its own title."})
                seen.setdefault(key, d.line)
                out.append(self._check_draft(repo, d, caller.space))
        return {"valid": not problems, "errors": problems, "protocols": out}

    def _check_draft(self, repo: Repo, draft: markdown.ProtocolDraft,
                     space: str) -> responses.DraftCheck:
        existing, check = self._similar(repo, draft, self._prepare([draft], space)[0], space)
        existing_uri = None if existing is None else self._first_uri(repo, existing["id"])
        for dup in check["duplicates"]:
            dup["blocks_mint"] = dup["score"] >= SIMILAR_THRESHOLD
        warnings = list(check["warnings"])
        if existing_uri is not None:
            warnings.append(f"A protocol titled '{draft.title}' already exists; a mint "
                            "replaces it only when forced.")
        top = check["duplicates"][0] if check["duplicates"] else None
        if top is not None and top["score"] >= SIMILAR_THRESHOLD:
            warnings.append(f"This protocol is {top['score']:.0%} similar to "
                            f"'{top['chain_label']}'; a mint adds it only when forced.")
        return {"chain_label": draft.title, "line": draft.line, "tags": draft.tags,
                "step_count": len(draft.steps), "existing_uri": existing_uri,
                "steps": [{"label": s.label, "challenge": s.challenge.to_dict()}
                          for s in draft.steps],
                "duplicates": check["duplicates"], "warnings": warnings}

    # --- built-ins -------------------------------------------------------------------------

    def install_builtins(self, sources: dict[str, str] | None = None) -> list[str]:
        """Install or refresh the built-in protocols; a no-op when their text is unchanged.
        Step ids are derived from the fixed URI, so restarts never duplicate or lose steps.
        ``sources`` overrides the packaged text of some built-ins (by step-1 id)."""
        changed = []
        for first_id, filename in BUILTINS.items():
            text = (sources or {}).get(first_id) or (
                resources.files("kairos.builtin").joinpath(filename).read_text("utf-8"))
            digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
            pid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"kairos-builtin:{first_id}"))
            draft = markdown.parse(text)[0]
            ids = [first_id] + [str(uuid.uuid5(uuid.NAMESPACE_URL, f"{first_id}/{i}"))
                                for i in range(1, len(draft.steps))]
            try:
                with self.store.write() as repo:
                    row = repo.protocol(pid)
                    if row is not None and row["source_hash"] == digest:
                        continue
                    self._store_draft(repo, draft, BUILTIN_SPACE, None, True, builtin=True,
                                      protocol_id=pid, step_ids=ids, source_hash=digest)
                changed.append(to_uri(first_id))
            except Clash:
                continue  # another process installed it at the same moment
        return changed


def _unquoted(doc: str) -> str:
    """A document sent as a JSON string literal (``"# Title\\n\\n## Step..."``, as other
    KAIROS clients send it) is decoded. Markdown never parses as one: a JSON string has no
    raw line breaks, and a single quoted line has no heading to mint."""
    text = doc.strip()
    if len(text) < 2 or text[0] != '"' or text[-1] != '"':
        return doc
    try:
        decoded = json.loads(text)
    except ValueError:
        return doc
    return decoded if isinstance(decoded, str) and decoded.strip() else doc


__all__ = ["BUILTINS", "SIMILAR_THRESHOLD", "Minter"]
