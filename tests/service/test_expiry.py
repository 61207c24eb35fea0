"""Idle runs expire: an active run without an answer for ``run_idle_minutes`` is recorded
as abandoned, counted neither as a success nor as a failure, and closed exactly once
however many processes sweep (both backends)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kairos.domain.errors import KairosError
from kairos.service import Caller, Kairos
from kairos.service.expiry import RunExpiry
from tests.conftest import RACE_TRIALS, make_kairos
from tests.spec.seedkit import mint_three, shell_ok

DAY = 1440


def stamp(text: str) -> datetime:
    return datetime.fromisoformat(text)


def later(kairos: Kairos, minutes: float) -> datetime:
    """``minutes`` after the newest change of any run."""
    newest = max(stamp(r["updated_at"]) for r in kairos.list_runs(limit=100)["items"])
    return newest + timedelta(minutes=minutes)


def counters(kairos: Kairos, uri: str) -> tuple[int, int, int]:
    m = kairos.metrics(uri)
    return m["runs"], m["successes"], m["failures"]


def test_an_idle_active_run_is_abandoned_and_counts_neither_way(kairos: Kairos) -> None:
    steps, _ = mint_three(kairos)
    idle = kairos.begin(steps[0])  # walked away from at step 1
    agent = Caller(id="agent")
    first = kairos.begin(steps[0], agent)
    second = kairos.next(steps[1], shell_ok(first["challenge"]), agent)
    done = kairos.attest(steps[2], "success", "fine", agent,
                         solution=shell_ok(kairos.next(steps[2], shell_ok(
                             second["challenge"]), agent)["challenge"]))
    failed = kairos.begin(steps[0], Caller(id="quitter"))
    failed_id = kairos.run_of_nonce(failed["challenge"]["nonce"], Caller(id="quitter"))["run_id"]
    kairos.abort_run(failed_id, Caller(id="quitter"), "gave up")
    shown_last = kairos.begin(steps[0], Caller(id="seed"))  # completed: last step shown
    shown_last = kairos.next(steps[1], shell_ok(shown_last["challenge"]), Caller(id="seed"))
    kairos.next(steps[2], shell_ok(shown_last["challenge"]), Caller(id="seed"))
    before = counters(kairos, steps[0])
    assert before == (4, 1, 1) and done["proven"]
    rates = kairos.list_protocols()["items"][0]["stats"]

    assert kairos.expiry.sweep(later(kairos, DAY - 1)) == 0  # not idle long enough yet
    assert kairos.expiry.sweep(later(kairos, DAY + 1)) == 1
    run_id = kairos.run_of_nonce(idle["challenge"]["nonce"])["run_id"]
    (abandoned,) = kairos.list_runs(status="abandoned")["items"]
    assert abandoned == {**abandoned, "run_id": run_id, "status": "abandoned", "outcome": None,
                         "proven": False, "step": 1,
                         "message": "Abandoned: no answer for 1440 minutes."}
    statuses = sorted(r["status"] for r in kairos.list_runs()["items"])
    assert statuses == ["abandoned", "completed", "finished", "finished"]
    assert counters(kairos, steps[0]) == before  # neither a success nor a failure
    assert kairos.list_protocols()["items"][0]["stats"] == rates
    assert kairos.list_runs(status="abandoned")["total"] == 1

    with pytest.raises(KairosError) as gone:  # its pending nonce can no longer be answered
        kairos.next(steps[1], shell_ok(idle["challenge"]))
    assert gone.value.code == "NO_ACTIVE_RUN"
    with pytest.raises(KairosError) as closed:
        kairos.abort_run(run_id)
    assert closed.value.code == "CONFLICT" and "abandoned" in closed.value.message
    assert kairos.expiry.sweep(later(kairos, 10 * DAY)) == 0  # each run closed once


def test_an_answer_restarts_the_idle_clock(kairos: Kairos) -> None:
    steps, _ = mint_three(kairos)
    begun = kairos.begin(steps[0])
    started = later(kairos, 0)
    kairos.next(steps[1], shell_ok(begun["challenge"]))
    answered = later(kairos, 0)
    assert answered > started
    assert kairos.expiry.sweep(started + timedelta(minutes=DAY, microseconds=1)) == 0
    assert kairos.list_runs()["items"][0]["status"] == "active"
    assert kairos.expiry.sweep(answered + timedelta(minutes=DAY, microseconds=1)) == 1


def test_runs_never_expire_with_zero_minutes(kairos: Kairos) -> None:
    steps, _ = mint_three(kairos)
    kairos.begin(steps[0])
    assert RunExpiry(kairos.store, 0).sweep(later(kairos, 365 * DAY)) == 0
    assert kairos.list_runs()["items"][0]["status"] == "active"


def _together(fns: list[Any]) -> list[Any]:
    barrier = threading.Barrier(len(fns))

    def run(fn: Any) -> Any:
        barrier.wait(timeout=30)
        try:
            return fn()
        except KairosError as exc:
            return exc

    with ThreadPoolExecutor(len(fns)) as pool:
        return list(pool.map(run, fns))


@pytest.mark.parametrize("trial", RACE_TRIALS)
def test_replicas_sweeping_together_close_each_run_once(home: Path, trial: int) -> None:
    replicas = [make_kairos(home, KAIROS_EMBEDDER="none") for _ in range(3)]
    steps, _ = mint_three(replicas[0])
    for i in range(12):
        replicas[i % 3].begin(steps[0], Caller(id=f"agent-{i}"))
    at = later(replicas[0], DAY + 1)
    closed = _together([lambda k=k: k.expiry.sweep(at) for k in replicas for _ in range(2)])
    assert sum(closed) == 12
    runs = replicas[1].list_runs(limit=50)["items"]
    assert [r["status"] for r in runs] == ["abandoned"] * 12
    assert counters(replicas[2], steps[0]) == (12, 0, 0)


@pytest.mark.parametrize("trial", RACE_TRIALS)
def test_a_run_answered_while_a_sweep_runs_is_either_answered_or_abandoned(
        home: Path, trial: int) -> None:
    server, sweeper = make_kairos(home, KAIROS_EMBEDDER="none"), make_kairos(
        home, KAIROS_EMBEDDER="none")
    steps, _ = mint_three(server)
    agents = [Caller(id=f"agent-{i}") for i in range(6)]
    begun = [server.begin(steps[0], a) for a in agents]
    # Idle by a hair: any answer given from now on makes its run not idle any more.
    at = later(server, DAY) + timedelta(microseconds=1)
    answers = [lambda b=b, a=a: server.next(steps[1], shell_ok(b["challenge"]), a)
               for b, a in zip(begun, agents, strict=True)]
    results = _together([*answers, lambda: sweeper.expiry.sweep(at)])
    abandoned = results[-1]
    by_caller = {r["caller"]: r for r in server.list_runs(limit=50)["items"]}
    for agent, result in zip(agents, results[:-1], strict=True):
        run = by_caller[agent.id]
        if isinstance(result, KairosError):  # the sweep came first: nothing recorded after
            assert result.code == "NO_ACTIVE_RUN" and run["status"] == "abandoned"
            assert server.proof_log(run["run_id"])["proofs"] == []
        else:  # the answer came first: the run goes on
            assert "error_code" not in result and run["status"] == "active"
            assert len(server.proof_log(run["run_id"])["proofs"]) == 1
    assert abandoned == sum(1 for r in results[:-1] if isinstance(r, KairosError))
