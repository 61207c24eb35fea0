"""The test vector of docs/bundle.md: a fixed Ed25519 key (RFC 8032's first test key), a
two-step run, its bundle, the canonical head bytes and the signature. Ed25519 is
deterministic, so the same code always prints the same section.

    .venv/bin/python scripts/bundle_vector.py            print the section
    .venv/bin/python scripts/bundle_vector.py --write    put it into docs/bundle.md
    .venv/bin/python scripts/bundle_vector.py --check    exit 1 if docs/bundle.md differs
    .venv/bin/python scripts/bundle_vector.py --files D  write D/bundle.json, D/keys.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kairos.domain import engine, keys, markdown  # noqa: E402
from kairos.domain.bundle import build_bundle  # noqa: E402
from kairos.domain.canonical import KAIROS_JSON_1, RFC8785, canonical_bytes, jcs  # noqa: E402
from kairos.domain.proof import RECORD_KEYS, chain_hash  # noqa: E402
from kairos.domain.run_data import ProtocolData, StepData  # noqa: E402
from kairos.domain.texts import GENESIS_HASH  # noqa: E402

DOC = ROOT / "docs" / "bundle.md"
BEGIN, END = "<!-- vector:begin -->", "<!-- vector:end -->"
SEED = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
RUN_ID = "7d3f2a64-0b1c-4e5d-9f80-a1b2c3d4e5f6"
PROTOCOL_ID = "4a1e9c70-5b2d-4f3e-8a6b-7c8d9e0f1a2b"
MARKDOWN = """# Rotate the API key — clés

## Step 1 — Issue a new key

PROOF OF WORK: timeout 2.5s kairos-keys issue --service api

## Step 2 — Confirm the clients moved

PROOF OF WORK: comment min_length=20
"""
SOLUTIONS: list[dict[str, Any]] = [
    {"exit_code": 0, "stdout": "issued key 2 ✓", "elapsed_seconds": 3.0},
    {"text": "Every client now authenticates with key 2; key 1 revoked."},
]


def vector() -> tuple[dict[str, Any], dict[str, Any]]:
    """(the key set, the bundle) of the vector's run."""
    key = keys.private_key(bytes.fromhex(SEED))
    steps = markdown.parse(MARKDOWN)[0].steps
    uris = [f"kairos://mem/{PROTOCOL_ID[:-1]}{i + 1}" for i in range(len(steps))]
    proofs, previous = [], GENESIS_HASH
    for i, step in enumerate(steps):
        nonce, kind = f"nonce-{i + 1}", step.challenge.type
        record: dict[str, Any] = {
            "run_id": RUN_ID, "step_uri": uris[i], "step_index": i,
            "challenge": engine.issue(step.challenge, nonce, previous), "nonce": nonce,
            "solution": {"type": kind, "nonce": nonce, "proof_hash": previous,
                         kind: SOLUTIONS[i]},
            "previous_hash": previous, "time": f"2025-06-01T12:0{i}:00.000000+00:00"}
        previous = record["proof_hash"] = chain_hash(previous, record, RFC8785)
        proofs.append(record)
    run = {"id": RUN_ID, "status": "finished", "outcome": "success", "proven": True,
           "created_at": "2025-06-01T12:00:00.000000+00:00",
           "updated_at": "2025-06-01T12:02:00.000000+00:00", "chain_rule": RFC8785}
    version = ProtocolData(PROTOCOL_ID, "Rotate the API key — clés", 1, MARKDOWN, tuple(
        StepData(uri, s.label, s.content, s.challenge.to_dict())
        for uri, s in zip(uris, steps, strict=True)))
    attestation = {"outcome": "success", "message": "Key rotated.",
                   "time": "2025-06-01T12:02:00.000000+00:00"}
    bundle = build_bundle(run, version, proofs, attestation, key)
    return keys.key_set([key.public_key()]), bundle


def _block(kind: str, text: str) -> str:
    return f"```{kind}\n{text}\n```"


def section() -> str:
    key_set, bundle = vector()
    head = jcs(bundle["head"])
    first = {k: bundle["proofs"][0][k] for k in RECORD_KEYS}
    rules = []
    for rule in (KAIROS_JSON_1, RFC8785):
        rules += [f"Under `{rule}` the record's bytes are", "",
                  _block("text", canonical_bytes(first, rule).decode("utf-8")), "",
                  f"and its `proof_hash` is `{chain_hash(GENESIS_HASH, first, rule)}`.", ""]
    return "\n".join([
        BEGIN,
        "",
        f"The private key's seed (hex): `{SEED}` (RFC 8032, section 7.1, test 1). Its key "
        "set, `KEYS.json`:",
        "",
        _block("json", json.dumps(key_set, indent=2)),
        "",
        "The bundle, `BUNDLE.json` (the run's chain rule is `rfc8785`):",
        "",
        _block("json", json.dumps(bundle, indent=2, ensure_ascii=False)),
        "",
        f"The head's canonical bytes (RFC 8785, UTF-8, {len(head)} bytes):",
        "",
        _block("text", head.decode("utf-8")),
        "",
        f"Their Ed25519 signature, base64url: `{bundle['signature']['value']}`.",
        "",
        "The first proof's record (the proof without `proof_hash`) hashed under each rule, "
        "from the genesis hash: the rules differ on `3.0`.",
        "",
        *rules,
        END,
    ])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="put the section into the doc")
    parser.add_argument("--check", action="store_true", help="exit 1 if the doc differs")
    parser.add_argument("--files", type=Path, help="write bundle.json and keys.json here")
    args = parser.parse_args()
    text = section()
    if args.files:
        key_set, bundle = vector()
        args.files.mkdir(parents=True, exist_ok=True)
        (args.files / "bundle.json").write_text(json.dumps(bundle, indent=2,
                                                           ensure_ascii=False), "utf-8")
        (args.files / "keys.json").write_text(json.dumps(key_set, indent=2), "utf-8")
        return 0
    if not (args.check or args.write):
        print(text)
        return 0
    doc = DOC.read_text("utf-8")
    start, end = doc.find(BEGIN), doc.find(END)
    current = doc[start:end + len(END)] if 0 <= start < end else None
    if args.check:
        if current != text:
            print(f"{DOC.relative_to(ROOT)}: the test vector differs from what "
                  "scripts/bundle_vector.py makes; run it with --write", file=sys.stderr)
            return 1
        return 0
    if current is None:
        print(f"{DOC.relative_to(ROOT)} has no {BEGIN} … {END} section", file=sys.stderr)
        return 1
    DOC.write_text(doc.replace(current, text), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
