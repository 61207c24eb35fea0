"""Use cases for protocols: mint, update, delete, dump, and the built-ins."""

from __future__ import annotations

import hashlib
import json
import re
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any

import numpy as np
from sqlalchemy.exc import IntegrityError

from ..domain import errors, markdown
from ..domain import requests as rq
from ..domain.caller import Caller
from ..domain.engine import StepView
from ..domain.errors import ConflictError, KairosError, NotFoundError, ValidationError
from ..domain.uris import new_id, parse_uri, to_uri
from ..search.documents import DocSpec, challenge_of, draft_of, protocol_doc
from ..search.service import DUPLICATE_SEQ, SearchService
from ..store.db import Store
from ..store.repo import Repo, Row
from .clock import now
from .parsing import Parser
from .turns import in_turn

BUILTIN_SPACE = "_builtin"
_GUARD_ATTEMPTS = 20
SIMILAR_THRESHOLD = 0.9
BUILTINS = {
    "00000000-0000-0000-0000-000000002001": "create_protocol.md",
    "00000000-0000-0000-0000-000000002002": "refine_search.md",
}


#: A protocol's search document and its vectors (None: queued), made before a write.
Indexed = tuple[DocSpec, np.ndarray | None]


class _Stale(Exception):
    """The write guard saw another checked write since the check: check again."""


def title_key(title: str) -> str:
    return re.sub(r"\s+", " ", title).strip().casefold()


def step_views(rows: Sequence[Mapping[Any, Any]]) -> list[StepView]:
    return [StepView(to_uri(r["id"]), r["content"], challenge_of(r), r["label"]) for r in rows]


#: How many protocols' parsed steps a process keeps for the run loop.
STEP_CACHE_SIZE = 512


@dataclass(frozen=True)
class RunSteps:
    """A protocol's steps as the run loop uses them: their ids and their views, in order."""

    ids: tuple[str, ...]
    views: list[StepView]


@dataclass(frozen=True)
class RunContext:
    """What one call of the run loop loads: the step named by the URI, its protocol, the
    protocol's steps, and the run that issued the solution's nonce (None: none such)."""

    step: dict[str, Any]       # id, position
    protocol: dict[str, Any]   # id, space, builtin, updated_at
    steps: RunSteps
    run: dict[str, Any] | None


class _StepCache:
    """Parsed steps per protocol, each entry valid for one version of its protocol: the
    protocol's ``updated_at``, its step count and its newest step's ``updated_at``, read
    from the database on every call. Every change of a protocol's steps (mint with
    force_update, update, delete of a step, a built-in's refresh) stamps the protocol and
    the steps it writes with the time of the change, so a changed protocol — changed by
    this process or another replica — misses and is read again. (Edits already rely on
    these stamps moving: ``touch_protocol`` detects a concurrent edit by them.)"""

    def __init__(self, size: int = STEP_CACHE_SIZE) -> None:
        self.size = size
        self._entries: dict[str, tuple[tuple[Any, ...], RunSteps]] = {}
        self._lock = threading.Lock()

    def get(self, protocol_id: str, version: tuple[Any, ...]) -> RunSteps | None:
        entry = self._entries.get(protocol_id)
        return entry[1] if entry is not None and entry[0] == version else None

    def put(self, protocol_id: str, version: tuple[Any, ...], steps: RunSteps) -> None:
        with self._lock:
            self._entries.pop(protocol_id, None)
            while len(self._entries) >= self.size:
                del self._entries[next(iter(self._entries))]
            self._entries[protocol_id] = (version, steps)


def _step_row(step_id: str, protocol_id: str, space: str, position: int,
              draft: markdown.StepDraft, stamp: str) -> dict[str, Any]:
    return {"id": step_id, "protocol_id": protocol_id, "space": space, "position": position,
            "label": draft.label, "content": draft.content,
            "challenge": draft.challenge.to_dict(), "updated_at": stamp}


