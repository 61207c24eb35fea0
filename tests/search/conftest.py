"""The search engine's parts, each on the test's store (SQLite, or PostgreSQL with
``KAIROS_TEST_DATABASE_URL``), without the service around them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kairos.search.documents import DocSpec, entry_doc
from kairos.search.indexing import Indexer
from kairos.store.db import Store
from tests.conftest import PG_URL

STAMP = "2026-01-01T00:00:00.000000+00:00"


@pytest.fixture
def store(home: Path) -> Iterator[Store]:
    s = Store(PG_URL or f"sqlite:///{home / 'kairos.db'}")
    yield s
    s.close()


def entry(entity_id: str, title: str, playbook: str, *, space: str = "default",
          kind: str = "experience", stamp: str = STAMP, category: str = "general") -> DocSpec:
    return entry_doc(kind, {"id": entity_id, "space": space, "title": title,
                            "playbook": playbook, "content": playbook, "category": category,
                            "updated_at": stamp})


def index(store: Store, indexer: Indexer, *docs: DocSpec, vectors: bool = True) -> None:
    """Index ``docs`` as a write does: embedded first, then written in one transaction."""
    embedded = indexer.embed_docs(docs) if vectors else None
    with store.write() as repo:
        indexer.index(repo, docs, embedded)
