"""The index: coherent across processes, rebuilt on a model change, never mixing spaces."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kairos.search.embedders import NoEmbedder
from kairos.store.vector_index import MemoryVectorIndex
from tests.conftest import PG_URL, make_kairos
from tests.fakes import HashEmbedder

DOC = "# Renew TLS certificates\n\n## Renew\n\nRun certbot renew on the edge hosts.\n"


class SmallHash(HashEmbedder):
    model_id = "fake:hash:64"

    def __init__(self) -> None:
        super().__init__(dim=64)


def test_a_second_process_sees_writes_immediately(home: Path) -> None:
    a, b = make_kairos(home), make_kairos(home)
    assert b.search("renew tls certificates")["message"].startswith("No existing")
    uri = a.mint(DOC)["items"][0]["uri"]
    assert b.search("renew tls certificates")["choices"][0]["uri"] == uri
    a.update(uri, updates={"content": "Rotate the kafka broker keystore."})
    assert b.search("kafka broker keystore")["choices"][0]["uri"] == uri
    a.delete(uri, protocol=True)
    assert all(c["role"] != "match" for c in b.search("kafka broker keystore")["choices"])


def test_a_model_change_is_detected_and_re_embedded(home: Path) -> None:
    first = make_kairos(home, HashEmbedder())
    for i in range(5):
        first.mint(f"# Runbook {i} for disk alerts\n\n## Check\n\nCheck disk {i} usage.\n",
                   force_update=True)
    assert first.search_engine.background.backfill()["embedded"] == 0  # all vectors current
    second = make_kairos(home, SmallHash())  # another model, another dimension
    state = second.search_engine.background.index_state()
    assert state["with_vectors"] == 0 and state["indexed_model_id"] == "fake:hash:256"
    # Searching before the re-embed neither crashes nor mixes vector spaces.
    assert second.search("disk usage runbook")["choices"][0]["role"] == "match"
    report = second.search_engine.background.backfill()
    assert report["embedded"] == 5 and report["model_id"] == "fake:hash:64"
    state = second.search_engine.background.index_state()
    assert state["with_vectors"] == 5 and state["indexed_model_id"] == "fake:hash:64"
    assert second.search("disk usage runbook")["choices"][0]["role"] == "match"


def test_documents_written_while_the_model_loads_get_vectors_later(home: Path) -> None:
    loading = HashEmbedder(ready=False)
    k = make_kairos(home, loading)
    k.mint(DOC)
    assert k.search_engine.background.index_state()["with_vectors"] == 0
    loading._ready = True
    assert k.search_engine.background.backfill()["embedded"] == 1
    assert k.search_engine.background.index_state()["with_vectors"] == 1


def test_the_none_provider_never_embeds(home: Path) -> None:
    k = make_kairos(home, NoEmbedder())
    k.mint(DOC)
    assert k.search_engine.background.backfill()["state"] == "vectors unavailable"
    assert k.search("renew tls certificates")["choices"][0]["role"] == "match"


def test_spaces_never_see_each_other(home: Path) -> None:
    from kairos.service import Caller

    k = make_kairos(home)
    k.mint(DOC, Caller(space="team-a"))
    assert k.search("renew tls certificates", Caller(space="team-b"))["message"].startswith(
        "No existing")
    assert k.search("renew tls certificates", Caller(space="team-a"))["message"] == (
        "Found 1 match.")


def test_the_in_process_vector_cache_holds_each_vector_once(home: Path) -> None:
    writer = make_kairos(home)
    for i in range(4):
        writer.mint(f"# Rotate key {i}\n\n## Rotate\n\nRotate key {i}.\n\n## Check\n\nCheck {i}.\n",
                    force_update=True)
    reader = make_kairos(home)
    index = reader.store.vector_index
    if not isinstance(index, MemoryVectorIndex):
        pytest.skip("PostgreSQL keeps the vectors in pgvector, not in process")

    def one_copy() -> int:
        rows = index._rows[("default", "protocol")]
        matrix = index._stacked[("default", "protocol")][2]
        assert all(np.shares_memory(m, matrix) for m in rows.values())
        assert len(matrix) == sum(len(m) for m in rows.values())
        return len(rows)

    reader.search("rotate key")  # loads the cache from the database
    assert one_copy() == 4
    uri = reader.mint("# Renew a lease\n\n## Renew\n\nRenew the lease.\n")["items"][0]["uri"]
    assert reader.search("renew the lease")["choices"][0]["uri"] == uri  # restacked
    assert one_copy() == 5


def test_the_vector_cache_follows_its_own_writes_without_reading_every_vector(
        home: Path) -> None:
    """Its own writes are applied to the cache as they commit; a search whose snapshot
    began before a write keeps the newer cache; another process's write is read again."""
    kairos = make_kairos(home)
    index = kairos.store.vector_index
    if not isinstance(index, MemoryVectorIndex):
        pytest.skip("PostgreSQL keeps the vectors in pgvector, not in process")
    kairos.mint(DOC)
    kairos.search("renew tls certificates")
    loads = index.loads
    query = kairos.embedder.embed(["renew the lease"])[0]
    with kairos.store.read() as older:  # a snapshot from before the next write
        older_version = int(older.conn.exec_driver_sql(
            "SELECT value FROM index_meta WHERE key = 'version'").scalar_one())
        uri = kairos.mint("# Renew a lease\n\n## Renew\n\nRenew the lease.\n")[
            "items"][0]["uri"]
        rids, _ = index.search(older.conn, query, space="default", kinds=("protocol",),
                               model_id=kairos.embedder.model_id, limit=5)
        assert len(rids) == 2  # the cache, with the document this snapshot cannot see yet
        assert int(older.conn.exec_driver_sql(
            "SELECT value FROM index_meta WHERE key = 'version'").scalar_one()) == older_version
    assert kairos.search("renew the lease")["choices"][0]["uri"] == uri
    assert index.loads == loads
    make_kairos(home).mint("# Drain a node\n\n## Drain\n\nCordon and drain the node.\n")
    assert kairos.search("cordon and drain the node")["choices"][0]["role"] == "match"
    assert index.loads == loads + 1


