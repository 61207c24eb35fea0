"""Runs: nonces, run lookup, concurrency, verification, atomic writes, outcomes."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from sqlalchemy import func, select, update

from kairos.domain.errors import KairosError
from kairos.domain.texts import GENESIS_HASH
from kairos.service import Caller, Kairos
from kairos.store import schema
from kairos.store.repo import Repo
from tests.spec.seedkit import mint_three, shell_ok


def _run_to_end(k: Kairos, steps: list[str], caller: Caller) -> dict[str, Any]:
    response = k.begin(steps[0], caller)
    for uri in steps[1:]:
        response = k.next(uri, shell_ok(response["challenge"]), caller)
        assert "error_code" not in response, response
    return k.attest(steps[-1], "success", "done", caller,
                    solution=shell_ok(response["challenge"]))


@pytest.mark.req("D4-4", "D4-5")
def test_sixteen_concurrent_runs_have_valid_distinct_chains(kairos: Kairos) -> None:
    steps, _ = mint_three(kairos)
    barrier = threading.Barrier(16)

    def agent(i: int) -> dict[str, Any]:
        barrier.wait(timeout=30)
        return _run_to_end(kairos, steps, Caller(id=f"agent-{i}"))

    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(agent, range(16)))
    assert len({r["run_id"] for r in results}) == 16
    assert len({r["proof_hash"] for r in results}) == 16
    for r in results:
        report = kairos.verify_run(r["run_id"])
        assert report == {"run_id": r["run_id"], "valid": True, "proofs": 3, "proven": True,
                          "head": r["proof_hash"], "first_broken": None}


@pytest.mark.req("D4-5")
def test_two_callers_on_one_protocol_never_interfere(kairos: Kairos) -> None:
    steps, _ = mint_three(kairos)
    alice, bob = Caller(id="alice"), Caller(id="bob")
    a1 = kairos.begin(steps[0], alice)
    b1 = kairos.begin(steps[0], bob)
    # Bob answers with a wrong nonce: his own run is refused, Alice's is untouched.
    refused = kairos.next(steps[1], {**shell_ok(b1["challenge"]), "nonce": "0" * 32}, bob)
    assert refused["error_code"] == "NONCE_MISMATCH"
    a2 = kairos.next(steps[1], shell_ok(a1["challenge"]), alice)
    assert "error_code" not in a2
    # Bob's fresh challenge still works for Bob.
    b2 = kairos.next(steps[1], shell_ok(refused["challenge"]), bob)
    assert "error_code" not in b2
    assert a2["proof_hash"] != b2["proof_hash"]


@pytest.mark.req("D4-5")
def test_run_is_found_by_nonce_even_for_another_caller_id(kairos: Kairos) -> None:
    """A nonce is the run's capability: an agent may reach another replica or session."""
    steps, _ = mint_three(kairos)
    begun = kairos.begin(steps[0], Caller(id="session-on-replica-a"))
    response = kairos.next(steps[1], shell_ok(begun["challenge"]), Caller(id="replica-b"))
    assert "error_code" not in response


@pytest.mark.req("D4-4")
def test_replayed_nonce_is_refused(kairos: Kairos) -> None:
    steps, _ = mint_three(kairos)
    begun = kairos.begin(steps[0])
    answer = shell_ok(begun["challenge"])
    assert "error_code" not in kairos.next(steps[1], answer)
    with pytest.raises(KairosError) as info:
        kairos.next(steps[1], answer)
    assert info.value.code == "NO_ACTIVE_RUN"


@pytest.mark.req("D4-4")
def test_a_superseded_nonce_is_refused_and_changes_nothing(kairos: Kairos) -> None:
    steps, _ = mint_three(kairos)
    begun = kairos.begin(steps[0])
    refused = kairos.next(steps[1], shell_ok(begun["challenge"], exit_code=1))
    assert refused["retry_count"] == 1
    with pytest.raises(KairosError) as info:  # the superseded nonce
        kairos.next(steps[1], shell_ok(begun["challenge"]))
    assert (info.value.code, info.value.field) == ("NO_ACTIVE_RUN", "solution")
    # The live challenge is still the one the refusal showed, its retry not counted twice.
    moved = kairos.next(steps[1], shell_ok(refused["challenge"]))
    assert "error_code" not in moved
    assert kairos.metrics(steps[0])["steps"][0]["refused"] == 1


def test_next_without_a_run_is_a_structured_error(kairos: Kairos) -> None:
    steps, _ = mint_three(kairos)
    with pytest.raises(KairosError) as info:
        kairos.next(steps[1], {"type": "shell", "nonce": "x", "proof_hash": GENESIS_HASH,
                               "shell": {"exit_code": 0}})
    assert info.value.code == "NO_ACTIVE_RUN" and steps[0] in info.value.message


