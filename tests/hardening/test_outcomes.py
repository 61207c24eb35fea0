"""Unproven is not success: a run whose steps were not all proven is recorded with
``proven: false`` — in attest, runs and verify — and is not counted in the successes that
rank protocols."""

from __future__ import annotations

from kairos.service import Kairos
from tests.spec.seedkit import mint_three, shell_ok


def test_attesting_success_with_nothing_proven_is_recorded_unproven(kairos: Kairos) -> None:
    steps, _ = mint_three(kairos)
    kairos.begin(steps[0])
    done = kairos.attest(steps[2], "success", "all good, trust me")
    assert (done["outcome"], done["proven"], done["proofs"]) == ("success", False, 0)
    verified = kairos.verify_run(done["run_id"])
    assert (verified["valid"], verified["proven"], verified["proofs"]) == (True, False, 0)
    history = kairos.run_history()[0]
    assert (history["status"], history["outcome"], history["proven"]) == (
        "finished", "success", False)
    assert kairos.metrics(steps[0])["successes"] == 0


def test_stopping_before_the_last_answer_is_an_unproven_success(kairos: Kairos) -> None:
    steps, _ = mint_three(kairos)
    response = kairos.begin(steps[0])
    for uri in steps[1:]:
        response = kairos.next(uri, shell_ok(response["challenge"]))
    assert response["message"] == "Protocol completed. No further steps."
    history = kairos.run_history()[0]
    assert (history["status"], history["outcome"], history["proven"]) == (
        "completed", "success", False)
    assert kairos.metrics(steps[0])["successes"] == 0
    # The last answer through kairos_attest proves the run, and only then it counts.
    done = kairos.attest(steps[2], "success", "done", solution=shell_ok(response["challenge"]))
    assert (done["proven"], done["proofs"]) == (True, 3)
    assert kairos.verify_run(done["run_id"])["proven"] is True
    assert kairos.run_history()[0]["proven"] is True
    m = kairos.metrics(steps[0])
    assert (m["successes"], m["failures"]) == (1, 0)
    # Re-attesting does not count it twice; turning it into a failure moves the count.
    kairos.attest(steps[2], "success", "still done")
    assert kairos.metrics(steps[0])["successes"] == 1
    kairos.attest(steps[2], "failure", "it broke later")
    m = kairos.metrics(steps[0])
    assert (m["successes"], m["failures"]) == (0, 1)


def test_failures_count_without_proof(kairos: Kairos) -> None:
    steps, _ = mint_three(kairos)
    kairos.begin(steps[0])
    done = kairos.attest(steps[0], "failure", "could not start", llm_model_id="model-y")
    assert (done["outcome"], done["proven"]) == ("failure", False)
    m = kairos.metrics(steps[0])
    assert (m["successes"], m["failures"]) == (0, 1)
    assert m["per_model"] == {"model-y": {"failure": 1}}
