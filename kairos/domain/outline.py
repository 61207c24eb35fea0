"""What a markdown document shows, read the way a CommonMark renderer reads it.

``outline`` parses a document with markdown-it-py (CommonMark, raw HTML on) and returns the
parts ``markdown.parse`` builds protocols from: the ``#``/``##`` headings that structure it,
its fenced code blocks, and its visible ``PROOF OF WORK:`` lines. Whatever a renderer does
not show as markdown — an HTML comment or block, an image's alt text, a link reference
definition — declares nothing: no heading there starts a step, and a ``PROOF OF WORK:``
there is refused rather than silently kept in the step's text, since the agent reads that
text while the reviewer never sees it. A fence or an HTML comment that is never closed
(it would swallow the rest of the document) is refused too.

A ``PROOF OF WORK:`` line counts when its rendered text starts with exactly those words
(upper case); what follows is the challenge, as a reader sees it: code spans give their
text, emphasis may wrap the whole of it. A challenge whose rendered text would differ from
its source inside (raw HTML, links or images, backslash escapes or entities, emphasis) is
refused with the advice to put it in a code span, and so is a line that only looks like
``PROOF OF WORK:`` (``domain.lookalike``).

Linear in the size of the document: markdown-it-py's block pass over every line, its inline
pass only over the paragraphs that hold ``PROOF`` (or a look-alike of it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from .errors import INVALID_INPUT, MarkdownError
from .lookalike import describe, skeleton

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

__all__ = ["Fence", "Outline", "Proof", "heading", "outline"]

# Linear patterns: no two adjacent parts can match the same run of characters.
_HEADING = re.compile(r"^ {0,3}(?P<level>#{1,2})(?!#)[ \t]+(?P<text>.*)$")
_POW = re.compile(r"PROOF[ \t]+OF[ \t]+WORK[ \t]*:")
_JSON_FENCE = re.compile(r"^[ \t]*(?:`{3,}|~{3,})[ \t]*json", re.IGNORECASE | re.MULTILINE)
_VISIBLE = frozenset({"text", "code_inline", "text_special"})
_WRAPPERS = frozenset({"em_open", "em_close", "strong_open", "strong_close"})
_WHAT = {"html_inline": "raw HTML", "text_special": "a backslash escape or an HTML entity",
         "link_open": "a link", "link_close": "a link", "image": "an image",
         "em_open": "emphasis", "em_close": "emphasis", "strong_open": "emphasis",
         "strong_close": "emphasis"}


def heading(line: str) -> tuple[int, str] | None:
    """(level, text) of an ``#`` or ``##`` ATX heading line, without its closing ``#``s."""
    m = _HEADING.match(line)
    if m is None:
        return None
    text = m.group("text").rstrip(" \t")
    bare = text.rstrip("#")
    if bare != text and bare and bare[-1] in " \t":
        text = bare
    return len(m.group("level")), text.strip()


@dataclass(frozen=True)
class Fence:
    """A closed fenced code block: its lines ``start`` (the opening fence) to ``end``
    (exclusive, after the closing fence), 0-based; its info string and its text."""

    start: int
    end: int
    info: str
    content: str


@dataclass(frozen=True)
class Proof:
    """A visible ``PROOF OF WORK:`` line: its 0-based line and what follows the colon."""

    line: int
    spec: str


@dataclass(frozen=True)
class Outline:
    headings: list[tuple[int, int, str]]  # (0-based line, level, text)
    fences: list[Fence]
    proofs: list[Proof]


def _located(rule: Any) -> Any:
    """An inline rule that records where each line break it makes stands in the source
    (``meta["pos"]``), so a rendered line can name its source line."""

    def located(state: Any, silent: bool) -> bool:
        start, count = state.pos, len(state.tokens)
        if not rule(state, silent):
            return False
        for token in state.tokens[count:]:
            if token.type in ("softbreak", "hardbreak"):
                token.meta["pos"] = start
        return True

    return located


@cache
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt
    from markdown_it.rules_inline import escape, newline

    md = MarkdownIt("commonmark")
    md.disable(["inline"])  # run per paragraph, where a challenge may be
    md.inline.ruler.at("newline", _located(newline))
    md.inline.ruler.at("escape", _located(escape))
    # Rule lists are compiled on first use, and not under a lock: compile them here, before
    # the parser is shared between threads.
    md.parse("- a *b*\n")
    md.inline.parse("a *b* `c`\n<d>", md, {}, [])
    return md


def _refuse(message: str, line: int, expected: str, field: str = "challenge"
            ) -> MarkdownError:
    return MarkdownError(INVALID_INPUT, message, line, expected, field=field)


def _hidden(line: int, where: str) -> MarkdownError:
    return _refuse(f"Line {line}: a PROOF OF WORK inside {where} is not shown to a reader "
                   "but would be read by the agent; move it out into the step's text, or "
                   "delete it.", line, "PROOF OF WORK lines in visible markdown")


def _unclosed_html(token: Token) -> bool:
    from markdown_it.rules_block.html_block import HTML_SEQUENCES

    first = token.content.lstrip(" ").split("\n", 1)[0]
    for opening, closing, _ in HTML_SEQUENCES:
        if opening.search(first):
            return not closing.search("") and not closing.search(token.content)
    return False


def _fence(token: Token) -> Fence:
    """The fence, or MarkdownError when markdown-it found no closing fence for it (its
    text then runs one line further: to the end of the document or of its container)."""
    start, end = token.map or (0, 0)
    if token.content.count("\n") != end - start - 2:
        raise _refuse(f"Line {start + 1} opens a code fence ({token.markup}) that is never "
                      "closed: everything after it would show as code. Close it with "
                      f"{token.markup} on a line of its own.", start + 1,
                      f"a closing {token.markup} line", field="markdown_doc")
    return Fence(start, end, token.info.strip(), token.content)


