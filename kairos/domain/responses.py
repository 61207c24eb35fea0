"""What the tools and use cases answer (the reads' pages and views are in ``views``).

Each is a ``TypedDict``, so the service builds exactly the JSON body that MCP, REST and
the command line send — keys in the order built, ``None`` as null, an optional key absent
until set — with no second pass over it, and mypy checks every key it builds. FastAPI
reads the same types for ``/openapi.json``. The shapes are the contract's
(``docs/contract.md``); a ``dict[str, Any]`` marks a part that is open on purpose (a
challenge's parameters, an error body, a record's columns).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

from pydantic import Field
from typing_extensions import TypedDict, TypeIs

ErrorBody = dict[str, Any]
"""A ``KairosError.to_dict()``: error_code, message, and field, expected, line, details."""

ExportLine = dict[str, Any]
"""One line of an export: its header, or ``{"table": ..., "row": {column: value}}``."""


# --- kairos_search (contract §3) -----------------------------------------------------------

class Choice(TypedDict):
    uri: str
    label: str
    chain_label: str | None
    score: Annotated[float | None, Field(description="0–1 for a match; null for refine and "
                                                     "create.")]
    role: Literal["match", "refine", "create"]
    tags: list[str]
    next_action: str


class SearchResult(TypedDict):
    must_obey: bool
    message: str
    next_action: str
    choices: list[Choice]
    degraded: NotRequired[bool]
    search_mode: NotRequired[str]
    provider: NotRequired[str]
    provider_hint: NotRequired[str | None]


class Explained(TypedDict):
    """The best candidates of a query, each with its evidence (dense cosine, per kind of
    vector, text, lexical evidence, strength, outcome boost) and why it is or is not a
    result; and the query's relevance per kind of record."""

    query: str
    search_mode: str
    threshold: float
    relevance: dict[str, Any]
    candidates: list[dict[str, Any]]


# --- protocols (contract §2) ---------------------------------------------------------------

class StepRef(TypedDict):
    uri: str
    label: str


class ProtocolHead(TypedDict):
    """A protocol as a view names it: the URI of its step 1 and its title."""

    uri: str
    chain_label: str


class Duplicate(TypedDict):
    """A record similar to the one written (``score`` 0–1); a protocol's names its step 1
    (``uri``, ``chain_label``), an entry's its ``entity_id``, ``entity_type`` and
    ``title``."""

    score: float
    uri: NotRequired[str | None]
    chain_label: NotRequired[str]
    blocks_mint: NotRequired[bool]
    entity_id: NotRequired[str]
    entity_type: NotRequired[str]
    title: NotRequired[str]


class DuplicateCheck(TypedDict):
    """The advisory duplicate check of a write: ≥ 0.85 adds ``recommendation``
    ``review_first``; 0.50–0.84 are listed for information."""

    duplicates: list[Duplicate]
    warnings: list[str]
    recommendation: NotRequired[str]


class Minted(TypedDict):
    uri: Annotated[str, Field(description="The protocol's first step.")]
    chain_label: str
    label: str
    tags: list[str]
    step_count: int
    steps: list[StepRef]
    updated: bool
    duplicates: NotRequired[list[Duplicate]]
    warnings: NotRequired[list[str]]
    recommendation: NotRequired[str]


class MintResult(TypedDict):
    status: Literal["stored"]
    items: list[Minted]
    total: int


class StepDump(StepRef):
    chain_label: str
    protocol_uri: str
    position: int
    step_count: int
    content: str
    mimeType: str
    challenge: dict[str, Any]
    markdown_doc: str
    version: NotRequired[int]  # the protocol version shown


AuthorTriggers = Annotated[list[str], Field(description="Author triggers (the front matter's).")]


class ProtocolDump(ProtocolHead):
    tags: list[str]
    step_count: int
    steps: list[StepRef]
    triggers: AuthorTriggers
    learned_triggers: Annotated[list[str], Field(description="Learned triggers, most recent "
                                                             "first.")]
    markdown_doc: str
    version: NotRequired[int]  # the protocol version shown


class ItemResult(TypedDict):
    """One uri of a batch: ``status`` updated or deleted with what changed, or error with
    the error's fields."""

    uri: str
    status: Literal["updated", "deleted", "error"]
    label: NotRequired[str]
    challenge: NotRequired[dict[str, Any]]
    removed: NotRequired[list[str]]
    error_code: NotRequired[str]
    message: NotRequired[str]
    field: NotRequired[str]
    expected: NotRequired[str]
    line: NotRequired[int]
    details: NotRequired[dict[str, Any]]


BatchResults = Annotated[list[ItemResult], Field(description="One per uri, in order; a "
                                                           "failed uri has status error.")]


class UpdateResult(TypedDict):
    results: BatchResults
    total_updated: int
    total_failed: int


class DeleteResult(TypedDict):
    results: BatchResults
    total_deleted: int
    total_failed: int


class Problem(TypedDict):
    error_code: str
    line: int | None
    message: str


