"""How the command line writes: data on stdout, messages for people and errors on stderr.

On a terminal, tables are fitted to the window (``table``). Anywhere else (a pipe, a
file, a test runner) every line is written as is, never wrapped: a table becomes
tab-separated rows without a header, and text such as a dumped protocol is written byte
for byte.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from ..domain.jsontext import pretty
from .table import Col, cell, layout


class CliError(Exception):
    """A failure to report as one line, ``error: <message>``; exit code 2 for usage and
    configuration errors, 1 for everything else."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def is_terminal() -> bool:
    return sys.stdout.isatty()


@contextlib.contextmanager
def progress(label: str, total: int | None = None, *, show: bool = True
             ) -> Iterator[Callable[..., None]]:
    """A transient progress bar on stderr when it is a terminal (and ``show``), else none;
    yields ``update(advance=, completed=, total=)``. Data on stdout is never touched."""
    if not (show and sys.stderr.isatty()):
        yield lambda **_: None
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=total)
        yield lambda **change: bar.update(task, **change)


def write(text: str) -> None:
    """Text exactly as given."""
    sys.stdout.write(text)
    sys.stdout.flush()


def line(text: str = "") -> None:
    write(text + "\n")


def note(text: str) -> None:
    """A message for the person at the terminal (stderr: never mixed into data)."""
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def error(message: str) -> None:
    note("error: " + " ".join(message.split()))


def as_json(data: Any) -> None:
    write(pretty(data) + "\n")


def row(*cells: Any) -> None:
    """One record on one line: tab-separated in a pipe, two spaces apart on a terminal."""
    line(("  " if is_terminal() else "\t").join(cell(c) for c in cells))


def table(cols: Sequence[Col], rows: Sequence[Sequence[Any]]) -> None:
    """A table: at a terminal fitted to its width (``COLUMNS`` when set) with a bold
    header (``table.layout``); elsewhere every cell in full, tab-separated, no header."""
    if not is_terminal():
        for cells in rows:
            write("\t".join(cell(v) for v in cells) + "\n")
        return
    lines = layout(cols, rows, shutil.get_terminal_size((80, 24)).columns)
    header = lines[0] if os.environ.get("NO_COLOR") else f"\x1b[1m{lines[0]}\x1b[0m"
    write("\n".join([header, *lines[1:]]) + "\n")


def paged(page: Mapping[str, Any], offset: int, what: str) -> None:
    """Say on stderr where a page is in its list (``what``: the records, plural): where
    the next page starts, or that there is nothing to show."""
    shown = len(page["items"])
    if page["has_more"]:
        note(f"{offset + 1}–{offset + shown} of {page['total']}; next page: "
             f"--offset {offset + shown}")
    elif not shown:
        note(f"No {what}." if not offset else f"No {what} after {offset}.")


def challenge(issued: Mapping[str, Any]) -> str:
    """A challenge in a few words: its type and what it asks for."""
    kind = issued["type"]
    params = issued.get(kind) or {}
    detail = {"shell": params.get("cmd"), "mcp": params.get("tool_name"),
              "user_input": params.get("prompt"),
              "comment": f"at least {params.get('min_length', 20)} characters"}.get(kind)
    return f"{kind}: {detail}" if detail else kind


__all__ = ["CliError", "as_json", "challenge", "error", "is_terminal", "line", "note",
           "paged", "row", "table", "write"]
