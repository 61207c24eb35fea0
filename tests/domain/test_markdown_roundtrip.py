"""Property: markdown → protocol → markdown → the same protocol, over generated protocols."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.domain import markdown
from kairos.domain.challenge import default_challenge, make_challenge

WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789éß_-", min_size=1,
               max_size=10)
PHRASE = st.lists(WORD, min_size=1, max_size=6).map(" ".join)
LABEL = st.one_of(PHRASE, st.builds(lambda n, p: f"Step {n} — {p}",
                                    st.integers(1, 99), PHRASE))
PLAIN_LINE = st.one_of(PHRASE, PHRASE.map(lambda p: f"- {p}"), PHRASE.map(lambda p: f"### {p}"))
CODE = st.lists(st.one_of(PHRASE, PHRASE.map(lambda p: f"# {p}"),
                          PHRASE.map(lambda p: f"## {p}")), min_size=1, max_size=3).map(
    lambda lines: "```bash\n" + "\n".join(lines) + "\n```")
PARAGRAPH = st.one_of(st.lists(PLAIN_LINE, min_size=1, max_size=3).map("\n".join), CODE)
BODY = st.lists(PARAGRAPH, min_size=0, max_size=3).map("\n\n".join)

# A challenge shows as written: plain words (no "_" that could pair into emphasis), or any
# words inside a code span.
PLAIN = st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789éß-",
                         min_size=1, max_size=10), min_size=1, max_size=6).map(" ".join)
ARG = st.one_of(PLAIN.map(lambda p: (p, p)), PHRASE.map(lambda p: (f"`{p}`", p)))
TOOL = st.one_of(WORD.filter(lambda w: "_" not in w).map(lambda w: (w, w)),
                 WORD.map(lambda w: (f"`{w}`", w)))
CHALLENGES = st.one_of(
    st.just(("", default_challenge())),
    st.builds(lambda c, t: (f"PROOF OF WORK: timeout {t}s {c[0]}",
                            make_challenge("shell", {"cmd": c[1], "timeout_seconds": t})),
              ARG, st.integers(1, 600)),
    st.builds(lambda tool: (f"PROOF OF WORK: mcp {tool[0]}",
                            make_challenge("mcp", {"tool_name": tool[1],
                                                   "expected_result": None})),
              TOOL),
    st.builds(lambda p: (f'PROOF OF WORK: user_input "{p[1]}"' if p[0] == p[1]
                         else f'PROOF OF WORK: `user_input "{p[1]}"`',
                         make_challenge("user_input", {"prompt": p[1]})), ARG),
    st.builds(lambda n: (f"PROOF OF WORK: comment min_length={n}",
                         make_challenge("comment", {"min_length": n})), st.integers(1, 500)),
    st.builds(lambda c: ("```json\n" + json.dumps(
        {"challenge": {"type": "shell", "shell": {"cmd": c, "timeout_seconds": 5}}}) + "\n```",
        make_challenge("shell", {"cmd": c, "timeout_seconds": 5})), PHRASE),
)


@st.composite
def steps(draw: st.DrawFn) -> markdown.StepDraft:
    body = draw(BODY)
    line, challenge = draw(CHALLENGES)
    content = "\n\n".join(part for part in (body, line) if part)
    return markdown.StepDraft(markdown.clean_label(draw(LABEL)), content, challenge)


PROTOCOLS = st.builds(
    lambda title, intro, s: markdown.ProtocolDraft(title, tuple(s), intro),
    PHRASE, st.one_of(st.just(""), PHRASE), st.lists(steps(), min_size=1, max_size=6))


def _same(a: markdown.ProtocolDraft, b: markdown.ProtocolDraft) -> bool:
    return (a.title, a.intro, a.steps) == (b.title, b.intro, b.steps)


@settings(max_examples=300, deadline=None)
@given(PROTOCOLS)
def test_render_then_parse_is_identity(protocol: markdown.ProtocolDraft) -> None:
    parsed = markdown.parse(markdown.render(protocol))
    assert len(parsed) == 1
    assert _same(parsed[0], protocol)


@settings(max_examples=100, deadline=None)
@given(st.lists(PROTOCOLS, min_size=1, max_size=3, unique_by=lambda p: p.title))
def test_several_protocols_round_trip(protocols: list[markdown.ProtocolDraft]) -> None:
    doc = "\n".join(markdown.render(p) for p in protocols)
    parsed = markdown.parse(doc)
    assert all(_same(a, b) for a, b in zip(parsed, protocols, strict=True))


@given(LABEL)
def test_clean_label_is_idempotent(label: str) -> None:
    once = markdown.clean_label(label)
    assert markdown.clean_label(once) == once and once


def test_label_prefixes() -> None:
    cases = {"Step 1 — Setup": "Setup", "Step 1: Setup": "Setup", "3. Build": "Build",
             "007 — Deploy": "Deploy", "1) Go": "Go", "Step 2": "Step 2",
             "2024-01 release": "2024-01 release", "3D printing": "3D printing"}
    assert {k: markdown.clean_label(k) for k in cases} == cases
