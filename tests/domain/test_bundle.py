"""Signed run bundles built and verified by the package: every link checked in order, the
first broken one named (the format: docs/bundle.md)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.domain import engine, keys
from kairos.domain.bundle import (
    build_bundle,
    verify_bundle,
    verify_text,
)
from kairos.domain.bundle_format import LINKS, PROOF, SCHEMA, content_hash, head_of
from kairos.domain.canonical import CHAIN_RULES, KAIROS_JSON_1, RFC8785, jcs
from kairos.domain.errors import ValidationError
from kairos.domain.proof import RECORD_KEYS
from kairos.domain.run_data import ProtocolData
from kairos.domain.texts import GENESIS_HASH

from . import bundlekit as kit

TRUSTED = [kit.KEY.public_key()]


def _broken(bundle: Any, trusted: Any = None) -> tuple[str | None, str | None, int | None]:
    verdict = verify_bundle(bundle, TRUSTED if trusted is None else trusted)
    assert not verdict.valid, verdict
    return verdict.link, verdict.field, verdict.step


def _resign(bundle: dict[str, Any], key: Any = kit.KEY) -> dict[str, Any]:
    """What a server holding ``key`` would sign: the head as it stands."""
    bundle["signature"]["kid"] = keys.key_id(key)
    bundle["signature"]["value"] = keys.b64url(key.sign(jcs(bundle["head"])))
    return bundle


@pytest.mark.parametrize("rule", CHAIN_RULES)
def test_a_run_of_each_chain_rule_verifies(rule: str) -> None:
    verdict = verify_bundle(kit.make(rule), TRUSTED)
    assert verdict.to_dict() == {
        "valid": True, "link": None, "field": None, "step": None,
        "reason": f"run {kit.RUN_ID}: 4 proofs chained under {rule}, signed by key "
                  f"{keys.key_id(kit.KEY)}"}


def test_a_run_the_engine_made_bundles_and_verifies() -> None:
    """The engine's own records (today's rule, kairos-json-1) are what a bundle holds."""
    steps = [engine.StepView(s.uri, f"step {i}", c) for i, (s, c) in
             enumerate(kit.steps_of())]
    state, _ = engine.begin(steps, 0, kit.RUN_ID, "nonce-0")
    proofs = []
    for i, step in enumerate(steps):
        kind = step.challenge.type
        solution = {"type": kind, "nonce": state.nonce, "proof_hash": state.head,
                    kind: kit.SOLUTIONS[kind]}
        out = engine.answer(steps, state, solution, sent_uri=step.uri, new_nonce=f"nonce-{i + 1}",
                            now=f"2025-03-14T09:0{i}:00+00:00")
        assert isinstance(out, engine.Accepted), out
        state = out.state
        proofs.append(out.record)
    assert state.status == engine.FINISHED
    bundle = build_bundle(kit.run_facts(KAIROS_JSON_1), kit.version_facts(), proofs,
                          kit.ATTESTATION, kit.KEY)
    assert verify_bundle(bundle, TRUSTED).valid
    assert bundle["head"]["chain_head"] == state.head
    assert set(PROOF) == {*RECORD_KEYS, "proof_hash"}  # a bundle's proof is a stored record


@pytest.mark.parametrize("rule", CHAIN_RULES)
def test_every_single_field_change_is_caught_and_named(rule: str) -> None:
    """Each scalar of a bundle, changed alone (the list comes from the bundle, so a new
    field is covered without touching this test): the verdict names the first check, in
    the documented order, that the change breaks."""
    bundle = kit.make(rule)
    paths = list(kit.leaves(bundle))
    assert len(paths) > 100
    wrong = {p: verify_bundle(kit.tamper(bundle, p), TRUSTED) for p in paths}
    wrong = {p: v for p, v in wrong.items() if v.valid or (v.link, v.field, v.step) !=
             kit.expected(p)}
    assert wrong == {}
    assert {kit.expected(p)[0] for p in paths} == {"format", "signature", "head", "protocol",
                                                   "challenge", "chain"}


def _objects(bundle: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every object of a fixed shape (SCHEMA), with its path."""
    out = [("", bundle)] + [(k, bundle[k]) for k in ("run", "protocol", "attestation", "head",
                                                      "signature")]
    out += [(f"protocol.steps[{i}]", s) for i, s in enumerate(bundle["protocol"]["steps"])]
    return out + [(f"proofs[{i}]", p) for i, p in enumerate(bundle["proofs"])]


