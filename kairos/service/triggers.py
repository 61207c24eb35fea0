"""A protocol's triggers, for people: its author triggers (front matter) and its learned
triggers (``search.learning``), and the removal of learned ones."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..domain import limits
from ..domain.caller import Caller
from ..domain.errors import NotFoundError, ValidationError
from ..domain.uris import to_uri
from ..search.service import SearchService
from ..store.db import Store
from ..store.repo import Repo, Row
from .protocols import ProtocolService


class TriggerService:
    def __init__(self, store: Store, protocols: ProtocolService, search: SearchService) -> None:
        self.store = store
        self.protocols = protocols
        self.search = search

    def _listing(self, repo: Repo, proto: Row, steps: Sequence[Row]) -> dict[str, Any]:
        return {"uri": to_uri(steps[0]["id"]), "chain_label": proto["title"],
                "triggers": list(proto["triggers"] or ()),
                "learned": self.search.learning.listing(repo.conn, proto["id"]),
                "learned_limit": limits.LEARNED_TRIGGERS}

    def triggers(self, uri: Any, caller: Caller) -> dict[str, Any]:
        """The protocol's author triggers and learned triggers (most recently used
        first)."""
        with self.store.read() as repo:
            _, proto, steps = self.protocols.resolve(repo, uri, caller)
            return self._listing(repo, proto, steps)

    def forget(self, uri: Any, trigger_ids: Sequence[str] | None, caller: Caller
               ) -> dict[str, Any]:
        """Remove learned triggers of the protocol: the given ones (each must be one of
        them), or every one when ``trigger_ids`` is None."""
        if trigger_ids is not None and (not trigger_ids or not all(
                isinstance(i, str) and i for i in trigger_ids)):
            raise ValidationError("trigger_ids", "a non-empty list of learned trigger ids")
        with self.store.write() as repo:
            _, proto, steps = self.protocols.resolve(repo, uri, caller, writable=True)
            known = {t["id"] for t in self.search.learning.listing(repo.conn, proto["id"])}
            missing = sorted(set(trigger_ids or ()) - known)
            if missing:
                raise NotFoundError(f"No learned trigger {missing[0]!r} of {uri}.",
                                    field="trigger_ids")
            removed = self.search.learning.forget(repo, proto["id"], trigger_ids or ())
            return {"removed": removed, **self._listing(repo, proto, steps)}