class ProtocolService:
    def __init__(self, store: Store, search: SearchService | None = None, *,
                 parser: Parser | None = None) -> None:
        self.store = store
        self.search = search
        self.step_cache = _StepCache()
        self.parser = parser or Parser()

    # --- lookup ----------------------------------------------------------------------------

    def resolve(self, repo: Repo, uri: object, caller: Caller, *, field: str = "uri",
                writable: bool = False) -> tuple[Row, Row, list[Row]]:
        """(step, protocol, steps) for a step URI the caller may see; 404 otherwise."""
        step_id = parse_uri(uri, field)
        step = repo.step(step_id)
        protocol = repo.protocol(step["protocol_id"]) if step else None
        if step is None or protocol is None or (
                protocol["space"] != caller.space and not protocol["builtin"]):
            raise NotFoundError(f"No protocol step at {uri}.", field=field)
        if writable and protocol["builtin"]:
            raise KairosError(errors.BUILTIN_READ_ONLY,
                              f"{uri} belongs to a built-in protocol, which cannot be changed.",
                              field=field)
        return step, protocol, repo.steps_of(protocol["id"])

    def run_context(self, repo: Repo, uri: object, caller: Caller, nonce: str | None = None,
                    *, field: str = "uri") -> RunContext:
        """``resolve`` for the run loop, in one query: the step, its protocol, the
        protocol's parsed steps (from the cache while the protocol is unchanged) and the
        run that issued ``nonce``. The same 404 as ``resolve``."""
        step_id = parse_uri(uri, field)
        loaded = repo.run_context(step_id, nonce)
        if loaded is None or (loaded[0]["p_space"] != caller.space
                              and not loaded[0]["p_builtin"]):
            raise NotFoundError(f"No protocol step at {uri}.", field=field)
        found, run = loaded
        protocol_id = found["p_id"]
        version = (found["p_updated_at"], found["n_steps"], found["steps_stamp"])
        steps = self.step_cache.get(protocol_id, version)
        if steps is None:
            rows = repo.steps_of(protocol_id)
            steps = RunSteps(tuple(r["id"] for r in rows), step_views(rows))
            if len(rows) == found["n_steps"]:
                self.step_cache.put(protocol_id, version, steps)
        return RunContext(
            {"id": found["id"], "position": found["position"]},
            {"id": protocol_id, "space": found["p_space"], "builtin": found["p_builtin"],
             "updated_at": found["p_updated_at"]},
            steps, run)

    # --- mint ------------------------------------------------------------------------------

    def mint(self, req: rq.Mint, caller: Caller) -> dict[str, Any]:
        drafts = self._drafts(req.markdown_doc)
        return self._mint(drafts, self._prepare(drafts, caller.space), caller,
                          req.llm_model_id, req.force_update)

    def mint_many(self, docs: Sequence[str], caller: Caller, *, force_update: bool = False
                  ) -> list[dict[str, Any] | KairosError]:
        """Mint documents one by one (an error stops only its own document), with the
        vectors of all of them from one batched pass of the model: a bulk mint."""
        parsed: list[list[markdown.ProtocolDraft] | KairosError] = []
        for doc in docs:
            try:
                parsed.append(self._drafts(doc))
            except KairosError as exc:
                parsed.append(exc)
        prepared = iter(self._prepare(
            [d for p in parsed if not isinstance(p, KairosError) for d in p], caller.space))
        out: list[dict[str, Any] | KairosError] = []
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

    def parse(self, doc: str) -> list[markdown.ProtocolDraft]:
        """``markdown.parse`` as every write of a protocol reads its markdown: a large
        document in a worker process (``service.parsing``)."""
        return self.parser.parse(doc)

    def _drafts(self, markdown_doc: str) -> list[markdown.ProtocolDraft]:
        if not markdown_doc.strip():
            raise ValidationError("markdown_doc", "a non-empty markdown string")
        markdown_doc = _unquoted(markdown_doc)
        drafts = self.parse(markdown_doc)
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
              caller: Caller, llm_model_id: str | None, force_update: bool) -> dict[str, Any]:
        """Check, then commit, in the space's turn: the duplicate checks are plain reads
        before the write, and the write guard (``SearchService.guard``) sends a mint back
        to check again should a writer that did not wait its turn have committed since."""
        for _ in range(_GUARD_ATTEMPTS):
            seen = self.search.version(caller.space, "protocol") if self.search else 0
            checks = [self._check(d, p, caller.space, force_update)
                      for d, p in zip(drafts, prepared, strict=True)]
            items = []
            try:
                with self.store.write() as repo:
                    if self.search is not None and not self.search.guard(
                            repo, caller.space, "protocol", seen):
                        raise _Stale
                    for draft, indexed, check in zip(drafts, prepared, checks, strict=True):
                        items.append(self._store_draft(repo, draft, caller.space,
                                                       llm_model_id, force_update,
                                                       indexed=indexed, check=check))
            except _Stale:
                continue
            except IntegrityError:
                # Another writer stored the same title between our check and our insert.
                raise ConflictError(errors.DUPLICATE_CHAIN,
                                    "A protocol with this title was just stored by another "
                                    "writer. Pass force_update=true to replace it.",
                                    field="markdown_doc") from None
            return {"status": "stored", "items": items, "total": len(items)}
        raise ConflictError(errors.CONFLICT, "Other writers kept changing this space; retry.",
                            field="markdown_doc")

    def _check(self, draft: markdown.ProtocolDraft, indexed: Indexed, space: str,
               force_update: bool) -> dict[str, Any]:
        """The advisory duplicate check of a draft (a read), refusing a near-copy of
        another protocol with SIMILAR_MEMORY_FOUND unless ``force_update``."""
        if self.search is None:
            return {}
        with self.store.read() as repo:
            existing = repo.protocol_by_title(space, title_key(draft.title))
            spec, vectors = indexed
            check = self.search.duplicate_check(
                "protocol", space, spec.title, spec.body,
                existing["id"] if existing is not None else None,
                query_vector=None if vectors is None else vectors[DUPLICATE_SEQ])
            for dup in check["duplicates"]:
                dup["uri"] = self._first_uri(repo, dup.pop("entity_id"))
                dup["chain_label"] = dup.pop("title")
                dup.pop("entity_type", None)
        top = check["duplicates"][0] if check["duplicates"] else None
        if top is not None and top["score"] >= SIMILAR_THRESHOLD and not force_update:
            raise ConflictError(
                errors.SIMILAR_MEMORY_FOUND,
                f"'{draft.title}' is {top['score']:.0%} similar to the existing protocol "
                f"'{top['chain_label']}' ({top['uri']}). Update that protocol, or pass "
                "force_update=true to mint anyway.",
                field="markdown_doc", line=draft.line, details=top)
        return check

    def _prepare(self, drafts: list[markdown.ProtocolDraft], space: str) -> list[Indexed]:
        """Every draft's search document and vectors, from one call to the model, made
        before the write transaction so that no writer waits on the model."""
        specs = [protocol_doc("", space, d, "") for d in drafts]
        if self.search is None:
            return [(spec, None) for spec in specs]
        return list(zip(specs, self.search.embed_each(specs), strict=True))

    def _store_draft(self, repo: Repo, draft: markdown.ProtocolDraft, space: str,
                     llm_model_id: str | None, force_update: bool, *,
                     indexed: Indexed | None = None, check: dict[str, Any] | None = None,
                     builtin: bool = False, protocol_id: str | None = None,
                     step_ids: list[str] | None = None,
                     source_hash: str | None = None) -> dict[str, Any]:
        stamp = now()
        key = title_key(draft.title)
        existing = (repo.protocol(protocol_id) if protocol_id
                    else repo.protocol_by_title(space, key))
        updated = existing is not None
        if existing is not None and not force_update:
            old = repo.steps_of(existing["id"])
            raise ConflictError(
                errors.DUPLICATE_CHAIN,
                f"A protocol titled '{draft.title}' already exists in space '{space}' "
                f"({to_uri(old[0]['id']) if old else existing['id']}). "
                "Pass force_update=true to replace it.",
                field="markdown_doc", line=draft.line,
                details={"uri": to_uri(old[0]["id"]) if old else None},
            )
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
        new_rows = [_step_row(ids[i], pid, space, i, s, stamp) for i, s in enumerate(draft.steps)]
        repo.delete_steps(r["id"] for r in old_steps)
        repo.insert_steps(new_rows)
        if not builtin:  # a built-in's statistics are made per space that runs it
            repo.create_metrics(pid, space, [r["id"] for r in new_rows])
        if self.search is not None and indexed is not None:
            spec, vectors = indexed
            self.search.index(repo, [replace(spec, entity_id=pid, updated_at=stamp)], vectors)
        return {
            "uri": to_uri(new_rows[0]["id"]),
            "chain_label": draft.title,
            "label": draft.steps[0].label,
            "tags": draft.tags,
            "step_count": len(new_rows),
            "steps": [{"uri": to_uri(r["id"]), "label": r["label"]} for r in new_rows],
            "updated": updated,
            **(check or {}),
        }

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
            match = next((i for i, r in free.items() if r["label"] == step.label), None)
            if match is None:
                match = next((i for i, r in free.items()
                              if r["content"] == step.content and r["position"] == pos), None)
            if match is None:
                ids.append(new_id())
            else:
                ids.append(match)
                del free[match]
        return ids

    # --- dump ------------------------------------------------------------------------------

    def dump(self, uri: Any, caller: Caller, *, protocol: bool = False) -> dict[str, Any]:
        with self.store.read() as repo:
            step, proto, steps = self.resolve(repo, uri, caller)
            learned = ([] if self.search is None or not protocol else
                       [t["text"] for t in self.search.learning.listing(repo.conn, proto["id"])])
        if protocol:
            draft = draft_of(proto, steps)
            return {
                "uri": to_uri(steps[0]["id"]),
                "chain_label": proto["title"],
                "tags": proto["tags"],
                "step_count": len(steps),
                "steps": [{"uri": to_uri(s["id"]), "label": s["label"]} for s in steps],
                "triggers": list(draft.triggers),
                "learned_triggers": learned,
                "markdown_doc": markdown.render(draft),
            }
        return {
            "uri": to_uri(step["id"]),
            "label": step["label"],
            "chain_label": proto["title"],
            "protocol_uri": to_uri(steps[0]["id"]),
            "position": step["position"] + 1,
            "step_count": len(steps),
            "content": step["content"],
            "mimeType": "text/markdown",
            "challenge": dict(step["challenge"]),
            "markdown_doc": markdown.render_step(step["label"], step["content"]),
        }

    # --- update and delete -----------------------------------------------------------------

    def update(self, req: rq.Update, caller: Caller) -> dict[str, Any]:
        uri_list = _uri_list(req.uris)
        docs: list[str | None]
        if req.markdown_doc is None or isinstance(req.markdown_doc, str):
            docs = [req.markdown_doc] * len(uri_list)
        elif len(req.markdown_doc) == len(uri_list):
            docs = list(req.markdown_doc)
        else:
            raise ValidationError("markdown_doc",
                                  "a markdown string, or a list of strings one per uri")
        if req.markdown_doc is None and req.updates is None:
            raise ValidationError("markdown_doc", "markdown_doc or updates")
        change = req.updates or rq.StepChange(label=None, content=None)
        results = []
        for uri, doc in zip(uri_list, docs, strict=True):
            try:
                results.append(self._update_one(uri, caller, doc, change))
            except KairosError as exc:
                results.append({"uri": uri, "status": "error", **exc.to_dict()})
        ok = sum(r["status"] == "updated" for r in results)
        return {"results": results, "total_updated": ok, "total_failed": len(results) - ok}

    @in_turn
    def _update_one(self, uri: str, caller: Caller, doc: str | None,
                    change: rq.StepChange) -> dict[str, Any]:
        label, content = change.label, change.content
        if doc is not None:
            markdown.check_text(doc)  # the size error before any other work
            lines = doc.replace("\r\n", "\n").split("\n")
            first = next((i for i, line in enumerate(lines) if line.strip()), 0)
            m = re.match(r"^ {0,3}##?[ \t]+(.*?)[ \t]*$", lines[first]) if lines else None
            if m:
                label = markdown.clean_label(m.group(1))
                content = "\n".join(lines[first + 1:])
            else:
                content = doc
        for _ in range(_GUARD_ATTEMPTS):
            with self.store.read() as repo:
                step, proto, rows = self.resolve(repo, uri, caller, writable=True)
            new_label = label if label is not None and label.strip() else step["label"]
            body = content if content is not None else step["content"]
            parsed = self.parse(f"# {proto['title']}\n\n## {new_label}\n\n{body}\n")
            if len(parsed) != 1 or len(parsed[0].steps) != 1:
                raise ValidationError("markdown_doc", "the body of one step, without H1/H2 "
                                      "headings outside code blocks")
            new_step = parsed[0].steps[0]
            edited = {"label": new_step.label, "content": new_step.content,
                      "challenge": new_step.challenge.to_dict()}
            draft = draft_of(proto, [{**r, **edited} if r["id"] == step["id"] else r
                                     for r in rows])
            stamp = now()
            indexed = self._indexed(proto, draft, stamp)
            with self.store.write() as repo:
                if not repo.touch_protocol(proto["id"], proto["updated_at"], stamp,
                                           tags=draft.tags):
                    continue  # changed since it was read: edit the new version
                repo.update_step(step["id"], updated_at=stamp, **edited)
                self._index(repo, indexed)
            return {"uri": uri, "status": "updated", "label": new_step.label,
                    "challenge": new_step.challenge.to_dict()}
        raise ConflictError(errors.CONFLICT, "The protocol kept changing; retry.", field="uris")

    def delete(self, req: rq.Delete, caller: Caller) -> dict[str, Any]:
        results = []
        for uri in _uri_list(req.uris):
            try:
                results.append({"uri": uri, "status": "deleted",
                                "removed": self._delete_one(uri, caller, req.protocol)})
            except KairosError as exc:
                results.append({"uri": uri, "status": "error", **exc.to_dict()})
        ok = sum(r["status"] == "deleted" for r in results)
        return {"results": results, "total_deleted": ok, "total_failed": len(results) - ok}

    @in_turn
    def _delete_one(self, uri: str, caller: Caller, whole: bool) -> list[str]:
        for _ in range(_GUARD_ATTEMPTS):
            with self.store.read() as repo:
                step, proto, steps = self.resolve(repo, uri, caller, writable=True)
            if whole or len(steps) == 1:
                with self.store.write() as repo:
                    step, proto, steps = self.resolve(repo, uri, caller, writable=True)
                    repo.delete_protocol(proto["id"])
                    if self.search is not None:
                        self.search.unindex(repo, "protocol", [proto["id"]])
                return [to_uri(s["id"]) for s in steps]
            rest = [r for r in steps if r["id"] != step["id"]]
            draft, stamp = draft_of(proto, rest), now()
            indexed = self._indexed(proto, draft, stamp)
            with self.store.write() as repo:
                if not repo.touch_protocol(proto["id"], proto["updated_at"], stamp,
                                           tags=draft.tags):
                    continue
                repo.delete_steps([step["id"]])
                for pos, s in enumerate(rest):
                    repo.update_step(s["id"], position=pos)
                self._index(repo, indexed)
            return [uri]
        raise ConflictError(errors.CONFLICT, "The protocol kept changing; retry.", field="uris")

    def _indexed(self, proto: Row, draft: markdown.ProtocolDraft, stamp: str
                 ) -> Indexed | None:
        """A protocol's new search document and its vectors, made before the write."""
        if self.search is None or proto["space"] == BUILTIN_SPACE:
            return None
        spec = protocol_doc(proto["id"], proto["space"], draft, stamp)
        return spec, self.search.embed_docs([spec])

    def _index(self, repo: Repo, indexed: Indexed | None) -> None:
        if indexed is not None and self.search is not None:
            self.search.index(repo, [indexed[0]], indexed[1])

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
            except IntegrityError:
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


def _uri_list(uris: str | list[str]) -> list[str]:
    return [uris] if isinstance(uris, str) else uris


__all__ = ["BUILTIN_SPACE", "ProtocolService", "RunContext", "RunSteps",
           "step_views"]
