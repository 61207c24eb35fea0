"""The run loop's fast path keeps its promises: parsed steps are cached per protocol
version (a run follows the version it began on; an edit, by this process or another, is
seen by the very next run), one call of
``kairos_next`` runs a fixed handful of statements, and nonces stay single-use."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from kairos.domain import errors
from kairos.domain.errors import KairosError
from kairos.service import Caller, Kairos
from tests.conftest import make_kairos
from tests.spec.seedkit import mint_three, shell_ok

FOUR_STEPS = """# Deploy Four

## Build

Build the artifact.

PROOF OF WORK: timeout 30s make build

## Upload

Upload the artifact.

PROOF OF WORK: timeout 30s make upload

## Switch

Switch traffic to the new release.

PROOF OF WORK: timeout 30s make switch

## Watch

Watch the dashboards.

PROOF OF WORK: timeout 30s make watch
"""


def _mint_four(k: Kairos) -> list[str]:
    return [s["uri"] for s in k.mint(FOUR_STEPS)["items"][0]["steps"]]


@contextmanager
def _statements(k: Kairos) -> Iterator[list[str]]:
    """The SQL statements the store runs inside the block (BEGIN and COMMIT aside)."""
    seen: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if not statement.lstrip().upper().startswith(("BEGIN", "COMMIT", "ROLLBACK")):
            seen.append(statement)

    event.listen(k.store.engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(k.store.engine, "before_cursor_execute", record)


def test_an_edited_step_is_seen_by_the_next_run_not_the_running_one(kairos: Kairos) -> None:
    steps = _mint_four(kairos)
    first = kairos.begin(steps[0])
    second = kairos.next(steps[1], shell_ok(first["challenge"]))  # the steps are cached now
    assert second["current_step"]["content"].startswith("Upload the artifact.")
    kairos.update(steps[2], updates={
        "content": "Flip the load balancer.\n\nPROOF OF WORK: comment min_length=30"})
    third = kairos.next(steps[2], shell_ok(second["challenge"]))
    assert "error_code" not in third, third
    assert third["current_step"]["content"].startswith("Switch traffic")  # its version's
    assert third["challenge"]["type"] == "shell"
    # A new run follows the edited version.
    again = kairos.begin(steps[0], Caller(id="other"))
    again = kairos.next(steps[1], shell_ok(again["challenge"]), Caller(id="other"))
    again = kairos.next(steps[2], shell_ok(again["challenge"]), Caller(id="other"))
    assert again["current_step"]["content"].startswith("Flip the load balancer.")
    assert again["challenge"]["comment"] == {"min_length": 30}


def test_a_deleted_step_and_a_replaced_protocol_are_seen(kairos: Kairos) -> None:
    steps = _mint_four(kairos)
    begun = kairos.begin(steps[0])
    kairos.next(steps[1], shell_ok(begun["challenge"]))
    kairos.delete(steps[3])
    done = kairos.begin(steps[0], Caller(id="b"))
    shown = kairos.next(steps[1], shell_ok(done["challenge"]), Caller(id="b"))
    shown = kairos.next(steps[2], shell_ok(shown["challenge"]), Caller(id="b"))
    assert shown["current_step"]["uri"] == steps[2]
    assert "kairos_attest" in shown["next_action"]  # step 3 of 3 is now the last
    # Mint over it with force_update: a new body for the same step URIs.
    kairos.mint(FOUR_STEPS.replace("Build the artifact.", "Compile the release.")
                .replace("make build", "make release"), force_update=True)
    begun = kairos.begin(steps[0], Caller(id="c"))
    assert begun["current_step"]["content"].startswith("Compile the release.")
    assert begun["challenge"]["shell"]["cmd"] == "make release"


def test_an_edit_by_another_replica_is_seen_by_the_next_run(kairos: Kairos,
                                                              home: Path) -> None:
    steps = _mint_four(kairos)
    begun = kairos.begin(steps[0])
    second = kairos.next(steps[1], shell_ok(begun["challenge"]))
    other = make_kairos(home)  # another process on the same database
    other.update(steps[2], updates={"content": "Edited elsewhere.\n\n"
                                               "PROOF OF WORK: timeout 5s make other"})
    third = kairos.next(steps[2], shell_ok(second["challenge"]))
    assert third["current_step"]["content"].startswith("Switch traffic")
    fresh = kairos.begin(steps[0], Caller(id="b"))
    fresh = kairos.next(steps[1], shell_ok(fresh["challenge"]), Caller(id="b"))
    fresh = kairos.next(steps[2], shell_ok(fresh["challenge"]), Caller(id="b"))
    assert fresh["current_step"]["content"].startswith("Edited elsewhere.")
    assert fresh["challenge"]["shell"] == {"cmd": "make other", "timeout_seconds": 5}


def test_next_runs_a_fixed_handful_of_statements(kairos: Kairos) -> None:
    steps = _mint_four(kairos)
    begun = kairos.begin(steps[0])
    with _statements(kairos) as seen:
        second = kairos.next(steps[1], shell_ok(begun["challenge"]))
    # step, protocol and run in one read; the run, its next nonce, the proof (numbered
    # in its own INSERT), the step's counter.
    assert len(seen) == 5, seen
    assert sum(s.lstrip().upper().startswith("SELECT") for s in seen) == 1, seen
    with _statements(kairos) as seen:
        refused = kairos.next(steps[2], shell_ok(second["challenge"], exit_code=1))
    # A refusal: the read, the run, its next nonce, the step's counter.
    assert len(seen) == 4, seen
    third = kairos.next(steps[2], shell_ok(refused["challenge"]))
    fourth = kairos.next(steps[3], shell_ok(third["challenge"]))
    with _statements(kairos) as seen:
        done = kairos.attest(steps[3], "success", "ok", solution=shell_ok(fourth["challenge"]))
    # The run as its swap wrote it, not read again; its proofs counted once, by the INSERT
    # that adds the last one.
    reads = [s for s in seen if s.lstrip().upper().startswith("SELECT")]
    assert not any("proofs" in s for s in reads), reads
    assert not any(s.lstrip().startswith("SELECT runs.id") for s in reads), reads
    # One swap of the run carries both the last answer and the outcome.
    swaps = [s for s in seen if s.lstrip().upper().startswith("UPDATE RUNS")]
    assert len(swaps) == 1, swaps
    assert done["proofs"] == 4 and done["proven"] is True


def test_a_nonce_is_single_use_and_the_chain_holds(kairos: Kairos) -> None:
    steps, _ = mint_three(kairos)
    begun = kairos.begin(steps[0])
    answer = shell_ok(begun["challenge"])
    second = kairos.next(steps[1], answer)
    assert "error_code" not in second
    with pytest.raises(KairosError) as refused:
        kairos.next(steps[1], answer)
    assert refused.value.code == errors.NO_ACTIVE_RUN
    third = kairos.next(steps[2], shell_ok(second["challenge"]))
    done = kairos.attest(steps[2], "success", "ok", solution=shell_ok(third["challenge"]))
    assert done["proven"] is True and done["proofs"] == 3
    assert kairos.verify_run(done["run_id"])["valid"] is True


def test_a_proven_run_looks_back_at_its_callers_last_run_through_an_index(
        kairos: Kairos) -> None:
    """Learning reads when the caller's run before this one began, inside the attest's
    write. Read through every run of the caller (``ix_runs_caller``), an attest took 8.5 ms
    instead of 2.3 at 20,000 runs of one caller (``bench/attest_history.py``); through
    ``ix_runs_caller_created`` it is one index probe."""
    steps, _ = mint_three(kairos)
    kairos.search("deploy")  # a lead for the run to learn from
    begun = kairos.begin(steps[0])
    second = kairos.next(steps[1], shell_ok(begun["challenge"]))
    third = kairos.next(steps[2], shell_ok(second["challenge"]))
    seen: list[tuple[str, Any]] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, *args: Any) -> None:
        if "max(runs.created_at)" in statement:
            seen.append((statement, parameters))

    event.listen(kairos.store.engine, "before_cursor_execute", record)
    try:
        kairos.attest(steps[2], "success", "ok", solution=shell_ok(third["challenge"]))
    finally:
        event.remove(kairos.store.engine, "before_cursor_execute", record)
    assert len(seen) == 1, seen
    statement, parameters = seen[0]
    with kairos.store.engine.connect() as conn, conn.begin():
        if conn.dialect.name == "sqlite":
            plan = " ".join(str(row[-1]) for row in conn.exec_driver_sql(
                f"EXPLAIN QUERY PLAN {statement}", parameters))
        else:  # a table this small would be read whole whatever its indexes
            conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
            plan = " ".join(row[0] for row in conn.exec_driver_sql(
                f"EXPLAIN {statement}", parameters))
    assert "ix_runs_caller_created" in plan, plan
