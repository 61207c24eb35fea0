"""A signed run bundle: one JSON document that proves a run to anyone holding the server's
public key, with no server and no database (the format: ``docs/bundle.md``).

The content (the run, the protocol version it ran, every proof record, the attestation)
is pinned by a small **head**: identifiers, hashes of the content, and the chain's last
hash. The head's RFC 8785 bytes are signed with Ed25519, once per bundle.
``verify_bundle`` checks every link in a fixed order and names the first broken one;
``docs/verify_bundle.py`` implements the same checks without KAIROS and gives the same
verdict. No I/O here: a key comes in as an object or as bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from . import keys as keyring
from .bundle_format import (
    ALG,
    ATTESTATION,
    BODY_LINK,
    CHAIN_HEAD_LINK,
    CHAIN_LINK,
    CHALLENGE_LINK,
    FORMAT,
    FORMAT_LINK,
    HEAD_LINK,
    PINS,
    PROOF,
    PROTOCOL_LINK,
    PROVEN_LINK,
    RUN,
    SCHEMA,
    SIGNATURE_LINK,
    VERSION,
    DuplicateKey,
    body,
    content_hash,
    digest,
    head_of,
    misfit,
    parse_bundle,
    resolve,
    unholdable,
)
from .canonical import CHAIN_RULES, jcs
from .challenge import ISSUED
from .errors import ValidationError
from .proof import chain_hash
from .run_data import ProtocolData
from .texts import GENESIS_HASH

#: A bundle as JSON values (its shape: ``bundle_format.SCHEMA``).
Bundle = dict[str, Any]


def build_bundle(run: Mapping[str, Any], version: ProtocolData,
                 proofs: Sequence[Mapping[str, Any]], attestation: Mapping[str, Any] | None,
                 key: Ed25519PrivateKey | bytes) -> Bundle:
    """The signed bundle of a run that began on ``version``. ``run`` holds the fields of
    ``bundle_format.RUN`` (its ``chain_rule``: the rule its chain was hashed with, one of
    ``canonical.CHAIN_RULES``), ``attestation`` (the latest) those of ``ATTESTATION``, and
    ``proofs`` are the run's records in order, each with its ``proof_hash`` (all as the
    store keeps them; other keys are left out). Signs once and checks nothing of the chain:
    the verifier does. ``ValidationError`` when a part breaks the format."""
    signer = keyring.private_key(key)
    bundle: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "run": {name: run[name] for name in RUN},
        "protocol": {"id": version.protocol_id, "version": version.version,
                     "markdown": version.markdown, "content_hash": "",
                     "steps": [{"uri": s.uri, "challenge": dict(s.challenge)}
                               for s in version.steps]},
        "proofs": [{name: p.get(name) for name in PROOF} for p in proofs],
        "attestation": None if attestation is None else {
            name: attestation[name] for name in ATTESTATION},
    }
    outside = unholdable(bundle)
    if outside is not None:
        raise ValidationError(outside, "JSON that RFC 8785 can hold: integers within "
                              "±(2^53 - 1), finite numbers, no lone surrogates")
    bundle["protocol"]["content_hash"] = content_hash(version.markdown)
    bundle["head"] = head_of(bundle, bundle["proofs"][-1]["proof_hash"] if proofs
                             else GENESIS_HASH)
    bundle["signature"] = {"alg": ALG, "kid": keyring.key_id(signer), "value": ""}
    wrong = misfit(bundle, SCHEMA)
    if wrong is not None:
        raise ValidationError(wrong[0] or "bundle", wrong[1])
    bundle["signature"]["value"] = keyring.b64url(signer.sign(jcs(bundle["head"])))
    return bundle


@dataclass(frozen=True)
class Verdict:
    """What a verifier found: valid, or the first broken link — which check (``link``),
    which field of the bundle (a path such as ``proofs[2].step_uri``), which step (1-based),
    and why."""

    valid: bool
    reason: str
    link: str | None = None
    field: str | None = None
    step: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"valid": self.valid, "link": self.link, "field": self.field,
                "step": self.step, "reason": self.reason}


class _Broken(Exception):
    def __init__(self, link: str, field: str | None, reason: str, step: int | None = None):
        super().__init__(reason)
        self.verdict = Verdict(False, reason, link, field, step)


def _need(ok: bool, link: str, field: str | None, reason: str, step: int | None = None
          ) -> None:
    if not ok:
        raise _Broken(link, field, reason, step)


def _check_format(b: Any) -> None:
    _need(unholdable(b) is None, FORMAT_LINK, None, "expected numbers and text RFC 8785 can hold")
    wrong = misfit(b, SCHEMA)
    if wrong is not None:
        raise _Broken(FORMAT_LINK, wrong[0], f"expected {wrong[1]}")
    _need(b["format"] == FORMAT, FORMAT_LINK, "format", f"expected {FORMAT}")
    _need(b["version"] == VERSION, FORMAT_LINK, "version",
          f"expected {VERSION}, the version this reads")
    _need(b["run"]["chain_rule"] in CHAIN_RULES, FORMAT_LINK, "run.chain_rule",
          "expected a rule")


def _check_signature(b: dict[str, Any], trusted: Mapping[str, Ed25519PublicKey]) -> None:
    sig = b["signature"]
    _need(sig["alg"] == ALG, SIGNATURE_LINK, "signature.alg", f"expected {ALG}")
    _need(sig["kid"] in trusted, SIGNATURE_LINK, "signature.kid", "expected a trusted key's id")
    try:
        value = keyring.b64url_decode(sig["value"])
    except ValueError:
        value = b""
    _need(len(value) == 64, SIGNATURE_LINK, "signature.value", "expected 64 bytes")
    try:
        trusted[sig["kid"]].verify(value, jcs(b["head"]))
    except InvalidSignature:
        raise _Broken(SIGNATURE_LINK, "signature.value", "does not sign this head") from None


def _check_content(b: dict[str, Any]) -> None:
    """The head's pins, the protocol's text, each proof's step and challenge."""
    for key, path, pin in PINS:
        _need(b["head"][key] == pin(resolve(b, path)), HEAD_LINK, path,
              f"does not match head.{key}")
    _need(content_hash(b["protocol"]["markdown"]) == b["protocol"]["content_hash"],
          PROTOCOL_LINK, "protocol.markdown", "does not hash to protocol.content_hash")
    steps = b["protocol"]["steps"]
    for i, proof in enumerate(b["proofs"]):
        at, n = f"proofs[{i}].", i + 1
        _need(proof["step_index"] == i < len(steps), CHALLENGE_LINK, at + "step_index",
              f"expected {i}, one of the {len(steps)} steps", n)
        _need(proof["step_uri"] == steps[i]["uri"], CHALLENGE_LINK, at + "step_uri",
              f"expected the uri of step {n}", n)
        declared = {k: v for k, v in proof["challenge"].items() if k not in ISSUED}
        _need(digest(declared) == digest(steps[i]["challenge"]), CHALLENGE_LINK,
              at + "challenge", f"expected the challenge of step {n}", n)


