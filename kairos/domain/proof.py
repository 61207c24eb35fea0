"""The proof chain: ``proof_hash = sha256(previous_hash + canonical_json(record))``."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .texts import GENESIS_HASH

HASH_RE = re.compile(r"^[0-9a-f]{64}$")
RECORD_KEYS = ("run_id", "step_uri", "step_index", "challenge", "nonce", "solution",
               "previous_hash", "time")


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                              allow_nan=False)


def canonical_json(value: Any) -> str:
    """Sorted keys, no insignificant whitespace, UTF-8 (non-ASCII kept as is): what
    ``json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
    allow_nan=False)`` gives, from one encoder made once."""
    return _CANONICAL.encode(value)


def chain_hash(previous_hash: str, record: Mapping[str, Any]) -> str:
    body = {k: record[k] for k in RECORD_KEYS}
    return hashlib.sha256((previous_hash + canonical_json(body)).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Break:
    """The first link that does not hold."""

    index: int
    step_uri: str | None
    reason: str


def verify_chain(records: Iterable[Mapping[str, Any]]) -> tuple[str, int, Break | None]:
    """Recompute a run's chain in order. Returns (head, links checked, first break)."""
    previous = GENESIS_HASH
    count = 0
    for index, record in enumerate(records):
        count += 1
        if record.get("previous_hash") != previous:
            return previous, count, Break(index, record.get("step_uri"),
                                          "previous_hash does not match the preceding proof")
        try:
            expected = chain_hash(previous, record)
        except (KeyError, TypeError, ValueError) as exc:
            return previous, count, Break(index, record.get("step_uri"),
                                          f"record is malformed: {exc}")
        if record.get("proof_hash") != expected:
            return previous, count, Break(index, record.get("step_uri"),
                                          "proof_hash does not match the record's content")
        previous = expected
    return previous, count, None
