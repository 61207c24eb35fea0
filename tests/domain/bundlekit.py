"""Runs to bundle, made as the engine makes them, and the one-field changes of a bundle."""

from __future__ import annotations

import copy
import re
import string
from collections.abc import Iterator
from typing import Any

from kairos.domain import engine, keys, markdown
from kairos.domain.bundle import build_bundle
from kairos.domain.canonical import RFC8785
from kairos.domain.proof import chain_hash
from kairos.domain.run_data import ProtocolData, StepData
from kairos.domain.texts import GENESIS_HASH

KEY = keys.private_key(bytes.fromhex("11" * 32))
OTHER_KEY = keys.private_key(bytes.fromhex("22" * 32))
RUN_ID = "5f0c7a52-8d0e-4d8e-9a52-0b7e2f1c3d4e"
PROTOCOL_ID = "0b6f1d2e-3c4a-4b5c-8d6e-7f8091a2b3c4"

# Floats and text where the two chain rules write different bytes: 2.5 is the same under
# both, 3.0 and 1e-07 are not ("3", "1e-7" under RFC 8785), nor is a key sorted by UTF-16.
MARKDOWN = """# Publish a release of the web app — «café» edition

Use this when a new version of the web app goes to production.

## Step 1 — Run the test suite

Every test must pass before anything ships.

PROOF OF WORK: timeout 2.5s make test

## Step 2 — Confirm the deployment window

PROOF OF WORK: user_input "Is now a good time to deploy to production?"

## Step 3 — Deploy

PROOF OF WORK: mcp deploy_service

## Step 4 — Check production

Open the site, check the version in the footer and the error rate on the dashboard.

PROOF OF WORK: comment min_length=30
"""

SOLUTIONS: dict[str, dict[str, Any]] = {
    "shell": {"exit_code": 0, "stdout": "412 passed ✓", "elapsed_seconds": 3.0},
    "user_input": {"confirmation": "yes"},
    "mcp": {"success": True, "result": {"release": "2.4.1", "load": 1e-07, "\U0001f680": 1,
                                        "\uff5e": 2}},
    "comment": {"text": "Footer shows 2.4.1; the error rate is flat at 0.1 % since the deploy."},
}


def steps_of(text: str = MARKDOWN) -> list[tuple[StepData, Any]]:
    """(the step as a bundle holds it, its declared Challenge) for each step."""
    draft = markdown.parse(text)[0]
    return [(StepData(f"kairos://mem/00000000-0000-0000-0000-00000000010{i}", s.label,
                      s.content, s.challenge.to_dict()), s.challenge)
            for i, s in enumerate(draft.steps)]


def records(rule: str = RFC8785, text: str = MARKDOWN, answered: int | None = None
            ) -> list[dict[str, Any]]:
    """The proof records of a run that answered its first ``answered`` steps (all by
    default), hashed under ``rule``, as ``engine.answer`` writes them."""
    out, previous = [], GENESIS_HASH
    for i, (step, challenge) in enumerate(steps_of(text)[:answered]):
        nonce = f"nonce-{i}"
        issued = engine.issue(challenge, nonce, previous)
        record = {"run_id": RUN_ID, "step_uri": step.uri, "step_index": i,
                  "challenge": issued, "nonce": nonce,
                  "solution": {"type": challenge.type, "nonce": nonce, "proof_hash": previous,
                               challenge.type: copy.deepcopy(SOLUTIONS[challenge.type])},
                  "previous_hash": previous, "time": f"2025-03-14T09:0{i}:00.000000+00:00"}
        previous = record["proof_hash"] = chain_hash(previous, record, rule)
        out.append(record)
    return out


def run_facts(rule: str = RFC8785, proven: bool = True) -> dict[str, Any]:
    return {"id": RUN_ID, "status": "finished", "outcome": "success", "proven": proven,
            "created_at": "2025-03-14T09:00:00+00:00",
            "updated_at": "2025-03-14T09:05:00+00:00", "chain_rule": rule}


