"""Protocols and helpers that reproduce the contract's scenarios (docs/contract.md) against
the real service."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from kairos.domain.texts import FORBIDDEN_FIELDS, GENESIS_HASH
from kairos.service import Kairos

NONCE_RE = re.compile(r"^[0-9a-f]{32}$")
HASH_RE = re.compile(r"^[0-9a-f]{64}$")
AAA = "kairos://mem/aaa11111-1111-1111-1111-111111111111"
BBB = "kairos://mem/bbb22222-2222-2222-2222-222222222222"
CCC = "kairos://mem/ccc33333-3333-3333-3333-333333333333"

THREE_STEPS = """# Project Setup

## Step 1 — Create structure

Create the project directory structure.

```json
{"challenge":{"type":"shell","shell":{"cmd":"mkdir -p src","timeout_seconds":30},"required":true}}
```

## Step 2 — Configure

Set up configuration files.

```json
{"challenge":{"type":"shell","shell":{"cmd":"echo config > project/config.json","timeout_seconds":5},"required":true}}
```

## Step 3 — Verify

Check that everything works.

```json
{"challenge":{"type":"shell","shell":{"cmd":"test -f project/config.json","timeout_seconds":5},"required":true}}
```
"""

SINGLE_STEP = """# Coding Standards

## Review

Review the coding standards and confirm understanding.
"""


def mint_three(k: Kairos) -> tuple[list[str], dict[str, str]]:
    steps = [s["uri"] for s in k.mint(THREE_STEPS)["items"][0]["steps"]]
    return steps, dict(zip(steps, (AAA, BBB, CCC), strict=True))


def shell_ok(challenge: dict[str, Any], **shell: Any) -> dict[str, Any]:
    body = {"exit_code": 0, "stdout": "", "stderr": "", "duration_seconds": 0.1, **shell}
    return {"type": "shell", "nonce": challenge["nonce"],
            "proof_hash": challenge["proof_hash"], "shell": body}


def assert_no_forbidden(response: dict[str, Any]) -> None:
    def walk(value: Any) -> None:
        if isinstance(value, dict):
            assert not (set(value) & FORBIDDEN_FIELDS), set(value) & FORBIDDEN_FIELDS
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
    walk({k: v for k, v in response.items() if k != "current_step"})


def assert_seed(actual: dict[str, Any], expected: dict[str, Any],
                uri_map: dict[str, str]) -> None:
    """Whole-output comparison with the seed, after mapping our URIs onto the seed's and
    checking nonce/hash formats (their values are random or chained, so not literal)."""
    text = json.dumps(actual)
    for real, seed in uri_map.items():
        text = text.replace(real, seed)
    got = json.loads(text)
    want = copy.deepcopy(expected)
    assert_no_forbidden(got)
    ch = got.get("challenge", {})
    assert NONCE_RE.match(ch["nonce"]), ch
    assert HASH_RE.match(ch["proof_hash"]), ch
    if want.get("challenge", {}).get("proof_hash") == GENESIS_HASH:
        assert ch["proof_hash"] == GENESIS_HASH
    for body in (got.get("challenge", {}), want.get("challenge", {})):
        body.pop("nonce", None)
        body.pop("proof_hash", None)
    if "proof_hash" in want:
        assert HASH_RE.match(got["proof_hash"])
        got["proof_hash"] = want["proof_hash"]
    assert got == want
