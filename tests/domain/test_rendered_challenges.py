"""Property: a stored step's challenge is visible in the step as a renderer shows it.

Documents are generated from the constructs that can hide or change text — HTML comments
and blocks, fences (closed, unclosed, json), indented code, list items, quotes, headings,
link reference definitions, images, code spans, emphasis, escapes, entities, look-alike
letters — around ``PROOF OF WORK:`` lines of every form. Each document either is refused,
or every step it stores holds its challenge (the command, tool, prompt or minimum length,
or the json block) in the text CommonMark renders from the step's markdown, with raw HTML
shown as nothing (a browser may hide it). Conversely, a step whose challenge is the default
shows no ``PROOF OF WORK:`` line outside code.

``KAIROS_PARSER_EXAMPLES`` sets the number of documents (default 600); the goal figure
is run with 10,000 or more and ``--hypothesis-show-statistics``, whose events count the
documents stored and refused.
"""

from __future__ import annotations

import json
import os
from html.parser import HTMLParser
from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from kairos.domain import markdown
from kairos.domain.challenge import (
    Challenge,
    challenge_from_json,
    challenge_from_pow,
    default_challenge,
)
from kairos.domain.errors import KairosError

EXAMPLES = int(os.environ.get("KAIROS_PARSER_EXAMPLES", "600"))

# --- the renderer a reviewer reads -----------------------------------------------------------

RENDER = MarkdownIt("commonmark")
RENDER.add_render_rule("html_block", lambda *_: "")
RENDER.add_render_rule("html_inline", lambda *_: "")


class _Text(HTMLParser):
    def __init__(self, *, code: bool) -> None:
        super().__init__(convert_charrefs=True)
        self.code, self.depth = code, 0
        self.parts: list[str] = []
        self.json: list[str] = []
        self._json = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("code", "pre"):
            self.depth += 1
            self._json = self._json or ("class", "language-json") in attrs
            if self._json and tag == "code":
                self.json.append("")
        if tag in ("p", "li", "br", "h3", "h4", "h5", "h6", "blockquote", "pre"):
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("code", "pre"):
            self.depth -= 1
            if not self.depth:
                self._json = False
        self.parts.append("\n" if tag in ("p", "li", "pre") else "")

    def handle_data(self, data: str) -> None:
        if self._json and self.json:
            self.json[-1] += data
        if self.code or not self.depth:
            self.parts.append(data)


def rendered(content: str, *, code: bool = True) -> tuple[str, list[str]]:
    """The text a reader sees (with or without code), and the texts of json code blocks."""
    parser = _Text(code=code)
    parser.feed(RENDER.render(content))
    return "".join(parser.parts), parser.json


def flat(text: str) -> str:
    return " ".join(text.split())


def shown(challenge: Challenge) -> str | None:
    """What of a challenge a reader must see; None for the default one."""
    if challenge == default_challenge():
        return None
    params = challenge.params
    return {"shell": params.get("cmd"), "mcp": params.get("tool_name"),
            "user_input": params.get("prompt"),
            "comment": f"min_length={params.get('min_length')}"}[challenge.type]


# --- documents --------------------------------------------------------------------------------

ACTIVE = "abcxyz019 -./:*_`\\<>&[]()!\"'{}|~é#"
WORD = st.text(alphabet="abcdefgh_-", min_size=1, max_size=8)
TEXT = st.text(alphabet=ACTIVE, min_size=1, max_size=14).filter(lambda t: t.strip() != "")
PLAIN = st.lists(st.text(alphabet="abcdefghij-", min_size=1, max_size=6), min_size=1,
                 max_size=4).map(" ".join)
SPEC = st.one_of(
    PLAIN, TEXT, TEXT.map(lambda t: f"`{t.replace('`', '')}`"),
    st.builds(lambda n, c: f"timeout {n}s {c}", st.integers(1, 90), st.one_of(PLAIN, TEXT)),
    st.builds(lambda w: f"mcp {w}", st.one_of(WORD, TEXT)),
    st.builds(lambda p: f'user_input "{p}"', st.one_of(PLAIN, TEXT)),
    st.builds(lambda n: f"comment min_length={n}", st.integers(1, 200)),
    st.sampled_from(["m\u0441p tool", "us\u0435r_input \"ok?\"", "\uff4d\uff43\uff50 tool",
                     "shell make", "MCP tool", "c\u043emment min_length=5"]),
)
PREFIX = st.sampled_from([
    "PROOF OF WORK: ", "PROOF OF WORK: ", "PROOF OF WORK: ", "**PROOF OF WORK:** ",
    "- PROOF OF WORK: ", "> PROOF OF WORK: ", "### PROOF OF WORK: ", "1. PROOF OF WORK: ",
    "   PROOF OF WORK: ", "Proof of work: ", "- Proof of work: ", "PR\u041e\u041eF OF WORK: ",
    "PROOF OF WORK:", "text PROOF OF WORK: ", "PROOF  OF WORK : "])
