"""The run loop's view of a protocol version's steps, parsed once per version and kept per
process (``StepCache``), and what one call of the run loop loads."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from ..domain.challenge import from_issued
from ..domain.engine import StepView
from ..domain.run_data import ProtocolData

#: How many protocol versions' parsed steps a process keeps for the run loop.
STEP_CACHE_SIZE = 512


@dataclass(frozen=True)
class RunSteps:
    """A protocol version's steps as the run loop uses them: their ids and their views,
    in order."""

    version: int
    ids: tuple[str, ...]
    views: list[StepView]

    @classmethod
    def of(cls, version: ProtocolData) -> RunSteps:
        return cls(version.version, tuple(s.id for s in version.steps),
                   [StepView(s.uri, s.content, from_issued(dict(s.challenge)), s.label)
                    for s in version.steps])


@dataclass(frozen=True)
class RunContext:
    """What one call of the run loop loads: the step named by the URI, its protocol, the
    steps of the version the run that issued the solution's nonce follows (None: no such
    run; then the current version's), and that run."""

    step: dict[str, Any]       # id, position (in ``steps``)
    protocol_id: str
    steps: RunSteps
    run: dict[str, Any] | None


class StepCache:
    """Parsed steps per protocol version. A version never changes once stored, so an
    entry never goes stale: the cache only bounds its size (oldest entry out first)."""

    def __init__(self, size: int = STEP_CACHE_SIZE) -> None:
        self.size = size
        self._entries: dict[tuple[str, int], RunSteps] = {}
        self._lock = threading.Lock()

    def get(self, protocol_id: str, version: int) -> RunSteps | None:
        return self._entries.get((protocol_id, version))

    def put(self, protocol_id: str, version: int, steps: RunSteps) -> None:
        with self._lock:
            while len(self._entries) >= self.size:
                del self._entries[next(iter(self._entries))]
            self._entries[(protocol_id, version)] = steps


__all__ = ["STEP_CACHE_SIZE", "RunContext", "RunSteps", "StepCache"]
