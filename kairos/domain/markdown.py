"""Markdown ⇄ protocols. One H1 is a protocol, every H2 starts a step.

The document is read as a CommonMark renderer reads it (``domain.outline``): headings
inside fenced code blocks, HTML comments or HTML blocks are content, not structure, so shell
snippets with ``# comments`` survive and nothing a reader cannot see declares a step or a
challenge. ``render`` is the inverse of ``parse`` on parsed protocols.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, field

from . import limits
from . import triggers as front
from .challenge import (
    Challenge,
    challenge_from_json,
    challenge_from_pow,
    default_challenge,
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
from .outline import Fence, Outline, Proof, outline

# One pass: the run of prefixes is matched possessively (no iteration is retried), so a
# heading of "1. " × 300,000 costs its length, not its square.
_LABEL_PREFIXES = re.compile(
    r"(?:(step\s+\d+[a-z]?\b\s*[:.)\-–—]*\s*|\d+\s*[.:)\-–—]+(?:\s+|$))\s*)++",
    re.IGNORECASE)
BOM = "\ufeff"


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


def clean_label(heading: str) -> str:
    """``Step 1 — Setup`` → ``Setup``; ``3. Build`` → ``Build``; ``007 — Ship`` → ``Ship``.

    Idempotent, so a rendered label parses back to itself. Prefixes are stripped while text
    remains: a heading made only of prefixes keeps its last one (``Step 2``)."""
    label = heading.strip()
    m = _LABEL_PREFIXES.match(label)
    if m is None:
        return label
    return label[m.end():] or label[m.start(1):].strip()


def _trim(lines: list[str]) -> str:
    text = "\n".join(lines).rstrip()
    return text.lstrip("\n") if text.strip() else ""


def _body(lines: list[str]) -> str:
    """A step's content: its lines from the first that is not blank, trimmed."""
    skip = next((i for i, line in enumerate(lines) if line.strip()), len(lines))
    return _trim(lines[skip:])


class _Shape:
    """A document's outline, indexed for the steps: fences by their end, visible
    ``PROOF OF WORK:`` lines in line order."""

    def __init__(self, shape: Outline) -> None:
        self.ends = {f.end: f for f in shape.fences}
        self.proofs = shape.proofs
        self.proof_lines = [p.line for p in shape.proofs]

    def proofs_in(self, start: int, end: int) -> list[Proof]:
        return self.proofs[bisect_left(self.proof_lines, start):
                           bisect_left(self.proof_lines, end)]


def read_challenge(body: tuple[int, int], shape: _Shape, lines: list[str],
                   json_depth: int) -> Challenge:
    """A step's challenge (its body: lines ``body[0]`` to ``body[1]``, 0-based, end
    excluded): its trailing ```json block with a ``challenge`` key, else its visible
    ``PROOF OF WORK:`` line, else the default comment challenge (contract §4 R4). A json
    block nests at most ``json_depth`` levels."""
    start, end = body
    while end > start and not lines[end - 1].strip():
        end -= 1
    last: Fence | None = shape.ends.get(end)
    if (last is not None and last.start >= start and last.info.lower() == "json"
            and '"challenge"' in last.content):
        data = parse_json_block(last.content, last.start + 1, json_depth)
        if isinstance(data, dict) and "challenge" in data:
            return challenge_from_json(data["challenge"], last.start + 2)
    mine = shape.proofs_in(start, end)
    if len(mine) > 1:
        at, first = mine[1].line + 1, mine[0].line + 1
        raise MarkdownError(
            DUPLICATE_CHALLENGE,
            f"Line {at} is a second PROOF OF WORK line in this step (the first is on "
            f"line {first}); a step has one challenge.",
            field="challenge", expected="one PROOF OF WORK line per step", line=at)
    return challenge_from_pow(mine[0].spec, mine[0].line + 1) if mine else default_challenge()


def _check_heading(text: str, line: int, what: str, limit: int) -> None:
    if not text:
        raise MarkdownError(NO_HEADING, f"Empty {what} on line {line}.", line,
                            f"a {what} with text")
    if len(text) > limit:
        raise MarkdownError(INVALID_INPUT, f"The {what} on line {line} is {len(text)} "
                            f"characters; the limit is {limit}.", line,
                            f"a {what} of at most {limit} characters")


def title_key(title: str) -> str:
    """A title as the store compares titles: one protocol per key and space (case and
    spacing aside)."""
    return re.sub(r"\s+", " ", title).strip().casefold()


