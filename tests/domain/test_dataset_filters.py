"""Which runs an export takes: the filters as typed, and the pure predicate."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairos.domain import datasets as ds
from kairos.domain.dataset_filters import Filters
from kairos.domain.errors import INVALID_URI, ValidationError
from tests.domain.dataset_runs import (
    failure_with_retries,
    protocol,
    proven_success,
    unproven_success,
    with_time,
)


@pytest.mark.parametrize(("given_", "field"), [
    ({"protocol": "deploy"}, "protocol"),
    ({"outcome": "win"}, "outcome"),
    ({"proven_only": "yes"}, "proven_only"),
    ({"since": "yesterday"}, "since"),
    ({"until": "2026-13-01"}, "until"),
    ({"since": ""}, "since"),
    ({"since": 20260501}, "since"),
    ({"since": "2026-05-02", "until": "2026-05-01"}, "until"),
])
def test_a_bad_filter_is_named(given_: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as error:
        Filters.parse(**given_)  # type: ignore[arg-type]
    assert error.value.field == field and error.value.expected
    assert error.value.to_dict()["message"]


def test_a_malformed_protocol_is_an_invalid_uri() -> None:
    with pytest.raises(ValidationError) as error:
        Filters.parse(protocol="kairos://mem/not-a-uuid")
    assert error.value.code == INVALID_URI


def test_a_date_covers_its_whole_day_and_times_are_instants() -> None:
    runs = [with_time(proven_success(f"r{h}"), f"2026-05-{d:02d}T{h:02d}:30:00+00:00")
            for d, h in ((1, 0), (1, 23), (2, 12), (3, 0))]

    def taken(**bounds: str) -> list[str]:
        f = Filters.parse(**bounds)
        return [r.run_id for r in runs if f.selects(r)]

    assert taken(since="2026-05-01", until="2026-05-01") == ["r0", "r23"]
    assert taken(since="2026-05-02") == ["r12", "r0"]
    assert taken(until="2026-05-01T23:30:00Z") == ["r0", "r23"]  # until an instant: inclusive
    assert taken(since="2026-05-01T23:30:00+00:00") == ["r23", "r12", "r0"]
    # naive times are UTC; other offsets are converted
    assert taken(since="2026-05-02T14:00:00+02:00", until="2026-05-02T12:30:00") == ["r12"]


def test_space_outcome_and_protocol_by_any_of_its_steps() -> None:
    other = protocol(tag=7)
    runs = [proven_success(), failure_with_retries(), proven_success("elsewhere", proto=other),
            replace(proven_success("theirs"), space="other-team")]
    step_two = other.steps[1].uri
    assert [r.run_id for r in runs if Filters.parse(protocol=step_two).selects(r)] == \
        ["elsewhere"]
    assert [r.run_id for r in runs if Filters.parse(outcome="failure").selects(r)] == ["lose"]
    assert "theirs" not in {r.run_id for r in runs if Filters(space="team").selects(r)}


def test_proven_only_is_the_default() -> None:
    maybe = unproven_success()
    assert not Filters().selects(maybe) and not Filters.parse().selects(maybe)
    assert Filters.parse(proven_only=False).selects(maybe)
    assert Filters.parse(outcome="failure").selects(failure_with_retries())  # no proof needed


def test_a_run_with_an_unreadable_time_is_in_no_range() -> None:
    run = with_time(proven_success(), "sometime")
    assert Filters().selects(run) and not Filters.parse(since="2026-01-01").selects(run)


@given(st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1),
                    timezones=st.just(UTC)),
       st.dates(min_value=date(2020, 1, 1), max_value=date(2030, 1, 1)))
def test_adjacent_date_ranges_take_each_run_exactly_once(began: datetime, day: date) -> None:
    run = with_time(proven_success(), began.isoformat())
    before = Filters.parse(until=day.isoformat())
    after = Filters.parse(since=(day + timedelta(days=1)).isoformat())
    assert before.selects(run) != after.selects(run)


@given(st.text())
def test_a_record_is_always_one_line(text: str) -> None:
    record = ds.sft_record(proven_success(request=text or None))
    assert record is not None
    line = ds.to_jsonl(record)
    assert len(line.splitlines()) == 1 and json.loads(line) == record
