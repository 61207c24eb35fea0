"""The two chain rules: the first runs' bytes kept exactly, RFC 8785 for runs from now on."""

from __future__ import annotations

import json
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.domain.canonical import (
    CHAIN_RULES,
    KAIROS_JSON_1,
    NEW_RUN_RULE,
    RFC8785,
    canonical_bytes,
    canonical_json,
)
from kairos.domain.proof import chain_hash, verify_chain
from kairos.domain.texts import GENESIS_HASH

RECORD: dict[str, Any] = {
    "run_id": "r-1", "step_uri": "kairos://mem/s1", "step_index": 0,
    "challenge": {"type": "shell", "description": "Execute shell command: make test",
                  "nonce": "n-1", "proof_hash": GENESIS_HASH,
                  "shell": {"cmd": "make test", "timeout_seconds": 2.5}},
    "nonce": "n-1",
    "solution": {"type": "shell", "nonce": "n-1", "proof_hash": GENESIS_HASH,
                 "shell": {"exit_code": 0, "stdout": "412 passed ✓", "elapsed_seconds": 3.0,
                           "load": 1e-07, "\U0001f680": 1, "\uff5e": 2}},
    "previous_hash": GENESIS_HASH, "time": "2025-03-14T09:00:00+00:00"}


@pytest.mark.req("D4-2")
def test_the_first_rule_hashes_a_record_as_the_first_runs_did() -> None:
    """The hash the chain had before rules were named (computed with that code): every
    recorded run keeps verifying, and the default stays the first rule."""
    old = "579e119f048fdc967093e5dc924c0dbf5c62f288bff4f9e128af3d807bf34c0a"
    assert chain_hash(GENESIS_HASH, RECORD) == old
    assert chain_hash(GENESIS_HASH, RECORD, KAIROS_JSON_1) == old


def test_rfc8785_hashes_the_same_record_with_other_bytes() -> None:
    jcs = chain_hash(GENESIS_HASH, RECORD, RFC8785)
    assert jcs == "a3ae8c68e40ff38cf7746f5ee341f60b7af013a92f0cb8694ebc5c6b28b8b1db"
    text = canonical_bytes(RECORD["solution"]["shell"], RFC8785).decode("utf-8")
    assert text == ('{"elapsed_seconds":3,"exit_code":0,"load":1e-7,'
                    '"stdout":"412 passed ✓","🚀":1,"～":2}')  # UTF-16 order: 🚀 < ～
    assert canonical_json(RECORD["solution"]["shell"]) == (
        '{"elapsed_seconds":3.0,"exit_code":0,"load":1e-07,'
        '"stdout":"412 passed ✓","～":2,"🚀":1}')  # code point order: ～ < 🚀
    assert NEW_RUN_RULE == RFC8785 and CHAIN_RULES == (KAIROS_JSON_1, RFC8785)


def test_a_chain_verifies_under_its_own_rule_only() -> None:
    first = dict(RECORD, proof_hash=chain_hash(GENESIS_HASH, RECORD, RFC8785))
    assert verify_chain([first], RFC8785) == (first["proof_hash"], 1, None)
    broken = verify_chain([first])[2]
    assert broken is not None and broken.reason == "proof_hash does not match the record's content"


def test_an_unknown_rule_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown chain rule 'sha1'"):
        canonical_bytes({}, "sha1")
    broken = verify_chain([dict(RECORD, proof_hash="0" * 64)], "sha1")[2]
    assert broken is not None and "unknown chain rule" in broken.reason


def test_rfc8785_refuses_what_it_cannot_hold() -> None:
    for value in (2**53, float("nan"), float("inf"), "\ud800"):
        with pytest.raises(ValueError):
            canonical_bytes({"v": value}, RFC8785)
    assert canonical_bytes(2**53 - 1, RFC8785) == b"9007199254740991"


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=200, deadline=None)
@given(JSON)
def test_the_rules_are_the_libraries_they_name(value: Any) -> None:
    assert canonical_bytes(value, KAIROS_JSON_1) == json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
        allow_nan=False).encode("utf-8")
    assert canonical_bytes(value, RFC8785) == rfc8785.dumps(value)


EDGES = [0.0001, 0.00009999999999999999, 9999999999999998.0, 1e16, 1e16 + 2, 0.1, 1e-7,
         123.456, 3.0, -3.0, -0.5, 5e-324, 1e21, 2**53 - 1, -(2**53 - 1), "\x7f\u2028\x1f",
         {"\U0001f680": 1, "\uff5e": 2}, {"\ue000": 1, "\U00010000": 2}, [1.5, {"a": 2.0}]]


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.sampled_from(EDGES), st.floats(allow_nan=False, allow_infinity=False),
                 st.dictionaries(st.text(alphabet=st.characters(codec="utf-8")), st.floats(
                     allow_nan=False, allow_infinity=False) | st.integers(-(2**53) + 1,
                                                                          2**53 - 1))))
def test_the_fast_path_writes_what_the_rfc8785_package_writes(value: Any) -> None:
    """Most records go through the json module's C encoder: byte for byte the same."""
    assert canonical_bytes(value, RFC8785) == rfc8785.dumps(value)
