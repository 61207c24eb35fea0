"""Sessions as rows (the replica-safe store): the same semantics as the in-process LRU."""

from __future__ import annotations

from kairos.service import Kairos
from kairos.store.sessions import DbSessionStore


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_db_sessions_lru_ttl_and_lists(kairos: Kairos) -> None:
    clock = Clock()
    store = DbSessionStore(kairos.store, capacity=5, ttl_seconds=3600, clock=clock)
    for i in range(5):
        clock.now += 1
        store.record(f"s{i}", query=f"q{i}", viewed=[f"v{i}"])
    clock.now += 1
    store.record("s0", viewed=["again"])       # s0 is now the most recent
    clock.now += 1
    store.record("s5", query="q5")              # the 6th evicts the least recently seen
    assert len(store) == 5
    assert store.get("s1") is None and store.get("s0") is not None
    assert store.viewed("s0") == {"v0", "again"}
    assert store.cite("s0", ["c", "c"])["cited_ids"] == ["c"]
    clock.now += 3601
    assert store.get("s0") is None              # idle past the TTL
    store.record("s0", query="fresh")
    assert store.get("s0") == {"session_id": "s0", "viewed_ids": [], "cited_ids": [],
                               "last_queries": ["fresh"]}


def test_db_sessions_behind_the_unified_search(kairos: Kairos) -> None:
    kairos.search_engine.sessions = DbSessionStore(kairos.store)
    kairos.write_entry({"entity_type": "experience", "category": "general",
                        "title": "Warm caches", "playbook": "Warm the cache before traffic."})
    first = kairos.search_entries({"query": "warm the cache"}, session_id="conv")
    assert first["session_applied"] and first["results"]
    again = kairos.search_entries({"query": "warm the cache", "hide_viewed": True},
                                  session_id="conv")
    assert again["results"] == []
    assert kairos.session_info("conv")["last_queries"] == ["warm the cache", "warm the cache"]