def test_a_field_dropped_added_or_of_another_type_breaks_the_format() -> None:
    bundle = kit.make()
    for where, obj in _objects(bundle):
        prefix = f"{where}." if where else ""
        for name in obj:
            dropped = verify_bundle(kit.tamper(bundle, prefix + name, drop=True), TRUSTED)
            assert (dropped.link, dropped.field, dropped.reason) == (
                "format", prefix + name, "expected this field"), dropped
            if name != "solution":  # any JSON value
                other = "x" if isinstance(obj[name], list) else [1]
                retyped = verify_bundle(kit.tamper(bundle, prefix + name, other), TRUSTED)
                assert (retyped.link, retyped.field) == ("format", prefix + name), retyped
                assert retyped.reason.endswith(", not string" if other == "x" else ", not array")
        added = verify_bundle(kit.tamper(bundle, prefix + "note", "unsigned"), TRUSTED)
        assert (added.link, added.field, added.reason) == (
            "format", prefix + "note", "expected no such field")
    assert list(bundle) == list(SCHEMA)
    assert _broken([]) == ("format", None, None)
    assert _broken(kit.tamper(bundle, "version", True)) == ("format", "version", None)


def test_a_bundle_signed_by_another_key_fails() -> None:
    other = kit.make(key=kit.OTHER_KEY)
    assert verify_bundle(other, [kit.OTHER_KEY.public_key()]).valid
    assert _broken(other) == ("signature", "signature.kid", None)
    forged = _resign(kit.make(), kit.OTHER_KEY)
    forged["signature"]["kid"] = keys.key_id(kit.KEY)  # claims the trusted key's id
    verdict = verify_bundle(forged, TRUSTED)
    assert (verdict.link, verdict.field, verdict.reason) == (
        "signature", "signature.value", "does not sign this head")


def test_a_rotated_key_set_verifies_bundles_of_either_key() -> None:
    document = json.dumps(keys.key_set([kit.OTHER_KEY.public_key(), kit.KEY.public_key()]))
    trusted = keys.public_keys(document)
    assert list(trusted) == [keys.key_id(kit.OTHER_KEY), keys.key_id(kit.KEY)]
    assert verify_bundle(kit.make(), trusted).valid
    assert verify_bundle(kit.make(key=kit.OTHER_KEY), trusted).valid
    retired = keys.public_keys(json.dumps(keys.key_set([kit.OTHER_KEY.public_key()])))
    assert _broken(kit.make(), retired) == ("signature", "signature.kid", None)


EDITED = kit.MARKDOWN.replace("timeout 2.5s make test", "timeout 2.5s make test-fast")


def test_the_protocol_text_changed_after_the_run_fails() -> None:
    bundle = kit.make()
    assert _broken(kit.tamper(bundle, "protocol.markdown", EDITED)) == (
        "protocol", "protocol.markdown", None)
    rehashed = kit.tamper(bundle, "protocol.markdown", EDITED)
    rehashed["protocol"]["content_hash"] = content_hash(EDITED)
    assert _broken(rehashed) == ("head", "protocol.content_hash", None)
    # Even signed by the server: the proofs answered a challenge the new text does not
    # declare.
    signed = build_bundle(kit.run_facts(), kit.version_facts(EDITED), kit.records(),
                          kit.ATTESTATION, kit.KEY)
    verdict = verify_bundle(signed, TRUSTED)
    assert (verdict.link, verdict.field, verdict.step, verdict.reason) == (
        "challenge", "proofs[0].challenge", 1, "expected the challenge of step 1")


@pytest.mark.parametrize(("made", "declared"), [(KAIROS_JSON_1, RFC8785),
                                                (RFC8785, KAIROS_JSON_1)])
def test_a_chain_checked_under_the_other_rule_fails(made: str, declared: str) -> None:
    bundle = build_bundle(kit.run_facts(declared), kit.version_facts(), kit.records(made),
                          kit.ATTESTATION, kit.KEY)
    verdict = verify_bundle(bundle, TRUSTED)
    assert (verdict.link, verdict.field, verdict.step, verdict.reason) == (
        "chain", "proofs[0]", 1, f"does not hash to its proof_hash under {declared}")


