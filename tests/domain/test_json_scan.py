"""JSON text scanned in pieces reads the same as the whole text, and as its parse: values,
nesting, numbers, the bad-text hint, and "certainly not JSON" only for text no parser
accepts — wherever the pieces are cut (inside escapes, strings, numbers, patterns)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.domain.errors import ValidationError
from kairos.domain.json_scan import NUMBER_DIGITS, JsonScan
from kairos.domain.limits import bad_text

TEXT = st.text(alphabet=st.sampled_from('ab"\\/[]{},:\x00\ud800é😀 \n\tu0123456789eE+-'),
               max_size=12)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30),
                    st.floats(allow_nan=True, allow_infinity=True), TEXT)
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)), max_leaves=20)


def scan(data: bytes, cuts: list[int]) -> JsonScan:
    """``data`` fed in pieces cut at ``cuts``."""
    scanner = JsonScan(checks=False)
    last = 0
    for cut in sorted({c % (len(data) + 1) for c in cuts}):
        scanner.feed(data[last:cut])
        last = cut
    scanner.feed(data[last:])
    return scanner.finish()


def depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    return 0


def values(value: Any) -> int:
    """What the scan counts (one, and per container its opening bracket and the commas
    between its items): every value, and once more every empty container."""
    if isinstance(value, dict | list):
        items = list(value.values()) if isinstance(value, dict) else value
        return 1 + (not items) + sum(map(values, items))
    return 1


def finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(map(finite, value.values()))
    if isinstance(value, list):
        return all(map(finite, value))
    return True


@settings(max_examples=400, deadline=None)
@given(VALUES, st.booleans(), st.integers(0, 2), st.lists(st.integers(0, 10**6), max_size=8))
def test_json_in_pieces_reads_as_its_parse(value: Any, ascii_only: bool, indent: int,
                                           cuts: list[int]) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only, indent=indent or None)
    data = text.encode("utf-8", "surrogatepass")
    whole, pieces = scan(data, []), scan(data, cuts)
    seen = (whole.values, whole.deepest, whole.not_json, whole.suspect)
    assert (pieces.values, pieces.deepest, pieces.not_json, pieces.suspect) == seen
    assert whole.values == values(value)
    assert whole.deepest == depth(value)
    assert not whole.not_json
    utf8 = "\ud800" not in text  # a raw lone surrogate is no UTF-8 (refused as such)
    if utf8 and (bad_text(value) is not None or not finite(value)):
        assert whole.suspect  # the hint never misses what the walk would find


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from('"\\[]{},:a1 '), max_size=40),
       st.lists(st.integers(0, 10**6), max_size=8))
def test_certainly_not_json_is_never_json(text: str, cuts: list[int]) -> None:
    data = text.encode()
    result = scan(data, cuts)
    assert result.not_json == scan(data, []).not_json
    if result.not_json:
        with pytest.raises(ValueError):
            json.loads(text)


@pytest.mark.parametrize("cut", range(1, 12))
def test_a_long_number_is_refused_wherever_it_is_cut(cut: int) -> None:
    data = b"[" + b"9" * (NUMBER_DIGITS + 1) + b"]"
    scanner = JsonScan()
    with pytest.raises(ValidationError, match="digits"):
        for start in range(0, len(data), cut):
            scanner.feed(data[start:start + cut])
    digits_in_a_string = b'["' + b"9" * 500 + b'", ' + b"9" * NUMBER_DIGITS + b"]"
    assert not scan(digits_in_a_string, list(range(0, 600, 7))).not_json


def test_an_unclosed_string_of_escaped_quotes_is_not_json_whatever_its_pieces() -> None:
    crafted = b'{"markdown_doc": "' + b'\\"' * 100_000
    assert scan(crafted, []).not_json and scan(crafted, list(range(1, 200_000, 977))).not_json
    closed = crafted + b'"}'
    assert not scan(closed, list(range(1, 200_000, 977))).not_json
