"""``GET /api/v1/datasets/{format}``: the caller's finished runs as training data
(``docs/datasets.md``), streamed as JSON Lines while the runs are read in batches."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from fastapi.responses import StreamingResponse

from ..domain.dataset_filters import OUTCOMES, Filters
from ..domain.datasets import FORMATS, to_jsonl
from ..domain.requests import URI_PATTERN
from .openapi import ERRORS
from .routes import C

NDJSON = "application/x-ndjson"
datasets = APIRouter(prefix="/api/v1", tags=["datasets"], responses=ERRORS)


LINE = {"type": "object", "description": "One record: docs/datasets.md describes each "
                                         "format field by field."}


@datasets.get("/datasets/{format}", response_class=StreamingResponse, responses={
    200: {"description": "One JSON record per line.",
          "content": {NDJSON: {"schema": LINE}}}})
def dataset(
    c: C,
    fmt: Annotated[str, Path(alias="format", description="The dataset format.",
                             json_schema_extra={"enum": list(FORMATS)})],
    protocol: Annotated[str | None, Query(
        description="Only the runs of this protocol (the URI of any of its steps).",
        json_schema_extra={"pattern": URI_PATTERN})] = None,
    outcome: Annotated[str | None, Query(
        description="success or failure.", json_schema_extra={"enum": list(OUTCOMES)})
    ] = None,
    include_unproven: Annotated[bool, Query(
        description="Also successes that are not proven (flagged proven: false).")] = False,
    since: Annotated[str | None, Query(
        description="Runs begun at or after this date (YYYY-MM-DD) or time.")] = None,
    until: Annotated[str | None, Query(
        description="Runs begun up to this date (its whole day) or time.")] = None,
) -> StreamingResponse:
    """The caller's runs as ``trace-jsonl``, ``sft-jsonl`` or ``preference-jsonl``: proven
    successes and failures (unproven successes only when asked), oldest first. A bad filter
    is a 422 naming it, before any line is sent."""
    filters = Filters.parse(protocol=protocol, outcome=outcome,
                            proven_only=not include_unproven, since=since, until=until)
    records = c.kairos.export_dataset(fmt, filters, c.caller)
    first = next(records, None)  # the first batch's errors are a JSON error, not a cut stream
    lines: Iterator[Any] = (to_jsonl(r) + "\n"
                            for r in chain([] if first is None else [first], records))
    return StreamingResponse(lines, media_type=NDJSON)


__all__ = ["NDJSON", "datasets"]
