"""A finished or running run as plain data, and the protocol version it follows: what the
dataset formats (``domain.datasets``) and a run's bundle (``domain.bundle``) read, built
from the store's rows (``protocol_data``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from .bundle_format import content_hash
from .canonical import KAIROS_JSON_1
from .texts import URI_PREFIX
from .uris import to_uri


@dataclass(frozen=True)
class StepData:
    uri: str
    label: str
    content: str
    challenge: Mapping[str, Any]  # as declared: {"type", "description", "<type>": {...}}

    @property
    def id(self) -> str:
        return self.uri.removeprefix(URI_PREFIX)


@dataclass(frozen=True)
class ProtocolData:
    """One version of a protocol, as stored when it was made."""

    protocol_id: str
    title: str
    version: int
    markdown: str
    steps: tuple[StepData, ...]

    @property
    def uri(self) -> str:
        """The URI of step 1, which names the protocol."""
        return self.steps[0].uri

    @cached_property
    def content_hash(self) -> str:
        """Pins the text the run followed (``bundle_format.content_hash``)."""
        return content_hash(self.markdown)


def step_data(steps: Sequence[Mapping[Any, Any]]) -> tuple[StepData, ...]:
    """Stored steps (rows of ``steps``, or a version's entries), in order."""
    return tuple(StepData(to_uri(s["id"]), s["label"], s["content"], dict(s["challenge"]))
                 for s in steps)


def protocol_data(version: Mapping[Any, Any]) -> ProtocolData:
    """A stored protocol version (a row of ``protocol_versions``) as ``ProtocolData``."""
    return ProtocolData(version["protocol_id"], version["title"], version["version"],
                        version["markdown"], step_data(version["steps"]))


@dataclass(frozen=True)
class RefusedAnswer:
    """A refused answer, as far as it is known (at least its step)."""

    step_index: int
    error_code: str | None = None
    solution: Any = None
    time: str | None = None


@dataclass(frozen=True)
class RunData:
    run_id: str
    space: str
    caller: str
    status: str
    outcome: str | None           # success, failure, or None while it has none
    proven: bool
    created_at: str               # ISO-8601
    updated_at: str
    protocol: ProtocolData
    proofs: tuple[Mapping[str, Any], ...]  # the chain, in order, each with its proof_hash
    head: str                     # the chain head the store holds for the run
    chain_rule: str = KAIROS_JSON_1  # the rule the chain was hashed with (``canonical``)
    message: str | None = None    # the attestation's message
    quality_bonus: float | None = None
    llm_model_id: str | None = None
    attested_step: int | None = None  # index of the step the outcome was attested at
    request: str | None = None    # what the agent was asked, when known
    refusals: tuple[RefusedAnswer, ...] = field(default=())

    @property
    def proven_success(self) -> bool:
        return self.outcome == "success" and self.proven

    def counts(self, include_unproven: bool = False) -> bool:
        """Whether the run belongs in a dataset: a failure, a proven success, or (asked
        for) an unproven success. A run without an outcome never does."""
        return (self.outcome == "failure" or self.proven_success
                or (self.outcome == "success" and include_unproven))

    @cached_property
    def accepted(self) -> Mapping[int, Mapping[str, Any]]:
        """The accepted answers' proof records by step index."""
        return {int(p["step_index"]): p for p in self.proofs}

    def failed_step(self) -> int:
        """Where a run failed: the first step whose answer was never accepted; when every
        step was, the step its failure was attested at (else the last)."""
        done = self.accepted
        size = max(len(self.protocol.steps), max(done, default=-1) + 1)
        for index in range(size):
            if index not in done:
                return index
        return self.attested_step if self.attested_step is not None else size - 1


__all__ = ["ProtocolData", "RefusedAnswer", "RunData", "StepData", "protocol_data",
           "step_data"]
