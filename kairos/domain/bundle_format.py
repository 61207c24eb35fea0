"""The run bundle's format, once: its fields and their JSON types, what the signed head
pins, the names of the links a verifier checks. ``docs/bundle.md`` says the same in
words; ``docs/verify_bundle.py`` repeats it without importing KAIROS."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

from .canonical import jcs, sha256_hex

FORMAT = "kairos-run-bundle"
VERSION = 1
ALG = "EdDSA"

# The links, in the order they are checked; a verdict names the first that breaks.
FORMAT_LINK = "format"          # I-JSON; the fields and their JSON types; a known format
SIGNATURE_LINK = "signature"    # a trusted key (by kid) signed the head's RFC 8785 bytes
HEAD_LINK = "head"              # every pin of the head matches the content
PROTOCOL_LINK = "protocol"      # the protocol's markdown hashes to its content_hash
CHALLENGE_LINK = "challenge"    # proof i answered step i+1 and the challenge it declares
CHAIN_LINK = "chain"            # each proof links to the one before and hashes to itself
CHAIN_HEAD_LINK = "chain_head"  # the last proof's hash is the head's chain_head
BODY_LINK = "body"              # nothing else changed: the body hashes to head.body_hash
PROVEN_LINK = "proven"          # a run said proven has a proof for every step
LINKS = (FORMAT_LINK, SIGNATURE_LINK, HEAD_LINK, PROTOCOL_LINK, CHALLENGE_LINK, CHAIN_LINK,
         CHAIN_HEAD_LINK, BODY_LINK, PROVEN_LINK)

# Every object's fields (no others) and their JSON types, in the order they are checked:
# an object, an array of one kind of item (``[...]``), ``(None, {...})`` for null or an
# object, "any" for any JSON value.
RUN = {"id": "string", "status": "string", "outcome": "string|null", "proven": "boolean",
       "created_at": "string", "updated_at": "string", "chain_rule": "string"}
STEP = {"uri": "string", "challenge": "object"}
PROTOCOL = {"id": "string", "version": "integer", "markdown": "string",
            "content_hash": "string", "steps": [STEP]}
PROOF = {"run_id": "string", "step_uri": "string", "step_index": "integer",
         "challenge": "object", "nonce": "string", "solution": "any",
         "previous_hash": "string", "time": "string", "proof_hash": "string"}
ATTESTATION = {"outcome": "string", "message": "string", "time": "string"}
HEAD = {"format": "string", "version": "integer", "run_id": "string", "chain_rule": "string",
        "outcome": "string|null", "run_hash": "string", "protocol_id": "string",
        "protocol_version": "integer", "protocol_hash": "string", "steps_hash": "string",
        "attestation_hash": "string", "proof_count": "integer", "chain_head": "string",
        "body_hash": "string"}
SIGNATURE = {"alg": "string", "kid": "string", "value": "string"}
SCHEMA: dict[str, Any] = {
    "format": "string", "version": "integer", "run": RUN, "protocol": PROTOCOL,
    "proofs": [PROOF], "attestation": (None, ATTESTATION), "head": HEAD,
    "signature": SIGNATURE}
UNSIGNED = ("head", "signature")  # the rest is the body, pinned whole by head.body_hash


def digest(value: Any) -> str:
    """sha256 (hex) of a value's RFC 8785 form: how the head pins a part of the content."""
    return sha256_hex(jcs(value))


def content_hash(markdown: str) -> str:
    """A protocol version's content hash: sha256 of its markdown's UTF-8 bytes."""
    return hashlib.sha256(markdown.encode("utf-8")).hexdigest()


def _same(value: Any) -> Any:
    return value


# What the head pins, in the order the verifier compares them: (head field, the content's
# field at that path, how the pin is made of it).
PINS: tuple[tuple[str, str, Callable[[Any], Any]], ...] = (
    ("format", "format", _same),
    ("version", "version", _same),
    ("run_id", "run.id", _same),
    ("chain_rule", "run.chain_rule", _same),
    ("outcome", "run.outcome", _same),
    ("run_hash", "run", digest),
    ("protocol_id", "protocol.id", _same),
    ("protocol_version", "protocol.version", _same),
    ("protocol_hash", "protocol.content_hash", _same),
    ("steps_hash", "protocol.steps", digest),
    ("attestation_hash", "attestation", digest),
    ("proof_count", "proofs", len),
)


def resolve(bundle: Mapping[str, Any], path: str) -> Any:
    value: Any = bundle
    for part in path.split("."):
        value = value[part]
    return value


def head_of(bundle: Mapping[str, Any], chain_head: str) -> dict[str, Any]:
    """The head a bundle's body calls for, with the chain's last hash (``ValueError`` for
    a body that is not I-JSON: see ``unholdable``)."""
    head = {key: pin(resolve(bundle, path)) for key, path, pin in PINS}
    head["chain_head"] = chain_head
    head["body_hash"] = digest(body(bundle))
    return head


def body(bundle: Mapping[str, Any]) -> dict[str, Any]:
    """What ``head.body_hash`` pins: the bundle but its head and signature."""
    return {k: v for k, v in bundle.items() if k not in UNSIGNED}


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return {float: "number", str: "string", list: "array", dict: "object"}.get(
        type(value), "not JSON")


def misfit(value: Any, schema: Any, path: str = "") -> tuple[str | None, str] | None:
    """The first place where ``value`` breaks ``schema`` (see ``SCHEMA``): its path (None
    for the whole) and what was expected there."""
    if isinstance(schema, tuple):
        return None if value is None else misfit(value, schema[1], path)
    want = ("object" if isinstance(schema, dict) else "array" if isinstance(schema, list)
            else schema)
    kind = json_type(value)
    if want != "any" and kind not in want.split("|"):
        return path or None, f"{want}, not {kind}"
    if isinstance(schema, list):
        for i, item in enumerate(value):
            found = misfit(item, schema[0], f"{path}[{i}]")
            if found:
                return found
    if isinstance(schema, dict):
        for name in [*schema, *sorted(set(value) - set(schema))]:
            at = f"{path}.{name}" if path else name
            if name not in value or name not in schema:
                return at, "this field" if name in schema else "no such field"
            found = misfit(value[name], schema[name], at)
            if found:
                return found
    return None


def unholdable(value: Any, path: str = "") -> str | None:
    """The path of the first value RFC 8785 cannot hold (an integer beyond ±(2^53 - 1), a
    number that is not finite, a string with a lone surrogate), or None. A bundle is
    I-JSON (RFC 7493): what every JSON reader reads alike."""
    if isinstance(value, dict | list):
        pairs = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in pairs:
            at = f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}" if path else key
            found = unholdable(key, at) if isinstance(key, str) else None
            found = found if found is not None else unholdable(item, at)
            if found is not None:
                return found
        return None
    try:
        jcs(value)
    except ValueError:
        return path
    return None


class DuplicateKey(ValueError):
    """Two readers could see two documents in a JSON text with a key twice."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) < len(pairs):
        raise DuplicateKey("duplicate keys")
    return found


def parse_bundle(text: str | bytes) -> Any:
    """A bundle's JSON: ``DuplicateKey`` for a key twice in an object, ``ValueError`` for
    text that is not JSON."""
    return json.loads(text, object_pairs_hook=_no_duplicates)
