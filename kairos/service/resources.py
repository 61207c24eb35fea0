"""What an MCP host lists and reads as resources: the caller's protocols (the built-ins
too), experiences and manuals page by page, and any protocol, step, entry or run of the
caller's space by URI. URIs and cursors are ``domain.resources``; the surface adds the
guide and speaks the protocol."""

from __future__ import annotations

from typing import Any, TypedDict

from ..domain import resources as res
from ..domain.caller import Caller
from ..domain.errors import NotFoundError
from ..domain.jsontext import pretty
from ..domain.limits import RESOURCE_PAGE
from ..domain.requests import ReadEntries
from ..domain.texts import MIME_MARKDOWN
from ..domain.uris import to_uri
from ..store import listing
from ..store.db import Store
from ..store.repo import Repo, Row
from .bundles import export_bundle
from .entries import EntryService
from .protocols import ProtocolService
from .reads import ReadService, own_run
from .signing import Signing


class ResourceItem(TypedDict):
    uri: str
    name: str
    title: str
    mime_type: str
    updated_at: str | None


class ResourcePage(TypedDict):
    resources: list[ResourceItem]
    next_cursor: str | None


class ResourceText(TypedDict):
    uri: str
    mime_type: str
    text: str


def _protocol(row: Row) -> ResourceItem:
    return {"uri": to_uri(row["step_id"]), "name": row["step_id"], "title": row["title"],
            "mime_type": MIME_MARKDOWN, "updated_at": row["updated_at"]}


def _entry(row: Row) -> ResourceItem:
    return {"uri": res.entry_uri(row["id"]), "name": row["id"], "title": row["title"],
            "mime_type": res.MIME_JSON, "updated_at": row["updated_at"]}


def _section(repo: Repo, section: str, space: str, after: tuple[str, str] | None,
             limit: int) -> tuple[list[ResourceItem], tuple[str, str] | None]:
    """Up to ``limit`` items of a section past ``after``, and the key of the last one
    when more follow it."""
    if section == "protocol":
        rows = repo.all(listing.protocols_after(space, after, limit + 1))
        items = [_protocol(r) for r in rows[:limit] if r["step_id"] is not None]
        key = (rows[limit - 1]["title_key"], rows[limit - 1]["id"]) if len(rows) > limit else None
    else:
        rows = repo.all(listing.entries_after(section, space, after[1] if after else None,
                                              limit + 1))
        items = [_entry(r) for r in rows[:limit]]
        key = ("", rows[limit - 1]["id"]) if len(rows) > limit else None
    return items, key


class ResourceService:
    def __init__(self, store: Store, protocols: ProtocolService, entries: EntryService,
                 reads: ReadService, signing: Signing) -> None:
        self.store = store
        self.protocols = protocols
        self.entries = entries
        self.reads = reads
        self.signing = signing

    def page(self, cursor: str | None, caller: Caller, size: int = RESOURCE_PAGE
             ) -> ResourcePage:
        """One page: on the first, the built-in protocols, then the space's protocols by
        title, its experiences, its manuals. A page is one indexed query, two where a
        section ends inside it."""
        items: list[ResourceItem] = []
        start = res.Cursor.decode(cursor) if cursor is not None else None
        first = res.SECTIONS.index(start.section) if start else 0
        after = (start.sort, start.id) if start and start.id else None
        next_cursor = None
        with self.store.read() as repo:
            if start is None:
                items += [_protocol(r) for r in repo.all(listing.builtin_protocols())
                          if r["step_id"] is not None]
            for section in res.SECTIONS[first:]:
                room = size - len(items)
                if room <= 0:  # the page is full where a section begins
                    next_cursor = res.Cursor(section, "", "").encode()
                    break
                found, key = _section(repo, section, caller.space, after, room)
                items += found
                if key is not None:
                    next_cursor = res.Cursor(section, *key).encode()
                    break
                after = None
        return {"resources": items, "next_cursor": next_cursor}

    def read(self, uri: str, caller: Caller) -> ResourceText:
        """The resource ``uri`` names, as text. Another space's record, a deleted one and
        an unknown id all answer the same ``NOT_FOUND``."""
        ref = res.parse_resource(uri)
        ident = str(ref.id)
        try:
            if ref.kind == res.PROTOCOL:
                dump = self.protocols.dump(to_uri(ident), caller, protocol=None,
                                           version=ref.version)
                return {"uri": uri, "mime_type": MIME_MARKDOWN, "text": dump["markdown_doc"]}
            value: Any = None  # the guide is the surface's
            if ref.kind == res.ENTRY:
                found = self.entries.read_entries(ReadEntries(ids=[ident]), caller)["entries"]
                value = found[0] if found else None
            elif ref.kind == res.RUN:  # the run, its proofs and the chain's verdict
                run, verdict = self.reads.run(ident, caller)
                value = {**{k: v for k, v in run.items() if k not in ("links", "verification")},
                         "proofs": [link["record"] for link in run["links"]], "verify": verdict}
            elif ref.kind == res.BUNDLE:
                value = export_bundle(self.store, self.signing, ident, caller)
        except NotFoundError as exc:
            if exc.field == "version":
                raise
            raise res.unknown(uri) from None
        if value is None:
            raise res.unknown(uri)
        return {"uri": uri, "mime_type": res.MIME_JSON, "text": pretty(value)}

    def check(self, uri: str, caller: Caller) -> None:
        """``NOT_FOUND`` as ``read`` answers it, for a resource the caller may not read;
        a run or its bundle is checked without being read in full."""
        ref = res.parse_resource(uri)
        if ref.kind not in (res.RUN, res.BUNDLE):
            self.read(uri, caller)
            return
        try:
            with self.store.read() as repo:
                own_run(repo, str(ref.id), caller)
        except NotFoundError:
            raise res.unknown(uri) from None


__all__ = ["ResourceItem", "ResourcePage", "ResourceService", "ResourceText"]