def _lines(token: Token) -> Iterator[tuple[int, list[Token]]]:
    """The rendered lines of an inline token: (0-based source line, its tokens)."""
    at = (token.map or (0, 0))[0]
    content, seen, newlines = token.content, 0, 0
    current: list[Token] = []
    for child in token.children or ():
        if child.type in ("softbreak", "hardbreak"):
            yield at, current
            pos = child.meta.get("pos", seen)
            newlines += content.count("\n", seen, pos)
            seen = pos
            at = (token.map or (0, 0))[0] + newlines + 1
            current = []
        else:
            current.append(child)
    yield at, current


def _text(tokens: list[Token]) -> str:
    return "".join(t.content for t in tokens if t.type in _VISIBLE)


def _spec(tokens: list[Token], prefix: int, line: int) -> str:
    """What follows the ``PROOF OF WORK:`` prefix (``prefix`` visible characters) on a
    rendered line; refused when markup inside it shows other text than its source."""
    pieces: list[tuple[str, str]] = []
    seen = 0
    for token in tokens:
        text = token.content if token.type in _VISIBLE else ""
        end = seen + len(text)
        if end <= prefix and (text or seen < prefix):
            seen = end
            continue
        kind = token.type
        if kind == "text_special" and token.content == token.markup:
            kind = "text"  # a backslash before a letter: shown as written
        pieces.append((kind, text[max(prefix - seen, 0):]))
        seen = end

    def inert(piece: tuple[str, str]) -> bool:
        return piece[0] in _WRAPPERS or (piece[0] == "text" and not piece[1].strip())

    while pieces and inert(pieces[0]):
        pieces.pop(0)
    while pieces and inert(pieces[-1]):
        pieces.pop()
    odd = next((kind for kind, _ in pieces if kind not in ("text", "code_inline")), None)
    if odd is not None:
        raise _refuse(f"Line {line}: the PROOF OF WORK reads differently rendered than "
                      f"written: it holds {_WHAT.get(odd, odd.replace('_', ' '))}. Put what "
                      "follows 'PROOF OF WORK:' in a code span (`...`).", line,
                      "PROOF OF WORK: `<challenge>`")
    return "".join(text for _, text in pieces).strip()


def _proofs(token: Token, md: MarkdownIt, env: dict[str, Any]) -> Iterator[Proof]:
    token.children = []
    md.inline.parse(token.content, md, env, token.children)
    shown = 0
    for at, tokens in _lines(token):
        text = _text(tokens)
        shown += len(_POW.findall(text))
        stripped = text.lstrip(" \t")
        m = _POW.match(stripped)
        if m is None:
            head = stripped[:40]
            if not head.isascii() and _POW.match(skeleton(head)):
                raise _refuse(f"Line {at + 1} looks like 'PROOF OF WORK:' but is written "
                              f"with look-alike characters ({describe(head)}); write it in "
                              "plain capital letters.", at + 1, "PROOF OF WORK:")
            continue
        if any(t.type == "html_inline" for t in tokens):
            raise _refuse(f"Line {at + 1}: the PROOF OF WORK holds raw HTML, which a reader "
                          "does not see as written. Put the challenge in a code span (`...`).",
                          at + 1, "PROOF OF WORK: `<challenge>`")
        yield Proof(at, _spec(tokens, len(text) - len(stripped) + m.end(), at + 1))
    if len(_POW.findall(token.content)) > shown:
        raise _hidden((token.map or (0, 0))[0] + 1,
                      "HTML, an image or a link target in this paragraph")


def outline(lines: list[str]) -> Outline:
    """The structure of a document given as its lines (newlines normalised); raises
    MarkdownError naming the line of an unclosed fence or comment, a hidden or look-alike
    ``PROOF OF WORK:``, or one whose rendered text differs from its source."""
    md = _parser()
    env: dict[str, Any] = {}
    tokens = md.parse("\n".join(lines) + "\n", env)  # every line ends
    headings: list[tuple[int, int, str]] = []
    fences: list[Fence] = []
    proofs: list[Proof] = []
    covered = bytearray(len(lines) + 1)
    structure = False
    for token in tokens:
        if token.map is not None and token.type in (
                "inline", "fence", "code_block", "html_block", "hr"):
            start, end = token.map
            covered[start:end] = b"\x01" * (end - start)
        if token.type == "heading_open":
            found = heading(lines[token.map[0]]) if token.map and token.markup[0] == "#" else None
            structure = found is not None and token.tag in ("h1", "h2")
            if structure and found is not None and token.map is not None:
                headings.append((token.map[0], *found))
        elif token.type == "inline":
            if not structure and ("PROOF" in token.content or (
                    not token.content.isascii() and _POW.search(skeleton(token.content)))):
                proofs.extend(_proofs(token, md, env))
            structure = False
        elif token.type == "fence":
            fences.append(_fence(token))
        elif token.type == "html_block":
            at = (token.map or (0, 0))[0] + 1
            if _unclosed_html(token):
                raise _refuse(f"Line {at} opens an HTML comment or block that is never "
                              "closed: it would hide the rest of the document. Close it.",
                              at, "a closed HTML comment or block", field="markdown_doc")
            if _POW.search(token.content) or (
                    '"challenge"' in token.content and _JSON_FENCE.search(token.content)):
                raise _hidden(at, "an HTML comment or block")
    for i, line in enumerate(lines):
        if not covered[i] and "PROOF" in line and _POW.search(line):
            raise _hidden(i + 1, "a link reference definition")
    return Outline(headings, fences, proofs)
