"""Texts for people, over generated documents: every problem of a document is reported on
its own line (not only the first), a step's body loses its challenge, and markdown read as
plain text keeps its words and loses its marks."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.domain import markdown
from kairos.domain.challenge import KEYWORDS
from kairos.domain.plain import plain_text, step_body
from kairos.domain.problems import MAX_PROBLEMS, parse_all

WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=8)
PHRASE = st.lists(WORD, min_size=1, max_size=5).map(" ".join)
COMMAND = PHRASE.filter(lambda p: p.split()[0] not in KEYWORDS)  # a shell command
GOOD = st.one_of(PHRASE, COMMAND.map(lambda p: f"PROOF OF WORK: {p}"),
                 st.integers(1, 500).map(lambda n: f"PROOF OF WORK: comment min_length={n}"))
# Each bad body makes exactly one problem, on its challenge line.
BAD = st.one_of(
    st.just("PROOF OF WORK: comment min_length=0"),
    st.just("PROOF OF WORK: timeout 99h make build"),
    st.just('```json\n{"challenge": {"type": "telepathy"}}\n```'),
    st.just("PROOF OF WORK: mcp"),
)


@st.composite
def documents(draw: st.DrawFn) -> tuple[str, list[int]]:
    """A protocol whose steps are good or bad, and the line of each bad step's problem."""
    lines = [f"# {draw(PHRASE)}", ""]
    bad_lines: list[int] = []
    for _ in range(draw(st.integers(1, 8))):
        lines += [f"## {draw(PHRASE)}", ""]
        if draw(st.booleans()):
            body = draw(BAD)
            at = len(lines) + (2 if body.startswith("```") else 1)
            bad_lines.append(at)
        else:
            body = draw(GOOD)
        lines += [*body.split("\n"), ""]
    return "\n".join(lines), bad_lines


@settings(max_examples=150, deadline=None)
@given(documents())
def test_every_bad_step_is_reported_at_its_line(doc: tuple[str, list[int]]) -> None:
    text, bad_lines = doc
    drafts, problems = parse_all(text)
    assert [p.line for p in problems] == bad_lines
    if bad_lines:
        assert drafts == [] and problems[0].code == _first_error(text)
    else:
        assert drafts == markdown.parse(text)


def _first_error(text: str) -> str:
    try:
        markdown.parse(text)
    except markdown.MarkdownError as exc:
        return exc.code
    raise AssertionError("the document parsed")


def test_headings_and_documents_that_cannot_be_set_aside() -> None:
    doc = "# Title\n\n## Build\nPROOF OF WORK: comment min_length=0\n\n## \n\n# \n## x\n"
    assert [(p.line, p.code) for p in parse_all(doc)[1]] == [
        (4, "MISSING_CHALLENGE_FIELD"), (6, "NO_HEADING"), (8, "NO_HEADING")]
    assert [p.line for p in parse_all("no heading at all")[1]] == [1]
    assert [p.line for p in parse_all("## Step first\n# Title\n## a\n")[1]] == [1]
    many = "# T\n\n" + "".join(f"## s{i}\nPROOF OF WORK: mcp\n" for i in range(80))
    assert len(parse_all(many)[1]) == MAX_PROBLEMS


MARKS = st.sampled_from(["# ", "## ", "> ", "- ", "1. ", "**", "_", "`", "~~"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(MARKS, PHRASE), min_size=1, max_size=8))
def test_plain_text_keeps_the_words_and_drops_the_marks(parts: list[tuple[str, str]]) -> None:
    lines = []
    for mark, phrase in parts:
        if mark.strip() in ("**", "_", "`", "~~"):
            lines.append(f"{mark}{phrase}{mark}")
        else:
            lines.append(f"{mark}{phrase}")
    text = plain_text("\n\n".join(lines))
    assert text.split() == " ".join(p for _, p in parts).split()


def test_links_images_tables_and_fences() -> None:
    md = ("Read [the guide](https://example.com/g) and ![a chart](c.png).\n\n"
          "| a | b |\n|---|---|\n| 1 | 2 |\n\n```bash\nmake all\n```\n\n---\n")
    assert plain_text(md) == "Read the guide and a chart. a b 1 2 make all"


def test_a_step_body_without_its_challenge() -> None:
    assert step_body("Build it.\n\nPROOF OF WORK: make build\n") == "Build it."
    assert step_body('Set up.\n\n```json\n{"challenge": {"type": "comment"}}\n```') == "Set up."
    assert step_body("```bash\nmake\n```\n\nproof of work: make") == "```bash\nmake\n```"