def test_next_on_step_one_points_to_begin(kairos: Kairos) -> None:
    steps, _ = mint_three(kairos)
    kairos.begin(steps[0])
    with pytest.raises(KairosError) as info:
        kairos.next(steps[0], {})
    assert info.value.field == "uri" and "kairos_begin" in info.value.message


@pytest.mark.req("D3-12")
@pytest.mark.parametrize(("uri", "code"), [
    ("kairos://mem/not-a-uuid", "INVALID_URI"),
    ("https://example.com", "INVALID_URI"),
    (None, "INVALID_INPUT"),  # no uri at all: a missing argument
    ("kairos://mem/12345678-1234-1234-1234-123456789abc", "NOT_FOUND"),
])
def test_bad_uris(kairos: Kairos, uri: Any, code: str) -> None:
    for call in (lambda: kairos.begin(uri), lambda: kairos.next(uri, {}),
                 lambda: kairos.dump(uri),
                 lambda: kairos.attest(uri, "success", "m")):
        with pytest.raises(KairosError) as info:
            call()
        assert info.value.code == code and info.value.field == "uri"


def test_tampered_proof_fails_verification(kairos: Kairos) -> None:
    steps, _ = mint_three(kairos)
    done = _run_to_end(kairos, steps, Caller())
    with kairos.store.write() as repo:
        row = repo.proofs(done["run_id"])[1]
        record = dict(row["record"])
        record["solution"] = {**record["solution"], "shell": {"exit_code": 0, "stdout": "forged"}}
        repo.conn.execute(update(schema.proofs).where(
            schema.proofs.c.run_id == done["run_id"], schema.proofs.c.seq == 1
        ).values(record=record))
    report = kairos.verify_run(done["run_id"])
    assert report["valid"] is False
    assert report["first_broken"] == {
        "index": 1, "step_uri": steps[1],
        "reason": "proof_hash does not match the record's content"}


def test_removed_proof_fails_verification(kairos: Kairos) -> None:
    steps, _ = mint_three(kairos)
    done = _run_to_end(kairos, steps, Caller())
    with kairos.store.write() as repo:
        repo.conn.execute(schema.proofs.delete().where(
            schema.proofs.c.run_id == done["run_id"], schema.proofs.c.seq == 0))
    report = kairos.verify_run(done["run_id"])
    assert report["valid"] is False and report["first_broken"]["index"] == 0


def _counts(k: Kairos, run_id: str) -> tuple[int, int]:
    with k.store.read() as repo:
        proofs = repo.conn.execute(select(func.count()).select_from(schema.proofs).where(
            schema.proofs.c.run_id == run_id)).scalar_one()
        nonces = repo.conn.execute(select(func.count()).select_from(schema.nonces).where(
            schema.nonces.c.run_id == run_id)).scalar_one()
    return int(proofs), int(nonces)