class DraftCheck(TypedDict):
    chain_label: str
    line: int
    tags: list[str]
    step_count: int
    existing_uri: Annotated[str | None, Field(description="A protocol with this title (a "
                                                          "mint refuses it without "
                                                          "force_update).")]
    steps: list[dict[str, Any]]
    duplicates: list[Duplicate]
    warnings: list[str]


class Validation(TypedDict):
    valid: bool
    errors: list[Problem]
    protocols: list[DraftCheck]


class LearnedTrigger(TypedDict):
    id: str
    text: Annotated[str, Field(description="The query that led to proven successful runs.")]
    runs: Annotated[int, Field(description="Proven successful runs it led to.")]
    created_at: str
    last_seen: str


class TriggerList(ProtocolHead):
    triggers: AuthorTriggers
    learned: list[LearnedTrigger]
    learned_limit: Annotated[int, Field(description="Learned triggers kept at most; the "
                                                    "least recently used go first.")]
    removed: NotRequired[Annotated[int, Field(description="Learned triggers just removed.")]]


# --- runs (contract §4) --------------------------------------------------------------------

class CurrentStep(TypedDict):
    uri: str
    content: str
    mimeType: str


class StepResult(TypedDict):
    """A step to do and its challenge; a refused answer adds ``error_code`` and
    ``retry_count``."""

    must_obey: bool
    current_step: CurrentStep
    challenge: dict[str, Any]
    message: NotRequired[str]
    next_action: str
    error_code: NotRequired[str]
    retry_count: NotRequired[int]
    proof_hash: NotRequired[str]


Outcome = Literal["success", "failure"]


class AttestResult(TypedDict):
    uri: str
    run_id: str
    outcome: Outcome
    proven: Annotated[bool, Field(description="Every step's challenge was proven.")]
    message: str
    quality_bonus: float
    llm_model_id: str | None
    proof_hash: str | None
    proofs: int
    rated_at: str
    next_action: str
    status: NotRequired[Literal["finished"]]
    aborted: NotRequired[bool]


def is_attested(result: AttestResult | StepResult) -> TypeIs[AttestResult]:
    """Whether ``kairos_attest`` recorded the outcome (else it refused the last step's
    answer and shows the step again)."""
    return "run_id" in result


# --- knowledge entries and the unified search (contract §5) --------------------------------

class Category(TypedDict):
    code: str
    name: str
    description: str


class CategoryList(TypedDict):
    categories: list[Category]
    count: int


EntryKind = Literal["experience", "manual"]
Entry = dict[str, Any]
"""An experience's or a manual's fields (``entity_id``, ``entity_type``, ``title`` always;
the others as asked)."""


class EntryWritten(TypedDict):
    status: Literal["stored", "updated"]
    entity_id: str
    entity_type: EntryKind
    entry: Entry
    duplicates: list[Duplicate]
    warnings: list[str]
    recommendation: NotRequired[str]


class UnifiedResult(TypedDict):
    results: Annotated[list[dict[str, Any]], Field(description=(
        "entity_id, entity_type, title, section, score, rank, reason, provider, degraded, "
        "hint, provider_hint, heading, snippet, author, updated_at; the fields asked for."))]
    count: int
    total: int
    has_more: bool
    top_score: float | None
    min_score: float
    warnings: list[str]
    session_applied: bool
    provider: str
    search_mode: str
    degraded: bool
    provider_hint: str | None
    explain: NotRequired[Explained]


class EntriesRead(TypedDict):
    entries: list[Entry]
    count: int
    missing: list[str]


class SessionInfo(TypedDict):
    session_id: str
    viewed_ids: list[str]
    cited_ids: list[str]
    last_queries: list[str]


# --- operations ----------------------------------------------------------------------------

class Health(TypedDict):
    status: Literal["healthy", "unhealthy"]
    store: dict[str, Any]
    embedder: dict[str, Any]
    index: dict[str, Any]


class Reindexed(TypedDict):
    embedded: int
    model_id: str | None
    seconds: NotRequired[float]
    state: NotRequired[str]


class Imported(TypedDict):
    status: Literal["imported"]
    space: str
    from_space: str | None
    inserted: dict[str, int]
    skipped: dict[str, int]
    new_ids: dict[str, int]
    ignored: dict[str, int]
    indexed: int
    runs: str


__all__ = ["AttestResult", "Category", "CategoryList", "Choice", "CurrentStep", "DeleteResult",
           "DraftCheck", "Duplicate", "DuplicateCheck", "EntriesRead", "Entry", "EntryKind",
           "EntryWritten", "ErrorBody", "Explained", "ExportLine", "Health", "Imported",
           "ItemResult", "LearnedTrigger", "MintResult", "Minted", "Outcome", "Problem",
           "ProtocolDump", "ProtocolHead", "Reindexed", "SearchResult", "SessionInfo",
           "StepDump", "StepRef", "StepResult", "TriggerList", "UnifiedResult", "UpdateResult",
           "Validation", "is_attested"]
