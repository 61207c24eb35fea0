"""Browsing endpoints for people and UIs: protocol listing, overview and quality, markdown
validation, run listing and one run, entry listing. Thin like ``routes``: parse, call the
service, return its JSON (shaped by the response models below in OpenAPI)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from ..domain import limits
from ..domain.requests import CATEGORY_CODES, URI_PATTERN, Validate
from ..domain.texts import URI_PREFIX
from .openapi import ERRORS
from .routes import C, RunId, StepId

Limit = Annotated[int, Query(ge=1, le=100, description="Page size, 1–100.")]
Offset = Annotated[int, Query(ge=0, le=limits.OFFSET_MAX, description="Items to skip.")]


class Stats(BaseModel):
    runs: int
    successes: int
    failures: int
    success_rate: float | None = Field(description="successes / (successes + failures)")
    proven_runs: int = Field(description="Finished runs whose chain proves every step.")
    unproven_runs: int = Field(description="Finished runs with steps left unproven.")
    last_outcome: str | None
    last_run_at: str | None


class ProtocolItem(BaseModel):
    uri: str
    chain_label: str
    tags: list[str]
    step_count: int
    created_at: str
    updated_at: str
    stats: Stats


class ProtocolPage(BaseModel):
    items: list[ProtocolItem]
    total: int
    limit: int
    offset: int
    has_more: bool


class OverviewStep(BaseModel):
    uri: str
    position: int
    label: str
    content: str
    challenge: dict[str, Any]


class ProtocolOverview(BaseModel):
    uri: str
    chain_label: str
    intro: str
    tags: list[str]
    builtin: bool
    step_count: int
    created_at: str
    updated_at: str
    steps: list[OverviewStep]
    stats: Stats


class QualityPoint(BaseModel):
    date: str
    runs: int
    successes: int
    failures: int
    success_rate: float | None
    cumulative_runs: int
    cumulative_success_rate: float | None


class Quality(BaseModel):
    uri: str
    chain_label: str
    bucket: Literal["day"]
    series: list[QualityPoint]


class ValidationProblem(BaseModel):
    error_code: str
    line: int | None
    message: str


class DraftCheck(BaseModel):
    chain_label: str
    line: int
    tags: list[str]
    step_count: int
    existing_uri: str | None = Field(description="A protocol with this title (mint refuses "
                                                 "without force_update).")
    steps: list[dict[str, Any]]
    duplicates: list[dict[str, Any]]
    warnings: list[str]


class Validation(BaseModel):
    valid: bool
    errors: list[ValidationProblem]
    protocols: list[DraftCheck]


class RunItem(BaseModel):
    run_id: str
    chain_label: str | None
    status: str
    outcome: str | None
    step: int
    step_count: int
    proofs: int
    proven: bool
    retry_count: int
    caller: str
    created_at: str
    updated_at: str


class RunPage(BaseModel):
    items: list[RunItem]
    total: int
    limit: int
    offset: int
    has_more: bool


class RunStep(BaseModel):
    uri: str
    position: int
    label: str
    proven: bool


class Link(BaseModel):
    index: int
    step_uri: str | None
    step_index: int | None
    state: Literal["valid", "broken", "unchecked"]
    reason: str | None
    expected_hash: str | None
    record: dict[str, Any]


class Broken(BaseModel):
    index: int
    step_uri: str | None
    reason: str


class Verification(BaseModel):
    valid: bool
    proofs: int
    first_broken: Broken | None


class RunProtocol(BaseModel):
    uri: str | None
    chain_label: str


class RunDetail(BaseModel):
    run_id: str
    status: str
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
    verification: Verification
    links: list[Link]


class EntryItem(BaseModel):
    entity_id: str
    entity_type: str
    category: str
    title: str
    section: str | None
    author: str | None
    updated_at: str
    preview: str


class EntryPage(BaseModel):
    items: list[EntryItem]
    total: int
    limit: int
    offset: int
    has_more: bool


router = APIRouter(prefix="/api/v1", tags=["browse"], responses=ERRORS)


@router.get("/protocols", response_model=ProtocolPage, summary="List protocols, a page at "
            "a time, with their statistics")
def list_protocols(c: C, limit: Limit = 20, offset: Offset = 0,
                   q: Annotated[str | None, Query(max_length=200,
                                                  description="Words in the title.")] = None,
                   sort: Literal["updated", "title", "runs"] = "updated") -> Any:
    return c.kairos.browse_protocols(c.caller, limit=limit, offset=offset, q=q, sort=sort)


@router.post("/protocols/validate", response_model=Validation,
             summary="Parse markdown as a mint would, without storing it")
def validate(body: Validate, c: C) -> Any:
    return c.kairos.validate_markdown(body.markdown_doc, c.caller)


@router.get("/protocols/{step_id:uuid_text}/overview", response_model=ProtocolOverview,
            summary="A protocol's steps with their challenges, and its statistics")
def overview(step_id: StepId, c: C) -> Any:
    return c.kairos.protocol_overview(URI_PREFIX + step_id, c.caller)


@router.get("/protocols/{step_id:uuid_text}/quality", response_model=Quality,
            summary="Runs and success rate of a protocol per day")
def quality(step_id: StepId, c: C) -> Any:
    return c.kairos.protocol_quality(URI_PREFIX + step_id, c.caller)


@router.get("/runs/list", response_model=RunPage,
            summary="List runs, a page at a time, with whether each is proven")
def list_runs(c: C, limit: Limit = 20, offset: Offset = 0,
              status: Literal["active", "completed", "finished", "imported"] | None = None,
              protocol: Annotated[str | None, Query(
                  description="Only runs of this protocol (any step URI).",
                  json_schema_extra={"pattern": URI_PATTERN})] = None) -> Any:
    return c.kairos.browse_runs(c.caller, limit=limit, offset=offset, protocol=protocol,
                              status=status)


@router.get("/runs/{run_id:uuid_text}", response_model=RunDetail,
            summary="One run: status, steps, and its proof chain checked link by link")
def one_run(run_id: RunId, c: C) -> Any:
    return c.kairos.run_detail(run_id, c.caller)


@router.get("/entries", response_model=EntryPage,
            summary="List experiences or manuals, optionally of one category")
def list_entries(c: C, type: Literal["experience", "manual"] = "experience",
                 category: Annotated[str | None, Query(
                     max_length=64, json_schema_extra={"enum": CATEGORY_CODES})] = None,
                 limit: Limit = 20, offset: Offset = 0) -> Any:
    return c.kairos.browse_entries(c.caller, kind=type, category=category, limit=limit,
                                 offset=offset)


__all__ = ["router"]
