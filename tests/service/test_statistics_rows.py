"""A protocol's statistics rows in a space: made as they are first counted, so a run of a
built-in protocol writes only the rows its counts touch."""

from __future__ import annotations

from sqlalchemy import Table, select

from kairos.domain.caller import Caller
from kairos.domain.texts import CREATE_PROTOCOL_URI
from kairos.store import schema
from tests.client import Agent

ELSEWHERE = Caller(space="elsewhere")


def rows(kairos: Agent, table: Table) -> list[dict[str, object]]:
    with kairos.store.read() as repo:
        return [dict(r) for r in repo.conn.execute(
            select(table).where(table.c.space == ELSEWHERE.space)).mappings()]


def test_a_builtin_run_makes_only_the_rows_it_counts(kairos: Agent) -> None:
    kairos.begin(CREATE_PROTOCOL_URI, ELSEWHERE)
    [protocol] = rows(kairos, schema.protocol_metrics)
    assert protocol["runs"] == 1 and protocol["per_model"] == {}
    assert rows(kairos, schema.step_metrics) == []  # no step counted yet
    [version] = rows(kairos, schema.version_metrics)
    assert version["runs"] == 1

    run_id = kairos.run_history(ELSEWHERE)[0]["run_id"]
    kairos.abort_run(run_id, ELSEWHERE, "not now")
    [step] = rows(kairos, schema.step_metrics)
    assert (step["step_id"], step["failures"], step["accepted"]) == (
        CREATE_PROTOCOL_URI.rsplit("/", 1)[1], 1, 0)
    metrics = kairos.metrics(CREATE_PROTOCOL_URI, ELSEWHERE)
    assert (metrics["runs"], metrics["failures"]) == (1, 1)
    assert [s["failures"] for s in metrics["steps"]][:2] == [1, 0]
    # Another space's statistics are its own.
    assert kairos.metrics(CREATE_PROTOCOL_URI)["runs"] == 0
