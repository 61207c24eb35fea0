"""What the chain rules and signed run bundles cost.

    python bench/bundles.py [--runs N] [--repeats R] [--steps S] [--json FILE]

1. **A chain link per rule**: the median time of ``proof.chain_hash`` over records like
   the ones ``kairos_next`` stores (a shell answer with 20 bytes, 16 KiB and 64 KiB of
   stdout), under ``kairos-json-1`` (the baseline: today's rule) and ``rfc8785``.
2. **``kairos_next`` per rule**: the CPU of one ``Kairos.next`` call on a temporary SQLite
   store (``bench/next_cpu.py``'s loop: shell steps, ``--runs`` runs of ``--steps``
   steps), with the engine hashing under ``kairos-json-1`` and under ``rfc8785``, the two
   alternated ``--repeats`` times in the same process; the ratio of the medians is what
   recording ``rfc8785`` for new runs costs the run loop. Signing is not in this loop: a
   bundle is signed once, when it is exported.
3. **A bundle**: the median time to build (one Ed25519 signature) and to verify a bundle
   of 10, 100 and 1000 proofs, and of the signature alone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from next_cpu import Direct, release_protocol, run_loop

from kairos.config import load_settings
from kairos.domain import engine, keys, proof
from kairos.domain.bundle import (
    build_bundle,
    verify_bundle,
)
from kairos.domain.caller import Caller
from kairos.domain.canonical import CHAIN_RULES, KAIROS_JSON_1, RFC8785, jcs
from kairos.domain.challenge import make_challenge
from kairos.domain.requests import Mint
from kairos.domain.run_data import ProtocolData, StepData
from kairos.domain.texts import GENESIS_HASH
from kairos.domain.validation import parse
from kairos.search.embedders import local_model
from kairos.service.wiring import open_service

KEY = keys.private_key(bytes(range(32)))


def median_us(fn: Callable[[], Any], repeats: int = 7, number: int = 0) -> float:
    """Median over ``repeats`` of the mean time of ``fn`` in microseconds (``number``
    calls a repeat, or as many as fill about 0.2 s)."""
    if not number:
        t0, number = time.perf_counter(), 1
        fn()
        number = max(1, int(0.2 / max(time.perf_counter() - t0, 1e-7)))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number * 1e6)
    return statistics.median(times)


def record(stdout_bytes: int, i: int = 0, previous: str = GENESIS_HASH) -> dict[str, Any]:
    challenge = make_challenge("shell", {"cmd": "make test", "timeout_seconds": 30})
    issued = engine.issue(challenge, f"{i:032x}", previous)
    return {"run_id": "5f0c7a52-8d0e-4d8e-9a52-0b7e2f1c3d4e",
            "step_uri": f"kairos://mem/00000000-0000-0000-0000-{i:012d}", "step_index": i,
            "challenge": issued, "nonce": issued["nonce"],
            "solution": {"type": "shell", "nonce": issued["nonce"], "proof_hash": previous,
                         "shell": {"exit_code": 0, "stdout": ("ok ✓ " * stdout_bytes)[
                             :stdout_bytes], "stderr": "", "duration_seconds": 0.4}},
            "previous_hash": previous, "time": "2025-03-14T09:00:00.000000+00:00"}


def chain_links() -> dict[str, Any]:
    out = {}
    for size in (20, 16384, 65536):
        rec = record(size)
        us = {rule: median_us(partial(proof.chain_hash, GENESIS_HASH, rec, rule))
              for rule in CHAIN_RULES}
        out[f"stdout_{size}"] = {**{r: round(v, 2) for r, v in us.items()},
                                 "ratio": round(us[RFC8785] / us[KAIROS_JSON_1], 2)}
    return out


def _forced(real: Callable[..., str], rule: str) -> Callable[..., str]:
    """``chain_hash`` under ``rule`` whatever rule the run records."""
    return lambda previous, record, _recorded=None: real(previous, record, rule)


def next_per_rule(runs: int, repeats: int, steps: int) -> dict[str, Any]:
    real = engine.chain_hash
    with tempfile.TemporaryDirectory(prefix="kairos-bench-bundles-") as home:
        k = open_service(load_settings(env={"KAIROS_HOME": home}), embedder=local_model(),
                         background=False)
        try:
            minted = k.mint(parse(Mint, {"markdown_doc": release_protocol("shell", steps),
                                         "force_update": True}), Caller())
            uris = [s["uri"] for s in minted["items"][0]["steps"]]
            caller = Direct(k)
            per_call: dict[str, list[float]] = {rule: [] for rule in CHAIN_RULES}
            uvloop.run(run_loop(caller, uris, 3))  # warm-up
            for _ in range(repeats):
                for rule in CHAIN_RULES:  # alternated: drift in the machine's load hits both
                    engine.chain_hash = _forced(real, rule)  # type: ignore[assignment]
                    cpu, calls = uvloop.run(run_loop(caller, uris, runs))
                    per_call[rule].append(cpu / calls * 1000)
        finally:
            engine.chain_hash = real  # type: ignore[assignment]
            k.close()
    med = {rule: statistics.median(v) for rule, v in per_call.items()}
    return {**{rule: {"ms_per_next": round(med[rule], 4),
                      "repeats_ms": [round(x, 4) for x in per_call[rule]]}
               for rule in CHAIN_RULES},
            "ratio": round(med[RFC8785] / med[KAIROS_JSON_1], 4),
            "next_calls_per_repeat": runs * (steps - 1)}


def bundles() -> dict[str, Any]:
    out: dict[str, Any] = {"sign_us": round(median_us(partial(KEY.sign, b"x" * 700)), 1)}
    for n in (10, 100, 1000):
        recs, previous = [], GENESIS_HASH
        for i in range(n):
            rec = record(200, i, previous)
            previous = rec["proof_hash"] = proof.chain_hash(previous, rec, RFC8785)
            recs.append(rec)
        steps = tuple(StepData(r["step_uri"], "", "", {k: v for k, v in r["challenge"].items()
                                                       if k not in ("nonce", "proof_hash")})
                      for r in recs)
        run = {"id": recs[0]["run_id"], "status": "finished", "outcome": "success",
               "proven": True, "created_at": "t", "updated_at": "t", "chain_rule": RFC8785}
        args = (run, ProtocolData("p", "Bench", 1, "# Bench\n" * n, steps), recs,
                {"outcome": "success", "message": "ok", "time": "t"}, KEY)
        bundle = build_bundle(*args)
        assert verify_bundle(bundle, [KEY.public_key()]).valid
        out[f"proofs_{n}"] = {
            "build_ms": round(median_us(partial(build_bundle, *args), 5) / 1000, 3),
            "verify_ms": round(median_us(partial(verify_bundle, bundle, [KEY.public_key()]),
                                         5) / 1000, 3),
            "bytes": len(jcs(bundle))}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    results = {"chain_link_us": chain_links()}
    for size, r in results["chain_link_us"].items():
        print(f"chain link, {size:12s} kairos-json-1 {r[KAIROS_JSON_1]:9.2f} µs   "
              f"rfc8785 {r[RFC8785]:9.2f} µs   ratio {r['ratio']:.2f}")
    results["next"] = next_per_rule(args.runs, args.repeats, args.steps)
    n = results["next"]
    print(f"kairos_next CPU: kairos-json-1 {n[KAIROS_JSON_1]['ms_per_next']:.3f} ms, rfc8785 "
          f"{n[RFC8785]['ms_per_next']:.3f} ms (medians of {args.repeats}, "
          f"{n['next_calls_per_repeat']} calls each), ratio {n['ratio']:.3f}")
    results["bundle"] = bundles()
    print(f"Ed25519 signature: {results['bundle']['sign_us']} µs")
    for n_, r in results["bundle"].items():
        if n_ != "sign_us":
            print(f"bundle of {n_:12s} build {r['build_ms']:8.2f} ms   verify "
                  f"{r['verify_ms']:8.2f} ms   {r['bytes']} bytes")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
