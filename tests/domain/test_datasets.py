"""Datasets from runs: each format from runs the engine made, parsed back and checked
against the layouts the fine-tuning tools document."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.domain import datasets as ds
from kairos.domain.dataset_filters import Filters
from kairos.domain.errors import ValidationError
from kairos.domain.proof import verify_chain
from kairos.domain.texts import COMMAND_FAILED, GENESIS_HASH, USER_DECLINED
from tests.domain.dataset_runs import (
    bad,
    failure_with_retries,
    ok,
    play,
    protocol,
    proven_success,
    unproven_success,
    with_time,
)

# --- the layouts, as TRL, Axolotl and OpenAI fine-tuning document them ------------------------
# TRL (docs "Dataset formats and types"; trl.data_utils.apply_chat_template): the columns
# TRL reads must be exactly {"messages"} for language modelling, {"prompt", "chosen",
# "rejected"} for an explicit-prompt preference; other columns are left alone. A message
# is {"role", "content"}; a prompt's last role is user (then a generation prompt is added).
# OpenAI chat fine-tuning: roles system/user/assistant, string content, at least one
# assistant message. Axolotl's chat_template type: "messages" of role/content by default.
# Strict chat templates (Llama 2, Mistral) need system first at most, then user and
# assistant alternating from user.
TRL_COLUMNS = {"prompt", "chosen", "rejected", "completion", "messages", "label"}
ROLES = {"system", "user", "assistant"}


def check_conversation(messages: Any) -> list[str]:
    assert isinstance(messages, list) and messages
    for m in messages:
        assert isinstance(m, dict) and set(m) == {"role", "content"}, m
        assert m["role"] in ROLES and isinstance(m["content"], str) and m["content"].strip()
    roles = [m["role"] for m in messages]
    body = roles[1:] if roles[0] == "system" else roles
    assert "system" not in body
    assert body == [("user", "assistant")[i % 2] for i in range(len(body))], roles
    return roles


def check_sft(record: dict[str, Any]) -> None:
    assert set(record) & TRL_COLUMNS == {"messages"}
    roles = check_conversation(record["messages"])
    assert roles[-1] == "assistant"


def check_preference(record: dict[str, Any]) -> None:
    assert set(record) & TRL_COLUMNS == {"prompt", "chosen", "rejected"}
    assert check_conversation(record["prompt"])[-1] == "user"
    for side in ("chosen", "rejected"):
        assert [m["role"] for m in record[side]] == ["assistant"]
        check_conversation(record["prompt"] + record[side])
    assert record["chosen"] != record["rejected"]


def lines(records: Any) -> list[dict[str, Any]]:
    """Written as JSON Lines and parsed back, as a reader of the file would."""
    text = "\n".join(ds.to_jsonl(r) for r in records)
    return [json.loads(line) for line in text.splitlines()] if text else []


RUNS = [proven_success(), unproven_success(), failure_with_retries()]
BY_ID = {r.run_id: r for r in RUNS}


def verifies(record: dict[str, Any], run_key: str = "run_id",
             head_key: str = "proof_head") -> None:
    """The record names a run whose chain recomputes to the head the record carries."""
    run = BY_ID[record[run_key]]
    head, count, broken = verify_chain(run.proofs)
    assert broken is None and count == len(run.proofs) and head == record[head_key]


# --- trace-jsonl ------------------------------------------------------------------------------


def test_a_trace_holds_every_step_its_answers_refusals_outcome_and_reward() -> None:
    records = lines(ds.export(ds.TRACE, RUNS))
    assert [r["run_id"] for r in records] == ["win", "lose"]  # the unproven success is out
    win, lose = records
    assert (win["outcome"], win["proven"], win["reward"]) == ("success", True, 1.0)
    assert (lose["outcome"], lose["proven"], lose["reward"]) == ("failure", False, 0.0)
    assert [s["state"] for s in win["steps"]] == ["accepted"] * 3
    assert [s["state"] for s in lose["steps"]] == ["accepted", "refused", "not_reached"]
    first, second, third = lose["steps"]
    assert first["content"] == "Run the whole suite." and first["label"] == "Run the tests"
    assert first["challenge"]["shell"]["cmd"] == "pytest -q"
    assert first["proof"]["solution"]["shell"] == ok(0)
    assert first["proof"]["challenge"]["proof_hash"] == GENESIS_HASH
    assert [(r["error_code"], r["solution"]["shell"]) for r in first["refusals"]] == \
        [(COMMAND_FAILED, bad(0))]
    assert [r["error_code"] for r in second["refusals"]] == [USER_DECLINED] * 3
    assert second["proof"] is None and third["refusals"] == []
    assert lose["message"] == "The release owner said no three times."
    assert win["protocol_version"] == 1 and win["protocol_hash"] == RUNS[0].protocol.content_hash
    for record in records:
        verifies(record)
        assert ds.check_trace(record) is None  # the record alone recomputes its chain


def test_an_unproven_success_is_in_a_trace_only_when_asked_and_then_flagged() -> None:
    asked = lines(ds.export(ds.TRACE, RUNS, Filters(proven_only=False)))
    maybe = next(r for r in asked if r["run_id"] == "maybe")
    assert maybe["proven"] is False and maybe["reward"] is None
    assert [s["state"] for s in maybe["steps"]] == ["accepted", "accepted", "unanswered"]
    assert ds.check_trace(maybe) is None
    assert "maybe" not in {r["run_id"] for r in lines(ds.trace_records(RUNS))}


def test_a_run_without_an_outcome_is_in_no_dataset() -> None:
    active = play("open", [ok(0)], outcome=None)
    for fmt in ds.FORMATS:
        records = list(ds.export(fmt, [active, proven_success(), failure_with_retries()],
                                 Filters(proven_only=False)))
        assert records and '"open"' not in json.dumps(records)


@pytest.mark.parametrize("path", [("steps", 0, "proof", "solution", "shell", "exit_code"),
                                  ("steps", 1, "proof", "nonce"),
                                  ("proof_head",)])
def test_a_changed_trace_no_longer_checks(path: tuple[Any, ...]) -> None:
    record = lines(ds.trace_records(RUNS))[0]
    target: Any = record
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = 7 if isinstance(target[path[-1]], int) else "0" * 64
    broken = ds.check_trace(record)
    assert broken is not None and broken.reason


def test_a_trace_keeps_proofs_past_the_steps_a_protocol_has_now() -> None:
    """Before versions pin them, a protocol may lose steps after a run: its proofs stay."""
    run = proven_success("old")
    shorter = replace(run, protocol=replace(run.protocol, steps=run.protocol.steps[:2]))
    record = ds.trace_record(shorter)
    assert len(record["steps"]) == 3 and record["steps"][2]["label"] is None
    assert record["steps"][2]["uri"] == run.proofs[2]["step_uri"]
    assert ds.check_trace(record) is None


# --- sft-jsonl --------------------------------------------------------------------------------


def test_sft_is_one_conversation_per_proven_success_in_the_chat_layout() -> None:
    records = lines(ds.export(ds.SFT, RUNS))
    assert [r["run_id"] for r in records] == ["win"]
    record = records[0]
    check_sft(record)
    messages = record["messages"]
    assert [m["role"] for m in messages] == ["system"] + ["user", "assistant"] * 3
    assert "Ship a release" in messages[0]["content"]
    assert messages[1]["content"].startswith("Run the protocol \u201cShip a release\u201d.")
    assert "Step 1 of 3: Run the tests" in messages[1]["content"]
    assert "Step 3 of 3: Build the packages" in messages[5]["content"]
    run = BY_ID["win"]
    for turn, proof in zip(messages[2::2], run.proofs, strict=True):
        answer = json.loads(turn["content"])
        assert answer == {k: v for k, v in proof["solution"].items()
                          if k not in ("nonce", "proof_hash")}
    for m in messages:  # nothing random per run in the texts
        assert run.proofs[1]["nonce"] not in m["content"] and GENESIS_HASH not in m["content"]
    assert (record["proven"], record["outcome"], record["protocol_version"]) == \
        (True, "success", 1)
    verifies(record)


def test_sft_takes_the_request_when_it_is_known() -> None:
    run = proven_success("asked", request="ship 1.0 to staging")
    record = ds.sft_record(run)
    assert record is not None
    assert record["messages"][1]["content"].startswith("ship 1.0 to staging\n\nStep 1 of 3")


def test_sft_of_an_unproven_success_only_when_asked_ends_at_its_last_answer() -> None:
    asked = lines(ds.export(ds.SFT, RUNS, Filters(proven_only=False)))
    assert [r["run_id"] for r in asked] == ["win", "maybe"]  # never the failure
    maybe = asked[1]
    check_sft(maybe)
    assert maybe["proven"] is False and len(maybe["messages"]) == 1 + 2 * 2


def test_the_metadata_keys_are_flat_values_of_one_type_each() -> None:
    """So a JSON reader that infers one column type per key (Arrow) reads every file."""
    everything = (lines(ds.export(ds.SFT, RUNS, Filters(proven_only=False)))
                  + lines(ds.export(ds.PREFERENCE, RUNS)))
    for record in everything:
        for key, value in record.items():
            if key not in TRL_COLUMNS:
                assert value is None or isinstance(value, str | int | float | bool), key


# --- preference-jsonl -------------------------------------------------------------------------


def test_a_pair_is_a_proven_success_and_a_failure_at_the_step_it_failed() -> None:
    records = lines(ds.export(ds.PREFERENCE, RUNS))
    assert len(records) == 1
    pair = records[0]
    check_preference(pair)
    assert (pair["chosen_run_id"], pair["rejected_run_id"]) == ("win", "lose")
    assert (pair["step_index"], pair["step_uri"]) == (1, RUNS[0].protocol.steps[1].uri)
    assert pair["rejected_source"] == ds.FROM_REFUSED
    assert json.loads(pair["chosen"][0]["content"])["user_input"] == ok(1)
    assert json.loads(pair["rejected"][0]["content"])["user_input"] == bad(1)
    prompt = pair["prompt"]
    assert [m["role"] for m in prompt] == ["system", "user", "assistant", "user"]
    assert prompt[-1]["content"].startswith("Step 2 of 3: Approve the deployment")
    assert json.loads(prompt[2]["content"])["shell"] == ok(0)  # the success's own answer
    verifies(pair, "chosen_run_id", "chosen_proof_head")
    verifies(pair, "rejected_run_id", "rejected_proof_head")


def test_no_pair_with_an_unproven_success_even_when_unproven_runs_are_asked_for() -> None:
    runs = [unproven_success(), failure_with_retries()]
    assert list(ds.export(ds.PREFERENCE, runs, Filters(proven_only=False))) == []


def test_pairs_need_the_same_protocol_version_and_step() -> None:
    other = protocol(tag=1)
    v2 = replace(protocol(), version=2)
    failures = [failure_with_retries("f-other", proto=other),
                failure_with_retries("f-v2", proto=v2),
                play("f-step1", [bad(0), bad(0), bad(0)], outcome="failure")]
    records = lines(ds.export(ds.PREFERENCE, [proven_success(), *failures]))
    assert [(r["rejected_run_id"], r["step_index"]) for r in records] == [("f-step1", 0)]
    assert [m["role"] for m in records[0]["prompt"]] == ["system", "user"]
    assert "Step 1 of 3: Run the tests" in records[0]["prompt"][-1]["content"]


def test_a_failure_without_a_known_answer_is_rejected_with_its_report() -> None:
    gave_up = failure_with_retries("quiet", keep_refused=False, message="Owner unreachable.")
    [pair] = lines(ds.preference_records([proven_success(), gave_up]))
    check_preference(pair)
    assert pair["rejected_source"] == ds.FROM_ATTESTATION
    assert json.loads(pair["rejected"][0]["content"]) == {"outcome": "failure",
                                                          "message": "Owner unreachable."}


def test_a_failure_after_every_step_was_proven_pairs_at_its_attested_step() -> None:
    done = play("all-done-but-wrong", [ok(0), ok(1), {"exit_code": 0, "stdout": "empty"}],
                outcome="failure", message="The wheel was empty.")
    done = replace(done, attested_step=2)
    [pair] = lines(ds.preference_records([proven_success(), done]))
    assert (pair["step_index"], pair["rejected_source"]) == (2, ds.FROM_ACCEPTED)
    check_preference(pair)


def test_each_failure_pairs_with_the_nearest_successes_up_to_the_limit() -> None:
    wins = [with_time(proven_success(f"w{h}"), f"2026-05-01T{h:02d}:00:00+00:00")
            for h in (1, 8, 11, 20)]
    lose = with_time(failure_with_retries(), "2026-05-01T10:00:00+00:00")
    near = [r["chosen_run_id"] for r in ds.preference_records([*wins, lose],
                                                               pairs_per_failure=3)]
    assert near == ["w11", "w8", "w1"]
    assert [r["chosen_run_id"] for r in ds.preference_records([*wins, lose])] == ["w11"]
    with pytest.raises(ValidationError) as bad_limit:
        list(ds.preference_records(wins, pairs_per_failure=0))
    assert bad_limit.value.field == "pairs_per_failure"


def test_the_same_answer_on_both_sides_makes_no_pair() -> None:
    same = play("same", [ok(0), ok(1), ok(2)], outcome="failure", message="Wrong target.")
    same = replace(same, attested_step=0)
    assert list(ds.preference_records([proven_success(), same])) == []


def test_an_unknown_format_is_named() -> None:
    with pytest.raises(ValidationError) as error:
        list(ds.export("csv", RUNS))
    assert error.value.field == "format" and "sft-jsonl" in (error.value.expected or "")


# --- any history ------------------------------------------------------------------------------

ANSWERS = st.lists(st.tuples(st.booleans(), st.booleans()), max_size=9)


@st.composite
def histories(draw: st.DrawFn) -> list[ds.RunData]:
    runs = []
    for n in range(draw(st.integers(1, 6))):
        bodies, step = [], 0
        for passes, _ in draw(ANSWERS):
            if step == 3:
                break
            bodies.append(ok(step) if passes else bad(step))
            step += passes
        outcome = draw(st.sampled_from([None, "success", "failure"]))
        request = draw(st.none() | st.text(min_size=1, max_size=20).filter(str.strip))
        runs.append(play(f"r{n}", bodies, outcome=outcome, request=request,
                         message=draw(st.none() | st.text(max_size=20))))
    return runs


@settings(max_examples=60, deadline=None)
@given(histories(), st.booleans())
def test_any_history_exports_parsable_verifiable_records(runs: list[ds.RunData],
                                                         proven_only: bool) -> None:
    by_id = {r.run_id: r for r in runs}
    filters = Filters(proven_only=proven_only)
    traces = lines(ds.export(ds.TRACE, runs, filters))
    assert {t["run_id"] for t in traces} == {r.run_id for r in runs if filters.selects(r)}
    for trace in traces:
        run = by_id[trace["run_id"]]
        assert ds.check_trace(trace) is None and trace["proof_head"] == run.head
        assert run.proven_success or run.outcome == "failure" or not proven_only
    for record in lines(ds.export(ds.SFT, runs, filters)):
        check_sft(record)
        assert by_id[record["run_id"]].outcome == "success"
        assert by_id[record["run_id"]].proven or not proven_only
    for pair in lines(ds.export(ds.PREFERENCE, runs, filters, pairs_per_failure=5)):
        check_preference(pair)
        chosen, rejected = by_id[pair["chosen_run_id"]], by_id[pair["rejected_run_id"]]
        assert chosen.proven_success and rejected.outcome == "failure"
        assert rejected.failed_step() == pair["step_index"]
