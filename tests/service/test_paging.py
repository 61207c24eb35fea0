"""Totals and pages of the unified search are exact on a store with more matching records
than any candidate list: every record that passes the filters and the threshold is counted
and reachable by offset (real local model; both backends)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kairos.service import Kairos
from tests.conftest import make_kairos

TESTING, CODING = 540, 60
PAGE = 25


def _store(home: Path) -> Kairos:
    kairos = make_kairos(home)
    for i in range(TESTING + CODING):
        kairos.write_entry({
            "entity_type": "experience", "category": "testing" if i < TESTING else "coding",
            "title": f"Flaky network test number {i}",
            "playbook": f"Retry the flaky network test {i} with a longer timeout.",
            "author": "ana" if i % 3 else "bo"})
    return kairos


def _walk(k: Kairos, **request: Any) -> tuple[list[str], list[dict[str, Any]]]:
    ids, pages = [], []
    offset = 0
    while True:
        page = k.search_entries({"query": "flaky network test", "limit": PAGE,
                                 "offset": offset, **request})
        pages.append(page)
        ids += [r["entity_id"] for r in page["results"]]
        if not page["has_more"]:
            return ids, pages
        offset += PAGE


def test_totals_and_pages_are_exact_beyond_any_candidate_list(home: Path) -> None:
    """One store of 600 records (built once: on PostgreSQL every test starts empty)."""
    k = _store(home)
    for request, expected in (({"min_score": 0}, TESTING + CODING),
                              ({"min_score": 0, "category": "testing"}, TESTING),
                              ({"min_score": 0, "category": "coding",
                                "filters": {"author": "bo"}}, CODING // 3)):
        ids, pages = _walk(k, **request)
        assert len(ids) == len(set(ids)) == expected, request
        assert all(p["total"] == expected for p in pages)
        assert [p["count"] for p in pages] == [PAGE] * (expected // PAGE) + (
            [expected % PAGE] if expected % PAGE else [])
        scores = [r["score"] for p in pages for r in p["results"]]
        assert scores == sorted(scores, reverse=True)

    # The default threshold: exactly the records that clear it, every one reachable.
    ids, pages = _walk(k)
    every, _ = _walk(k, min_score=0)
    assert 500 < len(ids) == pages[0]["total"] <= len(every)
    assert all(r["score"] >= pages[0]["min_score"] for p in pages for r in p["results"])

    # Records hidden as viewed leave the total.
    first = k.search_entries({"query": "flaky network test", "limit": PAGE, "min_score": 0,
                              "category": "testing", "session_id": "paging-1"})
    after = k.search_entries({"query": "flaky network test", "limit": PAGE, "min_score": 0,
                              "category": "testing", "session_id": "paging-1",
                              "hide_viewed": True})
    assert after["total"] == first["total"] - PAGE
    assert not {r["entity_id"] for r in first["results"]} & {
        r["entity_id"] for r in after["results"]}
