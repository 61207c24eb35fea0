#!/usr/bin/env python3
"""Verify KAIROS run bundles offline: python verify_bundle.py BUNDLE.json... --key KEYS.json

Python 3.9+ and `cryptography` only. The format and the checks: bundle.md beside this file.
Prints a JSON verdict per bundle; exits 0 if all verify, 1 if not, 2 if a file is unreadable."""
import argparse
import base64
import hashlib
import json
import re
import sys
from decimal import Decimal

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

PINS = [p.split(":") for p in (  # head field : content path : the value, sha256 of JCS, count
    "format:format:= version:version:= run_id:run.id:= chain_rule:run.chain_rule:= "
    "outcome:run.outcome:= run_hash:run:sha protocol_id:protocol.id:= "
    "protocol_version:protocol.version:= protocol_hash:protocol.content_hash:= "
    "steps_hash:protocol.steps:sha attestation_hash:attestation:sha proof_count:proofs:#").split()]
HEAD = [p[0] for p in PINS] + ["chain_head", "body_hash"]
Broken = type("Broken", (Exception,), {})  # a check that does not hold; args[0]: the verdict


def number(x):  # ECMAScript's Number::toString (RFC 8785) from repr's shortest digits
    if x <= 0:
        return "0" if x == 0 else "-" + number(-x)
    _, digits, exp = Decimal(repr(x)).normalize().as_tuple()
    d, n = "".join(map(str, digits)), len(digits) + exp  # x = 0.d × 10^n
    return (d + "0" * (n - len(d)) if len(d) <= n <= 21 else d[:n] + "." + d[n:] if 0 < n <= 21
            else "0." + "0" * -n + d if -6 < n <= 0  # else the exponent form: 1.5e+21, 1e-7
            else d[0] + ("." + d[1:] if d[1:] else "") + "e" + "-+"[n > 0] + str(abs(n - 1)))


def jcs(v):  # RFC 8785 text of a parsed JSON value (.encode() refuses lone surrogates)
    if isinstance(v, list):
        return "[" + ",".join(map(jcs, v)) + "]"
    if isinstance(v, dict):
        keys = sorted(v, key=lambda k: k.encode("utf-16-be", "surrogatepass"))
        return "{" + ",".join(jcs(k) + ":" + jcs(v[k]) for k in keys) + "}"
    if isinstance(v, float) and v - v == 0:  # finite (json.loads reads NaN, and 1e400 as inf)
        return number(v)
    if isinstance(v, float) or (isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 2**53):
        raise ValueError("a number RFC 8785 cannot hold")
    return json.dumps(v, ensure_ascii=False)  # its strings are RFC 8785's: null, true, 1, "é"


def sha(v):  # of bytes, or of a value's RFC 8785 bytes
    return hashlib.sha256(v if isinstance(v, bytes) else jcs(v).encode("utf-8")).hexdigest()


def unb64url(text):  # strict: only the one unpadded base64url text of some bytes, else b""
    ok = re.fullmatch(r"[\w-]*", text, re.A) and len(text) % 4 != 1
    data = base64.urlsafe_b64decode(text + "==") if ok else b""
    return data if base64.urlsafe_b64encode(data).rstrip(b"=").decode() == text else b""


def need(ok, link, field, reason, step=None):
    if not ok:
        raise Broken(dict(valid=False, link=link, field=field, step=step, reason=reason))


