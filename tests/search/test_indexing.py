"""Indexing: a write's documents are searchable by text and by vector in the writer's own
transaction, queued when vectors cannot be made, and gone with the write that removes
them or rolls back."""

from __future__ import annotations

import numpy as np
import pytest

from kairos.domain.ports import Embedder
from kairos.search.indexing import Indexer
from kairos.store import search_docs
from kairos.store.db import Store
from tests.fakes import HashEmbedder
from tests.search.conftest import entry, index

CERTS = entry("e1", "Renew TLS certificates", "Run certbot renew on the edge hosts.")
DISKS = entry("e2", "Clean full disks", "Remove old journal files with journalctl --vacuum.")


def _found(store: Store, indexer: Indexer, query: str) -> tuple[list[int], list[int]]:
    """The rids the text index and the vector index find for ``query``."""
    with store.read() as repo:
        text = store.text_index.search(repo.conn, query, space="default",
                                       kinds=("experience",), limit=10)
        vector = indexer.embed_docs([entry("q", query, query)])
        assert vector is not None
        rids, _ = store.vector_index.search(repo.conn, vector[0], space="default",
                                            kinds=("experience",),
                                            model_id=indexer.embedder.model_id, limit=10)
    return list(text.best) if text else [], rids.tolist()


def test_a_write_is_searchable_by_text_and_vector_before_it_commits(
        store: Store, model: Embedder) -> None:
    indexer = Indexer(store, model)
    vectors = indexer.embed_docs([CERTS, DISKS])
    with store.write() as repo:
        indexer.index(repo, [CERTS, DISKS], vectors)
        [rid] = search_docs.rids_of(repo.conn, ["experience:e1"])
        text = store.text_index.search(repo.conn, "certbot", space="default",
                                       kinds=("experience",), limit=5)
        assert text is not None and list(text.best) == [rid]
    assert not indexer.queued.is_set()
    text_rids, vector_rids = _found(store, indexer, "renew tls certificates")
    assert text_rids[0] == rid and vector_rids[0] == rid
    with store.read() as repo:
        assert search_docs.totals(repo.conn, model.model_id) == (2, 2)


def test_a_document_without_vectors_is_stored_and_queued(store: Store) -> None:
    indexer = Indexer(store, HashEmbedder(ready=False))
    assert indexer.embed_docs([CERTS]) is None
    index(store, indexer, CERTS)
    assert indexer.queued.is_set()
    with store.read() as repo:
        assert search_docs.totals(repo.conn, "fake:hash:256") == (1, 0)
        assert len(search_docs.pending(repo.conn, "fake:hash:256")) == 1


def test_a_rolled_back_write_leaves_no_document(store: Store) -> None:
    indexer = Indexer(store, HashEmbedder())
    with pytest.raises(RuntimeError), store.write() as repo:
        indexer.index(repo, [CERTS], indexer.embed_docs([CERTS]))
        raise RuntimeError("the write fails after indexing")
    with store.read() as repo:
        assert search_docs.totals(repo.conn, "fake:hash:256") == (0, 0)
    assert _found(store, indexer, "certbot renew") == ([], [])


def test_unindexing_removes_the_text_the_vectors_and_the_row(store: Store) -> None:
    indexer = Indexer(store, HashEmbedder())
    index(store, indexer, CERTS, DISKS)
    with store.write() as repo:
        indexer.unindex(repo, "experience", ["e1", "missing"])
    with store.read() as repo:
        assert search_docs.totals(repo.conn, "fake:hash:256") == (1, 1)
        [kept] = search_docs.rids_of(repo.conn, ["experience:e2"])
    text_rids, vector_rids = _found(store, indexer, "certbot renew tls")
    assert text_rids == [] and vector_rids == [kept]


def test_refresh_skips_a_document_changed_since_it_was_embedded(store: Store) -> None:
    indexer = Indexer(store, HashEmbedder())
    index(store, indexer, CERTS, DISKS, vectors=False)
    changed = entry("e2", DISKS.title, DISKS.body, stamp="2026-02-01T00:00:00.000000+00:00")
    index(store, indexer, changed, vectors=False)
    vectors = indexer.embed_docs([CERTS, DISKS])  # DISKS as it read before the change
    assert vectors is not None
    with store.write() as repo:
        indexer.refresh(repo, [CERTS, DISKS], vectors, "fake:hash:256")
    with store.read() as repo:
        waiting = search_docs.pending(repo.conn, "fake:hash:256")
        assert waiting == search_docs.rids_of(repo.conn, ["experience:e2"])


def test_embed_each_is_embed_docs_split_per_document(store: Store) -> None:
    indexer = Indexer(store, HashEmbedder())
    docs = [CERTS, DISKS, entry("e3", "Rotate keys", "Rotate the signing keys.")]
    whole = indexer.embed_docs(docs)
    parts = indexer.embed_each(docs)
    assert whole is not None
    assert [len(p) for p in parts if p is not None] == [len(d.vector_texts) for d in docs]
    assert np.array_equal(np.vstack([p for p in parts if p is not None]), whole)
    assert Indexer(store, HashEmbedder(ready=False)).embed_each(docs) == [None] * 3
