"""What the reads answer: pages of protocols, runs and entries, one protocol's overview and
quality, one run with its proof chain, the home view.

Each is a ``TypedDict``: the service builds exactly the JSON body every surface sends (the
keys in this order, ``None`` as null), mypy checks what it builds against these types,
and ``/openapi.json`` documents them (FastAPI reads them as it reads the request models).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

from pydantic import Field
from typing_extensions import TypedDict

from .engine import RunStatus
from .responses import ProtocolHead


class Stats(TypedDict):
    """A protocol's outcomes in the caller's space."""

    runs: int
    successes: int
    failures: int
    success_rate: Annotated[float | None, Field(description="successes / (successes + "
                                                            "failures)")]
    proven_runs: Annotated[int, Field(description="Runs with an outcome whose every step "
                                                  "was proven.")]
    unproven_runs: Annotated[int, Field(description="Runs with an outcome and a step left "
                                                    "unproven.")]
    last_outcome: str | None
    last_run_at: str | None


class ProtocolItem(TypedDict):
    uri: Annotated[str, Field(description="The protocol's step 1.")]
    chain_label: str
    tags: list[str]
    step_count: int
    builtin: bool
    created_at: str
    updated_at: str
    stats: Stats


class ProtocolPage(TypedDict):
    items: list[ProtocolItem]
    total: int
    limit: int
    offset: int
    has_more: bool


class RunItem(TypedDict):
    run_id: str
    chain_label: str | None
    status: RunStatus
    outcome: str | None
    step: Annotated[int, Field(description="The step it waits on, or its last step once "
                                           "finished (1-based).")]
    step_count: int
    proofs: int
    proven: Annotated[bool, Field(description="Every step's challenge was answered.")]
    retry_count: int
    caller: str
    message: str | None
    created_at: str
    updated_at: str


class RunPage(TypedDict):
    items: list[RunItem]
    total: int
    limit: int
    offset: int
    has_more: bool


class EntryItem(TypedDict):
    entity_id: str
    entity_type: Literal["experience", "manual"]
    category: str
    title: str
    section: str | None
    author: str | None
    updated_at: str
    preview: str


class EntryPage(TypedDict):
    items: list[EntryItem]
    total: int
    limit: int
    offset: int
    has_more: bool


class OverviewStep(TypedDict):
    uri: str
    position: int
    label: str
    content: str
    body: Annotated[str, Field(description="The content without its challenge line or "
                                           "block.")]
    challenge: dict[str, Any]


class ProtocolOverview(ProtocolHead):
    intro: str
    tags: list[str]
    builtin: bool
    step_count: int
    created_at: str
    updated_at: str
    steps: list[OverviewStep]
    stats: Stats


class QualityPoint(TypedDict):
    date: str
    runs: int
    successes: int
    failures: int
    success_rate: float | None
    cumulative_runs: int
    cumulative_success_rate: float | None


class Quality(ProtocolHead):
    bucket: Literal["day"]
    series: list[QualityPoint]


class StepCounts(TypedDict):
    uri: str
    label: str
    accepted: int
    refused: int
    failures: int


class Metrics(TypedDict):
    """A protocol's quality metrics as run in the caller's space."""

    runs: int
    successes: int
    failures: int
    quality_bonus: float
    last_outcome: str | None
    last_run_at: str | None
    per_model: dict[str, dict[str, int]]
    steps: list[StepCounts]


class HomeProtocols(TypedDict):
    total: int
    recent: list[ProtocolItem]


class HomeRuns(TypedDict):
    total: int
    active: int
    recent: list[RunItem]


class HomeStore(TypedDict):
    backend: str
    home: Annotated[str | None, Field(description="The data directory of an SQLite store.")]


class Home(TypedDict):
    protocols: HomeProtocols
    runs: HomeRuns
    space: str
    store: HomeStore
    run_idle_minutes: Annotated[int, Field(description="Active runs idle this long are "
                                                       "abandoned (0: never).")]


class Broken(TypedDict):
    index: int
    step_uri: str | None
    reason: str


class Verification(TypedDict):
    run_id: str
    valid: bool
    proofs: int
    proven: bool
    head: str | None
    first_broken: Annotated[Broken | None, Field(description="The first link whose hash "
                                                             "does not recompute, if any.")]


class ProofLog(TypedDict):
    run_id: str
    proofs: list[dict[str, Any]]


class RunStep(TypedDict):
    uri: str
    position: int
    label: str
    proven: bool


class Link(TypedDict):
    index: int
    step_uri: str | None
    step_index: int | None
    state: Literal["valid", "broken", "unchecked"]
    reason: str | None
    expected_hash: str | None
    record: dict[str, Any]


class ChainCheck(TypedDict):
    valid: bool
    proofs: int
    first_broken: Broken | None


class RunProtocol(TypedDict):
    uri: str | None
    chain_label: str


class RunDetail(TypedDict):
    run_id: str
    status: RunStatus
    outcome: str | None
    message: str | None
    caller: str
    step: int
    retry_count: int
    created_at: str
    updated_at: str
    protocol: RunProtocol | None
    steps: list[RunStep]
    proven: bool
    head: str
    verification: ChainCheck
    links: list[Link]
    protocol_version: NotRequired[int]  # the version the run follows
    chain_rule: NotRequired[str]


__all__ = ["Broken", "ChainCheck", "EntryItem", "EntryPage", "Home", "HomeProtocols",
           "HomeRuns", "HomeStore", "Link", "Metrics", "OverviewStep", "ProofLog",
           "ProtocolItem", "ProtocolOverview", "ProtocolPage", "Quality", "QualityPoint",
           "RunDetail", "RunItem", "RunPage", "RunProtocol", "RunStep", "Stats", "StepCounts",
           "Verification"]
