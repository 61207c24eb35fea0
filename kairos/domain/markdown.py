"""Markdown ⇄ protocols. One H1 is a protocol, every H2 starts a step.

Headings inside fenced code blocks are content, not structure, so shell snippets with
``# comments`` survive. ``render`` is the inverse of ``parse`` on parsed protocols.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from . import limits
from . import triggers as front
from .challenge import (
    Challenge,
    challenge_from_json,
    challenge_from_pow,
    default_challenge,
    match_proof_of_work,
    parse_json_block,
)
from .doctext import drop_json_blocks
from .errors import (
    DOCUMENT_TOO_LARGE,
    DUPLICATE_CHALLENGE,
    INVALID_INPUT,
    NO_HEADING,
    MarkdownError,
)

# Every pattern here runs in time linear in its input: no two adjacent parts can match the
# same run of characters (a long run of spaces or of '[' must not cost its square).
_HEADING = re.compile(r"^ {0,3}(?P<level>#{1,2})(?!#)[ \t]+(?P<text>.*)$")
_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
_LABEL_PREFIX = re.compile(
    r"^(?:step\s+\d+[a-z]?\b\s*[:.)\-–—]*\s*|\d+\s*[.:)\-–—]+(?:\s+|$))", re.IGNORECASE
)


@dataclass(frozen=True)
class StepDraft:
    label: str
    content: str
    challenge: Challenge = field(default_factory=default_challenge)


@dataclass(frozen=True)
class ProtocolDraft:
    title: str
    steps: tuple[StepDraft, ...]
    intro: str = ""
    line: int = 1
    triggers: tuple[str, ...] = ()  # the front matter's (``domain.triggers``)

    @property
    def tags(self) -> list[str]:
        return derive_tags(self.title, [s.label for s in self.steps],
                           [s.content for s in self.steps])


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


def clean_label(heading: str) -> str:
    """``Step 1 — Setup`` → ``Setup``; ``3. Build`` → ``Build``; ``007 — Ship`` → ``Ship``.

    Idempotent, so a rendered label parses back to itself.
    """
    label = heading.strip()
    while True:
        stripped = _LABEL_PREFIX.sub("", label, count=1).strip()
        if not stripped or stripped == label:
            return label
        label = stripped


def _fence_map(lines: list[str]) -> list[bool]:
    """For each line, whether it belongs to a fenced code block (fence lines included)."""
    inside: list[bool] = []
    open_fence: str | None = None
    for line in lines:
        m = _FENCE.match(line)
        if open_fence is None:
            if m:
                open_fence = m.group("fence")
                inside.append(True)
                continue
            inside.append(False)
        else:
            inside.append(True)
            if m and not m.group("info").strip():
                fence = m.group("fence")
                if fence[0] == open_fence[0] and len(fence) >= len(open_fence):
                    open_fence = None
    return inside


def _trim(lines: list[str]) -> str:
    text = "\n".join(lines).rstrip()
    return text.lstrip("\n") if text.strip() else ""


def _strip_leading_blank(lines: list[str], start: int) -> tuple[list[str], int]:
    skip = next((i for i, line in enumerate(lines) if line.strip()), len(lines))
    return lines[skip:], start + skip


def _fenced_blocks(lines: list[str]) -> list[tuple[int, int, str]]:
    """(opening line, closing line, info string) of each closed fenced block."""
    blocks: list[tuple[int, int, str]] = []
    open_at, fence, info = -1, "", ""
    for i, line in enumerate(lines):
        m = _FENCE.match(line)
        if open_at < 0:
            if m:
                open_at, fence, info = i, m.group("fence"), m.group("info").strip()
        elif (m and not m.group("info").strip() and m.group("fence")[0] == fence[0]
              and len(m.group("fence")) >= len(fence)):
            blocks.append((open_at, i, info))
            open_at = -1
    return blocks


def read_challenge(body: list[str], first_line: int) -> Challenge:
    """A step's challenge: its trailing ```json block with a ``challenge`` key, else its last
    ``PROOF OF WORK:`` line, else the default comment challenge (DESIGN rule 4)."""
    end = len(body)
    while end and not body[end - 1].strip():
        end -= 1
    blocks = _fenced_blocks(body)
    if blocks and blocks[-1][1] == end - 1 and blocks[-1][2].lower() == "json":
        start = blocks[-1][0]
        text = "\n".join(body[start + 1 : end - 1])
        if '"challenge"' in text:
            data = parse_json_block(text, first_line + start)
            if isinstance(data, dict) and "challenge" in data:
                return challenge_from_json(data["challenge"], first_line + start + 1)
    found: Challenge | None = None
    found_at = 0
    fenced = _fence_map(body)
    for i, line in enumerate(body):
        if fenced[i]:
            continue
        spec = match_proof_of_work(line)
        if spec is not None:
            if found is not None:
                at = first_line + i
                raise MarkdownError(
                    DUPLICATE_CHALLENGE,
                    f"Line {at} is a second PROOF OF WORK line in this step (the first is on "
                    f"line {found_at}); a step has one challenge.",
                    field="challenge", expected="one PROOF OF WORK line per step", line=at)
            found, found_at = challenge_from_pow(spec, first_line + i), first_line + i
    return found or default_challenge()


def _refuse(code: str, message: str, line: int, expected: str | None = None) -> MarkdownError:
    return MarkdownError(code, message, field="markdown_doc", expected=expected, line=line)


def _check_heading(text: str, line: int, what: str, limit: int) -> None:
    if not text:
        raise _refuse(NO_HEADING, f"Empty {what} on line {line}.", line,
                      f"a {what} with text")
    if len(text) > limit:
        raise _refuse(INVALID_INPUT, f"The {what} on line {line} is {len(text)} characters; "
                      f"the limit is {limit}.", line, f"a {what} of at most {limit} characters")


def parse(doc: str) -> list[ProtocolDraft]:
    """Parse a markdown document into protocols; raises MarkdownError naming the line.

    Every protocol needs a ``# Title``; each step heading needs text; the limits of
    ``domain.limits`` (document bytes, steps, title and label length) are enforced here."""
    lim = limits.current()
    size = len(doc.encode("utf-8", "surrogatepass"))
    if size > lim.document_bytes:
        raise MarkdownError(
            DOCUMENT_TOO_LARGE,
            f"Document is {size} bytes; the limit is {lim.document_bytes}.",
            field="markdown_doc",
            expected=f"at most {lim.document_bytes} bytes",
        )
    lines = doc.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    bad = limits.BAD_CHAR.search(doc)
    if bad is not None:
        at = doc.count("\n", 0, bad.start()) + 1
        raise _refuse(INVALID_INPUT, f"Line {at} holds a NUL character or a lone surrogate, "
                      "which is not text.", at, "text without NUL characters")
    fenced = _fence_map(lines)
    lines, triggers_at = front.split_front_matter(lines, fenced)
    heads: list[tuple[int, int, str]] = []  # (index, level, text)
    for i, line in enumerate(lines):
        if fenced[i]:
            continue
        found = heading(line)
        if found is not None:
            heads.append((i, *found))
    if not heads:
        raise MarkdownError(NO_HEADING,
                            "Line 1: the document has no heading; start a protocol with "
                            "'# Title' and each step with '## Step label'.",
                            field="markdown_doc", expected="a '# Title' line", line=1)
    if heads[0][1] == 2:
        idx = heads[0][0]
        raise MarkdownError(NO_HEADING,
                            f"Step heading on line {idx + 1} comes before any '# Title': "
                            "start the protocol with '# Title'.",
                            field="markdown_doc", expected="a '# Title' before steps",
                            line=idx + 1)
    groups: list[tuple[int, str, list[tuple[int, int, str]]]] = []
    for head in heads:
        if head[1] == 1:
            groups.append((head[0], head[2], []))
        else:
            groups[-1][2].append(head)
    protocols: list[ProtocolDraft] = []
    bounds = [g[0] for g in groups] + [len(lines)]
    for gi, (start, title, steps) in enumerate(groups):
        end = bounds[gi + 1]
        _check_heading(title, start + 1, "title", lim.title_chars)
        if len(steps) > lim.steps:
            at = steps[lim.steps][0] + 1
            raise _refuse(DOCUMENT_TOO_LARGE,
                          f"Protocol '{title[:80]}' has {len(steps)} steps; the limit is "
                          f"{lim.steps} (step {lim.steps + 1} is on line {at}).", at,
                          f"at most {lim.steps} steps per protocol")
        first_step = steps[0][0] if steps else end
        intro = _trim(lines[start + 1 : first_step])
        drafts: list[StepDraft] = []
        if not steps:
            body, at = _strip_leading_blank(lines[start + 1 : end], start + 2)
            if not "".join(body).strip():
                raise MarkdownError(NO_HEADING,
                                    f"Protocol '{title}' on line {start + 1} has no steps: add "
                                    "'## Step' headings or a body.",
                                    field="markdown_doc", line=start + 1)
            challenge = read_challenge(body, at)
            drafts.append(StepDraft(title, _trim(body), challenge))
            intro = ""
        step_bounds = [s[0] for s in steps] + [end]
        for si, (hidx, _, text) in enumerate(steps):
            label = clean_label(text)
            _check_heading(label, hidx + 1, "step label", lim.label_chars)
            body, at = _strip_leading_blank(lines[hidx + 1 : step_bounds[si + 1]], hidx + 2)
            challenge = read_challenge(body, at)
            drafts.append(StepDraft(label, _trim(body), challenge))
        protocols.append(ProtocolDraft(title, tuple(drafts), intro, start + 1,
                                       triggers_at.get(start, ())))
    return protocols


def render(protocol: ProtocolDraft) -> str:
    """Markdown that parses back to ``protocol``."""
    parts = ["\n".join([*front.front_matter(protocol.triggers), f"# {protocol.title}"])]
    if protocol.intro:
        parts.append(protocol.intro)
    for step in protocol.steps:
        parts.append(f"## {step.label}")
        if step.content:
            parts.append(step.content)
    return "\n\n".join(parts) + "\n"


def render_step(label: str, content: str) -> str:
    return f"## {label}\n\n{content}\n" if content else f"## {label}\n"


_POW_LINE = re.compile(r"^[^\w\n]*proof\s+of\s+work", re.IGNORECASE | re.MULTILINE)


def _tag_text(content: str) -> str:
    """A step body without its challenge: json blocks, and all from the first
    ``PROOF OF WORK`` line on."""
    m = _POW_LINE.search(content)
    return drop_json_blocks(content[: m.start()] + " " if m else content)
_WORD = re.compile(r"[a-z][a-z0-9+#_-]*[a-z0-9+#]|[a-z]{2,}")
STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    else few for from further get got had has have having he her here hers him his how if
    in into is it its itself just let may me might more most must my no nor not now of off
    on once only or other our out over own per same shall she should so some such than that
    the their them then there these they this those through to too under until up upon us
    use used using very via was we were what when where which while who whom why will with
    would you your yours step steps run make sure one two three first next file path new
    like want need etc""".split()
)


def derive_tags(title: str, labels: list[str], contents: list[str], limit: int = 5) -> list[str]:
    """Keywords weighted by where they appear: title ×3, step labels ×2, bodies ×1."""
    contents = [_tag_text(c) for c in contents]
    scores: Counter[str] = Counter()
    order: dict[str, int] = {}
    for weight, texts in ((3, [title]), (2, labels), (1, contents)):
        for text in texts:
            for word in _WORD.findall(text.lower()):
                word = word.strip("-_")
                if len(word) < 3 or word in STOPWORDS or word.isdigit():
                    continue
                scores[word] += weight
                order.setdefault(word, len(order))
    ranked = sorted(scores, key=lambda w: (-scores[w], order[w]))
    return ranked[:limit]
