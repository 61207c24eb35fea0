"""Signing keys: ids (RFC 7638 thumbprints), PEM, the published key set, and reading keys
back with errors that name the field."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairos.domain import keys
from kairos.domain.errors import ValidationError

# RFC 8037, appendix A: an Ed25519 key, its JWK thumbprint and a signature.
RFC8037_D = "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"
RFC8037_X = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
RFC8037_KID = "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"
RFC8037_SIGNED = b"eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc"
RFC8037_SIGNATURE = ("hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7"
                     "sVvpAr_MuM0KAg")
KEY = keys.private_key(keys.b64url_decode(RFC8037_D))


def test_a_key_is_known_by_its_rfc7638_thumbprint() -> None:
    assert keys.public_jwk(KEY.public_key()) == {
        "kid": RFC8037_KID, "kty": "OKP", "crv": "Ed25519", "x": RFC8037_X, "alg": "EdDSA"}
    assert keys.key_id(KEY) == keys.key_id(KEY.public_key()) == RFC8037_KID
    assert keys.b64url(KEY.sign(RFC8037_SIGNED)) == RFC8037_SIGNATURE


def test_the_key_set_reads_back_as_the_keys_it_lists() -> None:
    other = keys.private_key(bytes(32))
    document = keys.key_set([KEY.public_key(), other.public_key()])
    assert [k["kid"] for k in document["keys"]] == [RFC8037_KID, keys.key_id(other)]
    found = keys.public_keys(json.dumps(document))
    assert {kid: keys.raw_public(k) for kid, k in found.items()} == {
        RFC8037_KID: keys.raw_public(KEY.public_key()),
        keys.key_id(other): keys.raw_public(other.public_key())}
    assert list(keys.public_keys(json.dumps(document["keys"][0]))) == [RFC8037_KID]
    assert keys.KEYS_PATH == "/.well-known/kairos-keys.json"


def test_pem_round_trips() -> None:
    pem = keys.private_pem(KEY)
    assert pem.startswith(b"-----BEGIN PRIVATE KEY-----")
    assert keys.key_id(keys.private_key(pem)) == RFC8037_KID
    assert keys.private_key(KEY) is KEY
    assert list(keys.public_keys(keys.public_pem(KEY.public_key()))) == [RFC8037_KID]


@pytest.mark.parametrize(("document", "field"), [
    ({"keys": []}, "keys"),
    ({"keys": "x"}, "keys"),
    ({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": RFC8037_X, "kid": "other"}]},
     "keys[0].kid"),
    ({"keys": [{"kty": "OKP", "crv": "X25519", "x": RFC8037_X}]}, "keys[0].crv"),
    ({"keys": [{"kty": "RSA"}]}, "keys[0].kty"),
    ({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": RFC8037_X, "alg": "ES256"}]},
     "keys[0].alg"),
    ({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": RFC8037_X},
               {"kty": "OKP", "crv": "Ed25519", "x": "abc"}]}, "keys[1].x"),
    ({"keys": ["x"]}, "keys[0]"),
    ({"kty": "OKP", "crv": "Ed25519"}, "key.x"),
])
def test_a_bad_key_set_names_its_field(document: object, field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        keys.public_keys(json.dumps(document))
    assert caught.value.field == field


@pytest.mark.parametrize("data", [b"not json", b"-----BEGIN PUBLIC KEY-----\nAAAA\n",
                                  b"\xff\xfe"])
def test_what_is_no_key_at_all_is_refused(data: bytes) -> None:
    with pytest.raises(ValidationError) as caught:
        keys.public_keys(data)
    assert caught.value.field == "key"


def test_a_private_key_must_be_an_ed25519_seed_or_pem() -> None:
    with pytest.raises(ValidationError) as caught:
        keys.private_key(b"too short")
    assert caught.value.field == "key"


@given(st.binary(max_size=70))
def test_base64url_round_trips_and_reads_only_its_own_text(data: bytes) -> None:
    text = keys.b64url(data)
    assert keys.b64url_decode(text) == data and "=" not in text
    for other in (text + "=", text + "*", "+" + text, text + "=="):
        with pytest.raises(ValueError):
            keys.b64url_decode(other)


@pytest.mark.parametrize("text", ["YQ=", "YR", "Y", "a+b/", "YQ=="])
def test_base64url_refuses_other_spellings(text: str) -> None:
    with pytest.raises(ValueError):
        keys.b64url_decode(text)
