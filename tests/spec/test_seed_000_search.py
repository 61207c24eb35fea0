"""Contract §3: kairos_search — single, multiple, weak and no matches, in both modes
(vectors from the deterministic test embedder, and text only)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kairos.domain.errors import KairosError
from kairos.service import Kairos
from tests.conftest import make_kairos

REFINE = {
    "uri": "kairos://mem/00000000-0000-0000-0000-000000002002",
    "label": "Get help refining your search",
    "chain_label": "Run protocol to turn vague user request into a better kairos_search query",
    "score": None,
    "role": "refine",
    "tags": ["meta", "refine"],
    "next_action": "call kairos_begin with kairos://mem/00000000-0000-0000-0000-000000002002 "
                   "to get step-by-step help turning the user's request into a better search "
                   "query",
}
CREATE = {
    "uri": "kairos://mem/00000000-0000-0000-0000-000000002001",
    "label": "Create New KAIROS Protocol Chain",
    "chain_label": "Create New KAIROS Protocol Chain",
    "score": None,
    "role": "create",
    "tags": ["meta", "creation"],
    "next_action": "call kairos_begin with kairos://mem/00000000-0000-0000-0000-000000002001 "
                   "to create a new protocol",
}
JIRA = """# Create Jira Ticket in BIB - {kind}

## Core Principles / Discovery & Pattern Analysis

{detail}

PROOF OF WORK: mcp jira_create_issue
"""
DETAILS = {
    "Bug": "Reproduce the defect first, attach logs and screenshots, set severity.",
    "Story": "Write the user story with acceptance criteria and story points.",
    "Task": "Describe the chore, link the parent epic and assign an owner.",
}


@pytest.fixture(params=["vectors", "text"])
def k(request: pytest.FixtureRequest, home: Path) -> Iterator[Kairos]:
    """The scenarios with the real local model (scores calibrated on its cosines) and
    with text only."""
    if request.param == "text":
        service = make_kairos(home, KAIROS_EMBEDDER="none")
    else:
        service = make_kairos(home, request.getfixturevalue("model"))
    yield service
    service.close()


def _check_shape(response: dict) -> None:
    assert response["must_obey"] is True and response["choices"]
    for choice in response["choices"]:
        assert set(choice) == {"uri", "label", "chain_label", "score", "role", "tags",
                               "next_action"}
        if choice["role"] == "match":
            assert 0.30 <= choice["score"] <= 1.0
            assert choice["next_action"] == (
                f"call kairos_begin with {choice['uri']} to execute this protocol")
        else:
            assert choice["score"] is None
    roles = [c["role"] for c in response["choices"]]
    assert roles == sorted(roles, key=["match", "refine", "create"].index)


def test_scenario_1_single_match(k: Kairos) -> None:
    uri = k.mint("# Deploy the coding extension\n\n## Ship it\n\nDeploy the extension to "
                 "production.\n\nPROOF OF WORK: make deploy\n")["items"][0]["uri"]
    k.mint("# Bake sourdough bread\n\n## Knead\n\nKnead the dough for ten minutes.\n")
    response = k.search("coding deploy")
    _check_shape(response)
    assert response["message"] == "Found 1 match."
    assert response["next_action"] == "Follow the choice's next_action."
    [choice] = response["choices"]
    assert choice["uri"] == uri and choice["role"] == "match"
    assert choice["label"] == "Ship it" and choice["chain_label"] == "Deploy the coding extension"
    assert "deploy" in choice["tags"]


def test_scenario_2_multiple_matches(k: Kairos) -> None:
    uris = {kind: k.mint(JIRA.format(kind=kind, detail=DETAILS[kind]))["items"][0]["uri"]
            for kind in ("Bug", "Story", "Task")}
    k.mint("# Water the garden\n\n## Hose\n\nWater the tomatoes at dawn.\n")
    response = k.search("Jira create ticket")
    _check_shape(response)
    matches = [c for c in response["choices"] if c["role"] == "match"]
    assert {c["uri"] for c in matches} == set(uris.values())
    top = max(c["score"] for c in matches)
    assert response["message"] == (
        f"Found 3 matches (top confidence: {round(top * 100)}%). Choose one, refine your "
        "search, or create a new protocol.")
    assert response["next_action"] == "Pick one choice and follow that choice's next_action."
    assert response["choices"][3:] == [REFINE, CREATE]
    assert [c["score"] for c in matches] == sorted((c["score"] for c in matches), reverse=True)
    assert matches[0]["label"] == "Core Principles / Discovery & Pattern Analysis"


def test_scenario_3_weak_matches(k: Kairos) -> None:
    k.mint("# Database Migration Workflow\n\n## Migration Steps\n\nApply the schema "
           "migration with alembic.\n")
    k.mint("# Emergency Rollback Protocol\n\n## Rollback Procedures\n\nRoll back the release "
           "when errors spike.\n")
    response = k.search("database migration rollback")
    _check_shape(response)
    matches = [c for c in response["choices"] if c["role"] == "match"]
    assert len(matches) == 2 and matches[0]["chain_label"] == "Database Migration Workflow"
    assert response["message"].startswith("Found 2 matches (top confidence: ")
    assert response["choices"][-2:] == [REFINE, CREATE]


def test_scenario_4_no_match(k: Kairos) -> None:
    k.mint(JIRA.format(kind="Bug", detail=DETAILS["Bug"]))
    assert k.search("xyzqwerty nonexistent protocol foobar") == {
        "must_obey": True,
        "message": "No existing protocol matched your query. Refine your search or create a "
                   "new one.",
        "next_action": "Pick one choice and follow that choice's next_action.",
        "choices": [REFINE, CREATE],
    }


def test_top_n_is_ten_and_limit_goes_to_25(k: Kairos) -> None:
    for i in range(27):
        k.mint(f"# Rotate secret number {i}\n\n## Rotate\n\nRotate the api secret {i} in the "
               "vault.\n", force_update=True)
    response = k.search("rotate api secret vault")
    assert [c["role"] for c in response["choices"]] == ["match"] * 10 + ["refine", "create"]
    assert len(k.search("rotate api secret vault", limit=25)["choices"]) == 27
    for bad in (0, 26, "5", True):
        with pytest.raises(KairosError) as info:
            k.search("rotate", limit=bad)
        assert info.value.field == "limit"


def test_builtins_are_never_matches(k: Kairos) -> None:
    response = k.search("Create New KAIROS Protocol Chain refine search query")
    assert all(c["role"] != "match" for c in response["choices"])


@pytest.mark.parametrize("query", ["", "   ", "\n\t", "x" * 2001, None, 42])
def test_bad_queries(k: Kairos, query: object) -> None:
    with pytest.raises(KairosError) as info:
        k.search(query)
    assert info.value.field == "query" and info.value.status == 422


def test_a_search_right_after_a_write_sees_it(k: Kairos) -> None:
    item = k.mint("# Renew TLS certificates\n\n## Renew\n\nRun certbot renew.\n")["items"][0]
    assert k.search("renew tls certificates")["choices"][0]["uri"] == item["uri"]
    k.update(item["uri"], updates={"content": "Rotate the kafka broker keystore."})
    found = k.search("kafka broker keystore")["choices"][0]
    assert found["uri"] == item["uri"]
    k.delete(item["uri"], protocol=True)
    assert all(c["role"] != "match" for c in k.search("kafka broker keystore")["choices"])
