"""The duplicate check and the write guard, on the real model and the test's store."""

from __future__ import annotations

import pytest

from kairos.domain.ports import Embedder
from kairos.search.duplicates import DUPLICATE_SEQ, Duplicates, jaccard
from kairos.search.embedders import NoEmbedder
from kairos.search.indexing import Indexer
from kairos.store.db import Store
from tests.search.conftest import entry, index

CERTS = entry("certs", "Renew TLS certificates", "Run certbot renew on the edge hosts.")
DISKS = entry("disks", "Clean full disks", "Remove old journal files with journalctl.")


@pytest.fixture
def duplicates(store: Store, model: Embedder) -> Duplicates:
    index(store, Indexer(store, model), CERTS, DISKS)
    return Duplicates(store, model)


def _vector(duplicates: Duplicates, title: str, body: str) -> object:
    vectors = Indexer(duplicates.store, duplicates.embedder).embed_docs([entry("new", title,
                                                                               body)])
    assert vectors is not None
    return vectors[DUPLICATE_SEQ]


def test_the_same_record_again_is_to_review_first(duplicates: Duplicates) -> None:
    check = duplicates.check("experience", "default", CERTS.title, CERTS.body, None,
                             query_vector=_vector(duplicates, CERTS.title, CERTS.body))
    assert check["recommendation"] == "review_first"
    assert check["duplicates"][0]["entity_id"] == "certs"
    assert check["duplicates"][0]["score"] >= 0.85


def test_an_unrelated_record_has_no_duplicates(duplicates: Duplicates) -> None:
    title, body = "Bake sourdough bread", "Feed the starter and proof the dough overnight."
    check = duplicates.check("experience", "default", title, body, None,
                             query_vector=_vector(duplicates, title, body))
    assert check == {"duplicates": [], "warnings": []}


def test_a_record_is_not_its_own_duplicate_nor_one_of_another_space_or_kind(
        duplicates: Duplicates) -> None:
    vector = _vector(duplicates, CERTS.title, CERTS.body)
    for kind, space, exclude in (("experience", "default", "certs"),
                                 ("experience", "other", None), ("manual", "default", None)):
        found = duplicates.similar(kind, space, CERTS.title, CERTS.body, exclude, vector)
        assert all(d["entity_id"] != "certs" for d in found)


def test_without_vectors_the_word_overlap_decides(store: Store) -> None:
    index(store, Indexer(store, NoEmbedder()), CERTS, DISKS)
    check = Duplicates(store, NoEmbedder()).check("experience", "default", CERTS.title,
                                                  CERTS.body, None)
    assert check["duplicates"][0] == {"entity_id": "certs", "entity_type": "experience",
                                      "title": CERTS.title, "score": 1.0}
    assert jaccard("Clean full disks", "clean FULL disks") == 1.0
    assert jaccard("Clean full disks", "") == 0.0


def test_the_guard_lets_one_write_through_per_check(store: Store) -> None:
    duplicates = Duplicates(store, NoEmbedder())
    seen = duplicates.version("default", "experience")
    assert seen == 0 and duplicates.version("default", "experience") == 0
    with store.write() as repo:
        assert duplicates.guard(repo, "default", "experience", seen)
    with store.write() as repo:  # a second writer that checked at the same version
        assert not duplicates.guard(repo, "default", "experience", seen)
    assert duplicates.version("default", "experience") == 1
    assert duplicates.version("other", "experience") == 0  # counted per space and kind
    with store.write() as repo:
        assert duplicates.guard(repo, "other", "experience", 0)


def test_a_write_that_rolls_back_is_not_counted(store: Store) -> None:
    duplicates = Duplicates(store, NoEmbedder())
    seen = duplicates.version("default", "manual")
    with pytest.raises(RuntimeError), store.write() as repo:
        assert duplicates.guard(repo, "default", "manual", seen)
        raise RuntimeError("the write fails after its guard")
    assert duplicates.version("default", "manual") == seen
