"""The service as an agent's code sees it, for the tests: arguments as JSON values,
validated into the request model exactly as every surface validates them
(``domain.validation.parse``: a wrong value is the same ``ValidationError``), one call of
the typed service (``Kairos``), its JSON body back.

The contract's tests (``tests/spec``) and most service tests speak this way; the surfaces
(MCP, REST, the command line) call ``Kairos`` itself, which ``service`` is. Anything else
(``store``, ``search_engine``, ``settings``, ``close`` ...) is the service's own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from kairos.domain import requests
from kairos.domain.caller import Caller
from kairos.domain.errors import KairosError
from kairos.domain.validation import parse
from kairos.domain.versions import VersionDiff
from kairos.service import Kairos

M = TypeVar("M", bound=BaseModel)
ANYONE = Caller()


def given(model: type[M], body: Mapping[str, Any] | M | None = None, **values: Any) -> M:
    """``model`` from a JSON body and/or keyword values (a value left at None takes the
    model's default), validated as a surface validates it."""
    if isinstance(body, model):
        return body
    merged = {**(body or {}), **{k: v for k, v in values.items() if v is not None}}
    return parse(model, merged)


class Agent:
    def __init__(self, service: Kairos) -> None:
        self.service = service

    def __getattr__(self, name: str) -> Any:
        return getattr(self.service, name)

    # --- the tools (contract §3-§5) --------------------------------------------------------

    def search(self, query: Any, caller: Caller = ANYONE, *, limit: Any = None,
               notice: bool = False) -> Any:
        return self.service.search(given(requests.Search, query=query, limit=limit), caller,
                                   notice=notice)

    def explain_search(self, query: Any, caller: Caller = ANYONE, *, limit: Any = None) -> Any:
        return self.service.explain_search(given(requests.Search, query=query, limit=limit),
                                           caller)

    def mint(self, markdown_doc: Any, caller: Caller = ANYONE, *, llm_model_id: Any = None,
             force_update: Any = None) -> Any:
        return self.service.mint(given(requests.Mint, markdown_doc=markdown_doc,
                                       llm_model_id=llm_model_id, force_update=force_update),
                                 caller)

    def mint_many(self, docs: Sequence[str], caller: Caller = ANYONE, *,
                  force_update: bool = False) -> list[Any]:
        return self.service.mint_many(given(requests.MintMany, markdown_docs=list(docs),
                                            force_update=force_update), caller)

    def update(self, uris: Any, caller: Caller = ANYONE, *, markdown_doc: Any = None,
               updates: Any = None) -> Any:
        return self.service.update(given(requests.Update, uris=uris, markdown_doc=markdown_doc,
                                         updates=updates), caller)

    def delete(self, uris: Any, caller: Caller = ANYONE, *, protocol: Any = None) -> Any:
        return self.service.delete(given(requests.Delete, uris=uris, protocol=protocol),
                                   caller)

    def dump(self, uri: Any, caller: Caller = ANYONE, *, protocol: Any = None,
             version: Any = None) -> Any:
        return self.service.dump(given(requests.Dump, uri=uri, protocol=protocol,
                                       version=version), caller)

    def versions(self, uri: Any, caller: Caller = ANYONE) -> Any:
        return self.service.versions(given(requests.ProtocolRef, uri=uri), caller)

    def diff_versions(self, uri: Any, old: Any, new: Any, caller: Caller = ANYONE) -> Any:
        return self.service.diff_versions(
            given(VersionDiff, uri=uri, from_version=old, to_version=new), caller)

    def begin(self, uri: Any, caller: Caller = ANYONE) -> Any:
        return self.service.begin(given(requests.Begin, uri=uri), caller)

    def next(self, uri: Any, solution: Any, caller: Caller = ANYONE) -> Any:
        # Any JSON value is a solution, null included: it is judged, not refused.
        request = given(requests.Next, {"solution": solution}, uri=uri)
        return self.service.next(request, caller)

    def attest(self, uri: Any, outcome: Any, message: Any, caller: Caller = ANYONE, *,
               quality_bonus: Any = None, llm_model_id: Any = None, solution: Any = None
               ) -> Any:
        return self.service.attest(given(
            requests.Attest, uri=uri, outcome=outcome, message=message,
            quality_bonus=quality_bonus, llm_model_id=llm_model_id, solution=solution), caller)

    def triggers(self, uri: Any, caller: Caller = ANYONE) -> Any:
        return self.service.triggers(given(requests.ProtocolRef, uri=uri), caller)

    def forget_triggers(self, uri: Any, trigger_ids: Any = None,
                        caller: Caller = ANYONE) -> Any:
        return self.service.forget_triggers(
            given(requests.ForgetTriggers, uri=uri, trigger_ids=trigger_ids), caller)

    def search_entries(self, request: Any, caller: Caller = ANYONE, *,
                       session_id: str | None = None) -> Any:
        return self.service.search_entries(given(requests.SearchEntries, request), caller,
                                           session_id=session_id)

    def read_entries(self, request: Any, caller: Caller = ANYONE, *,
                     session_id: str | None = None) -> Any:
        return self.service.read_entries(given(requests.ReadEntries, request), caller,
                                         session_id=session_id)

    def write_entry(self, request: Any, caller: Caller = ANYONE) -> Any:
        return self.service.write_entry(given(requests.WriteEntry, request), caller)

    def update_entry(self, request: Any, caller: Caller = ANYONE) -> Any:
        return self.service.update_entry(given(requests.UpdateEntry, request), caller)

    def list_categories(self, caller: Caller = ANYONE) -> Any:
        return self.service.list_categories(requests.ListCategories(), caller)

    def session_info(self, session_id: Any, caller: Caller = ANYONE) -> Any:
        return self.service.session_info(given(requests.SessionRef, session_id=session_id),
                                          caller)

    def cite(self, session_id: Any, ids: Any, caller: Caller = ANYONE) -> Any:
        return self.service.cite(given(requests.Cite, session_id=session_id, ids=ids), caller)

    # --- runs and protocols as people see them (the read model) ----------------------------

    def verify_run(self, run_id: Any, caller: Caller = ANYONE) -> Any:
        return self.service.verify_run(given(requests.RunRef, run_id=run_id), caller)

    def proof_log(self, run_id: Any, caller: Caller = ANYONE) -> Any:
        return self.service.proof_log(given(requests.RunRef, run_id=run_id), caller)

    def run_detail(self, run_id: Any, caller: Caller = ANYONE) -> Any:
        return self.service.run_detail(given(requests.RunRef, run_id=run_id), caller)

    def run_history(self, caller: Caller = ANYONE, limit: int = 20) -> list[Any]:
        """The caller's newest runs (a page of ``list_runs``)."""
        page = self.service.list_runs(given(requests.ListRuns, limit=limit), caller)
        return list(page["items"])

    def list_runs(self, caller: Caller = ANYONE, **query: Any) -> Any:
        return self.service.list_runs(given(requests.ListRuns, **query), caller)

    def list_protocols(self, caller: Caller = ANYONE, **query: Any) -> Any:
        return self.service.list_protocols(given(requests.ListProtocols, **query), caller)

    def list_entries(self, caller: Caller = ANYONE, **query: Any) -> Any:
        return self.service.list_entries(given(requests.ListEntries, **query), caller)

    def metrics(self, uri: Any, caller: Caller = ANYONE) -> Any:
        return self.service.metrics(given(requests.ProtocolRef, uri=uri), caller)

    def protocol_overview(self, uri: Any, caller: Caller = ANYONE) -> Any:
        return self.service.protocol_overview(given(requests.ProtocolRef, uri=uri), caller)

    def protocol_quality(self, uri: Any, caller: Caller = ANYONE) -> Any:
        return self.service.protocol_quality(given(requests.ProtocolRef, uri=uri), caller)

    def validate_markdown(self, markdown_doc: Any, caller: Caller = ANYONE) -> Any:
        return self.service.validate_markdown(given(requests.Validate,
                                                    markdown_doc=markdown_doc), caller)

    def run_of_nonce(self, nonce: Any, caller: Caller = ANYONE) -> Any:
        return self.service.run_of_nonce(given(requests.NonceRef, nonce=nonce), caller)

    def abort_run(self, run_id: Any, caller: Caller = ANYONE, message: Any = None) -> Any:
        return self.service.abort_run(given(requests.AbortRun, run_id=run_id,
                                            message=message), caller)

    def abandon_run(self, run_id: Any, reason: Any, caller: Caller = ANYONE) -> bool:
        return self.service.abandon_run(given(requests.AbandonRun, run_id=run_id,
                                              reason=reason), caller)

    def expand_id(self, text: Any, kind: str, caller: Caller = ANYONE) -> str:
        return self.service.expand_id(given(requests.ShortId, text=text, kind=kind), caller)

    def home(self, caller: Caller = ANYONE) -> Any:
        return self.service.home(caller)


__all__ = ["ANYONE", "Agent", "KairosError", "given"]