def test_text_search_keeps_to_its_space_and_kinds(home: Path) -> None:
    """Text alone (no vectors): the full-text index itself keeps a search to its space and
    to the kinds asked for."""
    from kairos.service import Caller

    k = make_kairos(home, NoEmbedder())
    a = k.mint(DOC, Caller(space="team-a"))["items"][0]["uri"]
    k.mint(DOC, Caller(space="team-b"))
    k.write_entry({"entity_type": "experience", "category": "operations",
                   "title": "Renew TLS certificates early",
                   "playbook": "Renew certificates with certbot a month before they expire.",
                   "author": "ana"}, Caller(space="team-a"))
    found = k.search("renew tls certificates", Caller(space="team-a"))["choices"]
    assert [c["uri"] for c in found if c["role"] == "match"] == [a]
    entries = k.search_entries({"query": "renew tls certificates", "min_score": 0},
                               Caller(space="team-a"))["results"]
    assert [e["entity_type"] for e in entries] == ["experience"]
    assert k.search_entries({"query": "renew tls certificates", "min_score": 0},
                            Caller(space="team-c"))["results"] == []


def test_an_older_sqlite_store_is_searchable_after_the_scope_migration(tmp_path: Path) -> None:
    """Migration 0008 rebuilds SQLite's full-text table with a scope column: documents
    indexed before it are found, in their own space only."""
    from sqlalchemy import text

    from kairos.store.db import make_engine, migrate

    if PG_URL:
        pytest.skip("the full-text table of migration 0008 is SQLite's")
    engine = make_engine(f"sqlite:///{tmp_path / 'kairos.db'}")
    assert migrate(engine, "0007") == "0007"
    with engine.begin() as conn:
        for rid, space in ((1, "team-a"), (2, "team-b")):
            conn.execute(text(
                "INSERT INTO search_docs (rid, key, kind, entity_id, space, title, labels, body, "
                "ntokens, updated_at) VALUES (:rid, :key, 'experience', :e, :space, "
                "'Renew TLS certificates', '', 'Run certbot renew on the edge hosts.', 9, "
                "'2026-11-01T00:00:00Z')"), {"rid": rid, "key": f"experience:e{rid}",
                                             "e": f"e{rid}", "space": space})
            conn.execute(text("INSERT INTO search_fts(rowid, title, labels, body) SELECT rid, "
                              "title, labels, body FROM search_docs WHERE rid = :rid"),
                         {"rid": rid})
    engine.dispose()
    k = make_kairos(tmp_path, NoEmbedder())
    ranked = k.search_engine.candidates.rank("certbot renew", space="team-a", kinds=("experience",))
    assert [h.entity_id for h in ranked.hits] == ["e1"]
    assert k.search_engine.candidates.rank("certbot renew", space="team-b",
                                           kinds=("protocol",)).hits == []


