"""What the REST API answers, for ``/openapi.json``: the response body of every operation,
every error status with its body, and the bearer-token scheme.

The models document; they do not filter (routes return the service's JSON as it is, and
``extra="allow"`` keeps fields a model does not list). The schema fuzzing suite checks
every response against them, on both backends.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, ConfigDict, Field


class Documented(BaseModel):
    model_config = ConfigDict(extra="allow")


class ErrorBody(Documented):
    error_code: str = Field(description="A stable code, e.g. INVALID_INPUT, NOT_FOUND.")
    message: str = Field(description="One line saying what was wrong and what to do.")
    field: str | None = Field(None, description="The request field at fault.")
    expected: str | None = Field(None, description="What the field should have been.")
    line: int | None = Field(None, description="The document line at fault.")
    details: dict[str, Any] | None = None


_ERRORS = {
    400: "The request cannot be served as it stands (e.g. NO_ACTIVE_RUN).",
    401: "A bearer token is required (UNAUTHORIZED).",
    404: "No such step, run, entry or session in this space (NOT_FOUND).",
    409: "A conflict: a title that exists (DUPLICATE_CHAIN), a near-copy, or a record "
         "that kept changing (CONFLICT).",
    413: "The body or a document is over its size limit.",
    421: "A Host header that is not this server's (MISDIRECTED_REQUEST).",
    422: "A field is invalid: `field` names it and `expected` says what it should be.",
    503: "The server cannot serve it now, retry after `Retry-After` seconds: too many "
         "requests in flight and waiting (OVERLOADED), or a storage fault — full "
         "(STORAGE_FULL), read-only (STORAGE_READ_ONLY) or unreachable "
         "(DATABASE_UNAVAILABLE); nothing was written.",
}
ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": text} for status, text in _ERRORS.items()}
"""Every error a REST operation can answer, all in the shape of ``ErrorBody``."""


def ok(model: Any, status: int = 200) -> dict[str, Any]:
    """Route arguments documenting ``model`` as the success body without validating it."""
    return {"response_model": None, "status_code": status,
            "responses": {status: {"model": model, "description": "Success."}}}


# --- protocols -----------------------------------------------------------------------------

class StepRef(Documented):
    uri: str
    label: str


class Minted(Documented):
    uri: str = Field(description="The protocol's first step.")
    chain_label: str
    label: str
    tags: list[str]
    step_count: int
    steps: list[StepRef]
    updated: bool
    duplicates: list[dict[str, Any]]
    warnings: list[str]


class MintResult(Documented):
    status: str
    items: list[Minted]
    total: int


class Choice(Documented):
    uri: str
    label: str
    chain_label: str | None
    score: float | None = Field(description="0–1 for a match; null for refine and create.")
    role: Literal["match", "refine", "create"]
    tags: list[str]
    next_action: str


class SearchResult(Documented):
    must_obey: bool
    message: str
    next_action: str
    choices: list[Choice]


class Challenge(Documented):
    type: str
    description: str


class StepDump(Documented):
    uri: str
    label: str
    chain_label: str
    protocol_uri: str
    position: int
    step_count: int
    content: str
    mimeType: str
    challenge: Challenge
    markdown_doc: str


class ProtocolDump(Documented):
    uri: str
    chain_label: str
    tags: list[str]
    step_count: int
    steps: list[StepRef]
    triggers: list[str] = Field(description="Author triggers (the front matter's).")
    learned_triggers: list[str] = Field(description="Learned triggers, most recent first.")
    markdown_doc: str


class LearnedTrigger(Documented):
    id: str
    text: str = Field(description="The query that led to proven successful runs.")
    runs: int = Field(description="Proven successful runs it led to.")
    created_at: str
    last_seen: str


class TriggerList(Documented):
    uri: str
    chain_label: str
    triggers: list[str] = Field(description="Author triggers (the front matter's).")
    learned: list[LearnedTrigger]
    learned_limit: int = Field(description="Learned triggers kept at most; the least "
                                           "recently used go first.")
    removed: int | None = Field(None, description="Learned triggers just removed.")


class ItemResult(Documented):
    uri: str
    status: Literal["updated", "deleted", "error"]


class UpdateResult(Documented):
    results: list[ItemResult] = Field(description="One per uri, in order; a failed uri has "
                                                  "status error with its error_code.")
    total_updated: int
    total_failed: int


class DeleteResult(Documented):
    results: list[ItemResult] = Field(description="One per uri, in order; a failed uri has "
                                                  "status error with its error_code.")
    total_deleted: int
    total_failed: int


# --- runs ----------------------------------------------------------------------------------

class CurrentStep(Documented):
    uri: str
    content: str
    mimeType: str


class StepResult(Documented):
    """A step to do and its challenge (seeds 003, 004); a refused answer adds error_code
    and retry_count."""

    must_obey: bool
    current_step: CurrentStep
    challenge: Challenge
    next_action: str
    message: str | None = None
    error_code: str | None = None
    retry_count: int | None = None
    proof_hash: str | None = None


class AttestResult(Documented):
    uri: str
    run_id: str
    outcome: Literal["success", "failure"]
    proven: bool = Field(description="Every required challenge of the run was proven.")
    message: str
    quality_bonus: float
    llm_model_id: str | None
    proof_hash: str | None
    proofs: int
    rated_at: str
    next_action: str


class RunSummary(Documented):
    run_id: str
    chain_label: str | None
    status: str
    outcome: str | None
    proven: bool
    step: int
    retry_count: int
    caller: str
    created_at: str
    updated_at: str


class RunList(Documented):
    runs: list[RunSummary]
    count: int


class Proof(Documented):
    run_id: str
    step_uri: str
    step_index: int
    nonce: str
    previous_hash: str
    time: str
    proof_hash: str


class ProofLog(Documented):
    run_id: str
    proofs: list[Proof]


class Verification(Documented):
    run_id: str
    valid: bool
    proofs: int
    proven: bool
    head: str | None
    first_broken: dict[str, Any] | None = Field(description="The first link whose hash does "
                                                            "not recompute, if any.")


# --- entries -------------------------------------------------------------------------------

class Category(Documented):
    code: str
    name: str
    description: str


class CategoryList(Documented):
    categories: list[Category]
    count: int


class Entry(Documented):
    entity_id: str
    entity_type: str
    title: str


class EntryWritten(Documented):
    status: Literal["stored", "updated"]
    entity_id: str
    entity_type: Literal["experience", "manual"]
    entry: Entry
    duplicates: list[dict[str, Any]]
    warnings: list[str]


class EntryHit(Documented):
    entity_id: str
    entity_type: str
    title: str
    score: float
    rank: int


class Explained(Documented):
    """``explain: true``: the best candidates, each with its evidence (dense cosine, per
    kind of vector, text, lexical evidence, strength, outcome boost) and why it is or is
    not a result; and the query's relevance per kind of record."""

    query: str
    search_mode: str
    threshold: float
    relevance: dict[str, Any]
    candidates: list[dict[str, Any]]


class UnifiedResult(Documented):
    explain: Explained | None = None
    results: list[EntryHit]
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


class EntriesRead(Documented):
    entries: list[Entry]
    count: int
    missing: list[str]


class SessionInfo(Documented):
    session_id: str
    viewed_ids: list[str]
    cited_ids: list[str]
    last_queries: list[str]


class Health(Documented):
    status: str
    store: dict[str, Any]
    embedder: dict[str, Any]
    index: dict[str, Any]


# --- the document --------------------------------------------------------------------------

BEARER = {"type": "http", "scheme": "bearer",
          "description": "A token of KAIROS_TOKENS (token → space). A server without tokens "
                         "listens on loopback only and needs none."}


def install(app: FastAPI) -> None:
    """Add the bearer scheme to the generated document (every ``/api`` operation needs it
    when tokens are set)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version,
                                 description=app.description, routes=app.routes)
            schema.setdefault("components", {})["securitySchemes"] = {"bearer": BEARER}
            for path, operations in schema["paths"].items():
                if path.startswith("/api/"):
                    for operation in operations.values():
                        operation["security"] = [{"bearer": []}]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
