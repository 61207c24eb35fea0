"""The run loop's view of a protocol's steps, parsed once per version of the protocol and
kept per process (``StepCache``), and what one call of the run loop loads."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..domain.challenge import from_issued
from ..domain.engine import StepView
from ..domain.uris import to_uri


def step_views(rows: Sequence[Mapping[Any, Any]]) -> list[StepView]:
    """The run engine's view of stored steps (in order)."""
    return [StepView(to_uri(r["id"]), r["content"], from_issued(dict(r["challenge"])),
                     r["label"]) for r in rows]


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


class StepCache:
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


__all__ = ["STEP_CACHE_SIZE", "RunContext", "RunSteps", "StepCache", "step_views"]
