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


_SAFE = 2**53 - 1


def _plain(value: Any) -> bool:
    """Whether the json module writes ``value`` byte for byte as RFC 8785 does: its
    escapes are RFC 8785's, and so is its key order while no key holds a character above
    U+FFFF; a float is the same text when Python writes it without an exponent and
    without ``.0`` (from 1e-4 to 1e16, not integral); an integer needs a range check."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        return -_SAFE <= value <= _SAFE
    if kind is float:
        return 1e-4 <= abs(value) < 1e16 and not value.is_integer()
    if kind is dict:
        return all(type(k) is str and (k.isascii() or max(k) <= "\uffff") and _plain(v)
                   for k, v in value.items())
    if kind is list:
        return all(_plain(v) for v in value)
    return False


def jcs(value: Any) -> bytes:
    """RFC 8785 bytes; ``ValueError`` for what JCS cannot hold (NaN, infinities, integers
    beyond ±(2^53 - 1), lone surrogates, keys that are not strings). Written by the json
    module's C encoder when that gives the same bytes (a chain link of most steps), by
    the ``rfc8785`` package otherwise."""
    if _plain(value):
        return _JSON_1.encode(value).encode("utf-8")
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
