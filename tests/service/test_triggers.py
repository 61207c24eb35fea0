"""Author triggers and learned triggers: searched like the protocol's own text, kept by a
dump and a mint, learned only from proven successes in the space, bounded, removable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from kairos.domain import limits
from kairos.domain.errors import KairosError
from kairos.service import Caller, Kairos
from kairos.store import schema as t
from tests.conftest import make_kairos
from tests.spec.seedkit import shell_ok

OUTAGE = """---
triggers:
  - the site is down
  - customers get errors on every page
---
# Respond to a production outage

## Declare

Open an incident in PagerDuty.

PROOF OF WORK: timeout 30s pd incident create

## Mitigate

Roll back the last deploy.

PROOF OF WORK: timeout 30s deploy rollback
"""
OTHERS = [
    "# Send an incident update to customers\n\n## Draft\n\nDraft the message.\n\n"
    "PROOF OF WORK: timeout 30s draft\n\n## Send\n\nSend it.\n\nPROOF OF WORK: timeout 30s send\n",
    "# Renew the TLS certificate\n\n## Renew\n\nRun certbot.\n\nPROOF OF WORK: timeout 30s "
    "certbot renew\n\n## Check\n\nCheck the expiry.\n\nPROOF OF WORK: timeout 30s check\n",
]


def _roles(k: Kairos, title: str) -> list[str]:
    with k.store.read() as repo:
        rid = repo.conn.execute(select(t.search_docs.c.rid).where(
            t.search_docs.c.title == title)).scalar_one()
        return [r[0] for r in repo.conn.execute(
            select(t.search_vectors.c.role).where(t.search_vectors.c.rid == rid)
            .order_by(t.search_vectors.c.seq))]


def _first(k: Kairos, query: str, caller: Caller = Caller()) -> str | None:
    choices = k.search(query, caller)["choices"]
    return choices[0]["chain_label"] if choices[0]["role"] == "match" else None


def _run(k: Kairos, uri: str, caller: Caller, *, prove: bool = True,
         outcome: str = "success") -> dict[str, Any]:
    begun = k.begin(uri, caller)
    steps = [s["uri"] for s in k.dump(uri, caller, protocol=True)["steps"]]
    answer = k.next(steps[1], shell_ok(begun["challenge"]), caller)
    return k.attest(steps[1], outcome, "done", caller,
                    solution=shell_ok(answer["challenge"]) if prove else None)


def _learn(k: Kairos, query: str, agent: Caller) -> str:
    """The outage protocol's URI, after ``agent`` searched ``query`` and proved a run."""
    outage = k.search("production outage")["choices"][0]["uri"]
    k.search(query, agent)
    k.search_engine.learning.flush()
    _run(k, outage, agent)
    return outage


@pytest.fixture
def k(home: Path) -> Kairos:
    service = make_kairos(home)
    for doc in (OUTAGE, *OTHERS):
        service.mint(doc)
    return service


def test_author_triggers_are_searched_as_vectors_of_their_protocol(k: Kairos) -> None:
    assert _roles(k, "Respond to a production outage")[-2:] == ["trigger", "trigger"]
    explained = k.explain_search("the site is down")
    top = explained["candidates"][0]
    assert top["title"] == "Respond to a production outage" and top["listed"]
    assert top["evidence"]["dense_by_role"]["trigger"] == pytest.approx(1.0, abs=1e-3)
    assert top["evidence"]["dense"] == pytest.approx(1.0, abs=1e-3)  # the best of its vectors


def test_a_dump_shows_the_triggers_and_mints_back_with_them(k: Kairos) -> None:
    uri = k.search("production outage")["choices"][0]["uri"]
    dumped = k.dump(uri, protocol=True)
    assert dumped["triggers"] == ["the site is down", "customers get errors on every page"]
    assert dumped["markdown_doc"].startswith('---\ntriggers:\n  - "the site is down"\n')
    other = Caller(space="another-team")
    item = k.mint(dumped["markdown_doc"], other)["items"][0]
    assert k.dump(item["uri"], other, protocol=True)["triggers"] == dumped["triggers"]
    assert k.triggers(item["uri"], other)["triggers"] == dumped["triggers"]


