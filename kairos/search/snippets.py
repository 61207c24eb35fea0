"""Snippets: up to two sentences of a body, the ones that best match the query, cut to a
length budget (contract §5)."""

from __future__ import annotations

import re

from ..domain.limits import SNIPPET_DEFAULT, SNIPPET_MAX, SNIPPET_MIN

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n\s*\n|\n(?=\s*(?:[-*+]|\d+\.)\s)")
_WORD = re.compile(r"[\w']+", re.UNICODE)
_FENCE = re.compile(r"^\s*(?:```|~~~)[^\n]*$", re.MULTILINE)
_MD = re.compile(r"^\s*(?:#{1,6}\s+|[-*+]\s+|\d+\.\s+|>\s*)")


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if len(w) > 1}


def sentences(text: str) -> list[str]:
    text = _FENCE.sub("", text)
    parts = (_MD.sub("", p).strip() for p in _SENTENCE.split(text))
    return [" ".join(p.split()) for p in parts if p and p.strip("`~ ")]


def make_snippet(body: str, query: str, length: int = SNIPPET_DEFAULT) -> str:
    """The (at most two) sentences sharing the most words with the query, in their original
    order; the first sentences when nothing matches; never longer than ``length``."""
    length = max(SNIPPET_MIN, min(SNIPPET_MAX, length))
    parts = sentences(body)
    if not parts:
        return ""
    terms = _words(query)
    scored = sorted(range(len(parts)),
                    key=lambda i: (-len(_words(parts[i]) & terms), i))
    best = scored[0]
    chosen = [best]
    if len(scored) > 1 and len(_words(parts[scored[1]]) & terms) > 0:
        chosen.append(scored[1])
    elif best + 1 < len(parts):
        chosen.append(best + 1)
    text = " ".join(parts[i] for i in sorted(chosen))
    return truncate(text, length)


def truncate(text: str, length: int) -> str:
    if len(text) <= length:
        return text
    cut = text[: length - 1]
    space = cut.rfind(" ")
    if space > length // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"