def test_token_counts_are_made_again_by_migration_0009(tmp_path: Path) -> None:
    """A document counted before 0009 (``edge_hosts`` as one token) is counted as FTS5
    counts it after the upgrade; counts that were right stay."""
    from sqlalchemy import text

    from kairos.store.db import make_engine, migrate

    if PG_URL:
        pytest.skip("a migration from 0008 runs on a store of its own (SQLite)")
    engine = make_engine(f"sqlite:///{tmp_path / 'kairos.db'}")
    assert migrate(engine, "0008") == "0008"
    with engine.begin() as conn:
        for rid, body, ntokens in ((1, "Renew the edge_hosts certificates.", 6),
                                   (2, "Renew the certificates.", 5)):
            conn.execute(text(
                "INSERT INTO search_docs (rid, key, kind, entity_id, space, title, labels, body, "
                "ntokens, updated_at) VALUES (:rid, :key, 'experience', :e, 'default', "
                "'Renew TLS', '', :body, :n, '2026-11-01T00:00:00Z')"),
                {"rid": rid, "key": f"experience:e{rid}", "e": f"e{rid}", "body": body,
                 "n": ntokens})
    assert migrate(engine, "0009") == "0009"
    with engine.connect() as conn:
        counts = dict(conn.execute(text("SELECT rid, ntokens FROM search_docs")).all())
    engine.dispose()
    assert counts == {1: 7, 2: 5}


def test_text_evidence_of_other_candidates_equals_a_full_pass(home: Path) -> None:
    """With a limit, the full-text index returns its best matches and, on request, the
    evidence of any other matching document: the same values a pass over every match
    gives, and nothing for documents that do not match."""
    k = make_kairos(home, NoEmbedder())
    bodies = ["Run certbot renew.", "Run certbot renew, then certbot certificates.",
              "Restart nginx after the certificate changes.", "Rotate kafka keys."]
    for i, body in enumerate(bodies):
        k.mint(f"# Runbook {i}\n\n## Do it\n\n{body}\n", force_update=True)
    index, store = k.store.text_index, k.store
    with store.read() as a, store.read() as b:
        every = index.search(a.conn, "certbot renew certificates", space="default",
                             kinds=("protocol",), limit=None)
        top = index.search(b.conn, "certbot renew certificates", space="default",
                           kinds=("protocol",), limit=1)
        assert every is not None and top is not None
        assert len(every.best) == 3 and len(top.best) == 1
        assert top.best.items() <= every.best.items()
        others = [rid for rid in every.best if rid not in top.best]
        assert top.of([*others, 10**9]) == pytest.approx({r: every.best[r] for r in others})


def test_many_searches_at_once_share_the_connection_pool(home: Path) -> None:
    """More searches at once than the pool has connections: each gets the answer a lone
    search gets (a search that waited on a second connection while holding a first would
    starve the pool)."""
    from concurrent.futures import ThreadPoolExecutor

    k = make_kairos(home)
    for i, body in enumerate(["Run certbot renew.", "Rotate the kafka keystore.",
                              "Restart nginx."]):
        k.mint(f"# Runbook {i}\n\n## Do it\n\n{body}\n", force_update=True)
    queries = ["renew tls certificates", "kafka keys", "restart the web server"] * 20
    alone = {q: k.search(q) for q in set(queries)}
    with ThreadPoolExecutor(len(queries)) as pool:
        answers = list(pool.map(k.search, queries))
    assert answers == [alone[q] for q in queries]


def test_a_text_score_means_the_same_on_both_backends(home: Path, tmp_path: Path) -> None:
    """PostgreSQL computes FTS5's bm25 from its tsvectors: the same documents give the same
    text evidence as SQLite's bm25() (words both stemmers stem alike; an underscore
    separates two tokens on both)."""
    from sqlalchemy import text

    if not PG_URL:
        pytest.skip("compares the PostgreSQL store with a SQLite one")
    stores = {"postgresql": make_kairos(home, NoEmbedder()),
              "sqlite": make_kairos(tmp_path / "sqlite", NoEmbedder(),
                                    KAIROS_DATABASE_URL=f"sqlite:///{tmp_path / 'k.db'}")}
    bodies = ["Run certbot renew on the edge_hosts group.",
              "Run certbot renew, then list the certbot certificates.",
              "Restart nginx after the certificate changes on the hosts.",
              "Rotate kafka keys on every broker host."]
    evidence: dict[str, list[dict[str, float]]] = {}
    for backend, k in stores.items():
        for i, body in enumerate(bodies):
            k.mint(f"# Runbook {i} for hosts\n\n## Renew step\n\n{body}\n", force_update=True)
        with k.store.read() as r:
            titles = dict(r.conn.execute(text("SELECT rid, title FROM search_docs")).all())
            evidence[backend] = []
            for query in ("certbot renew hosts", "kafka broker", "renew certificates"):
                found = k.store.text_index.search(r.conn, query, space="default",
                                                  kinds=("protocol",), limit=None)
                assert found is not None
                evidence[backend].append({titles[rid]: v for rid, v in found.best.items()})
    assert [len(e) for e in evidence["sqlite"]] == [4, 1, 4]
    for pg, lite in zip(evidence["postgresql"], evidence["sqlite"], strict=True):
        assert pg == pytest.approx(lite, rel=1e-9)