def test_a_proven_success_teaches_the_query_that_led_to_it(k: Kairos) -> None:
    agent = Caller(id="agent-1")
    query = "prod is on fire, sev1 declared"
    uri = k.search(query, agent)["choices"][0]["uri"]
    outage = k.search("production outage", agent)["choices"][0]["uri"]
    k.search_engine.learning.flush()
    _run(k, outage, agent)
    listed = k.triggers(outage)
    assert [x["text"] for x in listed["learned"]][:1] == ["production outage"]
    assert {x["text"] for x in listed["learned"]} <= {query, "production outage"}
    assert _roles(k, "Respond to a production outage")[-1] == "learned"
    explained = k.explain_search("production outage")
    assert explained["candidates"][0]["evidence"]["dense_by_role"]["learned"] == pytest.approx(
        1.0, abs=1e-3)
    assert uri  # the first search was answered


def test_a_paraphrase_of_a_learned_query_finds_the_protocol(k: Kairos) -> None:
    outage = _learn(k, "everything returns 502 at the load balancer", Caller(id="agent-2"))
    assert [x["text"] for x in k.triggers(outage)["learned"]] == [
        "everything returns 502 at the load balancer"]
    assert _first(k, "the load balancer returns 502 for everything") == (
        "Respond to a production outage")


def test_nothing_is_learned_from_unproven_or_failed_runs(k: Kairos) -> None:
    outage = k.search("production outage")["choices"][0]["uri"]
    for i, (prove, outcome) in enumerate(((False, "success"), (True, "failure"))):
        agent = Caller(id=f"agent-{i}")
        k.search("everything returns 502 at the load balancer", agent)
        k.search_engine.learning.flush()
        attested = _run(k, outage, agent, prove=prove, outcome=outcome)
        assert (attested["outcome"], attested["proven"]) == (outcome, prove)
    assert k.triggers(outage)["learned"] == []


def test_learning_stays_in_its_space_and_with_its_caller(k: Kairos) -> None:
    outage = k.search("production outage")["choices"][0]["uri"]
    k.search("everything returns 502 at the load balancer", Caller(id="someone-else"))
    k.search("everything returns 502 at the load balancer", Caller("team-b", "agent"))
    k.search_engine.learning.flush()
    _run(k, outage, Caller(id="agent"))
    assert k.triggers(outage)["learned"] == []
    with pytest.raises(KairosError) as info:
        k.triggers(outage, Caller("team-b", "agent"))
    assert info.value.status == 404


def test_learned_triggers_are_deduplicated_bounded_and_removable(k: Kairos) -> None:
    outage = k.search("production outage")["choices"][0]["uri"]
    agent = Caller(id="agent")
    queries = [f"incident number {w} in production" for w in (
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve")]
    for query in [queries[0], *queries]:  # the first one twice
        k.search(query, agent)
        k.search_engine.learning.flush()
        _run(k, outage, agent)
    learned = k.triggers(outage)["learned"]
    assert len(learned) == limits.LEARNED_TRIGGERS
    assert learned[0]["text"] == queries[-1]  # most recently used first
    assert queries[0] not in {x["text"] for x in learned}  # the least recently used went
    assert _roles(k, "Respond to a production outage").count("learned") == len(learned)
    after = k.forget_triggers(outage, [learned[0]["id"]])
    assert after["removed"] == 1 and len(after["learned"]) == len(learned) - 1
    assert _roles(k, "Respond to a production outage").count("learned") == len(learned) - 1
    with pytest.raises(KairosError) as info:
        k.forget_triggers(outage, [learned[0]["id"]])
    assert (info.value.status, info.value.field) == (404, "trigger_ids")
    assert k.forget_triggers(outage)["learned"] == []
    assert "learned" not in _roles(k, "Respond to a production outage")


def test_learned_vectors_survive_a_new_version_of_the_protocol(k: Kairos) -> None:
    outage = _learn(k, "everything returns 502 at the load balancer", Caller(id="agent"))
    k.mint(OUTAGE.replace("Roll back the last deploy.", "Roll back or turn off the flag."),
           force_update=True)
    assert _roles(k, "Respond to a production outage")[-1] == "learned"
    assert len(k.triggers(outage)["learned"]) == 1
