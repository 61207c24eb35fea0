"""Canonical JSON: the bytes a hash or a signature is taken over, by named rule.

A run records the rule its proof chain was hashed with (``docs/bundle.md``):

- ``kairos-json-1``: Python's ``json.dumps(value, sort_keys=True, separators=(",", ":"),
  ensure_ascii=False, allow_nan=False)``, UTF-8. The chains of the first runs use it, and
  they keep verifying with it.
- ``rfc8785``: the JSON Canonicalization Scheme (RFC 8785), which any language can
  reproduce: keys sorted by UTF-16 code units, numbers as ECMAScript prints them, integers
  within ±(2^53 - 1). New runs record it; the signed head of a bundle always uses it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import rfc8785

KAIROS_JSON_1 = "kairos-json-1"
RFC8785 = "rfc8785"
CHAIN_RULES = (KAIROS_JSON_1, RFC8785)
NEW_RUN_RULE = RFC8785  # what a run that begins from now on records

_JSON_1 = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                           allow_nan=False)


def canonical_json(value: Any) -> str:
    """``kairos-json-1`` as text, from one encoder made once."""
    return _JSON_1.encode(value)


def jcs(value: Any) -> bytes:
    """RFC 8785 bytes; ``ValueError`` for what JCS cannot hold (NaN, infinities, integers
    beyond ±(2^53 - 1), lone surrogates, keys that are not strings)."""
    return rfc8785.dumps(value)


def canonical_bytes(value: Any, rule: str) -> bytes:
    """``value`` canonicalised under ``rule`` (one of ``CHAIN_RULES``)."""
    if rule == RFC8785:
        return jcs(value)
    if rule == KAIROS_JSON_1:
        return canonical_json(value).encode("utf-8")
    raise ValueError(f"unknown chain rule {rule!r}; expected one of {', '.join(CHAIN_RULES)}")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
