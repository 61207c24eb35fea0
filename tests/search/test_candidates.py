"""Candidate generation: a query's candidates read from both indexes and the records'
texts, ranked, on the real model and the test's store."""

from __future__ import annotations

import pytest

from kairos.domain.ports import Embedder
from kairos.search.candidates import Candidates
from kairos.search.documents import DocSpec
from kairos.search.embedders import NoEmbedder
from kairos.search.indexing import Indexer
from kairos.store.db import Store
from tests.search.conftest import entry, index

RECORDS = [
    entry("certs", "Renew TLS certificates", "Run certbot renew on the edge hosts."),
    entry("disks", "Clean full disks", "Remove old journal files with journalctl --vacuum.",
          category="ops"),
    entry("keys", "Rotate signing keys", "Generate a new key pair and publish it."),
    entry("deploy", "Deploy the web tier", "Roll the new release out host by host.",
          kind="manual"),
    entry("elsewhere", "Renew TLS certificates", "The same record in another space.",
          space="other"),
]


@pytest.fixture
def candidates(store: Store, model: Embedder) -> Candidates:
    index(store, Indexer(store, model), *RECORDS)
    found = Candidates(store, model)
    yield found
    found.close()


def _ids(ranked: object) -> list[str]:
    return [h.entity_id for h in ranked.hits]  # type: ignore[attr-defined]


def test_both_indexes_give_evidence_and_the_best_comes_first(candidates: Candidates) -> None:
    ranked = candidates.rank("certbot renew", space="default", kinds=("experience",))
    assert ranked.mode == "hybrid" and not ranked.degraded and ranked.hint is None
    best = ranked.hits[0]
    assert best.entity_id == "certs" and best.dense and best.text and best.evidence
    assert best.row["title"] == "Renew TLS certificates" and best.lexical.informative
    assert ranked.terms is not None and ranked.query_vector is not None


def test_a_space_sees_only_its_own_records(candidates: Candidates) -> None:
    ranked = candidates.rank("renew tls certificates", space="other", kinds=("experience",))
    assert _ids(ranked) == ["elsewhere"]
    assert candidates.rank("renew tls", space="empty", kinds=("experience",)).hits == []


def test_filters_and_exclusions_hide_records_without_changing_scores(
        candidates: Candidates) -> None:
    every = candidates.rank("disk cleanup", space="default", kinds=("experience",))
    scores = {h.entity_id: h.score for h in every.hits}
    ops = candidates.rank("disk cleanup", space="default", kinds=("experience",),
                          filters={"category": "ops"})
    assert _ids(ops) == ["disks"] and ops.hits[0].score == scores["disks"]
    rest = candidates.rank("disk cleanup", space="default", kinds=("experience",),
                           exclude={"disks"})
    assert "disks" not in _ids(rest)
    assert {h.entity_id: h.score for h in rest.hits} == {
        k: v for k, v in scores.items() if k != "disks"}


def test_a_floor_of_zero_scores_every_record_of_the_kinds(candidates: Candidates) -> None:
    ranked = candidates.rank("anything at all", space="default",
                             kinds=("experience", "manual"), floor=0.0)
    assert sorted(_ids(ranked)) == ["certs", "deploy", "disks", "keys"]
    assert set(ranked.contexts) == {False}


def test_protocols_and_entries_are_ranked_apart_and_merged(store: Store,
                                                           model: Embedder) -> None:
    protocol = DocSpec(kind="protocol", entity_id="p1", space="default",
                       title="Renew TLS certificates", body="Run certbot renew.",
                       vector_texts=("Renew TLS certificates: run certbot renew.",),
                       updated_at="2026-01-01T00:00:00.000000+00:00")
    index(store, Indexer(store, model), protocol, RECORDS[0])
    found = Candidates(store, model)
    ranked = found.rank("renew tls certificates", space="default",
                        kinds=("protocol", "experience"))
    found.close()
    assert sorted(h.kind for h in ranked.hits) == ["experience", "protocol"]
    assert set(ranked.contexts) == {True, False}


def test_without_vectors_the_text_alone_ranks(store: Store) -> None:
    index(store, Indexer(store, NoEmbedder()), *RECORDS)
    found = Candidates(store, NoEmbedder())
    ranked = found.rank("certbot renew", space="default", kinds=("experience",))
    found.close()
    assert ranked.mode == "text" and ranked.degraded and ranked.query_vector is None
    assert ranked.hint is not None and "disabled" in ranked.hint
    assert _ids(ranked)[0] == "certs" and ranked.hits[0].dense is None
