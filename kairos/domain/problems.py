"""Every problem of a markdown document, not only the first: what an editor shows as you type.

``markdown.parse`` stops at the first problem (a mint stores nothing then). To find the
next one, the part of the document at fault is set aside and the document parsed again: a
heading without text gets a placeholder, a step whose challenge is malformed loses its
body, a line that is not text is emptied. Each problem keeps the line it was found on (the
lines never move). Pure, no I/O.
"""

from __future__ import annotations

from . import limits
from .errors import DOCUMENT_TOO_LARGE, MarkdownError
from .markdown import ProtocolDraft, parse
from .outline import heading, outline

MAX_PROBLEMS = 50
PLACEHOLDER = {1: "# Untitled", 2: "## Step"}
SET_ASIDE = "Set aside while the rest of the document is checked."


def _with_body(lines: list[str], start: int, end: int) -> list[str] | None:
    """The section that starts at heading ``start`` with its body (up to ``end``) replaced
    by one line of text, the other lines left blank so no line moves."""
    size = end - start - 1
    if size < 1:
        return None
    body = [SET_ASIDE, *[""] * (size - 1)]
    return None if lines[start + 1:end] == body else [*lines[:start + 1], *body, *lines[end:]]


def _heading_lines(lines: list[str]) -> list[int]:
    """The lines that structure the document: its rendered ``#``/``##`` headings; when the
    document cannot be outlined (the problem is in its structure), every heading-like
    line."""
    try:
        return [at for at, _, _ in outline(lines).headings]
    except MarkdownError:
        return [i for i, line in enumerate(lines) if heading(line)]


def _set_aside(lines: list[str], at: int, exc: MarkdownError) -> list[str] | None:
    """The document with the part that made ``exc`` (on line index ``at``) set aside, or
    None when nothing sensible can be (a document without any heading, too many steps)."""
    if exc.code == DOCUMENT_TOO_LARGE or not 0 <= at < len(lines):
        return None
    heads = _heading_lines(lines)
    after = next((i for i in heads if i > at), len(lines))
    if at in heads:  # the heading itself (no text, too long, before any title) or its
        level = 1 if at == heads[0] else (heading(lines[at]) or (2, ""))[0]
        fixed = [*lines[:at], PLACEHOLDER[level], *lines[at + 1:]]  # section (no steps)
        if not "".join(fixed[at + 1:after]).strip():
            return _with_body(fixed, at, after)
        return None if fixed == lines else fixed
    before = [i for i in heads if i < at]
    if not before:  # above every heading: a line that is not text
        return None if lines[at] == "" else [*lines[:at], "", *lines[at + 1:]]
    return _with_body(lines, before[-1], after)


def parse_all(doc: str, lim: limits.Limits = limits.DEFAULT
              ) -> tuple[list[ProtocolDraft], list[MarkdownError]]:
    """(the protocols, when the document has no problem; every problem, in the order
    found, at most ``MAX_PROBLEMS``), under the limits ``lim``."""
    problems: list[MarkdownError] = []
    lines = doc.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    while len(problems) < MAX_PROBLEMS:
        try:
            drafts = parse("\n".join(lines), lim)
        except MarkdownError as exc:
            if any((p.code, p.line) == (exc.code, exc.line) for p in problems):
                break  # setting aside did not help: the rest cannot be checked
            problems.append(exc)
            patched = _set_aside(lines, (exc.line or 0) - 1, exc) if exc.line else None
            if patched is None:
                break
            lines = patched
            continue
        return (drafts if not problems else []), problems
    return [], problems


__all__ = ["MAX_PROBLEMS", "parse_all"]