def _check_chain(b: dict[str, Any]) -> None:
    rule, previous = b["run"]["chain_rule"], GENESIS_HASH
    for i, proof in enumerate(b["proofs"]):
        at, n = f"proofs[{i}]", i + 1
        _need(proof["previous_hash"] == previous, CHAIN_LINK, at + ".previous_hash",
              "expected the hash of the proof before", n)
        previous = chain_hash(previous, proof, rule)
        _need(previous == proof["proof_hash"], CHAIN_LINK, at,
              f"does not hash to its proof_hash under {rule}", n)
    _need(previous == b["head"]["chain_head"], CHAIN_HEAD_LINK, "head.chain_head",
          "expected the last proof's hash")


def verify_bundle(bundle: Any,
                  trusted: Mapping[str, Ed25519PublicKey] | Iterable[Ed25519PublicKey]
                  ) -> Verdict:
    """Check every link of ``bundle`` (parsed JSON) in order: its format, the signature by
    one of the ``trusted`` keys (by kid, as ``keys.public_keys`` gives them), the head's
    pins, the protocol's text, each proof's step and challenge, each chain link under the
    run's rule, the chain's head, the body, and what ``proven`` claims. The first link
    that breaks is the verdict."""
    if not isinstance(trusted, Mapping):
        trusted = {keyring.key_id(k): k for k in trusted}
    try:
        _check_format(bundle)
        _check_signature(bundle, trusted)
        _check_content(bundle)
        _check_chain(bundle)
        _need(bundle["head"]["body_hash"] == digest(body(bundle)), BODY_LINK, None,
              "expected what head.body_hash pins: no field added, removed or of another type")
        run, proofs, steps = bundle["run"], bundle["proofs"], bundle["protocol"]["steps"]
        _need(not run["proven"] or len(proofs) == len(steps), PROVEN_LINK, "run.proven",
              f"expected a proof for each of the {len(steps)} steps")
    except _Broken as broken:
        return broken.verdict
    return Verdict(True, f"run {run['id']}: {len(proofs)} proofs chained under "
                         f"{run['chain_rule']}, signed by key {bundle['signature']['kid']}")


def verify_text(text: str | bytes,
                trusted: Mapping[str, Ed25519PublicKey] | Iterable[Ed25519PublicKey]) -> Verdict:
    """``verify_bundle`` of a bundle file's text. ``ValueError`` for text that is not JSON
    (a file that cannot be read as a bundle at all); a key twice in an object breaks the
    format."""
    try:
        bundle = parse_bundle(text)
    except DuplicateKey:
        return Verdict(False, "expected no duplicate keys", FORMAT_LINK)
    return verify_bundle(bundle, trusted)


__all__ = ["Verdict", "build_bundle", "verify_bundle", "verify_text"]
