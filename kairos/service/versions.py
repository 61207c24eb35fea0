"""Protocol versions: the version a change of a protocol makes, the one a run follows, the
versions of one protocol with their statistics, and the diff of two."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..domain import markdown
from ..domain.caller import Caller
from ..domain.errors import NotFoundError
from ..domain.run_data import ProtocolData, protocol_data
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


def followed_version(repo: Repo, protocol_id: str, number: int) -> ProtocolData | None:
    """Version ``number`` of a protocol (the one a run follows) as stored when it was
    made. None when this store does not hold it: a version is kept while a run follows it,
    so only a run imported without one has none."""
    found = repo.version(protocol_id, number)
    return None if found is None else protocol_data(found)


def version_of(repo: Repo, protocol_id: str, number: int, uri: str, field: str) -> Row:
    """A stored version, asked for by a caller: one not held answers 404 on ``field``."""
    found = repo.version(protocol_id, number)
    if found is None:
        raise NotFoundError(f"No version {number} of the protocol at {uri}.", field=field)
    return found


def list_versions(protocols: ProtocolService, uri: str, caller: Caller) -> VersionList:
    """Every version of the protocol at ``uri``, oldest first, with its statistics in the
    caller's space."""
    with protocols.store.read() as repo:
        _, proto, steps = protocols.resolve(repo, uri, caller)
        rows = repo.versions_of(proto["id"])
        counts = repo.version_metrics_of(proto["id"], caller.space)
    items: list[VersionItem] = []
    for v in rows:
        c = counts.get(v["version"]) or {"runs": 0, "successes": 0, "failures": 0}
        items.append({"version": v["version"], "content_hash": v["content_hash"],
                      "created_at": v["created_at"], "current": v["version"] == proto["version"],
                      "step_count": len(v["steps"]), "runs": int(c["runs"]),
                      "successes": int(c["successes"]), "failures": int(c["failures"])})
    return {"uri": to_uri(steps[0]["id"]), "chain_label": proto["title"],
            "current_version": proto["version"], "versions": items}


def diff_versions(protocols: ProtocolService, req: VersionDiff, caller: Caller
                  ) -> VersionsDiff:
    with protocols.store.read() as repo:
        _, proto, steps = protocols.resolve(repo, req.uri, caller)
        old = version_of(repo, proto["id"], req.from_version, req.uri, "from")
        new = version_of(repo, proto["id"], req.to_version, req.uri, "to")
    text = unified_diff(old["markdown"], new["markdown"], f"version {old['version']}",
                        f"version {new['version']}")
    return {"uri": to_uri(steps[0]["id"]), "chain_label": proto["title"],
            "from_version": old["version"], "to_version": new["version"],
            "from_hash": old["content_hash"], "to_hash": new["content_hash"],
            "diff": text, "lines": diff_lines(text)}


__all__ = ["diff_versions", "followed_version", "list_versions", "record_version",
           "version_of"]
