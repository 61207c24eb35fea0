"""What search shows, with the real local model: a small team store, short queries, rare
step terms, tool names, noise, and the explanation of each candidate."""

from __future__ import annotations

from pathlib import Path

import pytest

from kairos.service import Kairos
from tests.conftest import make_kairos

TEAM = {
    "release-web": "# Publish a release of the web app\n\n## Tag\n\nTag the version.\n\n"
                   "## Deploy\n\nDeploy the tagged build.\n",
    "release-lib": "# Release a Python package to PyPI\n\n## Build\n\nBuild the wheel.\n\n"
                   "## Upload\n\nUpload with twine.\n",
    "hotfix": "# Ship a hotfix to production\n\n## Branch\n\nBranch from the last release "
              "tag.\n\n## Deploy\n\nDeploy through the fast lane.\n",
    "failover": "# Fail over the primary database\n\n## Promote\n\nRun patronictl failover "
                "on the orion cluster.\n\nPROOF OF WORK: patronictl failover orion\n",
    "refund": "# Refund a customer's order\n\n## Refund\n\nRefund the charge in the payment "
              "provider.\n",
    "certs": "# Renew the TLS certificate\n\n## Renew\n\nRun certbot with the DNS "
             "challenge.\n",
    "onboard": "# Onboard a new engineer\n\n## Accounts\n\nCreate the accounts and order a "
               "laptop.\n",
    "scale": "# Scale out the web tier\n\n## Autoscaler\n\nRaise the replica bounds of the "
             "horizontal pod autoscaler.\n",
}


@pytest.fixture
def team(home: Path) -> Kairos:
    k = make_kairos(home)
    for doc in TEAM.values():
        k.mint(doc)
    return k


def _matches(k: Kairos, query: str) -> list[str]:
    return [c["chain_label"] for c in k.search(query)["choices"] if c["role"] == "match"]


def test_a_word_in_titles_ranks_them_above_a_step_that_mentions_it(team: Kairos) -> None:
    matches = _matches(team, "release")
    assert set(matches[:2]) == {"Publish a release of the web app",
                                "Release a Python package to PyPI"}
    assert "Ship a hotfix to production" not in matches[:2]


def test_short_keywords_and_intent_terms_find_their_protocol_in_a_small_store(
        team: Kairos) -> None:
    for query, title in (("refund", "Refund a customer's order"),
                         ("renew tls", "Renew the TLS certificate"),
                         ("database failover", "Fail over the primary database"),
                         ("autoscaling pods", "Scale out the web tier")):
        assert _matches(team, query)[:1] == [title], query


def test_a_rare_word_of_a_step_is_a_first_match_after_the_step_changes(team: Kairos) -> None:
    doc = TEAM["certs"].replace("Run certbot", "Check the wombat dashboard, then run certbot")
    team.mint(doc, force_update=True)
    assert _matches(team, "wombat dashboard")[:1] == ["Renew the TLS certificate"]
    assert _matches(team, "wombat")[:1] == ["Renew the TLS certificate"]


def test_a_tool_name_from_a_step_finds_its_protocol_first(team: Kairos) -> None:
    assert _matches(team, "patronictl")[:1] == ["Fail over the primary database"]


def test_off_topic_queries_match_nothing_in_a_small_store(team: Kairos) -> None:
    for query in ("knitting patterns", "what should I cook for dinner tonight",
                  "zzkq plorf vintu"):
        assert _matches(team, query) == [], query


def test_numbers_and_random_tokens_never_carry_a_match(home: Path) -> None:
    k = make_kairos(home)
    k.mint("# NoRawScoreTest 1795639653395\n\n## Check\n\nCheck the raw score.\n")
    k.mint("# Rotate keys 20240611\n\n## Rotate\n\nRotate the keys.\n")
    for query in ("XyZ123GarbageV2Test1795639759331NoOneSearchesThis", "1795639653395",
                  "20240611", "Kp3vQ9zLm2Tt8Rw1Ya"):
        assert _matches(k, query) == [], query
    assert _matches(k, "rotate keys")[:1] == ["Rotate keys 20240611"]


def test_explain_lists_each_candidates_evidence_and_why(team: Kairos) -> None:
    explained = team.explain_search("refund")
    relevance = explained["relevance"]["protocols"]
    assert relevance["relevant"] and relevance["strongest"] == "Refund a customer's order"
    assert relevance["documents"] == len(TEAM)
    first, *rest = explained["candidates"]
    assert first["title"] == "Refund a customer's order" and first["listed"]
    assert first["why"].startswith("listed: the query is relevant")
    assert first["uri"] == team.search("refund")["choices"][0]["uri"]
    evidence = first["evidence"]
    assert evidence["every_word_in_title"] and evidence["share"] == 1.0
    assert evidence["dense_by_role"]["doc"] == pytest.approx(evidence["dense"], abs=1e-4)
    assert evidence["dense_by_role"]["trigger"] is None
    assert {"text", "strength", "below_strongest", "quality_boost"} <= set(evidence)
    assert any(not c["listed"] and c["why"].startswith("not listed") for c in rest)
    off = team.explain_search("knitting patterns")
    assert not off["relevance"]["protocols"]["relevant"]
    assert all(not c["listed"] and "nothing here is relevant" in c["why"]
               for c in off["candidates"])


def test_the_unified_search_explains_on_request(team: Kairos) -> None:
    plain = team.search_entries({"query": "refund", "types": ["protocol"]})
    assert "explain" not in plain
    explained = team.search_entries({"query": "refund", "types": ["protocol"],
                                     "explain": True})
    assert explained["explain"]["threshold"] == explained["min_score"]
    assert [c["title"] for c in explained["explain"]["candidates"]][:1] == [
        "Refund a customer's order"]
    assert explained["results"] == plain["results"]


def test_a_protocols_score_is_the_same_whatever_filters_hide(team: Kairos) -> None:
    every = team.search_entries({"query": "release", "types": ["protocol"], "min_score": 0})
    first = every["results"][0]
    hidden = team.search_entries({"query": "release", "types": ["protocol"], "min_score": 0,
                                  "hide_viewed": True, "session_id": "s1"})
    assert hidden["results"][0]["score"] == first["score"]
