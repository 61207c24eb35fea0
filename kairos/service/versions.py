"""Protocol versions: the version a change of a protocol makes, the versions of one
protocol with their statistics, a version as ``kairos_dump`` shows it, and the diff of two."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..domain import markdown
from ..domain.caller import Caller
from ..domain.errors import NotFoundError
from ..domain.responses import ProtocolDump, StepDump
from ..domain.texts import MIME_MARKDOWN
from ..domain.uris import to_uri
from ..domain.versions import (
    VersionDiff,
    VersionItem,
    VersionList,
    VersionsDiff,
    content_hash,
    diff_lines,
    step_entries,
    unified_diff,
)
from ..store.db import Store
from ..store.repo import Repo, Row

if TYPE_CHECKING:
    from .protocols import ProtocolService


def record_version(repo: Repo, protocol: Row | None, pid: str, space: str,
                   draft: markdown.ProtocolDraft, rows: Sequence[Row | dict[str, Any]],
                   stamp: str) -> int:
    """The version a write of protocol ``pid`` (``protocol``: its row before the write,
    None when new) leaves current, stored if it is new. A write that leaves the text and
    the steps' ids as they are keeps the current version: nothing a run could follow has
    changed, and its statistics stay in one place."""
    text, entries = markdown.render(draft), step_entries(rows)
    number = 1
    if protocol is not None:
        number = protocol["version"]
        current = repo.version(pid, number)
        if current is not None and current["content_hash"] == content_hash(text) and [
                s["id"] for s in current["steps"]] == [s["id"] for s in entries]:
            return int(number)
        number += 1
        repo.update_protocol(pid, version=number)
    repo.insert_version(protocol_id=pid, version=number, space=space, title=draft.title,
                        markdown=text, content_hash=content_hash(text), steps=entries,
                        created_at=stamp)
    return number


def version_of(repo: Repo, protocol_id: str, number: int, uri: str, field: str) -> Row:
    found = repo.version(protocol_id, number)
    if found is None:
        raise NotFoundError(f"No version {number} of the protocol at {uri}.", field=field)
    return found


def version_dump(repo: Repo, version: Row, step_id: str, whole: bool,
                 learned: list[str]) -> StepDump | ProtocolDump:
    """``kairos_dump`` of one version: the seed's shape, from the version's own text."""
    steps = version["steps"]
    uri = to_uri(steps[0]["id"])
    if whole:
        draft = markdown.parse(version["markdown"])[0]
        return {"uri": uri, "chain_label": version["title"], "tags": list(draft.tags),
                "step_count": len(steps),
                "steps": [{"uri": to_uri(s["id"]), "label": s["label"]} for s in steps],
                "triggers": list(draft.triggers), "learned_triggers": learned,
                "markdown_doc": version["markdown"], "version": version["version"]}
    at = next((i for i, s in enumerate(steps) if s["id"] == step_id), None)
    if at is None:
        raise NotFoundError(f"Version {version['version']} of this protocol has no step "
                            f"{to_uri(step_id)}.", field="version")
    step = steps[at]
    return {"uri": to_uri(step_id), "label": step["label"], "chain_label": version["title"],
            "protocol_uri": uri, "position": at + 1, "step_count": len(steps),
            "content": step["content"], "mimeType": MIME_MARKDOWN,
            "challenge": dict(step["challenge"]),
            "markdown_doc": markdown.render_step(step["label"], step["content"]),
            "version": version["version"]}


class VersionService:
    def __init__(self, store: Store, protocols: ProtocolService) -> None:
        self.store = store
        self.protocols = protocols

    def versions(self, uri: str, caller: Caller) -> VersionList:
        """Every version of the protocol at ``uri``, oldest first, with its statistics
        in the caller's space."""
        with self.store.read() as repo:
            _, proto, steps = self.protocols.resolve(repo, uri, caller)
            rows = repo.versions_of(proto["id"])
            counts = repo.version_metrics_of(proto["id"], caller.space)
        items: list[VersionItem] = []
        for v in rows:
            c = counts.get(v["version"])
            items.append({"version": v["version"], "content_hash": v["content_hash"],
                          "created_at": v["created_at"],
                          "current": v["version"] == proto["version"],
                          "step_count": len(v["steps"]),
                          "runs": int(c["runs"]) if c else 0,
                          "successes": int(c["successes"]) if c else 0,
                          "failures": int(c["failures"]) if c else 0})
        return {"uri": to_uri(steps[0]["id"]), "chain_label": proto["title"],
                "current_version": proto["version"], "versions": items}

    def diff(self, req: VersionDiff, caller: Caller) -> VersionsDiff:
        with self.store.read() as repo:
            _, proto, steps = self.protocols.resolve(repo, req.uri, caller)
            old = version_of(repo, proto["id"], req.from_version, req.uri, "from")
            new = version_of(repo, proto["id"], req.to_version, req.uri, "to")
        text = unified_diff(old["markdown"], new["markdown"], f"version {old['version']}",
                            f"version {new['version']}")
        return {"uri": to_uri(steps[0]["id"]), "chain_label": proto["title"],
                "from_version": old["version"], "to_version": new["version"],
                "from_hash": old["content_hash"], "to_hash": new["content_hash"],
                "diff": text, "lines": diff_lines(text)}


__all__ = ["VersionService", "record_version", "version_dump", "version_of"]