POW = st.builds(lambda p, s: p + s, PREFIX, SPEC)
JSON_BLOCK = st.builds(
    lambda c: "```json\n" + json.dumps({"challenge": {"type": "shell", "shell": {
        "cmd": c, "timeout_seconds": 5}}}, ensure_ascii=False) + "\n```",
    st.one_of(PLAIN, TEXT))
EXACT = st.builds(lambda p, s: p + s, st.sampled_from(["PROOF OF WORK: ", "**PROOF OF WORK:** ",
                                                     "- PROOF OF WORK: "]), SPEC)
LINE = st.one_of(TEXT, PLAIN, POW)
SAFE = st.one_of(
    st.lists(st.one_of(PLAIN, PLAIN, TEXT), min_size=1, max_size=3).map("\n".join),
    st.just("<!-- a note -->"), st.just("<!--\n## Hidden step\n-->"),
    st.just("<div>\n## Hidden step\n</div>"),
    st.lists(LINE, min_size=0, max_size=3).map(lambda ls: "```bash\n" + "\n".join(ls)
                                               + "\n```"),
    POW.map(lambda p: f"    {p}"),
)
RISKY = st.one_of(
    POW, st.lists(LINE, min_size=1, max_size=3).map("\n".join),
    POW.map(lambda p: f"<!-- {p} -->"), POW.map(lambda p: f"<!--\n{p}\n-->"),
    POW.map(lambda p: f"Some text <!--\n{p}\n--> more text"),
    st.just("<!-- never closed"),
    st.lists(LINE, min_size=0, max_size=3).map(lambda ls: "~~~\n" + "\n".join(ls)),
    POW.map(lambda p: f'[ref]: https://example.com "{p}"'),
    POW.map(lambda p: f"![{p}](image.png)"),
    st.just("## "), st.just("\ufeff"),
)
BLOCKS = st.lists(st.one_of(SAFE, SAFE, SAFE, RISKY), max_size=3).map("\n\n".join)
BODY = st.one_of(
    st.builds(lambda b, c: f"{b}\n\n{c}", BLOCKS, EXACT),
    st.builds(lambda b, c: f"{c}\n\n{b}", BLOCKS, EXACT),
    st.builds(lambda b, j: f"{b}\n\n{j}", BLOCKS, JSON_BLOCK),
    BLOCKS,
)
STEP = st.builds(lambda label, body: f"## {label}\n\n{body}\n", PLAIN, BODY)
DOCUMENT = st.builds(lambda bom, steps: bom + "# A protocol\n\n" + "\n".join(steps),
                     st.sampled_from(["", "", "\ufeff"]), st.lists(STEP, min_size=1,
                                                                    max_size=4))


def _check(step: markdown.StepDraft) -> None:
    text, blocks = rendered(step.content)
    if step.challenge.description.startswith("Execute") and any(blocks):
        decoded = []
        for block in blocks:
            try:
                decoded.append(json.loads(block))
            except ValueError:
                continue
        declared: list[Any] = [challenge_from_json(d["challenge"]) for d in decoded
                               if isinstance(d, dict) and "challenge" in d]
        if step.challenge in declared:
            return
    wanted = shown(step.challenge)
    if wanted is None:  # a visible PROOF OF WORK line can only declare the default
        prose, _ = rendered(step.content, code=False)
        declared = [challenge_from_pow(line.strip().removeprefix("PROOF OF WORK:").strip())
                    for line in prose.splitlines()
                    if line.strip().startswith("PROOF OF WORK:")]
        assert all(c == step.challenge for c in declared), (step.content, prose)
        return
    assert flat(wanted) in flat(text), (step.content, step.challenge, text)


@settings(max_examples=EXAMPLES, deadline=None)
@given(DOCUMENT)
def test_every_stored_challenge_is_visible_in_its_rendered_step(doc: str) -> None:
    try:
        protocols = markdown.parse(doc)
    except KairosError as exc:
        event(f"refused: {exc.code}")
        return
    event("stored")
    for protocol in protocols:
        for step in protocol.steps:
            event(f"stored step: {step.challenge.type}")
            _check(step)
