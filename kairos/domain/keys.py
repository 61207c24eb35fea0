"""Ed25519 signing keys: the key id, PEM, and the published key set.

A key id (``kid``) is the key's RFC 7638 JWK thumbprint, so anyone holding the public key
derives the same id and keys can rotate: the key set lists every key still trusted, and a
bundle names the key that signed it. Making a key's seed (entropy) is the caller's job.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Iterable
from typing import Any

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from .canonical import jcs
from .errors import ValidationError

KEYS_PATH = "/.well-known/kairos-keys.json"
SEED_BYTES = 32
_B64URL = re.compile(r"^[A-Za-z0-9_-]*$")
_RAW = serialization.Encoding.Raw, serialization.PublicFormat.Raw


def b64url(data: bytes) -> str:
    """Base64url without padding (RFC 7515, section 2)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    """The strict inverse of ``b64url``: ``ValueError`` for any other text."""
    if not _B64URL.match(text) or len(text) % 4 == 1:
        raise ValueError("not base64url without padding")
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except binascii.Error as exc:
        raise ValueError("not base64url without padding") from exc
    if b64url(data) != text:  # non-zero trailing bits: another text of the same bytes
        raise ValueError("not the canonical base64url of its bytes")
    return data


def private_key(key: Ed25519PrivateKey | bytes) -> Ed25519PrivateKey:
    """A key object as is; 32 bytes as the seed; other bytes as unencrypted PEM."""
    if isinstance(key, Ed25519PrivateKey):
        return key
    if len(key) == SEED_BYTES:
        return Ed25519PrivateKey.from_private_bytes(key)
    try:
        loaded = serialization.load_pem_private_key(key, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise ValidationError("key", "an Ed25519 private key in PEM (PKCS#8, unencrypted) "
                              "or its 32-byte seed") from exc
    if not isinstance(loaded, Ed25519PrivateKey):
        raise ValidationError("key", "an Ed25519 private key (this PEM holds another kind)")
    return loaded


def raw_public(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(*_RAW)


def key_id(public: Ed25519PublicKey | Ed25519PrivateKey) -> str:
    """RFC 7638 thumbprint: base64url(sha256(JCS of {crv, kty, x}))."""
    if isinstance(public, Ed25519PrivateKey):
        public = public.public_key()
    members = {"crv": "Ed25519", "kty": "OKP", "x": b64url(raw_public(public))}
    return b64url(hashlib.sha256(jcs(members)).digest())


def public_jwk(public: Ed25519PublicKey) -> dict[str, str]:
    return {"kid": key_id(public), "kty": "OKP", "crv": "Ed25519",
            "x": b64url(raw_public(public)), "alg": "EdDSA"}


#: The published key set: ``{"keys": [JWK, ...]}``.
KeySet = dict[str, list[dict[str, str]]]


def key_set(publics: Iterable[Ed25519PublicKey]) -> KeySet:
    """The document served at ``KEYS_PATH``: every key a bundle may be signed with."""
    return {"keys": [public_jwk(p) for p in publics]}


def private_pem(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def public_pem(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(serialization.Encoding.PEM,
                               serialization.PublicFormat.SubjectPublicKeyInfo)


def _from_jwk(jwk: Any, where: str) -> Ed25519PublicKey:
    if not isinstance(jwk, dict):
        raise ValidationError(where, "a JWK object")
    for name, value in (("kty", "OKP"), ("crv", "Ed25519")):
        if jwk.get(name) != value:
            raise ValidationError(f"{where}.{name}", repr(value))
    if jwk.get("alg", "EdDSA") != "EdDSA":
        raise ValidationError(f"{where}.alg", "'EdDSA'")
    x = jwk.get("x")
    try:
        raw = b64url_decode(x) if isinstance(x, str) else b""
    except ValueError:
        raw = b""
    if len(raw) != SEED_BYTES:
        raise ValidationError(f"{where}.x", "the 32-byte public key in base64url")
    public = Ed25519PublicKey.from_public_bytes(raw)
    if "kid" in jwk and jwk["kid"] != key_id(public):
        raise ValidationError(f"{where}.kid", f"the key's RFC 7638 thumbprint {key_id(public)}")
    return public


def public_keys(data: bytes | str) -> dict[str, Ed25519PublicKey]:
    """The trusted keys by ``kid``, read from a key set (``{"keys": [...]}``), one JWK, or a
    PEM public key; ``ValidationError`` naming the field at fault."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if raw.lstrip().startswith(b"-----BEGIN"):
        try:
            loaded = serialization.load_pem_public_key(raw)
        except (ValueError, UnsupportedAlgorithm) as exc:
            raise ValidationError("key", "an Ed25519 public key in PEM") from exc
        if not isinstance(loaded, Ed25519PublicKey):
            raise ValidationError("key", "an Ed25519 public key (this PEM holds another kind)")
        return {key_id(loaded): loaded}
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValidationError("key", "a key set, a JWK or a PEM public key") from exc
    if isinstance(doc, dict) and "keys" in doc:
        if not isinstance(doc["keys"], list) or not doc["keys"]:
            raise ValidationError("keys", "a non-empty array of JWKs")
        found = [_from_jwk(k, f"keys[{i}]") for i, k in enumerate(doc["keys"])]
    else:
        found = [_from_jwk(doc, "key")]
    return {key_id(k): k for k in found}
