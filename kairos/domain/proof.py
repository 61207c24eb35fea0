"""The proof chain: ``proof_hash = sha256(previous_hash + canonical(record))``, canonical
under the run's chain rule (``canonical.py``)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .canonical import KAIROS_JSON_1, canonical_bytes, canonical_json, sha256_hex
from .texts import GENESIS_HASH

HASH_RE = re.compile(r"^[0-9a-f]{64}$")
RECORD_KEYS = ("run_id", "step_uri", "step_index", "challenge", "nonce", "solution",
               "previous_hash", "time")
__all__ = ["HASH_RE", "RECORD_KEYS", "Break", "canonical_json", "chain_hash", "verify_chain"]


def chain_hash(previous_hash: str, record: Mapping[str, Any], rule: str = KAIROS_JSON_1) -> str:
    """The record's hash under the run's chain rule (``canonical.CHAIN_RULES``)."""
    body = {k: record[k] for k in RECORD_KEYS}
    return sha256_hex(previous_hash.encode("utf-8") + canonical_bytes(body, rule))


@dataclass(frozen=True)
class Break:
    """The first link that does not hold."""

    index: int
    step_uri: str | None
    reason: str


def verify_chain(records: Iterable[Mapping[str, Any]], rule: str = KAIROS_JSON_1
                 ) -> tuple[str, int, Break | None]:
    """Recompute a run's chain in order. Returns (head, links checked, first break)."""
    previous = GENESIS_HASH
    count = 0
    for index, record in enumerate(records):
        count += 1
        if record.get("previous_hash") != previous:
            return previous, count, Break(index, record.get("step_uri"),
                                          "previous_hash does not match the preceding proof")
        try:
            expected = chain_hash(previous, record, rule)
        except (KeyError, TypeError, ValueError) as exc:
            return previous, count, Break(index, record.get("step_uri"),
                                          f"record is malformed: {exc}")
        if record.get("proof_hash") != expected:
            return previous, count, Break(index, record.get("step_uri"),
                                          "proof_hash does not match the record's content")
        previous = expected
    return previous, count, None