@pytest.mark.req("D3-12")
def test_crash_between_two_writes_leaves_the_store_consistent(
        kairos: Kairos, monkeypatch: pytest.MonkeyPatch) -> None:
    steps, _ = mint_three(kairos)
    begun = kairos.begin(steps[0])
    run_id = kairos.run_history()[0]["run_id"]
    before = _counts(kairos, run_id)
    with kairos.store.read() as repo:
        run_before = dict(repo.run(run_id) or {})

    def crash(self: Repo, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("power cut")

    # The run row and the nonce are written; the proof write then fails.
    monkeypatch.setattr(Repo, "append_proof", crash)
    with pytest.raises(RuntimeError):
        kairos.next(steps[1], shell_ok(begun["challenge"]))
    monkeypatch.undo()
    with kairos.store.read() as repo:
        assert dict(repo.run(run_id) or {}) == run_before
    assert _counts(kairos, run_id) == before
    # The original nonce is still the pending one, and the run continues normally.
    response = kairos.next(steps[1], shell_ok(begun["challenge"]))
    assert "error_code" not in response
    assert kairos.verify_run(run_id)["valid"] is True


def test_outcomes_update_quality_metrics(kairos: Kairos) -> None:
    steps, _ = mint_three(kairos)
    _run_to_end(kairos, steps, Caller(id="a"))
    # A failed run: abort at step 2 after a refused answer.
    b = Caller(id="b")
    begun = kairos.begin(steps[0], b)
    second = kairos.next(steps[1], shell_ok(begun["challenge"]), b)
    kairos.next(steps[2], shell_ok(second["challenge"], exit_code=1), b)
    kairos.attest(steps[1], "failure", "could not configure", b, llm_model_id="model-x")
    m = kairos.metrics(steps[0])
    assert (m["runs"], m["successes"], m["failures"], m["last_outcome"]) == (2, 1, 1, "failure")
    assert m["per_model"] == {"model-x": {"failure": 1}}
    by_label = {s["label"]: s for s in m["steps"]}
    assert by_label["Configure"]["failures"] == 1 and by_label["Configure"]["refused"] == 1
    assert by_label["Create structure"]["accepted"] == 2
    # Overriding an outcome moves the counts instead of adding to them; a success whose
    # steps were not all proven is recorded but not counted.
    overridden = kairos.attest(steps[1], "success", "fixed it by hand", b,
                               llm_model_id="model-x")
    assert (overridden["outcome"], overridden["proven"]) == ("success", False)
    m = kairos.metrics(steps[0])
    assert (m["successes"], m["failures"]) == (1, 0)
    assert m["per_model"] == {"model-x": {"failure": 0}}
    assert {s["label"]: s["failures"] for s in m["steps"]}["Configure"] == 0


@pytest.mark.req("D3-2")
def test_attest_solution_is_validated_like_next(kairos: Kairos) -> None:
    steps, _ = mint_three(kairos)
    response = kairos.begin(steps[0])
    for uri in steps[1:]:
        response = kairos.next(uri, shell_ok(response["challenge"]))
    refused = kairos.attest(steps[2], "success", "m", solution={
        **shell_ok(response["challenge"]), "nonce": "f" * 32})
    assert refused["error_code"] == "NONCE_MISMATCH"
    assert refused["next_action"] == (
        f"retry kairos_attest with {steps[2]} -- use nonce and proof_hash from THIS "
        "response's challenge")
    done = kairos.attest(steps[2], "success", "m", solution=shell_ok(refused["challenge"]))
    assert done["proofs"] == 3 and kairos.verify_run(done["run_id"])["valid"]
    with pytest.raises(KairosError) as info:
        kairos.attest(steps[2], "success", "again", solution=shell_ok(refused["challenge"]))
    assert info.value.field == "solution"


@pytest.mark.req("D3-12")
@pytest.mark.parametrize(("kwargs", "field"), [
    ({"outcome": "maybe"}, "outcome"),
    ({"message": 3}, "message"),
    ({"quality_bonus": "lots"}, "quality_bonus"),
    ({"quality_bonus": 7}, "quality_bonus"),
    ({"llm_model_id": 5}, "llm_model_id"),
])
def test_attest_validation(kairos: Kairos, kwargs: dict[str, Any], field: str) -> None:
    steps, _ = mint_three(kairos)
    kairos.begin(steps[0])
    args = {"outcome": "success", "message": "ok", **kwargs}
    with pytest.raises(KairosError) as info:
        kairos.attest(steps[0], args.pop("outcome"), args.pop("message"), **args)
    assert info.value.field == field and info.value.status == 422


def test_single_step_run_is_finalized_by_attest(kairos: Kairos) -> None:
    uri = kairos.mint("# One\n\n## Only\n\nDo it.\n")["items"][0]["uri"]
    begun = kairos.begin(uri)
    done = kairos.attest(uri, "success", "did it", solution={
        "type": "comment", "nonce": begun["challenge"]["nonce"],
        "proof_hash": GENESIS_HASH,
        "comment": {"text": "Ran it on host web-2; it printed 3 warnings, all harmless."}})
    assert done["proofs"] == 1 and kairos.verify_run(done["run_id"])["valid"]
    assert kairos.metrics(uri)["successes"] == 1


def test_run_history_and_proof_log(kairos: Kairos) -> None:
    steps, _ = mint_three(kairos)
    done = _run_to_end(kairos, steps, Caller())
    history = kairos.run_history()
    assert history[0]["run_id"] == done["run_id"] and history[0]["outcome"] == "success"
    assert history[0]["chain_label"] == "Project Setup"
    log = kairos.proof_log(done["run_id"])["proofs"]
    assert [p["step_index"] for p in log] == [0, 1, 2]
    assert log[0]["previous_hash"] == GENESIS_HASH
    assert log[2]["proof_hash"] == done["proof_hash"]
    with pytest.raises(KairosError):
        kairos.verify_run(done["run_id"], Caller(space="other"))



def test_a_swap_applies_only_to_the_run_as_it_was_read(kairos: Kairos) -> None:
    """The compare-and-swap refuses a run that changed since it was read: a change that
    counted its version, and one that cleared the pending nonce without counting it."""
    steps, _ = mint_three(kairos)
    kairos.begin(steps[0])
    run_id = kairos.run_history()[0]["run_id"]
    for change in ({"version": schema.runs.c.version + 1}, {"nonce": None, "challenge": None}):
        with kairos.store.write() as repo:
            read = dict(repo.run(run_id) or {})
            repo.conn.execute(update(schema.runs).where(schema.runs.c.id == run_id)
                              .values(**change))
            assert repo.swap_run(read, status="finished", outcome="failure") is None
            now = dict(repo.run(run_id) or {})
            written = repo.swap_run(now, message="as it is")
            assert written is not None  # the run as written: the change, one more version
            assert dict(written) == {**now, "message": "as it is", "version": now["version"] + 1}
            assert dict(repo.run(run_id) or {}) == dict(written)