def check(b, keys):
    try:
        jcs(b).encode("utf-8")
    except ValueError:
        need(False, "format", None, "expected numbers and text RFC 8785 can hold")
    run, head, sig, proofs = b["run"], b["head"], b["signature"], b["proofs"]
    steps, rule = b["protocol"]["steps"], run["chain_rule"]
    need(b["format"] == "kairos-run-bundle", "format", "format", "expected kairos-run-bundle")
    need(b["version"] == 1, "format", "version", "expected 1, the version this reads")
    need(rule in ("kairos-json-1", "rfc8785"), "format", "run.chain_rule", "expected a rule")
    for name, fields in (("head", HEAD), ("signature", ["alg", "kid", "value"])):  # unpinned
        need(set(b[name]) == set(fields), "format", name, "expected " + ", ".join(fields))
    need(sig["alg"] == "EdDSA", "signature", "signature.alg", "expected EdDSA")
    need(sig["kid"] in keys, "signature", "signature.kid", "expected a trusted key's id")
    need(len(unb64url(sig["value"])) == 64, "signature", "signature.value", "expected 64 bytes")
    try:
        keys[sig["kid"]].verify(unb64url(sig["value"]), jcs(head).encode("utf-8"))
    except InvalidSignature:
        need(False, "signature", "signature.value", "does not sign this head")
    for key, path, how in PINS:  # the head against the content
        part = b[path] if "." not in path else b[path.split(".")[0]][path.split(".")[1]]
        pin = part if how == "=" else len(part) if how == "#" else sha(part)
        need(head[key] == pin, "head", path, f"does not match head.{key}")
    need(sha(b["protocol"]["markdown"].encode("utf-8")) == b["protocol"]["content_hash"],
         "protocol", "protocol.markdown", "does not hash to protocol.content_hash")
    for i, p in enumerate(proofs):  # each proof against the step it answered
        at, n, issued = f"proofs[{i}].", i + 1, ("nonce", "proof_hash")
        need(p["step_index"] == i < len(steps), "challenge", at + "step_index",
             f"expected {i}, one of the {len(steps)} steps", n)
        need(p["step_uri"] == steps[i]["uri"], "challenge", at + "step_uri",
             f"expected the uri of step {n}", n)
        need(sha({k: v for k, v in p["challenge"].items() if k not in issued}) ==
             sha(steps[i]["challenge"]), "challenge", at + "challenge",
             f"expected the challenge of step {n}", n)
    previous = hashlib.sha256(b"genesis").hexdigest()
    for i, p in enumerate(proofs):  # each chain link, under the run's rule
        at, n = f"proofs[{i}]", i + 1
        need(p["previous_hash"] == previous, "chain", at + ".previous_hash",
             "expected the hash of the proof before", n)
        record = {k: v for k, v in p.items() if k != "proof_hash"}
        previous = sha(previous.encode() + (jcs(record) if rule == "rfc8785" else json.dumps(
            record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)).encode("utf-8"))
        need(previous == p["proof_hash"], "chain", at,
             f"does not hash to its proof_hash under {rule}", n)
    need(previous == head["chain_head"], "chain_head", "head.chain_head",
         "expected the last proof's hash")
    body = {k: v for k, v in b.items() if k not in ("head", "signature")}
    need(head["body_hash"] == sha(body), "body", None, "expected what head.body_hash pins: "
         "no field added, removed or of another type")
    need(not run["proven"] or len(proofs) == len(steps), "proven", "run.proven",
         f"expected a proof for each of the {len(steps)} steps")
    return dict(valid=True, link=None, field=None, step=None, reason=f"run {run['id']}: "
                f"{len(proofs)} proofs chained under {rule}, signed by key {sig['kid']}")


def main():
    parser = argparse.ArgumentParser(description="Verify KAIROS run bundles offline.")
    parser.add_argument("bundles", nargs="+", metavar="BUNDLE")
    parser.add_argument("--key", required=True, help="the server's key set {\"keys\": [JWK]}")
    args, status = parser.parse_args(), 0
    try:  # a JWK's kid is its RFC 7638 thumbprint, which the server computed
        with open(args.key, "rb") as f:
            keys = {k["kid"]: Ed25519PublicKey.from_public_bytes(unb64url(k["x"]))
                    for k in json.load(f)["keys"]}
        for path in args.bundles:
            with open(path, "rb") as f:
                text = f.read()
            try:
                verdict = check(json.loads(text, object_pairs_hook=lambda pairs: need(  # one
                    len(dict(pairs)) == len(pairs), "format", None,  # reader, one document
                    "expected no duplicate keys") or dict(pairs)), keys)
            except Broken as broken:
                verdict = broken.args[0]
            except (KeyError, TypeError, AttributeError, IndexError):  # not this format
                verdict = dict(valid=False, link="format", field=None, step=None,
                               reason="expected the fields and types of bundle.md")
            print(json.dumps(dict(file=path, **verdict)))
            status = max(status, 0 if verdict["valid"] else 1)
    except (OSError, ValueError, KeyError, TypeError) as exc:  # unreadable, or not JSON
        return print(f"verify_bundle: {exc!r}", file=sys.stderr) or 2
    return status


if __name__ == "__main__":
    sys.exit(main())
