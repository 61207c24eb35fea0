"""A large document is parsed in a worker process: the same drafts and the same errors as
a parse in the calling thread, under the caller's limits, and almost none of the work in
the server's process (its interpreter lock stays free for other requests)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from kairos.domain import limits, markdown
from kairos.domain.errors import MarkdownError
from kairos.service.parsing import INLINE_CHARS, Parser

LARGE = "# Large\n\n" + "".join(f"## Step {i}\n\nDo part {i}.\n\nPROOF OF WORK: echo {i}\n\n"
                                for i in range(150)) + "Closing words. " * 3_000
LISTS = "# Lists\n\n## Only\n\n" + "- item\n" * 60_000


@pytest.fixture
def parser() -> Iterator[Parser]:
    p = Parser(limits.DEFAULT)
    yield p
    p.close()


def test_large_documents_parse_as_in_the_calling_thread(parser: Parser) -> None:
    assert len(LARGE) > INLINE_CHARS
    assert parser.parse(LARGE) == markdown.parse(LARGE)


def test_errors_cross_whole_with_their_line_and_field(parser: Parser) -> None:
    with pytest.raises(MarkdownError) as info:
        parser.parse(LARGE + "\n```\nnever closed\n")
    with pytest.raises(MarkdownError) as local:
        markdown.parse(LARGE + "\n```\nnever closed\n")
    assert info.value.to_dict() == local.value.to_dict()
    assert info.value.line is not None and info.value.field == "markdown_doc"


def test_the_worker_parses_under_the_callers_limits() -> None:
    parser = Parser(limits.Limits(steps=100))
    try:
        with pytest.raises(MarkdownError) as info:
            parser.parse(LARGE)
    finally:
        parser.close()
    assert info.value.code == "DOCUMENT_TOO_LARGE" and "at most 100 steps" in str(
        info.value.expected)


def test_the_size_limit_is_checked_before_anything_is_sent() -> None:
    parser = Parser(limits.Limits(document_bytes=INLINE_CHARS * 2))
    try:
        with pytest.raises(MarkdownError) as info:
            parser.parse("# T\n\n## S\n\n" + "x" * INLINE_CHARS * 3)
    finally:
        parser.close()
    assert info.value.code == "DOCUMENT_TOO_LARGE" and parser._pool is None


def test_the_server_process_does_almost_none_of_the_work(parser: Parser) -> None:
    parser.parse(LARGE)  # the worker is running
    started = time.thread_time()
    in_worker = parser.parse(LISTS)
    here = time.thread_time() - started
    started = time.thread_time()
    in_thread = markdown.parse(LISTS)
    local = time.thread_time() - started
    assert in_worker == in_thread
    assert here < local / 5
