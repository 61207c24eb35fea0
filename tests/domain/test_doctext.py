"""Document texts and query normalisation for the indexes."""

from __future__ import annotations

import sqlite3

from kairos.domain import doctext


def test_doc_text_recipe() -> None:
    d = doctext.build_doc_text(
        "tar", ["[c]reate an archive from [f]iles", "E[x]tract an archive"],
        ["tar cf {{path/to/target.tar}} {{file1 file2}}", "tar xf {{source.tar}}"])
    assert d.summary == "tar: how to create an archive from files; extract an archive"
    assert d.full == ("tar: how to create an archive from files (tar cf path/to/target.tar "
                      "file1 file2); extract an archive (tar xf source.tar)")
    assert d.steps == ("create an archive from files: tar cf path/to/target.tar file1 file2",
                       "Extract an archive: tar xf source.tar")
    assert d.title == "tar"
    assert d.labels == "create an archive from files Extract an archive"
    assert d.contents == "tar cf path/to/target.tar file1 file2 tar xf source.tar"


def test_doc_text_without_contents_or_steps() -> None:
    d = doctext.build_doc_text("Check in", ["Say hello"], [])
    assert d.steps == ("Say hello",)
    assert d.full == "Check in: how to say hello"
    empty = doctext.build_doc_text("Lonely title", [], [])
    assert empty.summary == empty.full == "Lonely title"
    assert empty.steps == ("Lonely title",)


def test_clean_keeps_link_text_and_drops_fences() -> None:
    assert doctext.clean("See [the docs](https://x.y/z) now") == "See the docs now"
    assert doctext.clean("```bash\nmake   all\n```") == "make all"


def test_long_contents_are_cut() -> None:
    d = doctext.build_doc_text("t", ["l"], ["x" * 5000])
    assert len(d.contents) == doctext.MAX_CONTENT_CHARS


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
