"""Contract §4: kairos_begin — multi-step, single-step, redirect to step 1."""

from __future__ import annotations

import pytest

from kairos.domain.texts import GENESIS_HASH
from kairos.service import Kairos

from .seedkit import AAA, BBB, CCC, SINGLE_STEP, assert_no_forbidden, assert_seed, mint_three

STEP1_CONTENT = (
    "Create the project directory structure.\n\n```json\n{\"challenge\":{\"type\":\"shell\","
    "\"shell\":{\"cmd\":\"mkdir -p src\",\"timeout_seconds\":30},\"required\":true}}\n```"
)


@pytest.mark.req("S004-1", "S004-2", "S004-3", "S004-4", "S004-5", "D4-1", "D3-5")
def test_scenario_1_multi_step(kairos: Kairos) -> None:
    steps, uri_map = mint_three(kairos)
    response = kairos.begin(steps[0])
    assert_seed(response, {
        "must_obey": True,
        "current_step": {"uri": AAA, "content": STEP1_CONTENT, "mimeType": "text/markdown"},
        "challenge": {
            "type": "shell",
            "description": "Execute shell command: mkdir -p src",
            "nonce": "a1b2c3d4e5f6",
            "proof_hash": GENESIS_HASH,
            "shell": {"cmd": "mkdir -p src", "timeout_seconds": 30},
        },
        "next_action": f"call kairos_next with {BBB} and solution matching challenge",
    }, uri_map)
    assert list(response) == ["must_obey", "current_step", "challenge", "next_action"]


@pytest.mark.req("S004-1", "S004-4", "D3-3", "D3-4", "D3-5")
def test_scenario_2_single_step(kairos: Kairos) -> None:
    uri = kairos.mint(SINGLE_STEP)["items"][0]["uri"]
    response = kairos.begin(uri)
    assert_seed(response, {
        "must_obey": True,
        "current_step": {
            "uri": CCC,
            "content": "Review the coding standards and confirm understanding.",
            "mimeType": "text/markdown",
        },
        "challenge": {
            "type": "comment",
            "description": "Provide a verification comment (minimum 20 characters)",
            "nonce": "f6e5d4c3b2a1",
            "proof_hash": GENESIS_HASH,
            "comment": {"min_length": 20},
        },
        "message": "Protocol completed. Call kairos_attest to finalize.",
        "next_action": f"call kairos_attest with {CCC}, outcome, and message",
    }, {uri: CCC})


@pytest.mark.req("S004-1", "S004-4", "S004-5", "D3-5")
def test_scenario_3_redirect_to_step_1(kairos: Kairos) -> None:
    steps, uri_map = mint_three(kairos)
    response = kairos.begin(steps[1])
    # Contract R5: the redirect also carries a nonce and the hash to echo.
    assert_seed(response, {
        "must_obey": True,
        "current_step": {"uri": AAA, "content": STEP1_CONTENT, "mimeType": "text/markdown"},
        "challenge": {
            "type": "shell",
            "description": "Execute shell command: mkdir -p src",
            "shell": {"cmd": "mkdir -p src", "timeout_seconds": 30},
        },
        "message": "Redirected to step 1 of this protocol chain.",
        "next_action": f"call kairos_next with {BBB} and solution matching challenge",
    }, uri_map)
    assert response["challenge"]["proof_hash"] == GENESIS_HASH
    assert kairos.begin(steps[2])["current_step"]["uri"] == steps[0]


@pytest.mark.req("S004-5")
def test_begin_never_returns_removed_fields(kairos: Kairos) -> None:
    steps, _ = mint_three(kairos)
    for uri in steps:
        assert_no_forbidden(kairos.begin(uri))
