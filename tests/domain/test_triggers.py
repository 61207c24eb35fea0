"""Author triggers: YAML front matter before a protocol's title, read and written back."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.domain import limits, markdown
from kairos.domain.errors import MarkdownError

DOC = """---
triggers:
  - the site is down
  - "customers: see errors"
---
# Respond to an outage

## Declare the incident

Open an incident.
"""


def test_front_matter_gives_the_protocol_its_triggers_and_stays_out_of_its_text() -> None:
    [draft] = markdown.parse(DOC)
    assert draft.triggers == ("the site is down", "customers: see errors")
    assert draft.title == "Respond to an outage" and draft.line == 6  # lines keep counting
    assert draft.intro == "" and draft.steps[0].content == "Open an incident."


def test_each_protocol_of_a_document_has_its_own_front_matter() -> None:
    doc = DOC + "\n---\ntriggers: [add capacity, more pods]\n---\n\n# Scale out\n\n## Raise\n\nx\n"
    first, second = markdown.parse(doc)
    assert first.triggers == ("the site is down", "customers: see errors")
    assert first.steps[-1].content == "Open an incident."
    assert second.triggers == ("add capacity", "more pods")


def test_a_document_without_front_matter_parses_as_before() -> None:
    plain = "# T\n\n## S\n\nBody\n\n---\n\nMore after a rule.\n\n---\n"
    [draft] = markdown.parse(plain)
    assert draft.triggers == () and "More after a rule." in draft.steps[0].content


def test_rules_in_a_step_before_a_title_are_not_front_matter_unless_they_say_triggers() -> None:
    doc = "# A\n\n## S\n\nText\n\n---\nnote: this is a rule block\n---\n\n# B\n\n## S\n\nx\n"
    a, b = markdown.parse(doc)
    assert a.triggers == b.triggers == ()
    assert "note: this is a rule block" in a.steps[0].content


def test_front_matter_inside_a_code_block_is_content() -> None:
    doc = ("# A\n\n## S\n\n```yaml\n---\ntriggers: [x]\n---\n```\n\nPROOF OF WORK: comment "
           "min_length=20\n")
    [draft] = markdown.parse(doc)
    assert draft.triggers == () and "triggers: [x]" in draft.steps[0].content


@pytest.mark.parametrize(("front", "line", "expected"), [
    ("---\ntrigger:\n  - x\n---\n", 2, "the key 'triggers'"),
    ("---\ntriggers: {a: b}\n---\n", 2, "triggers: a list of example requests"),
    ("---\ntriggers: [1, 2]\n---\n", 2, "triggers: a list of example requests"),
    ("---\ntriggers: [unclosed\n---\n", 2,
     "YAML front matter: 'triggers:' and a list of strings"),
    ("---\n- just a list\n---\n", 2, "triggers: a list of example requests"),
    (f"---\ntriggers: [{'x' * (limits.TRIGGER_CHARS + 1)}]\n---\n", 2,
     f"triggers of at most {limits.TRIGGER_CHARS} characters"),
    ("---\ntriggers: [" + ", ".join(f"t{i}" for i in range(limits.TRIGGERS + 1)) + "]\n---\n",
     2, f"at most {limits.TRIGGERS} triggers per protocol"),
])
def test_bad_front_matter_is_refused_naming_the_line(front: str, line: int,
                                                     expected: str) -> None:
    with pytest.raises(MarkdownError) as info:
        markdown.parse(front + "# T\n\n## S\n\nx\n")
    err = info.value
    assert (err.field, err.line, err.expected) == ("markdown_doc", line, expected)
    assert err.message.startswith(f"Line {line}")


def test_duplicates_and_blanks_are_dropped() -> None:
    [draft] = markdown.parse("---\ntriggers: [Deploy now, deploy  NOW, '', ship it]\n---\n"
                             "# T\n\n## S\n\nx\n")
    assert draft.triggers == ("Deploy now", "ship it")


TRIGGER = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1,
                  max_size=40).map(lambda s: " ".join(s.split())).filter(bool)


@settings(max_examples=200, deadline=None)
@given(st.lists(TRIGGER, max_size=6, unique_by=str.casefold))
def test_render_writes_triggers_that_parse_back(triggers: list[str]) -> None:
    draft = markdown.ProtocolDraft("Title", (markdown.StepDraft("Step", "Body"),),
                                   triggers=tuple(triggers))
    [again] = markdown.parse(markdown.render(draft))
    assert again.triggers == draft.triggers
    assert (again.title, again.steps) == (draft.title, draft.steps)


def test_render_escapes_characters_yaml_cannot_hold() -> None:
    draft = markdown.ProtocolDraft("Title", (markdown.StepDraft("Step", "Body"),),
                                   triggers=("\uffff", "a\ufffe b", "x\x9f"))
    [again] = markdown.parse(markdown.render(draft))
    assert again.triggers == draft.triggers
