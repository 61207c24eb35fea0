"""Document texts and query normalisation for the indexes."""

from __future__ import annotations

import re
import sqlite3

from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.domain import doctext


def test_a_protocol_of_commands_is_one_vector_text_and_three_columns() -> None:
    d = doctext.document(
        "tar", "Archiving utility.",
        [("[c]reate an archive from [f]iles", "`tar cf {{path/to/target.tar}} {{file1 file2}}`"),
         ("E[x]tract an archive", "`tar xf {{source.tar}}`")])
    assert d.vectors == ("tar: Archiving utility. how to create an archive from files; "
                         "extract an archive",)
    assert d.title == "tar"
    assert d.labels == "create an archive from files Extract an archive"
    assert d.body == "Archiving utility.\ntar cf path/to/target.tar file1 file2 tar xf source.tar"


def test_steps_that_say_more_in_words_lead_with_a_fuller_vector() -> None:
    d = doctext.document("Renew TLS certificates", "", [
        ("Renew", "Rotate the kafka broker keystore.\n\nPROOF OF WORK: comment min_length=20"),
        ("Check", "`openssl x509 -noout -dates`")])
    assert d.vectors == ("Renew TLS certificates: how to renew (Rotate the kafka broker "
                         "keystore.); check", "Renew TLS certificates: how to renew; check")


def test_a_protocol_without_intro_or_step_bodies() -> None:
    d = doctext.document("Check in", "", [("Say hello", "")])
    assert d.vectors == ("Check in: how to say hello",)
    assert d.body == ""


def test_an_entry_leads_with_title_and_body_then_each_alone() -> None:
    d = doctext.document("Flaky pytest in CI", "Rerun with -p no:randomly to find the order.")
    assert d.vectors == ("Flaky pytest in CI: Rerun with -p no:randomly to find the order.",
                         "Flaky pytest in CI", "Rerun with -p no:randomly to find the order.")
    assert d.labels == ""
    assert doctext.document("Lonely title").vectors == ("Lonely title",) * 3


def test_clean_keeps_link_text_and_drops_fences() -> None:
    assert doctext.clean("See [the docs](https://x.y/z) now") == "See the docs now"
    assert doctext.clean("```bash\nmake   all\n```") == "make all"


def test_long_texts_are_cut() -> None:
    d = doctext.document("t", "", [("l", "x" * 5000)])
    assert len(d.body) == doctext.MAX_CONTENT_CHARS
    assert len(doctext.document("t", "y " * 5000, [("l", "")]).vectors[0]) == (
        doctext.MAX_VECTOR_CHARS)


def test_embedding_query_drops_trailing_punctuation() -> None:
    assert doctext.embedding_query("Archiving utility.") == "Archiving utility"
    assert doctext.embedding_query("  how do I deploy?!  ") == "how do I deploy"
    assert doctext.embedding_query("v1.2 release") == "v1.2 release"


def test_query_terms_split_like_unicode61_and_drop_stop_words() -> None:
    assert doctext.query_terms("Create a tar_archive of the Files, files!") == [
        "create", "tar", "archive", "files"]
    assert doctext.query_terms("Über-Größe") == ["über", "größe"]


def test_fts5_match_is_injection_safe() -> None:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='porter unicode61')")
    db.execute("INSERT INTO t VALUES ('deploy the app NEAR production')")
    for query in ['deploy AND "app', "NEAR(deploy app)", "body:deploy*", "^deploy -app"]:
        match = doctext.fts5_match(doctext.query_terms(query))
        assert match is not None
        assert db.execute("SELECT count(*) FROM t WHERE t MATCH ?", (match,)).fetchone()[0] == 1
    assert doctext.fts5_match([]) is None


# What ``clean`` and the step texts were as plain regex passes over the whole text: the
# faster forms (skipped passes, ``str.split``, a prefix read lazily) must say the same.
_SPACE = re.compile(r"\s+")


def _clean_by_regex(text: str) -> str:
    text = doctext._LINK.sub(r"\1", text)
    text = doctext._FENCE.sub(" ", text)
    return _SPACE.sub(" ", doctext._TEMPLATE.sub("", text)).strip()


_PIECES = st.sampled_from(["[", "]", "(", ")", "{", "}", "!", "`", "```", "```json\n",
                           " ", "\n", "\t", "\u3000", "\x1c", "\u00a0", "a", "Zb", "x_y",
                           "proof of work: ", "PROOF OF WORK: echo", "](", "é"])
_TEXTS = st.lists(_PIECES, max_size=60).map("".join) | st.text(max_size=80)


@settings(max_examples=400, deadline=None)
@given(text=_TEXTS, limit=st.integers(min_value=0, max_value=40))
def test_clean_says_what_the_regex_passes_said_and_a_limit_cuts_it(text: str,
                                                                     limit: int) -> None:
    full = _clean_by_regex(text)
    assert doctext.clean(text) == full
    assert doctext.clean(text, limit) == full[:limit]
    assert doctext.step_words(text, limit) == doctext.step_words(text)[:limit]
    said = " ".join(doctext._POW_PREFIX.sub("", doctext.drop_json_blocks(
        text, objects_only=True)).replace("`", " ").split())  # the body before it was cleaned
    assert doctext.step_search_body(text, limit) == _clean_by_regex(said)[:limit]
