"""A started server moves start-up's objects out of the collector's reach, so that a full
collection during a request walks only what requests made."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from kairos.service.wiring import settle


@pytest.fixture
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()


@pytest.mark.usefixtures("unfrozen")
def test_settle_freezes_what_start_up_made() -> None:
    made_at_start = [{"step": n} for n in range(1000)]
    assert gc.get_freeze_count() == 0
    settle()
    assert gc.get_freeze_count() >= len(made_at_start)
    gc.collect()  # a full collection no longer counts them among what it walks
    assert len(gc.get_objects(generation=2)) < gc.get_freeze_count()
