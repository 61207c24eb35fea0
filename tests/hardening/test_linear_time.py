"""No crafted input costs more than a plain input of the same size, give or take a small
factor: each check is measured against a plain input of the same length in the same run
(CPU time of this thread, best of five), never against a wall-clock threshold.

The crafted inputs are the ones that used to stall the server: an unclosed string of
escaped quotes (quadratic in the JSON depth check, in a request body and in a json
challenge block), 299-digit numbers (the overlong-number check), a heading of ``1. `` ×
300,000 (label prefixes), and the inputs that make CommonMark parsers slow."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest

from kairos.api.guard import BodyCheck
from kairos.domain import limits, markdown
from kairos.domain.errors import KairosError
from kairos.domain.json_scan import PIECE

#: Crafted work over plain work of the same size. Linear checks measure 1–4; the quadratic
#: ones they replace measured thousands at these sizes.
RATIO = 10


def work(fn: Callable[[Any], object], arg: Any) -> float:
    """CPU seconds of ``fn(arg)`` in this thread, the best of five."""
    best = math.inf
    for _ in range(5):
        started = time.thread_time()
        with contextlib.suppress(KairosError):
            fn(arg)
        best = min(best, time.thread_time() - started)
    return max(best, 1e-6)


def body(text: str) -> bytes:
    return text.encode("utf-8")


N = 50_000


def check_body(data: bytes) -> None:
    """The gate's body check, fed the body a piece at a time as the gate feeds it."""
    check = BodyCheck(limits.DEFAULT.json_depth)
    for start in range(0, len(data), PIECE):
        check.feed(data[start:start + PIECE])
    check.finish()
    check.decode()


CRAFTED: dict[str, tuple[Callable[[Any], object], Any, Any]] = {
    "a body of escaped quotes": (
        check_body, body('{"markdown_doc": "' + '\\"' * N + '"}'),
        body('{"markdown_doc": "' + "ab" * N + '"}')),
    "an unclosed string of escaped quotes": (
        check_body, body('{"markdown_doc": "' + '\\"' * N),
        body('{"markdown_doc": "' + "ab" * N)),
    "escaped quotes in a json challenge block": (
        markdown.parse, '# T\n\n## S\n\n```json\n{"challenge": "' + '\\"' * N + "\n```\n",
        '# T\n\n## S\n\n```json\n{"challenge": "' + "ab" * N + "\n```\n"),
    "3.9 MB of 299-digit numbers": (
        check_body, body("[" + ",".join(["9" * 299] * 13_000) + "]"),
        body("[" + ",".join(['"' + "a" * 297 + '"'] * 13_000) + "]")),
    "a heading of '1. ' × 300,000": (
        markdown.parse, "# T\n\n## " + "1. " * 300_000 + "x\n",
        "# T\n\n## " + "abc" * 300_000 + "x\n"),
    "brackets within the depth limit": (
        check_body, body("[" * 60 + "]" * 60 + "[]" * 500_000),
        body('["' + "ab" * 500_000 + '"]')),
}


@pytest.mark.parametrize("case", CRAFTED.values(), ids=CRAFTED.keys())
def test_crafted_input_costs_what_a_plain_one_of_its_size_does(
        case: tuple[Callable[[Any], object], Any, Any]) -> None:
    fn, crafted, plain = case
    assert abs(len(crafted) - len(plain)) <= len(plain) // 100
    assert work(fn, crafted) / work(fn, plain) < RATIO


def test_the_depth_check_still_counts_what_it_should() -> None:
    assert limits.json_depth('{"a": [1, {"b": "[[[\\"]]"}]}') == 3
    assert limits.json_depth('["\\\\", ["\\\\\\"", []]]') == 3
    assert limits.json_depth("[" * 100) == 100
    assert limits.json_depth("[" * 100, stop_above=10) > 10


# --- CommonMark's slow inputs -------------------------------------------------------------

SIZE = 200_000  # characters; every input below is cut to it
PLAIN = ("# T\n\n" + "".join(f"## Step {i}\n\nDo the thing number {i} with care, then check"
                             f" it.\n\nPROOF OF WORK: echo {i}\n\n" for i in range(5_000)))
PATHOLOGICAL = {
    "nested brackets": "[" * SIZE,
    "emphasis openers": "*a " * SIZE,
    "emphasis closers": "a* " * SIZE,
    "nested strong and emphasis": "*a **a " * SIZE,
    "link closers": "a]" * SIZE,
    "unclosed link destinations": "[a](<b" * SIZE,
    "unclosed links": "[a](b" * SIZE,
    "unclosed comments": "a <!--" * SIZE,
    "unclosed processing instructions": "a <?" * SIZE,
    "unclosed declarations": "a <!A " * SIZE,
    "unclosed CDATA": "a <![CDATA[" * SIZE,
    "nested block quotes": "> " * SIZE + "a",
    "nested lists": "".join("  " * i + "- a\n" for i in range(2_000)),
    "link reference definitions": "[a]: /b\n" * SIZE,
    "reference links": "[a]: /b\n\n" + "[a] " * SIZE,
    "list items": "- a\n" * SIZE,
    "backticks": "".join("e" + "`" * i for i in range(1, 700)),
    "unclosed fences": "```\n" * SIZE,
    "proof prefixes": "- - PROOF OF WOR\n" * SIZE,
    "proof lines in a paragraph": "PROOF OF WORK: *a\n" * SIZE,
}


def _mint_text(text: str) -> str:
    return ("# T\n\n## S\n\nPROOF OF WORK: echo\n\n" + text)[:SIZE]


@pytest.mark.parametrize("text", PATHOLOGICAL.values(), ids=PATHOLOGICAL.keys())
def test_pathological_markdown_parses_in_linear_time(text: str) -> None:
    """CommonMark parsing costs more per character on some inputs (many tiny blocks), but
    never grows much faster than the input: four times the text costs four to six times the
    work (the collector's passes grow with the live tokens), where a quadratic parse would
    cost sixteen."""
    parse = partial(markdown.parse, lim=limits.Limits(steps=100_000))
    quarter = work(parse, _mint_text(text)[: SIZE // 4])
    whole = work(parse, _mint_text(text))
    plain = work(parse, PLAIN[:SIZE])
    assert whole / quarter < 12
    assert whole / plain < 40
