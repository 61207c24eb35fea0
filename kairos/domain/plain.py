"""Texts for people to read: a step's body without the challenge it declares (shown apart,
as a card), and markdown as plain text for a preview. Pure functions, no I/O."""

from __future__ import annotations

import re

from .doctext import _POW_LINE, drop_json_blocks

#: Markdown beyond this is not read for a preview (the emphasis pattern is quadratic in a
#: line's length at worst, and a preview shows a few hundred characters).
PLAIN_LIMIT = 4000
_BLANKS = re.compile(r"\n{3,}")

# What ``plain_text`` takes out, in order: each pattern and what is left of a match.
_MARKS = (
    (re.compile(r"^\s*(```|~~~)[^\n]*$", re.MULTILINE), " "),  # fences
    (re.compile(r"^\s*\|?(?:\s*:?-{3,}:?\s*\|)+\s*:?-*:?\s*$", re.MULTILINE), " "),  # table rules
    (re.compile(r"^\s{0,3}(?:[-*_]\s*){3,}$", re.MULTILINE), " "),  # horizontal rules
    (re.compile(r"^\s{0,3}#{1,6}\s+", re.MULTILINE), ""),  # headings
    (re.compile(r"^\s{0,3}>\s?", re.MULTILINE), ""),  # quotes
    (re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+", re.MULTILINE), ""),  # list items
    (re.compile(r"!\[([^\[\]\n]*)\]\([^()\n]*\)"), r"\1"),  # images
    (re.compile(r"\[([^\[\]\n]*)\]\([^()\n]*\)"), r"\1"),  # links
)
_EMPHASIS = re.compile(r"(\*\*|__|\*|_|~~|`)(?=\S)(.+?)(?<=\S)\1")
_TABLE_BAR = re.compile(r"\s*\|\s*")
_SPACE = re.compile(r"\s+")


def step_body(content: str) -> str:
    """A step's markdown without its challenge (the ``PROOF OF WORK:`` line or the
    ```json challenge block), which a page shows on its own."""
    body = _POW_LINE.sub("", drop_json_blocks(content, objects_only=True))
    return _BLANKS.sub("\n\n", body).strip()


def plain_text(markdown: str, limit: int = PLAIN_LIMIT) -> str:
    """The start of ``markdown`` (``limit`` characters) as one line of plain text:
    headings, emphasis, links, lists, quotes, tables and fences lose their marks and keep
    their words."""
    text = markdown[:limit]
    for pattern, kept in _MARKS:
        text = pattern.sub(kept, text)
    for _ in range(3):  # nested emphasis (**bold _and italic_**) loses one level a pass
        text = _EMPHASIS.sub(r"\2", text)
    text = _TABLE_BAR.sub(" ", text)
    return _SPACE.sub(" ", text).strip()


__all__ = ["plain_text", "step_body"]
