"""The entry commands: ``entries`` lists experiences or manuals, a page at a time, from
the same read model as ``GET /api/v1/entries`` and the web UI."""

from __future__ import annotations

from typing import Annotated

import typer

from ..domain.limits import PAGE_MAX
from ..domain.requests import ListEntries
from . import output as out
from .base import JsonFlag, command, opened, request
from .table import Col, day, short_id, when

#: What entries prints per entry: its id (short at a terminal), category, section, last
#: change, title.
ENTRIES = (Col("id", short_id), Col("category"), Col("section"), Col("updated", when, day),
           Col("title", flex=True))


@command()
def entries(
    type_: Annotated[str, typer.Option(
        "--type", metavar="TYPE", help="experience or manual.")] = "experience",
    category: Annotated[str | None, typer.Option(
        metavar="CODE", help="Only entries of this category.")] = None,
    limit: Annotated[int, typer.Option(metavar="N", min=1, max=PAGE_MAX,
                                       help="Entries per page.")] = 50,
    offset: Annotated[int, typer.Option(metavar="N", min=0,
                                        help="Skip this many entries.")] = 0,
    as_json: JsonFlag = False,
) -> None:
    """List experiences (or manuals, --type manual), most recently changed first.

    Prints one line per entry: id, category, section (experiences), last change, title;
    stderr says when more pages follow."""
    with opened() as local:
        page = local.service.list_entries(request(
            ListEntries, type=type_, category=category, limit=limit, offset=offset),
            local.caller)
    if as_json:
        out.as_json(page)
        return
    out.table(ENTRIES, [[e["entity_id"], e["category"], e["section"] or "-", e["updated_at"],
                         e["title"]] for e in page["items"]])
    out.paged(page, offset, f"{type_}s")
