"""The background work: what waits for vectors is embedded — by a backfill, or by the
drain thread once the provider answers — and the index's state says how far it is."""

from __future__ import annotations

from kairos.domain import doctext
from kairos.search.background import Background
from kairos.search.documents import DocSpec
from kairos.search.embedders import NoEmbedder
from kairos.search.indexing import Indexer
from kairos.search.learning import Learning
from kairos.store import search_docs
from kairos.store.db import Store
from tests.fakes import HashEmbedder
from tests.search.conftest import STAMP, entry, index

DOCS = [entry(f"e{i}", f"Runbook {i} for disk alerts", f"Check disk {i} usage.")
        for i in range(5)]


def _write(store: Store, background: Background, *docs: DocSpec) -> None:
    """The records of ``docs``, then their documents (as a write stores them)."""
    with store.write() as repo:
        for d in docs:
            repo.insert_entry("experience", id=d.entity_id, space=d.space, category="general",
                              title=d.title, playbook=d.body, section="general",
                              created_at=STAMP, updated_at=STAMP)
    index(store, background.indexer, *docs)


def _background(store: Store, embedder: object) -> Background:
    indexer = Indexer(store, embedder)  # type: ignore[arg-type]
    return Background(store, embedder, indexer,  # type: ignore[arg-type]
                      Learning(store, embedder))  # type: ignore[arg-type]


def test_a_backfill_embeds_what_was_written_without_vectors(store: Store) -> None:
    loading = HashEmbedder(ready=False)
    background = _background(store, loading)
    _write(store, background, *DOCS)
    state = background.index_state()
    assert (state["documents"], state["with_vectors"], state["pending"]) == (5, 0, 5)
    assert background.backfill() == {"embedded": 0, "model_id": None,
                                     "state": "vectors unavailable"}
    loading._ready = True
    seen: list[tuple[int, int]] = []
    report = background.backfill(batch=2, progress=lambda done, all_: seen.append((done, all_)))
    assert report["embedded"] == 5 and report["model_id"] == "fake:hash:256"
    assert seen == [(2, 5), (4, 5), (5, 5)]
    state = background.index_state()
    assert state["pending"] == 0 and state["indexed_model_id"] == "fake:hash:256"
    assert background.backfill()["embedded"] == 0
    assert background.backfill(force=True)["embedded"] == 5


def test_vectors_of_an_older_recipe_are_embedded_again(store: Store) -> None:
    background = _background(store, HashEmbedder())
    _write(store, background, *DOCS)
    assert background.backfill()["embedded"] == 0
    with store.write() as repo:
        search_docs.set_meta(repo.conn, "recipe", "an older recipe")
    assert background.backfill()["embedded"] == 5
    with store.read() as repo:
        assert search_docs.meta(repo.conn, "recipe") == doctext.RECIPE


def test_the_drain_embeds_a_queued_write_once_the_provider_answers(store: Store) -> None:
    loading = HashEmbedder(ready=False)
    background = _background(store, loading)
    _write(store, background, *DOCS[:2])
    background.start(interval=0.02, idle=30.0)
    try:
        assert not background.drained.is_set()  # a pass leaves them waiting for the provider
        loading._ready = True
        assert background.drained.wait(20)
        assert background.index_state()["pending"] == 0
    finally:
        background.stop(timeout=20)
        background.learning.close()
    assert background._thread is not None and not background._thread.is_alive()


def test_the_none_provider_is_never_drained(store: Store) -> None:
    background = _background(store, NoEmbedder())
    _write(store, background, DOCS[0])
    assert not background._drain()
    assert background.index_state()["pending"] == 1
