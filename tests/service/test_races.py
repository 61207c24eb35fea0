"""Races that replicas must survive without a process-wide lock (run on both backends)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from kairos.domain.errors import KairosError
from kairos.service import Caller, Kairos
from tests.conftest import RACE_TRIALS
from tests.recount import counted, recount
from tests.spec.seedkit import mint_three, shell_ok


def _together(n: int, fn: Any) -> list[Any]:
    barrier = threading.Barrier(n)

    def run(i: int) -> Any:
        barrier.wait(timeout=30)
        try:
            return fn(i)
        except KairosError as exc:
            return exc

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(run, range(n)))


@pytest.mark.parametrize("trial", RACE_TRIALS)
def test_one_nonce_is_accepted_once_under_concurrent_answers(kairos: Kairos, trial: int) -> None:
    steps, _ = mint_three(kairos)
    begun = kairos.begin(steps[0], Caller(id="agent"))
    answer = shell_ok(begun["challenge"])
    results = _together(8, lambda i: kairos.next(steps[1], answer, Caller(id=f"replica-{i}")))
    accepted = [r for r in results if isinstance(r, dict) and "error_code" not in r]
    assert len(accepted) == 1
    assert all(isinstance(r, KairosError) or r.get("error_code") for r in results
               if r is not accepted[0])
    run_id = kairos.run_history(Caller())[0]["run_id"]
    assert kairos.proof_log(run_id)["proofs"].__len__() == 1
    assert kairos.verify_run(run_id)["valid"] is True


@pytest.mark.parametrize("trial", RACE_TRIALS)
def test_racing_mints_of_one_title_store_one_protocol(kairos: Kairos, trial: int) -> None:
    doc = "# Rotate the signing key\n\n## Rotate\n\nRotate the release signing key.\n"
    results = _together(6, lambda i: kairos.mint(doc))
    stored = [r for r in results if isinstance(r, dict)]
    refused = [r for r in results if isinstance(r, KairosError)]
    assert len(stored) == 1 and len(refused) == 5
    assert {e.code for e in refused} <= {"DUPLICATE_CHAIN", "SIMILAR_MEMORY_FOUND"}
    matches = [c for c in kairos.search("rotate the signing key")["choices"]
               if c["role"] == "match"]
    assert len(matches) == 1


BODIES = ("## Back up\n\nDump the orders database to the backup bucket with pg_dump and "
          "verify the archive lists every table.\n",
          "## Rotate\n\nRotate the TLS certificate of the public load balancer and reload "
          "nginx on every edge node.\n",
          "## Publish\n\nBuild the documentation site with mkdocs and upload it to the "
          "static hosting bucket.\n")


@pytest.mark.parametrize("trial", RACE_TRIALS)
def test_racing_near_identical_mints_store_one(kairos: Kairos, trial: int) -> None:
    """The similarity check runs before the write; the write guard sends every mint that
    lost the race back to check again, where it meets the winner."""
    for trial, body in enumerate(BODIES):
        results = _together(8, lambda i, t=trial, b=body: kairos.mint(
            f"# Nightly job {t}-{i}\n\n{b}"))
        stored = [r for r in results if isinstance(r, dict)]
        refused = [r for r in results if isinstance(r, KairosError)]
        assert len(stored) == 1, results
        assert {e.code for e in refused} == {"SIMILAR_MEMORY_FOUND"}


@pytest.mark.parametrize("trial", RACE_TRIALS)
def test_racing_identical_entries_all_see_each_other(kairos: Kairos, trial: int) -> None:
    """Of n identical experiences written at once, each one after the first is told of
    every one committed before it: no pair goes unflagged by both writes."""
    entry = {"entity_type": "experience", "category": "testing",
             "title": "Flaky integration test in CI",
             "playbook": "Retry the flaky integration test once, then quarantine it."}
    results = _together(8, lambda i: kairos.write_entry(dict(entry)))
    flagged = sorted(len(r["duplicates"]) for r in results)
    assert flagged == list(range(8))


# --- the run loop: outcomes recorded once, counters exact ------------------------------------

def _at_step_two(kairos: Kairos, steps: list[str], n: int) -> list[dict[str, Any]]:
    """``n`` runs of one protocol, each by its own caller, each waiting at step 2."""
    out = []
    for i in range(n):
        begun = kairos.begin(steps[0], Caller(id=f"agent-{i}"))
        out.append(kairos.next(steps[1], shell_ok(begun["challenge"]), Caller(id=f"agent-{i}")))
    return out


@pytest.mark.parametrize("trial", RACE_TRIALS)
def test_agents_on_one_protocol_never_fail_and_the_counters_are_exact(
        kairos: Kairos, trial: int) -> None:
    """Agents on separate runs of one protocol at once: begin, a refused answer, the
    right one, the last step through attest (or a failure): every call answers, and each
    counter equals what the runs left behind."""
    steps, _ = mint_three(kairos)

    def agent(i: int) -> dict[str, Any]:
        me = Caller(id=f"agent-{i}")
        shown = kairos.begin(steps[0], me)
        shown = kairos.next(steps[1], shell_ok(shown["challenge"], exit_code=1), me)
        shown = kairos.next(steps[1], shell_ok(shown["challenge"]), me)
        shown = kairos.next(steps[2], shell_ok(shown["challenge"]), me)
        if i % 3 == 0:
            return kairos.attest(steps[2], "failure", "broke", me, llm_model_id=f"m{i % 2}")
        return kairos.attest(steps[2], "success", "done", me, llm_model_id=f"m{i % 2}",
                             solution=shell_ok(shown["challenge"]))

    results = _together(8, agent)
    assert not [r for r in results if isinstance(r, KairosError)], results
    assert recount(kairos, steps[0]) == counted(kairos, steps[0])
    assert counted(kairos, steps[0])["failures"] == 3


@pytest.mark.parametrize("trial", RACE_TRIALS)
def test_an_attest_racing_a_next_records_its_failure_once(kairos: Kairos, trial: int) -> None:
    """Per run an attest(failure) and the next answer at once: whichever goes first, the
    attest's answer is what the run holds, and the failure is counted once."""
    steps, _ = mint_three(kairos)
    shown = _at_step_two(kairos, steps, 4)

    def call(i: int) -> Any:
        me = Caller(id=f"agent-{i // 2}")
        if i % 2:
            return kairos.attest(steps[1], "failure", "gave up", me)
        return kairos.next(steps[2], shell_ok(shown[i // 2]["challenge"]), me)

    results = _together(8, call)
    attests = results[1::2]
    assert all(isinstance(a, dict) and a["outcome"] == "failure" for a in attests), attests
    for a in attests:
        run = kairos.run_detail(a["run_id"])
        assert (run["status"], run["outcome"]) == ("finished", "failure"), run
    assert recount(kairos, steps[0]) == counted(kairos, steps[0])
    assert counted(kairos, steps[0])["failures"] == 4


@pytest.mark.parametrize("trial", RACE_TRIALS)
def test_simultaneous_attests_of_each_run_count_each_run_once(kairos: Kairos,
                                                              trial: int) -> None:
    """Ten attests at once on each of four runs, outcomes and models mixed: every call
    answers, each run ends as one of them says, and every counter is exact."""
    steps, _ = mint_three(kairos)
    _at_step_two(kairos, steps, 4)

    def attest(i: int) -> Any:
        outcome = "failure" if i % 3 else "success"
        return kairos.attest(steps[1], outcome, f"attest {i}", Caller(id=f"agent-{i % 4}"),
                             llm_model_id=f"m{i % 2}")

    results = _together(40, attest)
    assert not [r for r in results if isinstance(r, KairosError)], results
    assert recount(kairos, steps[0]) == counted(kairos, steps[0])
    history = kairos.run_history()
    assert len(history) == 4 and {h["status"] for h in history} == {"finished"}


# --- writers of one space take turns: no conflict reaches the client -------------------------

@pytest.mark.parametrize("trial", RACE_TRIALS)
def test_writers_of_one_space_take_turns_and_none_is_told_to_retry(kairos: Kairos,
                                                                    trial: int) -> None:
    """Writers that keep coming to one space (each thread mints, or edits one step, again
    and again): every write is applied, none answers CONFLICT. Checked writes that merely
    retried would let a slow writer lose to newcomers until it gave up."""
    steps, _ = mint_three(kairos)
    topics = ("billing", "search", "checkout", "login", "upload", "export", "mailer", "cache")

    def writer(i: int) -> list[Any]:
        out: list[Any] = []
        for j in range(6):
            try:
                if i % 2:
                    out.append(kairos.update(steps[1], updates={"content": f"Edit {i}-{j}."}))
                else:
                    topic = topics[(i + j) % 8]
                    out.append(kairos.mint(
                        f"# Restart the {topic} worker {i}-{j}\n\n## Restart\n\nRestart the "
                        f"{topic} worker {i}-{j} and check that its queue drains.\n",
                        force_update=True))
            except KairosError as exc:
                out.append(exc)
        return out

    results = [r for rs in _together(16, writer) for r in rs]
    assert not [r for r in results if isinstance(r, KairosError)], [
        r for r in results if isinstance(r, KairosError)][:3]
    edits = [r for r in results if "total_updated" in r]
    assert len(edits) == 48 and all(r["total_updated"] == 1 for r in edits), edits
