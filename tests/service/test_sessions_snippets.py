"""Session memory (LRU, TTL, thread safety) and snippets — pure units."""

from __future__ import annotations

import threading

import pytest

from kairos.domain.caller import valid_session_id
from kairos.search.sessions import SessionStore
from kairos.search.snippets import make_snippet, sentences


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_501st_session_evicts_the_oldest() -> None:
    store = SessionStore(capacity=500, ttl_seconds=3600, clock=Clock())
    for i in range(500):
        store.record(f"s{i}", query="q")
    store.record("s0", query="again")  # s0 becomes the most recently used
    store.record("s500", query="q")
    assert len(store) == 500
    assert store.get("s1") is None          # the least recently used went
    assert store.get("s0") is not None and store.get("s500") is not None


def test_idle_sessions_expire_after_60_minutes_even_mid_run() -> None:
    clock = Clock()
    store = SessionStore(clock=clock)
    store.record("conv", query="first", viewed=["a"])
    clock.now = 3599
    assert store.viewed("conv") == {"a"}
    store.record("conv", viewed=["b"])      # activity keeps it alive
    clock.now = 3599 + 3601
    assert store.get("conv") is None        # expired while the conversation was idle
    assert store.viewed("conv") == set()
    store.record("conv", query="later")     # a new session under the same id
    assert store.get("conv") == {"session_id": "conv", "viewed_ids": [], "cited_ids": [],
                                 "last_queries": ["later"]}


def test_lists_are_deduplicated_and_bounded() -> None:
    store = SessionStore()
    for i in range(30):
        store.record("s", query=f"q{i}", viewed=["x", "y", "x"])
    store.cite("s", ["x", "x", "z"])
    info = store.get("s")
    assert info is not None
    assert info["viewed_ids"] == ["x", "y"] and info["cited_ids"] == ["x", "z"]
    assert info["last_queries"] == [f"q{i}" for i in range(10, 30)]


def test_concurrent_access_loses_nothing() -> None:
    store = SessionStore()
    barrier = threading.Barrier(8)

    def work(n: int) -> None:
        barrier.wait(timeout=10)
        for i in range(200):
            store.record(f"s{i % 50}", viewed=[f"{n}-{i}"])
            store.get(f"s{(i + n) % 50}")

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=30)
    assert len(store) == 50
    total = sum(len(store.viewed(f"s{i}")) for i in range(50))
    assert total == 8 * 200


@pytest.mark.parametrize(("value", "ok"), [("abc", True), ("a" * 128, True), ("a" * 129, False),
                                           ("", False), ("bad id", False), (None, False),
                                           (42, False), ("../etc", False), ("9f-x:1.2_3", True)])
def test_session_id_format(value: object, ok: bool) -> None:
    assert (valid_session_id(value) is not None) == ok


BODY = ("Rotate the database password every quarter. Store it in the vault, never in git. "
        "Restart the workers after the rotation. Check the error rate for ten minutes.")


def test_snippet_picks_the_best_matching_sentences_in_order() -> None:
    snippet = make_snippet(BODY, "restart workers error rate")
    assert snippet == ("Restart the workers after the rotation. Check the error rate for ten "
                       "minutes.")


def test_snippet_without_a_match_starts_at_the_top() -> None:
    assert make_snippet(BODY, "kubernetes") == (
        "Rotate the database password every quarter. Store it in the vault, never in git.")


@pytest.mark.parametrize("length", [80, 120, 320, 640])
def test_snippet_respects_the_length_budget(length: int) -> None:
    long_body = "word " * 500 + ". " + BODY
    snippet = make_snippet(long_body, "word", length)
    assert len(snippet) <= length and snippet.endswith("…")


def test_snippet_edge_cases() -> None:
    assert make_snippet("", "x") == ""
    assert make_snippet("```\n```", "x") == ""
    assert make_snippet("One sentence only", "x") == "One sentence only"
    assert make_snippet("# Heading\n\n- item one\n- item two", "two") == "item two"
    assert make_snippet(BODY, "q", 5) == make_snippet(BODY, "q", 80)  # clamped to the minimum
    assert sentences("A. B! C?") == ["A.", "B!", "C?"]
