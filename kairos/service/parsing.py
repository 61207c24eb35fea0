"""Where markdown is parsed: a small document in the calling thread, a large one in a
worker process.

A CommonMark parse allocates a token per block and per inline span. For a large document
— a megabyte of one-line list items makes a million tokens — the interpreter's cycle
collector passes over all of them, and freeing them at the end is one long call; either
holds the interpreter's lock long enough to stall every other request of the process. In
a worker process the server only waits for the drafts. The size limit is checked before
anything is sent; the worker parses under the caller's limits.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

from ..domain import markdown, problems
from ..domain.errors import INVALID_INPUT, MarkdownError
from ..domain.limits import Limits

__all__ = ["INLINE_CHARS", "Parser"]

T = TypeVar("T")

INLINE_CHARS = 32_768
"""Documents shorter than this are parsed in the calling thread (tens of milliseconds at
most, whatever they hold); longer ones in the worker process."""


class Parser:
    """``markdown.parse`` for the service, under the limits ``limits``. ``processes=False``
    parses everything in the calling thread (a one-shot command line has no other requests
    to protect)."""

    def __init__(self, limits: Limits, *, processes: bool = True) -> None:
        self.limits = limits
        self.processes = processes
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def parse(self, doc: str) -> list[markdown.ProtocolDraft]:
        """``markdown.parse``: the drafts, or the first problem raised."""
        return self._run(doc, markdown.parse)

    def problems(self, doc: str) -> tuple[list[markdown.ProtocolDraft], list[MarkdownError]]:
        """``problems.parse_all``: the drafts, or every problem (an editor's view)."""
        return self._run(doc, problems.parse_all)

    def _run(self, doc: str, parse: Callable[[str, Limits], T]) -> T:
        if not self.processes or len(doc) < INLINE_CHARS:
            return parse(doc, self.limits)
        markdown.check_text(doc, self.limits)
        try:
            return self._executor().submit(parse, doc, self.limits).result()
        except BrokenProcessPool:
            with self._lock:
                self._pool = None  # the next parse starts a new worker
            raise MarkdownError(INVALID_INPUT, "The document could not be parsed: the parser "
                                "stopped while reading it.", field="markdown_doc") from None

    def _executor(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ProcessPoolExecutor(
                    max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                    initializer=_leave_with_parent)
            return self._pool

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _leave_with_parent() -> None:
    """In the worker process: exit as soon as the server process is gone, however it
    ended (a server killed with SIGKILL closes nothing, and the worker, waiting on a
    queue it holds both ends of, would wait forever)."""
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_after, args=(parent.sentinel,), daemon=True).start()


def _exit_after(sentinel: int) -> None:
    multiprocessing.connection.wait([sentinel])
    os._exit(0)
