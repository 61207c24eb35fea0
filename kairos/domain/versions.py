"""Protocol versions: the text a version stores, its content hash, its steps as the run
loop reads them, and the difference between two versions."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import ConfigDict, Field
from typing_extensions import TypedDict

from . import markdown
from .bundle_format import content_hash
from .challenge import from_issued
from .requests import ProtocolRef, VersionNumber
from .responses import ProtocolDump, ProtocolHead, StepDump
from .run_data import ProtocolData
from .texts import MIME_MARKDOWN

__all__ = ["DiffLine", "VersionDiff", "VersionItem", "VersionList", "VersionsDiff",
           "content_hash", "diff_lines", "draft_of", "protocol_dump", "step_dump",
           "step_entries", "unified_diff", "version_text"]


class VersionDiff(ProtocolRef):
    """Two versions of one protocol to compare (``from`` and ``to`` in a query string)."""

    model_config = ConfigDict(populate_by_name=True)
    from_version: VersionNumber = Field(alias="from")
    to_version: VersionNumber = Field(alias="to")


class VersionItem(TypedDict):
    """One version of a protocol, with its statistics in the caller's space."""

    version: int
    content_hash: str
    created_at: str
    current: bool
    step_count: int
    runs: int
    successes: int
    failures: int


class VersionList(ProtocolHead):
    current_version: int
    versions: list[VersionItem]


class DiffLine(TypedDict):
    kind: Literal["hunk", "context", "added", "removed"]
    text: str


class VersionsDiff(ProtocolHead):
    from_version: int
    to_version: int
    from_hash: str
    to_hash: str
    diff: str
    lines: list[DiffLine]


def draft_of(protocol: Mapping[Any, Any], steps: Sequence[Mapping[Any, Any]]
             ) -> markdown.ProtocolDraft:
    """A stored protocol (its row and its steps' rows, in order) as a draft."""
    return markdown.ProtocolDraft(
        protocol["title"],
        tuple(markdown.StepDraft(s["label"], s["content"], from_issued(dict(s["challenge"])))
              for s in steps),
        protocol["intro"],
        triggers=tuple(protocol.get("triggers") or ()),
    )


def version_text(protocol: Mapping[Any, Any], steps: Sequence[Mapping[Any, Any]]) -> str:
    """The markdown a version stores: the protocol rendered as ``kairos_dump`` returns it,
    which parses back to the same protocol."""
    return markdown.render(draft_of(protocol, steps))


def step_entries(steps: Sequence[Mapping[Any, Any]]) -> list[dict[str, Any]]:
    """A version's steps (in order) as stored: id, label, content, issued challenge."""
    return [{"id": s["id"], "label": s["label"], "content": s["content"],
             "challenge": dict(s["challenge"])} for s in steps]


_KINDS: dict[str, Literal["hunk", "context", "added", "removed"]] = {
    "@": "hunk", " ": "context", "+": "added", "-": "removed"}


def step_dump(version: ProtocolData, at: int) -> StepDump:
    """``kairos_dump`` of step ``at`` (from 0) of a protocol version."""
    step = version.steps[at]
    return {"uri": step.uri, "label": step.label, "chain_label": version.title,
            "protocol_uri": version.uri, "position": at + 1,
            "step_count": len(version.steps), "content": step.content,
            "mimeType": MIME_MARKDOWN, "challenge": dict(step.challenge),
            "markdown_doc": markdown.render_step(step.label, step.content),
            "version": version.version}


def protocol_dump(version: ProtocolData, tags: Sequence[str], triggers: Sequence[str],
                  learned: list[str]) -> ProtocolDump:
    """``kairos_dump`` of a whole protocol version."""
    return {"uri": version.uri, "chain_label": version.title, "tags": list(tags),
            "step_count": len(version.steps),
            "steps": [{"uri": s.uri, "label": s.label} for s in version.steps],
            "triggers": list(triggers), "learned_triggers": learned,
            "markdown_doc": version.markdown, "version": version.version}


def unified_diff(old: str, new: str, old_name: str, new_name: str) -> str:
    """A unified diff of two versions' markdown (empty when they are the same)."""
    return "".join(difflib.unified_diff(old.splitlines(keepends=True),
                                        new.splitlines(keepends=True), old_name, new_name))


def diff_lines(diff: str) -> list[DiffLine]:
    """A unified diff's lines after its two file headers, each with what it is."""
    lines = diff.splitlines()[2:]
    return [{"kind": _KINDS.get(line[:1], "context"), "text": line} for line in lines]