def text_of(doc: str) -> list[str]:
    """A document's lines as the parser reads them: a leading byte-order mark dropped (an
    encoding artefact, not text) and line ends normalised. The one entry of the text into
    parsing: a hook that reads something else from the top of a document goes here."""
    return doc.removeprefix(BOM).replace("\r\n", "\n").replace("\r", "\n").split("\n")


def check_text(doc: str, lim: limits.Limits = limits.DEFAULT) -> None:
    """The limits checked before any parsing work: size, then NUL and lone surrogates."""
    size = len(doc.encode("utf-8", "surrogatepass"))
    if size > lim.document_bytes:
        raise MarkdownError(DOCUMENT_TOO_LARGE, f"Document is {size} bytes; the limit is "
                            f"{lim.document_bytes}.", None, f"at most {lim.document_bytes} bytes")
    bad = limits.BAD_CHAR.search(doc)
    if bad is not None:
        at = doc.count("\n", 0, bad.start()) + 1
        raise MarkdownError(INVALID_INPUT, f"Line {at} holds a NUL character or a lone surrogate, "
                            "which is not text.", at, "text without NUL characters")


def _fenced(found: Outline, count: int) -> list[bool]:
    """Which of ``count`` lines lie in a fenced code block of the outline."""
    fenced = [False] * count
    for fence in found.fences:
        fenced[fence.start:fence.end] = [True] * (min(fence.end, count) - fence.start)
    return fenced


def parse(doc: str, lim: limits.Limits = limits.DEFAULT) -> list[ProtocolDraft]:
    """Parse a markdown document into protocols; raises MarkdownError naming the line.

    Every protocol needs a ``# Title``; each step heading needs text; the limits ``lim``
    (document bytes, steps, title and label length, JSON depth) are enforced here, the size
    before any other work."""
    check_text(doc, lim)
    lines = text_of(doc)
    found = outline(lines)
    lines, triggers_at = front.split_front_matter(lines, _fenced(found, len(lines)))
    if triggers_at:  # the front matter's lines are blank now: read what is left
        found = outline(lines)
    shape = _Shape(found)
    heads = found.headings  # (index, level, text)
    if not heads:
        raise MarkdownError(NO_HEADING, "Line 1: the document has no heading; start a protocol "
                            "with '# Title' and each step with '## Step label'.", 1,
                            "a '# Title' line")
    if heads[0][1] == 2:
        idx = heads[0][0]
        raise MarkdownError(NO_HEADING, f"Step heading on line {idx + 1} comes before any "
                            "'# Title': start the protocol with '# Title'.", idx + 1,
                            "a '# Title' before steps")
    groups: list[tuple[int, str, list[tuple[int, int, str]]]] = []
    for head in heads:
        if head[1] == 1:
            groups.append((head[0], head[2], []))
        else:
            groups[-1][2].append(head)
    protocols: list[ProtocolDraft] = []
    bounds = [g[0] for g in groups] + [len(lines)]
    for (start, title, steps), end in zip(groups, bounds[1:], strict=True):
        _check_heading(title, start + 1, "title", lim.title_chars)
        if len(steps) > lim.steps:
            line = steps[lim.steps][0] + 1
            raise MarkdownError(DOCUMENT_TOO_LARGE,
                                f"Protocol '{title[:80]}' has {len(steps)} steps; the limit is "
                                f"{lim.steps} (step {lim.steps + 1} is on line {line}).", line,
                                f"at most {lim.steps} steps per protocol")
        if not steps and not "".join(lines[start + 1 : end]).strip():
            raise MarkdownError(NO_HEADING, f"Protocol '{title}' on line {start + 1} has no "
                                "steps: add '## Step' headings or a body.", start + 1)
        # (label, index of its heading line) of each step; without step headings, one step:
        # the title and its body (the title's heading was checked above)
        sections = [(clean_label(text), at) for at, _, text in steps] or [(title, start)]
        stops = [at for _, at in sections[1:]] + [end]
        drafts: list[StepDraft] = []
        for (label, at), stop in zip(sections, stops, strict=True):
            if steps:
                _check_heading(label, at + 1, "step label", lim.label_chars)
            challenge = read_challenge((at + 1, stop), shape, lines, lim.json_depth)
            drafts.append(StepDraft(label, _body(lines[at + 1 : stop]), challenge))
        intro = _trim(lines[start + 1 : steps[0][0]]) if steps else ""
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
