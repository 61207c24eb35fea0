"""A finished or running run as plain data: what the dataset formats
(``domain.datasets``) read, built by the service from the store's rows."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from .canonical import KAIROS_JSON_1


@dataclass(frozen=True)
class StepData:
    uri: str
    label: str
    content: str
    challenge: Mapping[str, Any]  # as declared: {"type", "description", "<type>": {...}}


@dataclass(frozen=True)
class ProtocolData:
    uri: str                      # the URI of step 1, which names the protocol
    title: str
    version: int | None           # the version the run followed; None before versions
    markdown: str
    steps: tuple[StepData, ...]

    @cached_property
    def content_hash(self) -> str:
        """sha256 of the markdown's UTF-8 bytes: pins the text the run followed."""
        return hashlib.sha256(self.markdown.encode("utf-8")).hexdigest()


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


__all__ = ["ProtocolData", "RefusedAnswer", "RunData", "StepData"]
