"""A protocol's triggers, for people: its author triggers (front matter) and its learned
triggers (``search.learning``), and the removal of learned ones."""

from __future__ import annotations

from collections.abc import Sequence

from ..domain import limits
from ..domain.caller import Caller
from ..domain.errors import NotFoundError
from ..domain.responses import TriggerList
from ..domain.uris import to_uri
from ..store import learned
from ..store.repo import Repo, Row
from .protocols import ProtocolService


def _listing(repo: Repo, proto: Row, steps: Sequence[Row]) -> TriggerList:
    return {"uri": to_uri(steps[0]["id"]), "chain_label": proto["title"],
            "triggers": list(proto["triggers"] or ()),
            "learned": learned.listing(repo.conn, proto["id"]),
            "learned_limit": limits.LEARNED_TRIGGERS}


def trigger_list(protocols: ProtocolService, uri: str, caller: Caller) -> TriggerList:
    with protocols.store.read() as repo:
        _, proto, steps = protocols.resolve(repo, uri, caller)
        return _listing(repo, proto, steps)


def forget_triggers(protocols: ProtocolService, uri: str, trigger_ids: Sequence[str] | None,
                    caller: Caller) -> TriggerList:
    """Remove learned triggers of the protocol: the given ones (each must be one of them),
    or every one when ``trigger_ids`` is None."""
    with protocols.store.write() as repo:
        _, proto, steps = protocols.resolve(repo, uri, caller, writable=True)
        known = {t["id"] for t in learned.listing(repo.conn, proto["id"])}
        missing = sorted(set(trigger_ids or ()) - known)
        if missing:
            raise NotFoundError(f"No learned trigger {missing[0]!r} of {uri}.",
                                field="trigger_ids")
        removed = protocols.search.learning.forget(repo, proto["id"], trigger_ids or ())
        return {"removed": removed, **_listing(repo, proto, steps)}
