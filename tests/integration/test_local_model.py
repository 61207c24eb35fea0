"""The real local model (all-MiniLM-L6-v2, offline): search, relevance, duplicates."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kairos.search.embedders import LocalEmbedder
from kairos.service import Kairos
from tests.conftest import make_kairos

pytestmark = pytest.mark.slow


@pytest.fixture
def k(home: Path, model: LocalEmbedder) -> Iterator[Kairos]:
    service = make_kairos(home, model)
    yield service
    service.close()


def test_the_model_loads_offline_and_embeds(model: LocalEmbedder) -> None:
    vectors = model.embed(["deploy the web app", "ship the website to production",
                           "bake sourdough bread"])
    assert vectors.shape == (3, 384)
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2]) + 0.2
    assert model.model_id == "local:all-MiniLM-L6-v2:384" and model.state == "ready"


def test_semantic_search_finds_paraphrases(k: Kairos) -> None:
    web = k.mint("# Ship the website to production\n\n## Build\n\nnpm run build\n\n"
                 "## Upload\n\nrsync -a dist/ web:/srv/www\n")["items"][0]["uri"]
    k.mint("# Bake sourdough bread\n\n## Knead\n\nKnead the dough for ten minutes.\n")
    response = k.search("deploy my web app")
    matches = [c for c in response["choices"] if c["role"] == "match"]
    assert matches and matches[0]["uri"] == web
    assert k.search("xyzqwerty nonexistent protocol foobar")["message"].startswith(
        "No existing protocol matched")


def test_comment_irrelevant_with_real_vectors(k: Kairos) -> None:
    uris = [s["uri"] for s in k.mint(
        "# Security review\n\n## Read the checklist\n\nRead the security checklist and "
        "verify the firewall rules and the TLS settings.\n\nPROOF OF WORK: comment "
        "min_length=20\n\n## Done\n\nFinished.\n")["items"][0]["steps"]]
    challenge = k.begin(uris[0])["challenge"]

    def answer(text: str, ch: dict) -> dict:
        return k.next(uris[1], {"type": "comment", "nonce": ch["nonce"],
                                "proof_hash": ch["proof_hash"], "comment": {"text": text}})

    refused = answer("My favourite pizza topping is pineapple with ham.", challenge)
    assert refused["error_code"] == "COMMENT_IRRELEVANT"
    accepted = answer("I checked the firewall rules and the TLS settings on the checklist.",
                      refused["challenge"])
    assert "error_code" not in accepted


def test_near_duplicate_entries_are_flagged(k: Kairos) -> None:
    k.write_entry({"entity_type": "experience", "category": "security",
                   "title": "Rotate database passwords quarterly",
                   "playbook": "Rotate the database password every quarter and store it in "
                               "the vault."})
    again = k.write_entry({"entity_type": "experience", "category": "security",
                           "title": "Rotate DB passwords every quarter",
                           "playbook": "Every quarter, rotate the database password and keep "
                                       "it in the vault."})
    assert again["recommendation"] == "review_first"
    other = k.write_entry({"entity_type": "experience", "category": "general",
                           "title": "Label freezer boxes",
                           "playbook": "Write the date on every freezer box."})
    assert "recommendation" not in other