def test_what_a_careless_server_signs_is_still_caught() -> None:
    """Links the signature cannot vouch for: the chain's head, and what proven claims."""
    bundle = kit.make()
    bundle["head"]["chain_head"] = GENESIS_HASH
    assert _broken(_resign(bundle)) == ("chain_head", "head.chain_head", None)
    partial = build_bundle(kit.run_facts(proven=True), kit.version_facts(),
                           kit.records(answered=2), kit.ATTESTATION, kit.KEY)
    verdict = verify_bundle(partial, TRUSTED)
    assert (verdict.link, verdict.field, verdict.reason) == (
        "proven", "run.proven", "expected a proof for each of the 4 steps")
    more = kit.make()
    more["proofs"].append(copy.deepcopy(more["proofs"][-1]))
    more["head"] = head_of(more, more["proofs"][-1]["proof_hash"])
    assert _broken(_resign(more)) == ("challenge", "proofs[4].step_index", 5)


def test_a_run_just_begun_verifies_with_no_proof_and_no_outcome() -> None:
    begun = {**kit.run_facts(proven=False), "status": "active", "outcome": None}
    bundle = build_bundle(begun, kit.version_facts(), [], None, kit.KEY)
    assert verify_bundle(bundle, TRUSTED).valid
    assert bundle["head"]["chain_head"] == GENESIS_HASH and bundle["attestation"] is None
    assert bundle["head"]["proof_count"] == 0


def test_build_names_what_a_bundle_cannot_hold() -> None:
    proofs = kit.records()
    proofs[0]["solution"]["shell"]["exit_code"] = 2**60
    with pytest.raises(ValidationError) as caught:
        build_bundle(kit.run_facts(KAIROS_JSON_1), kit.version_facts(), proofs, None, kit.KEY)
    assert caught.value.field == "proofs[0].solution.shell.exit_code"
    with pytest.raises(ValidationError) as caught:
        build_bundle(kit.run_facts(), ProtocolData(kit.PROTOCOL_ID, "", 1, "# \ud800", ()), [],
                     None, kit.KEY)
    assert caught.value.field == "protocol.markdown"
    with pytest.raises(ValidationError) as caught:
        build_bundle(kit.run_facts(), kit.version_facts(), [{"run_id": kit.RUN_ID}], None,
                     kit.KEY)
    assert caught.value.field == "proofs[0].step_uri"
    with pytest.raises(ValidationError) as caught:
        build_bundle(kit.run_facts(), kit.version_facts(), [],
                     {"outcome": "success", "message": "ok", "time": None}, kit.KEY)
    assert caught.value.field == "attestation.time"


def test_bundle_text_is_read_strictly() -> None:
    text = json.dumps(kit.make())
    assert verify_text(text, TRUSTED).valid
    twice = text.replace('"format": "kairos-run-bundle"',
                         '"format": "kairos-run-bundle", "format": "kairos-run-bundle"')
    assert verify_text(twice, TRUSTED).to_dict() == {
        "valid": False, "link": "format", "field": None, "step": None,
        "reason": "expected no duplicate keys"}
    nan = text.replace('"elapsed_seconds": 3.0', '"elapsed_seconds": NaN')
    assert verify_text(nan, TRUSTED).reason == "expected numbers and text RFC 8785 can hold"
    with pytest.raises(ValueError):
        verify_text(text[:-1], TRUSTED)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2**60, 2**60) | st.floats(allow_nan=False)
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=8)


@settings(max_examples=150, deadline=None)
@given(path=st.sampled_from(list(kit.leaves(kit.make()))), value=JSON)
def test_any_value_anywhere_gets_a_verdict_never_an_exception(path: str, value: Any) -> None:
    bundle = kit.make()
    verdict = verify_bundle(kit.tamper(bundle, path, value), TRUSTED)
    assert verdict.link in (None, *LINKS)
    before = kit.at(bundle, path)
    if json.dumps(before) == json.dumps(value):
        assert verdict.valid
    elif isinstance(value, float) or isinstance(before, float):
        pass  # 3 for 3.0 may be the same number in a chain hashed with RFC 8785
    else:
        assert not verdict.valid


@settings(max_examples=100, deadline=None)
@given(JSON)
def test_any_json_document_gets_a_verdict(value: Any) -> None:
    verdict = verify_bundle(value, TRUSTED)
    assert not verdict.valid and verdict.link == "format"
