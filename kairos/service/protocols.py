"""Use cases for stored protocols: find one by a step URI (for every use case and, through
the step cache, the run loop), dump, update and delete. Minting is in ``minting``."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, cast

import numpy as np

from ..domain import errors, markdown
from ..domain.caller import BUILTIN_SPACE, Caller
from ..domain.errors import ConflictError, KairosError, NotFoundError, ValidationError
from ..domain.requests import Delete, StepChange, Update
from ..domain.responses import DeleteResult, ItemResult, ProtocolDump, StepDump, UpdateResult
from ..domain.run_data import ProtocolData, protocol_data, step_data
from ..domain.uris import parse_uri, to_uri, uri_list
from ..domain.versions import draft_of, protocol_dump, step_dump
from ..search.documents import DocSpec, protocol_doc
from ..search.service import SearchService
from ..store import learned
from ..store.db import Store
from ..store.repo import Repo, Row
from .clock import now
from .parsing import Parser
from .step_cache import RunContext, RunSteps, StepCache
from .turns import GUARD_ATTEMPTS, in_turn
from .versions import followed_version, record_version, version_of

#: A protocol's search document and its vectors (None: queued), made before a write.
Indexed = tuple[DocSpec, np.ndarray | None]


class ProtocolService:
    def __init__(self, store: Store, search: SearchService, parser: Parser) -> None:
        self.store = store
        self.search = search
        self.step_cache = StepCache()
        self.parser = parser

    # --- lookup ----------------------------------------------------------------------------

    def resolve(self, repo: Repo, uri: object, caller: Caller, *, field: str = "uri",
                writable: bool = False) -> tuple[Row, Row, list[Row]]:
        """(step, protocol, steps) for a step URI the caller may see; 404 otherwise."""
        step_id = parse_uri(uri, field)
        step = repo.step(step_id)
        protocol = repo.protocol(step["protocol_id"]) if step else None
        if step is None or protocol is None or not caller.sees(protocol["space"]):
            raise NotFoundError(f"No protocol step at {uri}.", field=field)
        if writable and protocol["builtin"]:
            raise KairosError(errors.BUILTIN_READ_ONLY,
                              f"{uri} belongs to a built-in protocol, which cannot be changed.",
                              field=field)
        return step, protocol, repo.steps_of(protocol["id"])

    def run_context(self, repo: Repo, uri: object, caller: Caller, nonce: str | None = None
                    ) -> RunContext:
        """``resolve`` for the run loop, in one query: the step, its protocol, the parsed
        steps of the version the nonce's run follows (else the current version) and that
        run. The same 404 as ``resolve``."""
        step_id = parse_uri(uri)
        loaded = repo.run_context(step_id, nonce)
        if loaded is None or not caller.sees(loaded[0]["p_space"]):
            raise NotFoundError(f"No protocol step at {uri}.", field="uri")
        found, run = loaded
        protocol_id = found["p_id"]
        pinned = run["protocol_version"] if run is not None and (
            run["protocol_id"] == protocol_id) else found["p_version"]
        steps = self.version_steps(repo, protocol_id, pinned)
        position = (steps.ids.index(step_id) if step_id in steps.ids else found["position"])
        if position is None:
            raise NotFoundError(f"No protocol step at {uri}.", field="uri")
        return RunContext({"id": step_id, "position": position}, protocol_id, steps, run)

    def version_steps(self, repo: Repo, protocol_id: str, version: int) -> RunSteps:
        """The parsed steps of one version of a protocol (cached: versions never change)."""
        steps = self.step_cache.get(protocol_id, version)
        if steps is None:
            found = followed_version(repo, protocol_id, version)
            if found is None:
                raise NotFoundError(f"Version {version} of this protocol no longer exists.",
                                    field="uri")
            steps = RunSteps.of(found)
            self.step_cache.put(protocol_id, version, steps)
        return steps

    # --- dump ------------------------------------------------------------------------------

    def dump(self, uri: str, caller: Caller, *, protocol: bool | None = False,
             version: int | None = None) -> StepDump | ProtocolDump:
        """A step or the whole protocol (``protocol`` None: the whole protocol for its
        first step, the step's own for another), as it is now or as it was at ``version``."""
        with self.store.read() as repo:
            step, proto, rows = self.resolve(repo, uri, caller)
            if version is None:  # its text is rendered below, for the whole protocol only
                data = ProtocolData(proto["id"], proto["title"], proto["version"], "",
                                    step_data(rows))
            else:
                data = protocol_data(version_of(repo, proto["id"], version, uri, "version"))
            at = next((i for i, s in enumerate(data.steps) if s.id == step["id"]), None)
            whole = protocol or (protocol is None and at == 0)
            taught = [t["text"] for t in learned.listing(repo.conn, proto["id"])] if whole else []
        if not whole:
            if at is None:
                raise NotFoundError(f"Version {version} of this protocol has no step "
                                    f"{to_uri(step['id'])}.", field="version")
            return step_dump(data, at)
        if version is None:
            draft = draft_of(proto, rows)
            return protocol_dump(replace(data, markdown=markdown.render(draft)), proto["tags"],
                                 draft.triggers, taught)
        draft = markdown.parse(data.markdown)[0]
        return protocol_dump(data, draft.tags, draft.triggers, taught)

    # --- update and delete -----------------------------------------------------------------

    def update(self, req: Update, caller: Caller) -> UpdateResult:
        targets = uri_list(req.uris)
        docs: list[str | None]
        if req.markdown_doc is None or isinstance(req.markdown_doc, str):
            docs = [req.markdown_doc] * len(targets)
        elif len(req.markdown_doc) == len(targets):
            docs = list(req.markdown_doc)
        else:
            raise ValidationError("markdown_doc",
                                  "a markdown string, or a list of strings one per uri")
        if req.markdown_doc is None and req.updates is None:
            raise ValidationError("markdown_doc", "markdown_doc or updates")
        change = req.updates or StepChange(label=None, content=None)
        results, ok = _batch(targets, lambda i, uri: self._update_one(uri, caller, docs[i],
                                                                      change), "updated")
        return {"results": results, "total_updated": ok, "total_failed": len(results) - ok}

    @in_turn
    def _update_one(self, uri: str, caller: Caller, doc: str | None,
                    change: StepChange) -> ItemResult:
        label, content = change.label, change.content
        if doc is not None:
            markdown.check_text(doc, self.parser.limits)  # the size error before other work
            lines = doc.replace("\r\n", "\n").split("\n")
            first = next((i for i, line in enumerate(lines) if line.strip()), 0)
            m = re.match(r"^ {0,3}##?[ \t]+(.*?)[ \t]*$", lines[first]) if lines else None
            if m:
                label = markdown.clean_label(m.group(1))
                content = "\n".join(lines[first + 1:])
            else:
                content = doc
        for _ in range(GUARD_ATTEMPTS):
            with self.store.read() as repo:
                step, proto, rows = self.resolve(repo, uri, caller, writable=True)
            new_label = label if label is not None and label.strip() else step["label"]
            body = content if content is not None else step["content"]
            parsed = self.parser.parse(f"# {proto['title']}\n\n## {new_label}\n\n{body}\n")
            if len(parsed) != 1 or len(parsed[0].steps) != 1:
                raise ValidationError("markdown_doc", "the body of one step, without H1/H2 "
                                      "headings outside code blocks")
            new_step = parsed[0].steps[0]
            edited = {"label": new_step.label, "content": new_step.content,
                      "challenge": new_step.challenge.to_dict()}
            after = [{**r, **edited} if r["id"] == step["id"] else r for r in rows]
            draft, stamp = draft_of(proto, after), now()
            indexed = self._indexed(proto, draft, stamp)
            with self.store.write() as repo:
                if not self._rewrite(repo, proto, draft, after, stamp, indexed):
                    continue  # changed since it was read: edit the new version
                repo.update_step(step["id"], updated_at=stamp, **edited)
            return {"uri": uri, "status": "updated", "label": new_step.label,
                    "challenge": new_step.challenge.to_dict()}
        raise ConflictError(errors.CONFLICT, "The protocol kept changing; retry.", field="uris")

    def delete(self, req: Delete, caller: Caller) -> DeleteResult:
        results, ok = _batch(uri_list(req.uris), lambda _, uri: {
            "uri": uri, "status": "deleted",
            "removed": self._delete_one(uri, caller, req.protocol)}, "deleted")
        return {"results": results, "total_deleted": ok, "total_failed": len(results) - ok}

    @in_turn
    def _delete_one(self, uri: str, caller: Caller, whole: bool) -> list[str]:
        for _ in range(GUARD_ATTEMPTS):
            with self.store.read() as repo:
                step, proto, steps = self.resolve(repo, uri, caller, writable=True)
            if whole or len(steps) == 1:
                with self.store.write() as repo:
                    step, proto, steps = self.resolve(repo, uri, caller, writable=True)
                    repo.delete_protocol(proto["id"])
                    self.search.indexing.unindex(repo, "protocol", [proto["id"]])
                return [to_uri(s["id"]) for s in steps]
            rest = [r for r in steps if r["id"] != step["id"]]
            draft, stamp = draft_of(proto, rest), now()
            indexed = self._indexed(proto, draft, stamp)
            with self.store.write() as repo:
                if not self._rewrite(repo, proto, draft, rest, stamp, indexed):
                    continue
                repo.delete_steps([step["id"]])
                for pos, s in enumerate(rest):
                    repo.update_step(s["id"], position=pos)
            return [uri]
        raise ConflictError(errors.CONFLICT, "The protocol kept changing; retry.", field="uris")

    def _rewrite(self, repo: Repo, proto: Row, draft: markdown.ProtocolDraft,
                 rows: Sequence[Row | dict[str, Any]], stamp: str, indexed: Indexed | None
                 ) -> bool:
        """Stamp the protocol, record its version with steps ``rows`` and index it; False,
        with nothing written, when it changed since ``proto`` was read."""
        if not repo.touch_protocol(proto["id"], proto["updated_at"], stamp, tags=draft.tags):
            return False
        record_version(repo, proto, proto["id"], proto["space"], draft, rows, stamp)
        if indexed is not None:
            self.search.indexing.index(repo, [indexed[0]], indexed[1])
        return True

    def _indexed(self, proto: Row, draft: markdown.ProtocolDraft, stamp: str
                 ) -> Indexed | None:
        """A protocol's new search document and its vectors, made before the write."""
        if proto["space"] == BUILTIN_SPACE:
            return None
        spec = protocol_doc(proto["id"], proto["space"], draft, stamp)
        return spec, self.search.indexing.embed_docs([spec])


def _batch(uris: list[str], one: Callable[[int, str], ItemResult], status: str
           ) -> tuple[list[ItemResult], int]:
    """Each uri's result (a failure's: the error's fields) and how many are ``status``."""
    results: list[ItemResult] = []
    for i, uri in enumerate(uris):
        try:
            results.append(one(i, uri))
        except KairosError as exc:
            results.append(cast(ItemResult, {"uri": uri, "status": "error", **exc.to_dict()}))
    return results, sum(r["status"] == status for r in results)

__all__ = ["BUILTIN_SPACE", "Indexed", "ProtocolService"]