def version_facts(text: str = MARKDOWN) -> ProtocolData:
    return ProtocolData(PROTOCOL_ID, markdown.parse(text)[0].title, 3, text,
                        tuple(s for s, _ in steps_of(text)))


ATTESTATION = {"outcome": "success", "message": "Released 2.4.1 — all green.",
               "time": "2025-03-14T09:05:00+00:00"}


def make(rule: str = RFC8785, key: Any = KEY) -> dict[str, Any]:
    """A finished, proven run's bundle, signed with ``key``."""
    return build_bundle(run_facts(rule), version_facts(), records(rule), ATTESTATION, key)


def leaves(value: Any, path: str = "") -> Iterator[str]:
    """The path of every scalar (and empty container) in ``value``, as verdicts name them."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from leaves(item, f"{path}.{key}" if path else key)
    elif isinstance(value, list) and value:
        for i, item in enumerate(value):
            yield from leaves(item, f"{path}[{i}]")
    else:
        yield path


def _parts(path: str) -> list[str | int]:
    return [int(p[1:-1]) if p.startswith("[") else p
            for p in re.findall(r"\[\d+\]|[^.\[\]]+", path)]


def at(bundle: Any, path: str) -> Any:
    for part in _parts(path):
        bundle = bundle[part]
    return bundle


def changed(value: Any) -> Any:
    """Another value of the same JSON type (a hash stays hex, base64url stays base64url)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 0.5
    if isinstance(value, str):
        if not value:
            return "x"
        alphabet = string.hexdigits.lower()[:16] if value[-1] in "0123456789abcdef" \
            else string.ascii_letters
        return value[:-1] + next(c for c in alphabet if c != value[-1])
    if value is None:
        return "x"
    return [*value, 1] if isinstance(value, list) else {**value, "x": 1}


_CHANGE = object()


def tamper(bundle: dict[str, Any], path: str, value: Any = _CHANGE, *, drop: bool = False
           ) -> dict[str, Any]:
    """A copy of ``bundle`` with the field at ``path`` changed (to ``value``, by default
    by ``changed``) or dropped."""
    out = copy.deepcopy(bundle)
    *parent, last = _parts(path)
    holder: Any = out
    for part in parent:
        holder = holder[part]
    if drop:
        del holder[last]
    else:
        holder[last] = changed(holder[last]) if value is _CHANGE else value
    return out


def expected(path: str) -> tuple[str, str, int | None]:
    """(link, field, step) a verifier must name when the field at ``path`` of a valid
    bundle changes: the first check, in the documented order, that the change breaks."""
    proof = re.fullmatch(r"(proofs\[(\d+)\])\.([^.]+)(?:\.([^.]+))?.*", path)
    if proof:
        where, step, name, sub = proof[1], int(proof[2]) + 1, proof[3], proof[4]
        if name in ("step_index", "step_uri"):
            return "challenge", f"{where}.{name}", step
        if name == "challenge" and sub not in ("nonce", "proof_hash"):
            return "challenge", f"{where}.challenge", step  # what the step declares
        if name == "previous_hash":
            return "chain", path, step
        return "chain", where, step  # the record no longer hashes to its proof_hash
    if path.startswith("head."):
        return "signature", "signature.value", None  # the signed bytes changed
    if path.startswith("signature.") or path in ("format", "version", "run.chain_rule"):
        return ("signature" if path.startswith("signature.") else "format"), path, None
    if path == "protocol.markdown":
        return "protocol", path, None
    if path in ("run.id", "run.outcome", "protocol.id", "protocol.version",
                "protocol.content_hash"):
        return "head", path, None  # a pin of its own
    return "head", "protocol.steps" if path.startswith("protocol.steps") else \
        path.split(".")[0], None  # pinned whole: run, protocol.steps, attestation
