"""Writers racing on the same new space all succeed."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kairos.service import Caller
from tests.conftest import RACE_TRIALS, make_kairos

WRITERS = 20


def _race(call: Callable[[int], Any]) -> list[Any]:
    """``call(i)`` from WRITERS threads released at once; results or exceptions."""
    barrier = threading.Barrier(WRITERS)
    results: list[Any] = []

    def run(i: int) -> None:
        barrier.wait(timeout=30)
        try:
            results.append(call(i))
        except Exception as exc:  # the failure is what the test reports
            results.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(results) == WRITERS
    return results


@pytest.mark.parametrize("trial", RACE_TRIALS)
def test_concurrent_first_category_lists_in_a_new_space_all_succeed(home: Path, trial: int) -> None:
    kairos = make_kairos(home, KAIROS_EMBEDDER="none")
    caller = Caller(space="brand-new")
    results = _race(lambda i: kairos.list_categories(caller))
    failures = [r for r in results if isinstance(r, Exception)]
    assert not failures, failures[:3]
    assert {r["count"] for r in results} == {10}


@pytest.mark.parametrize("trial", RACE_TRIALS)
def test_concurrent_first_writes_in_a_new_space_all_succeed(home: Path, trial: int) -> None:
    kairos = make_kairos(home, KAIROS_EMBEDDER="none")
    caller = Caller(space="brand-new")
    results = _race(lambda i: kairos.write_entry({
        "entity_type": "experience", "category": "general", "title": f"Lesson {i}",
        "playbook": f"Do thing number {i} differently from the others."}, caller))
    failures = [r for r in results if isinstance(r, Exception)]
    assert not failures, failures[:3]
    assert kairos.list_categories(caller)["count"] == 10
