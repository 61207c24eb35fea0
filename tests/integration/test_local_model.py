"""The real local model (all-MiniLM-L6-v2, offline): search, relevance, duplicates."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from kairos.search.embedders import LocalEmbedder
from kairos.service import Kairos
from tests.conftest import make_kairos

pytestmark = pytest.mark.slow
REFERENCE = Path(__file__).resolve().parents[1] / "data" / "minilm_reference.npz"


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
    assert model.model_id.startswith("local:all-MiniLM-L6-v2") and model.state == "ready"


def test_the_shipped_model_matches_its_checksums(model: LocalEmbedder) -> None:
    assert model.verify() == []
    assert (model.model_dir / "LICENSE").read_text().count("Apache License") >= 1


def test_vectors_agree_with_sentence_transformers(model: LocalEmbedder) -> None:
    """1,000 tldr texts against sentence-transformers' own vectors (computed once by
    scripts/export_model.py --reference). fp32 must agree to the third decimal; the int8
    graph is accepted on retrieval figures (bench/README.md) and held to its measured
    agreement here."""
    data = np.load(REFERENCE)
    cosine = np.sum(model.embed([str(t) for t in data["texts"]]) * data["vectors"], axis=1)
    assert len(cosine) == 1000
    if model.meta["precision"] == "fp32":
        assert cosine.min() >= 0.999
    else:
        assert cosine.mean() >= 0.985 and cosine.min() >= 0.95


def test_semantic_search_finds_paraphrases(k: Kairos) -> None:
    web = k.mint("# Ship the website to production\n\n## Build\n\nnpm run build\n\n"
                 "## Upload\n\nrsync -a dist/ web:/srv/www\n")["items"][0]["uri"]
    k.mint("# Bake sourdough bread\n\n## Knead\n\nKnead the dough for ten minutes.\n")
    response = k.search("deploy my web app")
    matches = [c for c in response["choices"] if c["role"] == "match"]
    assert matches and matches[0]["uri"] == web
    assert k.search("xyzqwerty nonexistent protocol foobar")["message"].startswith(
        "No existing protocol matched")


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
