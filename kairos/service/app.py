"""The one service every surface calls. Wiring happens here and only here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..config import Settings, load_settings
from ..domain import limits
from ..domain import requests as rq
from ..domain.caller import Caller
from ..domain.errors import KairosError, StorageError
from ..domain.requests import parse
from ..search.embedders import make_embedder
from ..search.service import SearchService
from ..store.db import Store
from ..store.faults import fault_of
from ..store.sessions import DbSessionStore
from .browse import BrowseService
from .entries import EntryService
from .expiry import RunExpiry
from .finding import ProtocolFinder
from .listing import Listing
from .ports import Embedder
from .protocols import ProtocolService
from .runs import RunService
from .triggers import TriggerService

Body = Mapping[str, Any]
"""A request as plain JSON, validated into its model on the way in."""


def _given(**values: Any) -> dict[str, Any]:
    """Keyword arguments as a request body: an argument left at None takes the default."""
    return {k: v for k, v in values.items() if v is not None}


class Kairos:
    def __init__(self, settings: Settings | None = None, *, store: Store | None = None,
                 embedder: Embedder | None = None, background: bool = True) -> None:
        self.settings = settings or load_settings()
        limits.configure(self.settings)
        if embedder is None:
            embedder = make_embedder(self.settings.embedder,
                                     base_url=self.settings.openai_base_url,
                                     model=self.settings.openai_model,
                                     api_key=self.settings.openai_api_key)
        if store is None:
            if not self.settings.database_url:
                home = self.settings.home_path
                try:
                    home.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    code = fault_of(exc)
                    if code is None:
                        raise
                    raise StorageError(code, str(home), exc.strerror or "") from None
            store = Store(self.settings.url)
        self.store = store
        self.embedder = embedder
        self.search_engine = SearchService(
            store, embedder, DbSessionStore(store) if store.shared_sessions else None)
        self.protocols = ProtocolService(store, self.search_engine)
        self.runs = RunService(store, self.protocols)
        self.finder = ProtocolFinder(store, self.search_engine,
                                     float(self.settings.search_threshold))
        self.trigger_service = TriggerService(store, self.protocols, self.search_engine)
        self.entries = EntryService(store, self.search_engine)
        self.listing = Listing(store, self.runs)
        self.browse = BrowseService(store, self.protocols, self.search_engine)
        self.expiry = RunExpiry(store, int(self.settings.run_idle_minutes))
        self.protocols.install_builtins()
        if background:
            self.search_engine.start_background()
            self.expiry.start()

    # search
    def search(self, query: Any, caller: Caller = Caller(), *,
               limit: Any = None, notice: bool = False) -> dict[str, Any]:
        """kairos_search: matching protocols, then the refine and create choices; with
        ``notice``, plus ``degraded`` and the provider when text alone served it."""
        req = parse(rq.Search, _given(query=query, limit=limit))
        return self.finder.kairos_search(req, caller, notice=notice)

    def explain_search(self, query: Any, caller: Caller = Caller(), *,
                       limit: Any = None) -> dict[str, Any]:
        """kairos_search's best candidates, each with its evidence and why it is or is not
        a match."""
        return self.finder.explain(parse(rq.Search, _given(query=query, limit=limit)), caller)

    def triggers(self, uri: Any, caller: Caller = Caller()) -> dict[str, Any]:
        """A protocol's author triggers and learned triggers."""
        return self.trigger_service.triggers(parse(rq.Dump, _given(uri=uri)).uri, caller)

    def forget_triggers(self, uri: Any, trigger_ids: Any = None,
                        caller: Caller = Caller()) -> dict[str, Any]:
        """Remove learned triggers of a protocol (all of them without ``trigger_ids``)."""
        return self.trigger_service.forget(parse(rq.Dump, _given(uri=uri)).uri, trigger_ids,
                                           caller)

    # protocols
    def mint(self, markdown_doc: Any, caller: Caller = Caller(), *,
             llm_model_id: str | None = None, force_update: bool = False) -> dict[str, Any]:
        req = parse(rq.Mint, _given(markdown_doc=markdown_doc, llm_model_id=llm_model_id,
                                    force_update=force_update))
        return self.protocols.mint(req, caller)

    def mint_many(self, docs: Sequence[str], caller: Caller = Caller(), *,
                  force_update: bool = False) -> list[dict[str, Any] | KairosError]:
        return self.protocols.mint_many(docs, caller, force_update=bool(force_update))

    def update(self, uris: Any, caller: Caller = Caller(), *, markdown_doc: Any = None,
               updates: Any = None) -> dict[str, Any]:
        req = parse(rq.Update, _given(uris=uris, markdown_doc=markdown_doc, updates=updates))
        return self.protocols.update(req, caller)

    def delete(self, uris: Any, caller: Caller = Caller(), *,
               protocol: bool = False) -> dict[str, Any]:
        return self.protocols.delete(parse(rq.Delete, _given(uris=uris, protocol=protocol)),
                                     caller)

    def dump(self, uri: Any, caller: Caller = Caller(), *,
             protocol: bool = False) -> dict[str, Any]:
        req = parse(rq.Dump, _given(uri=uri, protocol=protocol))
        return self.protocols.dump(req.uri, caller, protocol=req.protocol)

    # execution
    def begin(self, uri: Any, caller: Caller = Caller()) -> dict[str, Any]:
        return self.runs.begin(parse(rq.Begin, _given(uri=uri)).uri, caller)

    def next(self, uri: Any, solution: Any, caller: Caller = Caller()) -> dict[str, Any]:
        req = parse(rq.Next, _given(uri=uri) | {"solution": solution})
        return self.runs.next(req.uri, req.solution, caller)

    def attest(self, uri: Any, outcome: Any, message: Any, caller: Caller = Caller(), *,
               quality_bonus: Any = 0.0, llm_model_id: Any = None,
               solution: Any = None) -> dict[str, Any]:
        req = parse(rq.Attest, _given(uri=uri, outcome=outcome, message=message,
                                      quality_bonus=quality_bonus, llm_model_id=llm_model_id,
                                      solution=solution))
        return self.runs.attest(req.uri, req.outcome, req.message, caller,
                                quality_bonus=req.quality_bonus,
                                llm_model_id=req.llm_model_id, solution=req.solution)

    def verify_run(self, run_id: Any, caller: Caller = Caller()) -> dict[str, Any]:
        return self.runs.verify(run_id, caller)

    def proof_log(self, run_id: Any, caller: Caller = Caller()) -> dict[str, Any]:
        return self.runs.proof_log(run_id, caller)

    def run_history(self, caller: Caller = Caller(), limit: int = 20) -> list[dict[str, Any]]:
        return self.runs.history(caller, limit)

    def list_protocols(self, caller: Caller = Caller(), **filters: Any) -> dict[str, Any]:
        return self.listing.protocols(caller, **filters)

    def list_runs(self, caller: Caller = Caller(), **filters: Any) -> dict[str, Any]:
        return self.listing.runs_list(caller, **filters)

    def run_of_nonce(self, nonce: Any, caller: Caller = Caller()) -> dict[str, Any]:
        return self.listing.run_of_nonce(nonce, caller)

    def abort_run(self, run_id: Any, caller: Caller = Caller(), message: Any = None
                  ) -> dict[str, Any]:
        return self.listing.abort(run_id, caller, message)

    def expire_runs(self) -> int:
        """Record the runs idle past ``run_idle_minutes`` as abandoned (``expiry``)."""
        return self.expiry.sweep()

    def abandon_run(self, run_id: Any, reason: str, caller: Caller = Caller()) -> bool:
        """Record one of the caller's active runs as abandoned now: nobody is left to
        answer it (a terminal whose input ended)."""
        self.listing.own_run(run_id, caller)
        return self.expiry.abandon(run_id, reason)

    def expand_id(self, text: Any, kind: str, caller: Caller = Caller()) -> Any:
        """A step URI or run id from the short id a table shows (its first characters);
        anything else is returned as given."""
        return self.listing.expand_id(text, kind, caller)

    def metrics(self, uri: Any, caller: Caller = Caller()) -> dict[str, Any]:
        """Quality metrics of the protocol that ``uri`` belongs to, as run in the caller's
        space (a built-in protocol's are kept per space)."""
        with self.store.read() as repo:
            _, proto, rows = self.protocols.resolve(repo, uri, caller)
            m = repo.protocol_metrics(proto["id"], caller.space)
            per_step = repo.step_metrics_of(proto["id"], caller.space)
        base: dict[str, Any] = {"runs": 0, "successes": 0, "failures": 0, "quality_bonus": 0.0,
                "last_outcome": None, "last_run_at": None, "per_model": {}}
        if m is not None:
            base.update({k: m[k] for k in base})
        base["steps"] = [
            {"uri": f"kairos://mem/{r['id']}", "label": r["label"],
             **{k: (per_step[r["id"]][k] if r["id"] in per_step else 0)
                for k in ("accepted", "refused", "failures")}}
            for r in rows
        ]
        return base

    # entries and the unified search (seed 002)
    def search_entries(self, request: rq.SearchEntries | Body, caller: Caller = Caller(), *,
                       session_id: str | None = None) -> dict[str, Any]:
        return self.entries.search_entries(parse(rq.SearchEntries, request), caller,
                                           session_id=session_id)

    def read_entries(self, request: rq.ReadEntries | Body, caller: Caller = Caller(), *,
                     session_id: str | None = None) -> dict[str, Any]:
        return self.entries.read_entries(parse(rq.ReadEntries, request), caller,
                                         session_id=session_id)

    def write_entry(self, request: rq.WriteEntry | Body,
                    caller: Caller = Caller()) -> dict[str, Any]:
        return self.entries.write_entry(parse(rq.WriteEntry, request), caller)

    def update_entry(self, request: rq.UpdateEntry | Body,
                     caller: Caller = Caller()) -> dict[str, Any]:
        return self.entries.update_entry(parse(rq.UpdateEntry, request), caller)

    def list_categories(self, caller: Caller = Caller()) -> dict[str, Any]:
        return self.entries.list_categories(caller)

    def session_info(self, session_id: Any, caller: Caller = Caller()) -> dict[str, Any]:
        return self.entries.session_info(session_id, caller)

    def cite(self, session_id: Any, ids: Any, caller: Caller = Caller()) -> dict[str, Any]:
        return self.entries.cite(parse(rq.Cite, {"session_id": session_id, "ids": ids}), caller)

    # browsing (people and UIs): listings, overviews, one run, validation
    def browse_protocols(self, caller: Caller = Caller(), *, limit: Any = 20, offset: Any = 0,
                         q: Any = None, sort: Any = "updated") -> dict[str, Any]:
        return self.browse.list_protocols(caller, limit=limit, offset=offset, q_text=q,
                                          sort=sort)

    def protocol_overview(self, uri: Any, caller: Caller = Caller()) -> dict[str, Any]:
        return self.browse.protocol_overview(uri, caller)

    def protocol_quality(self, uri: Any, caller: Caller = Caller()) -> dict[str, Any]:
        return self.browse.quality(uri, caller)

    def validate_markdown(self, markdown_doc: Any, caller: Caller = Caller()) -> dict[str, Any]:
        return self.browse.validate(markdown_doc, caller)

    def browse_runs(self, caller: Caller = Caller(), *, limit: Any = 20, offset: Any = 0,
                    protocol: Any = None, status: Any = None) -> dict[str, Any]:
        return self.browse.list_runs(caller, limit=limit, offset=offset, protocol_uri=protocol,
                                     status=status)

    def run_detail(self, run_id: Any, caller: Caller = Caller()) -> dict[str, Any]:
        return self.browse.run(run_id, caller)

    def home(self, caller: Caller = Caller()) -> dict[str, Any]:
        """What a person sees first: the newest protocols and runs, and the store."""
        store: dict[str, Any] = {"backend": self.store.dialect, "home": None}
        if not self.settings.database_url:
            store["home"] = str(self.settings.home_path)
        return {**self.browse.home(caller), "space": caller.space, "store": store,
                "run_idle_minutes": self.expiry.minutes}

    def browse_entries(self, caller: Caller = Caller(), *, kind: Any = "experience",
                       category: Any = None, limit: Any = 20, offset: Any = 0
                       ) -> dict[str, Any]:
        return self.browse.list_entries(caller, kind=kind, category=category, limit=limit,
                                        offset=offset)

    def reindex(self, progress: Any = None) -> dict[str, Any]:
        """Re-embed every document with the current model."""
        return self.search_engine.backfill(progress=progress, force=True)

    def health(self) -> dict[str, Any]:
        """``healthy`` while the store serves reads and writes; ``unhealthy`` with the
        store's ``fault`` (STORAGE_FULL, STORAGE_READ_ONLY, DATABASE_UNAVAILABLE) when it
        does not. A model still loading or a provider that is down only shows here."""
        store = self.store.health()
        embedder = self.embedder
        try:
            index = self.search_engine.index_state()
        except StorageError:
            index = {}
        return {
            "status": "healthy" if store["ok"] else "unhealthy",
            "store": store,
            "embedder": {"provider": getattr(embedder, "name", "none"),
                         "state": getattr(embedder, "state", "ready"),
                         "model_id": getattr(embedder, "model_id", None)},
            "index": index,
        }

    def close(self) -> None:
        """Stop background work (never exit while it is inside the model), then the store."""
        self.expiry.stop()
        self.search_engine.stop()
        self.protocols.parser.close()
        self.store.close()

