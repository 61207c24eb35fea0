"""Tables for people at a terminal, and for scripts in a pipe.

At a terminal a table is fitted to the window, never wrapped: when it is too wide, the
columns with a ``short`` form (a date without its time) switch to it, the column marked
``flex`` (a title) takes the room the others leave, and what still does not fit is cut
with "…".
Ids are shown short (``short_id``: the first 8 characters of the uuid, which every
command taking a URI or a run id accepts back). In a pipe every cell is written in full,
tab-separated, without a header, so ``awk '{print $1}'`` reads a full URI
(``output.table`` writes a table either way).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len, set_cell_size

from ..domain.texts import URI_PREFIX

GAP = "  "
ELLIPSIS = "…"
SHORT_ID = 8


def short_id(value: Any) -> str:
    """A URI or a uuid as people read it: the first 8 characters of the uuid."""
    text = str(value or "")
    return text.removeprefix(URI_PREFIX)[:SHORT_ID]


def when(stamp: Any) -> str:
    """An ISO timestamp to the minute."""
    return str(stamp or "")[:16].replace("T", " ")


def day(stamp: Any) -> str:
    """An ISO timestamp's date (the short form of ``when``)."""
    return str(stamp or "")[:10]


@dataclass(frozen=True)
class Col:
    """A column: its header, how a cell shows at a terminal (``show``; ``short`` when room
    runs out), right-aligned numbers, and whether it takes the room that is left."""

    header: str
    show: Callable[[Any], str] = str
    short: Callable[[Any], str] | None = None
    right: bool = False
    flex: bool = False


def cell(value: Any) -> str:
    """One line of text: newlines and tabs become spaces (a row never spans lines)."""
    text = "" if value is None else str(value)
    return " ".join(text.split()) if ("\t" in text or "\n" in text) else text


def _fit(text: str, width: int) -> str:
    if cell_len(text) <= width:
        return text
    return set_cell_size(text, max(width - 1, 0)) + ELLIPSIS if width > 0 else ""


def layout(cols: Sequence[Col], rows: Sequence[Sequence[Any]], total: int) -> list[str]:
    """The table's lines (header first), none wider than ``total`` cells."""
    forms = [[cell(c.show(v)) for c, v in zip(cols, row, strict=True)] for row in rows]

    def widths() -> list[int]:
        return [max([cell_len(c.header), *(cell_len(f[i]) for f in forms)])
                for i, c in enumerate(cols)]

    def room(ws: list[int]) -> int:
        return total - cell_len(GAP) * (len(cols) - 1) - sum(
            w for w, c in zip(ws, cols, strict=True) if not c.flex)

    ws = widths()
    flexed = [i for i, c in enumerate(cols) if c.flex]
    if sum(ws) + cell_len(GAP) * (len(cols) - 1) > total:
        for i, c in enumerate(cols):  # the title before the minutes of a date
            if c.short is not None:
                for f, row in zip(forms, rows, strict=True):
                    f[i] = cell(c.short(row[i]))
        ws = widths()
        left, need = room(ws), max(sum(ws[j] for j in flexed), 1)
        for i in flexed:  # the room that is left, shared in proportion to the need
            ws[i] = max(cell_len(cols[i].header), min(ws[i], left * ws[i] // need))
    lines = []
    for texts in [[c.header for c in cols], *forms]:
        parts = []
        for i, (c, text) in enumerate(zip(cols, texts, strict=True)):
            text = _fit(text, ws[i])
            pad = " " * (ws[i] - cell_len(text))
            last = i == len(cols) - 1
            parts.append(pad + text if c.right else (text if last else text + pad))
        lines.append(_fit(GAP.join(parts).rstrip(), total))
    return lines


__all__ = ["Col", "cell", "day", "layout", "short_id", "when"]
