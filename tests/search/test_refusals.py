"""What the store raises when the database refuses a statement that is not a storage
fault: ``Clash`` for a key another writer stored first, ``Refused`` for anything else; the
write leaves nothing behind either way."""

from __future__ import annotations

import pytest

from kairos.store.db import Store
from kairos.store.faults import Clash, Refused
from tests.search.conftest import STAMP

ROW = {"id": "e1", "space": "default", "category": "general", "title": "Warm caches",
       "playbook": "Warm the cache first.", "section": "general", "created_at": STAMP,
       "updated_at": STAMP}


def test_a_key_stored_twice_is_a_clash(store: Store) -> None:
    with store.write() as repo:
        repo.insert_entry("experience", **ROW)
    with pytest.raises(Clash), store.write() as repo:
        repo.insert_entry("experience", **{**ROW, "id": "e2"})
        repo.insert_entry("experience", **ROW)
    with store.read() as repo:
        assert repo.entry("experience", "e2") is None


def test_another_refusal_is_refused_but_not_a_clash(store: Store) -> None:
    with pytest.raises(Refused) as caught, store.read() as repo:
        repo.conn.exec_driver_sql("SELECT * FROM no_such_table")
    assert not isinstance(caught.value, Clash) and "no_such_table" in str(caught.value)
