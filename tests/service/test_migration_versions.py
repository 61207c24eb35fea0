"""Migration 0013 on a store at 0012 with protocols, finished runs (both outcomes) and
active ones, their chains hashed with ``kairos-json-1``: nothing is re-hashed, every run
verifies after it with that rule, an active run finishes and still verifies, the
protocols' texts become version 1 with their statistics, and new runs record
``rfc8785``. On the test's backend (SQLite or PostgreSQL)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.config import Config

from kairos.domain.bundle_format import content_hash
from kairos.domain.canonical import KAIROS_JSON_1, RFC8785
from kairos.domain.proof import verify_chain
from kairos.service import Caller
from kairos.store.db import make_engine, migrate
from tests.client import Agent
from tests.conftest import PG_URL, make_kairos
from tests.spec.seedkit import shell_ok

HERE = Path(__file__).resolve().parents[2] / "kairos" / "store"
DOC = """# Rotate Keys

## Revoke

Revoke the old key.

PROOF OF WORK: timeout 30s make revoke

## Issue

Issue the new key.

PROOF OF WORK: timeout 30s make issue

## Announce

Tell the team.

PROOF OF WORK: timeout 30s make announce
"""


def _ok(challenge: dict[str, Any]) -> dict[str, Any]:
    """A shell answer whose record JSON writes differently under the two rules (2.0 / 2),
    so a chain verifies under one rule only."""
    return shell_ok(challenge, duration_seconds=2.0)


def _to(url: str, revision: str, *, down: bool) -> None:
    engine = make_engine(url)
    try:
        if down:
            cfg = Config(str(HERE / "alembic.ini"))
            cfg.set_main_option("script_location", str(HERE / "migrations"))
            with engine.begin() as conn:
                cfg.attributes["connection"] = conn
                command.downgrade(cfg, revision)
        else:
            assert migrate(engine, revision) == revision
    finally:
        engine.dispose()


def _old_runs(k: Agent, steps: list[str]) -> dict[str, str]:
    """Runs as a store at 0012 made them: success (proven), failure, and two active."""
    runs = {}
    shown = k.begin(steps[0], Caller(id="a"))
    for uri in steps[1:]:
        shown = k.next(uri, _ok(shown["challenge"]), Caller(id="a"))
    runs["success"] = k.attest(steps[-1], "success", "done", Caller(id="a"),
                               solution=_ok(shown["challenge"]))["run_id"]
    shown = k.begin(steps[0], Caller(id="b"))
    k.next(steps[1], _ok(shown["challenge"]), Caller(id="b"))
    runs["failure"] = k.attest(steps[1], "failure", "broke", Caller(id="b"))["run_id"]
    shown = k.begin(steps[0], Caller(id="c"))
    runs["active"] = k.next(steps[1], _ok(shown["challenge"]), Caller(id="c"))
    k.begin(steps[0], Caller(id="d"))
    return runs


def test_upgrade_keeps_every_run_verifying_with_its_rule(home: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    url = PG_URL or f"sqlite:///{home / 'kairos.db'}"
    monkeypatch.setattr("kairos.service.runs.NEW_RUN_RULE", KAIROS_JSON_1)  # as of old
    k = make_kairos(home)
    steps = [s["uri"] for s in k.mint(DOC)["items"][0]["steps"]]
    made = _old_runs(k, steps)
    active = made.pop("active")
    k.close()
    monkeypatch.undo()
    _to(url, "0012", down=True)  # the schema of 0012, its rows as 0012 wrote them
    _to(url, "0013", down=False)
    k = make_kairos(home)
    try:
        runs = k.list_runs()["items"]
        assert len(runs) == 4
        for run in runs:
            detail = k.run_detail(run["run_id"])
            assert (detail["chain_rule"], detail["protocol_version"]) == (KAIROS_JSON_1, 1)
            assert k.verify_run(run["run_id"])["valid"] is True
        proofs = k.proof_log(made["success"])["proofs"]
        assert verify_chain(proofs, KAIROS_JSON_1)[2] is None
        assert verify_chain(proofs, RFC8785)[2] is not None  # the rule is what holds it
        # The active run finishes after the upgrade, on the same rule.
        shown = k.next(steps[2], _ok(active["challenge"]), Caller(id="c"))
        done = k.attest(steps[2], "success", "late", Caller(id="c"),
                        solution=_ok(shown["challenge"]))
        assert done["proven"] is True
        assert k.verify_run(done["run_id"])["valid"] is True
        assert k.run_detail(done["run_id"])["chain_rule"] == KAIROS_JSON_1
        # A new run records the new rule and verifies with it.
        fresh = k.begin(steps[0], Caller(id="e"))
        shown = k.next(steps[1], _ok(fresh["challenge"]), Caller(id="e"))
        run_id = k.run_of_nonce(shown["challenge"]["nonce"], Caller(id="e"))["run_id"]
        assert k.run_detail(run_id)["chain_rule"] == RFC8785
        assert k.verify_run(run_id)["valid"] is True
        # The protocol's text is its version 1, and its statistics are version 1's.
        listed = k.versions(steps[0])
        assert listed["current_version"] == 1
        text = k.dump(steps[0], protocol=True)["markdown_doc"]
        assert listed["versions"][0]["content_hash"] == content_hash(text)
        metrics = k.metrics(steps[0])
        assert (listed["versions"][0]["runs"], listed["versions"][0]["successes"],
                listed["versions"][0]["failures"]) == (
            metrics["runs"], metrics["successes"], metrics["failures"]) == (5, 2, 1)
    finally:
        k.close()
