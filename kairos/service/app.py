"""The one service every surface calls (``Kairos``): each method takes its request model,
validated once by the surface, and the caller, and answers a typed JSON body
(``domain.responses``, ``domain.views``) that the surface sends as it is."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from ..config import Settings
from ..domain import requests, responses, views
from ..domain.bundle import Bundle
from ..domain.caller import Caller
from ..domain.dataset_filters import Filters
from ..domain.datasets import Record
from ..domain.errors import KairosError, StorageError
from ..domain.keys import KeySet
from ..domain.ports import Embedder
from ..domain.uris import uri_list
from ..domain.versions import VersionDiff, VersionList, VersionsDiff
from ..search.service import SearchService
from ..store.db import Store
from ..store.notices import notices_for
from ..store.sessions import DbSessionStore
from .bundles import export_bundle
from .changes import Changes
from .datasets import export_dataset
from .entries import EntryService
from .expiry import RunExpiry
from .finding import ProtocolFinder
from .imports import import_lines
from .minting import Minter
from .parsing import Parser
from .protocols import ProtocolService
from .reads import ReadService, own_run
from .resources import ResourcePage, ResourceService, ResourceText
from .runs import RunService
from .signing import Signing, open_signing
from .transfer import export_records
from .triggers import forget_triggers, trigger_list
from .versions import diff_versions, list_versions


class Kairos:
    """The service of one store. Built by ``wiring.open_service`` from the settings, which
    it keeps (read once, at the edge)."""

    def __init__(self, settings: Settings, store: Store, embedder: Embedder, *,
                 background: bool = True, signing: Signing | None = None) -> None:
        self.settings = settings
        self.signing = open_signing(settings) if signing is None else signing
        self.limits = settings.limits
        self.store = store
        self.embedder = embedder
        self.search_engine = SearchService(
            store, embedder, DbSessionStore(store) if store.shared_sessions else None)
        self.protocols = ProtocolService(store, self.search_engine, Parser(self.limits))
        self.minter = Minter(store, self.search_engine, self.protocols)
        self.runs = RunService(store, self.protocols, self.limits)
        self.finder = ProtocolFinder(store, self.search_engine,
                                     float(settings.search_threshold))
        self.entries = EntryService(store, self.search_engine)
        self.expiry = RunExpiry(store, int(settings.run_idle_minutes))
        self.reads = ReadService(store, self.protocols, run_idle_minutes=self.expiry.minutes,
                                 home=None if settings.database_url else str(settings.home_path))
        self.resources = ResourceService(store, self.protocols, self.entries, self.reads,
                                         self.signing)
        #: What writes changed, for whoever listens (``changes``).
        self.changes = Changes(notices_for(store.engine))
        self.minter.install_builtins()
        if background:
            self.search_engine.background.start()
            self.expiry.start()

    # --- finding protocols (contract §3) ---------------------------------------------------

    def search(self, request: requests.Search, caller: Caller, *, notice: bool = False
               ) -> responses.SearchResult:
        """kairos_search: matching protocols, then the refine and create choices; with
        ``notice``, plus ``degraded`` and the provider when text alone served it."""
        return self.finder.kairos_search(request, caller, notice=notice)

    def explain_search(self, request: requests.Search, caller: Caller) -> responses.Explained:
        """kairos_search's best candidates, each with its evidence and why it is or is not
        a match."""
        return self.finder.explain(request, caller)

    def triggers(self, request: requests.ProtocolRef, caller: Caller) -> responses.TriggerList:
        """A protocol's author triggers and learned triggers."""
        return trigger_list(self.protocols, request.uri, caller)

    def forget_triggers(self, request: requests.ForgetTriggers, caller: Caller
                        ) -> responses.TriggerList:
        """Remove learned triggers of a protocol (every one without ``trigger_ids``)."""
        return forget_triggers(self.protocols, request.uri, request.trigger_ids, caller)

    # --- protocols (contract §2) -----------------------------------------------------------

    def mint(self, request: requests.Mint, caller: Caller) -> responses.MintResult:
        done = self.minter.mint(request, caller)
        self._minted([done], caller)
        return done

    def mint_many(self, request: requests.MintMany, caller: Caller
                  ) -> list[responses.MintResult | KairosError]:
        """Mint documents one by one (an error stops only its own document), their vectors
        from one pass of the model."""
        done = self.minter.mint_many(request.markdown_docs, caller,
                                     force_update=request.force_update)
        self._minted([d for d in done if not isinstance(d, KairosError)], caller)
        return done

    def _minted(self, results: list[responses.MintResult], caller: Caller) -> None:
        """Tell listeners of the protocols a mint replaced (a new one has no readers)."""
        self.changes.publish(caller.space, (step["uri"] for r in results for item in r["items"]
                                            if item["updated"] for step in item["steps"]))

    def validate_markdown(self, request: requests.Validate, caller: Caller) -> responses.Validation:
        """Parse as a mint would and store nothing."""
        return self.minter.validate(request.markdown_doc, caller)

    def update(self, request: requests.Update, caller: Caller) -> responses.UpdateResult:
        touched = self.changes.touched(self.store, uri_list(request.uris), caller.space)
        done = self.protocols.update(request, caller)
        if done["total_updated"]:
            self.changes.publish(caller.space, touched)
        return done

    def delete(self, request: requests.Delete, caller: Caller) -> responses.DeleteResult:
        touched = self.changes.touched(self.store, uri_list(request.uris), caller.space)
        done = self.protocols.delete(request, caller)
        if done["total_deleted"]:
            self.changes.publish(caller.space, touched)
        return done

    def dump(self, request: requests.Dump, caller: Caller
             ) -> responses.StepDump | responses.ProtocolDump:
        return self.protocols.dump(request.uri, caller, protocol=request.protocol,
                                   version=request.version)

    # --- running protocols (contract §4) ---------------------------------------------------

    def versions(self, request: requests.ProtocolRef, caller: Caller) -> VersionList:
        return list_versions(self.protocols, request.uri, caller)

    def diff_versions(self, request: VersionDiff, caller: Caller) -> VersionsDiff:
        return diff_versions(self.protocols, request, caller)

    def begin(self, request: requests.Begin, caller: Caller) -> responses.StepResult:
        return self.runs.begin(request.uri, caller)

    def next(self, request: requests.Next, caller: Caller) -> responses.StepResult:
        return self.runs.next(request.uri, request.solution, caller)

    def attest(self, request: requests.Attest, caller: Caller
               ) -> responses.AttestResult | responses.StepResult:
        return self.runs.attest(request, caller)

    def abort_run(self, request: requests.AbortRun, caller: Caller) -> responses.AttestResult:
        """Finish an active or completed run as failed at the step it waits on, as an
        attest of that step with outcome failure would."""
        reason = (request.message or "").strip() or "Aborted."
        done = self.runs.abort(request.run_id, caller, reason)
        return {**done, "status": "finished", "aborted": True, "next_action": "Run aborted."}

    def abandon_run(self, request: requests.AbandonRun, caller: Caller) -> bool:
        """Record one of the caller's active runs as abandoned now: nobody is left to
        answer it (a terminal whose input ended)."""
        with self.store.read() as repo:
            own_run(repo, request.run_id, caller)
        return self.expiry.abandon(request.run_id, request.reason)

    def expire_runs(self) -> int:
        """Record the runs idle past ``run_idle_minutes`` as abandoned (``expiry``)."""
        return self.expiry.sweep()

    # --- reads: pages and views (``reads``) ------------------------------------------------

    def list_protocols(self, request: requests.ListProtocols, caller: Caller) -> views.ProtocolPage:
        return self.reads.protocols_page(request, caller)

    def protocol_overview(self, request: requests.ProtocolRef, caller: Caller
                          ) -> views.ProtocolOverview:
        return self.reads.protocol_overview(request.uri, caller)

    def protocol_quality(self, request: requests.ProtocolRef, caller: Caller) -> views.Quality:
        return self.reads.quality(request.uri, caller)

    def metrics(self, request: requests.ProtocolRef, caller: Caller) -> views.Metrics:
        return self.reads.metrics(request.uri, caller)

    def list_runs(self, request: requests.ListRuns, caller: Caller) -> views.RunPage:
        return self.reads.runs_page(request, caller)

    def run_detail(self, request: requests.RunRef, caller: Caller) -> views.RunDetail:
        return self.reads.run(request.run_id, caller)[0]

    def verify_run(self, request: requests.RunRef, caller: Caller) -> views.Verification:
        return self.reads.verify(request.run_id, caller)

    def export_run(self, request: requests.RunRef, caller: Caller) -> Bundle:
        """The run as a signed bundle (``docs/bundle.md``) that anyone holding the key set
        verifies offline; an active run's holds its chain so far."""
        return export_bundle(self.store, self.signing, request.run_id, caller)

    def key_set(self) -> KeySet:
        """The public keys a bundle of this server may be signed with: the current one,
        then those published from before a rotation."""
        return self.signing.key_set()

    def proof_log(self, request: requests.RunRef, caller: Caller) -> views.ProofLog:
        return self.reads.proof_log(request.run_id, caller)

    def run_of_nonce(self, request: requests.NonceRef, caller: Caller) -> views.RunItem:
        return self.reads.run_of_nonce(request.nonce, caller)

    def list_entries(self, request: requests.ListEntries, caller: Caller) -> views.EntryPage:
        return self.reads.entries_page(request, caller)

    def home(self, caller: Caller) -> views.Home:
        """What a person sees first: the newest protocols and runs, and the store."""
        return self.reads.home(caller, self.store.dialect)

    def expand_id(self, request: requests.ShortId, caller: Caller) -> str:
        return self.reads.expand_id(request, caller)

    # --- MCP resources (``resources``) -----------------------------------------------------

    def list_resources(self, cursor: str | None, caller: Caller) -> ResourcePage:
        """A page of what the caller can read as resources; ``cursor`` from the last."""
        return self.resources.page(cursor, caller)

    def read_resource(self, uri: str, caller: Caller) -> ResourceText:
        return self.resources.read(uri, caller)

    def check_resource(self, uri: str, caller: Caller) -> None:
        """``read_resource``'s refusal, if any, without its work: what a subscriber asks."""
        self.resources.check(uri, caller)

    # --- knowledge entries and the unified search (contract §5) ----------------------------

    def search_entries(self, request: requests.SearchEntries, caller: Caller, *,
                       session_id: str | None = None) -> responses.UnifiedResult:
        """``session_id``: the conversation's, from a header; it wins over the request's."""
        return self.entries.search_entries(request, caller, session_id=session_id)

    def read_entries(self, request: requests.ReadEntries, caller: Caller, *,
                     session_id: str | None = None) -> responses.EntriesRead:
        return self.entries.read_entries(request, caller, session_id=session_id)

    def write_entry(self, request: requests.WriteEntry, caller: Caller) -> responses.EntryWritten:
        return self.entries.write_entry(request, caller)

    def update_entry(self, request: requests.UpdateEntry, caller: Caller) -> responses.EntryWritten:
        return self.entries.update_entry(request, caller)

    def list_categories(self, request: requests.ListCategories, caller: Caller
                        ) -> responses.CategoryList:
        return self.entries.list_categories(caller)

    def session_info(self, request: requests.SessionRef, caller: Caller) -> responses.SessionInfo:
        return self.entries.session_info(request.session_id, caller)

    def cite(self, request: requests.Cite, caller: Caller) -> responses.SessionInfo:
        return self.entries.cite(request, caller)

    # --- a space's records in and out, the index, health -----------------------------------

    def export_records(self, caller: Caller) -> Iterator[responses.ExportLine]:
        """Every record of the caller's space, one JSON object per line of an export."""
        return export_records(self.store, caller)

    def export_dataset(self, fmt: str, filters: Filters, caller: Caller
                       ) -> Iterator[Record]:
        """The caller's runs as training data (``docs/datasets.md``): the format is checked
        at once, the runs are read in batches as the records are taken."""
        return export_dataset(self.store, fmt, filters, caller)

    def import_records(self, lines: Iterable[bytes | str], caller: Caller) -> responses.Imported:
        """An export read into the caller's space as untrusted input: whole or not at all."""
        return import_lines(self, lines, caller)

    def reindex(self, progress: Callable[[int, int], None] | None = None) -> responses.Reindexed:
        """Re-embed every document with the current model."""
        return self.search_engine.background.backfill(progress=progress, force=True)

    def health(self) -> responses.Health:
        """``healthy`` while the store serves reads and writes; ``unhealthy`` with the
        store's ``fault`` (STORAGE_FULL, STORAGE_READ_ONLY, DATABASE_UNAVAILABLE) when it
        does not. A model still loading or a provider that is down only shows here."""
        store = self.store.health()
        embedder = self.embedder
        try:
            index = self.search_engine.background.index_state()
        except StorageError:
            index = {}
        return {
            "status": "healthy" if store["ok"] else "unhealthy",
            "store": store,
            "embedder": {"provider": embedder.name, "state": embedder.state,
                         "model_id": embedder.model_id},
            "index": index,
        }

    def close(self) -> None:
        """Stop background work (never exit while it is inside the model), then the store."""
        self.expiry.stop()
        self.changes.close()
        self.search_engine.stop()
        self.protocols.parser.close()
        self.store.close()


__all__ = ["Kairos"]
