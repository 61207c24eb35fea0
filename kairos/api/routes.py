"""``/api/v1``, the tools: each route parses its request into the request model (FastAPI,
from the body or the path), calls one service method, returns its JSON.

Routes are plain ``def`` functions: the service is synchronous (database, embedding), so
FastAPI runs them on its thread pool and the event loop stays free. That is the one thread
hop of a request: who is calling is resolved on the loop, and the answer is sent as the
service's JSON without a second pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.convertors import Convertor, register_url_convertor

from ..domain import limits, responses
from ..domain.caller import Caller
from ..domain.errors import NotFoundError, ValidationError
from ..domain.requests import (
    UUID_PATTERN,
    Attest,
    Begin,
    Cite,
    Delete,
    Dump,
    EntryFields,
    ForgetTriggers,
    ListCategories,
    Mint,
    Next,
    ProtocolRef,
    ReadEntries,
    Search,
    SearchEntries,
    SessionRef,
    Update,
    UpdateEntry,
    WriteEntry,
)
from ..domain.texts import URI_PREFIX
from ..domain.validation import parse
from ..service import Kairos
from .auth import identify
from .openapi import ERRORS, ok


class Ctx:
    """The service and who is calling, resolved once per request; an unknown query
    parameter is refused like an unknown body field, so a typo never passes silently."""

    def __init__(self, request: Request) -> None:
        if request.query_params:
            route: APIRoute = request.scope["route"]
            known = _query_names(route)
            names = [name for name, _ in request.query_params.multi_items()]
            unknown = sorted(set(names) - known)
            if unknown:
                expected = "one of: " + ", ".join(sorted(known)) if known else "none"
                raise ValidationError(unknown[0], expected,
                                      message=f"Unknown query parameter '{unknown[0]}'; "
                                              f"expected {expected}.")
            repeated = sorted({name for name in names if names.count(name) > 1})
            if repeated:
                raise ValidationError(repeated[0], "one value",
                                      message=f"Query parameter '{repeated[0]}' is given "
                                              "more than once.")
        self.kairos: Kairos = request.app.state.kairos
        self.caller: Caller
        self.caller, self.session = identify(request)


def _query_names(route: APIRoute) -> set[str]:
    """The query parameters a route takes: a request model's fields, or its own."""
    names: set[str] = set()
    for param in route.dependant.query_params:
        model = param.field_info.annotation
        if isinstance(model, type) and issubclass(model, BaseModel):
            names |= set(model.model_fields)
        else:
            names.add(param.alias)
    return names


async def _ctx(request: Request) -> Ctx:
    """On the event loop: it reads headers only, and a thread hop costs more than it."""
    return Ctx(request)


C = Annotated[Ctx, Depends(_ctx)]


def answer(body: Mapping[str, Any], status: int = 200) -> JSONResponse:
    """The service's JSON as it is: a Response is sent without FastAPI's second pass over
    the body (the models in ``openapi`` document it; the test suite checks it)."""
    return JSONResponse(body, status_code=status)


class _UuidText(Convertor[str]):
    """A path segment that is a uuid, kept as text: ``/protocols/update`` is then not a
    step id, so each path is served by exactly the routes it names."""

    regex = UUID_PATTERN

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("uuid_text", _UuidText())
_UUID = {"pattern": f"^{UUID_PATTERN}$"}
StepId = Annotated[str, Path(description="The uuid of a step URI.", json_schema_extra=_UUID)]
RunId = Annotated[str, Path(description="A run's id (run_id).", json_schema_extra=_UUID)]
"""Path ids are uuids (``uuid_text``): an id of another form names no route (404)."""

protocols = APIRouter(prefix="/api/v1", tags=["protocols"], responses=ERRORS)
runs = APIRouter(prefix="/api/v1/runs", tags=["runs"], responses=ERRORS)
entries = APIRouter(prefix="/api/v1", tags=["entries"], responses=ERRORS)


# --- protocols ---------------------------------------------------------------------------

@protocols.post("/protocols", summary="Mint markdown as protocols",
                **ok(responses.MintResult, 201))
def mint(body: Mint, c: C) -> JSONResponse:
    return answer(c.kairos.mint(body, c.caller), 201)


@protocols.post("/protocols/search", summary="kairos_search: find a protocol",
                **ok(responses.SearchResult))
def search_protocols(body: Search, c: C) -> JSONResponse:
    return answer(c.kairos.search(body, c.caller))


@protocols.post("/protocols/update", summary="kairos_update: change steps",
                **ok(responses.UpdateResult))
def update(body: Update, c: C) -> JSONResponse:
    return answer(c.kairos.update(body, c.caller))


@protocols.post("/protocols/delete", summary="kairos_delete: delete steps or protocols",
                **ok(responses.DeleteResult))
def delete(body: Delete, c: C) -> JSONResponse:
    return answer(c.kairos.delete(body, c.caller))


@protocols.get("/protocols/{step_id:uuid_text}", summary="kairos_dump: a step, or ?protocol=true",
               **ok(responses.StepDump | responses.ProtocolDump))
def dump(step_id: StepId, c: C, protocol: bool = False,
         version: Annotated[int | None, Query(ge=1)] = None) -> JSONResponse:
    request = parse(Dump, {"uri": URI_PREFIX + step_id, "protocol": protocol,
                           "version": version})
    return answer(c.kairos.dump(request, c.caller))


@protocols.get("/protocols/{step_id:uuid_text}/triggers",
               summary="A protocol's author triggers and learned triggers",
               **ok(responses.TriggerList))
def triggers(step_id: StepId, c: C) -> JSONResponse:
    return answer(c.kairos.triggers(ProtocolRef(uri=URI_PREFIX + step_id), c.caller))


@protocols.delete("/protocols/{step_id:uuid_text}/triggers",
                  summary="Remove every learned trigger of a protocol",
                  **ok(responses.TriggerList))
def forget_triggers(step_id: StepId, c: C) -> JSONResponse:
    request = ForgetTriggers(uri=URI_PREFIX + step_id)
    return answer(c.kairos.forget_triggers(request, c.caller))


@protocols.delete("/protocols/{step_id:uuid_text}/triggers/{trigger_id:uuid_text}",
                  summary="Remove one learned trigger of a protocol",
                  **ok(responses.TriggerList))
def forget_trigger(step_id: StepId, c: C, trigger_id: Annotated[str, Path(
        description="A learned trigger's id.", json_schema_extra=_UUID)]) -> JSONResponse:
    request = ForgetTriggers(uri=URI_PREFIX + step_id, trigger_ids=[trigger_id])
    return answer(c.kairos.forget_triggers(request, c.caller))


# --- runs --------------------------------------------------------------------------------

@runs.post("/begin", summary="kairos_begin: start a run", **ok(responses.StepResult))
def begin(body: Begin, c: C) -> JSONResponse:
    return answer(c.kairos.begin(body, c.caller))


@runs.post("/next", summary="kairos_next: answer a challenge, get the next step",
           **ok(responses.StepResult))
def next_step(body: Next, c: C) -> JSONResponse:
    return answer(c.kairos.next(body, c.caller))


@runs.post("/attest", summary="kairos_attest: finish a run",
           **ok(responses.AttestResult | responses.StepResult))
def attest(body: Attest, c: C) -> JSONResponse:
    return answer(c.kairos.attest(body, c.caller))


# --- entries, the unified search and its sessions (contract §5) --------------------------

@entries.post("/search", summary="Unified search of experiences and manuals",
              **ok(responses.UnifiedResult))
def search(body: SearchEntries, c: C) -> JSONResponse:
    return answer(c.kairos.search_entries(body, c.caller, session_id=c.session))


@entries.post("/entries/read", summary="Read entries by id", **ok(responses.EntriesRead))
def read_entries(body: ReadEntries, c: C) -> JSONResponse:
    return answer(c.kairos.read_entries(body, c.caller, session_id=c.session))


@entries.post("/entries", summary="Write an experience or a manual",
              **ok(responses.EntryWritten, 201))
def write_entry(body: WriteEntry, c: C) -> JSONResponse:
    return answer(c.kairos.write_entry(body, c.caller), 201)


@entries.patch("/entries/{entity_id}", summary="Change fields of an entry",
               **ok(responses.EntryWritten))
def patch_entry(entity_id: str, body: EntryFields, c: C) -> JSONResponse:
    request = UpdateEntry(entity_id=entity_id, updates=body)
    return answer(c.kairos.update_entry(request, c.caller))


@entries.post("/entries/update", summary="Change fields of an entry",
              **ok(responses.EntryWritten))
def update_entry(body: UpdateEntry, c: C) -> JSONResponse:
    return answer(c.kairos.update_entry(body, c.caller))


@entries.get("/categories", summary="Categories of experiences and manuals",
             **ok(responses.CategoryList))
def categories(c: C) -> JSONResponse:
    return answer(c.kairos.list_categories(ListCategories(), c.caller))


@entries.get("/search/session", summary="What a search session has seen and cited",
             **ok(responses.SessionInfo))
def session(c: C, session_id: Annotated[str | None, Query(
        max_length=limits.SESSION_ID_CHARS,
        description="The session; else the X-CHL-Session header's.")] = None
            ) -> JSONResponse:
    sid = session_id or c.session
    if not sid:  # no session named is no session found
        raise NotFoundError("No session named: pass session_id or the X-CHL-Session "
                            "header.", field="session_id")
    return answer(c.kairos.session_info(SessionRef(session_id=sid), c.caller))


@entries.post("/search/session/cited", summary="Record entries the answer cited",
              **ok(responses.SessionInfo))
def cited(body: Cite, c: C) -> JSONResponse:
    return answer(c.kairos.cite(body, c.caller))


ROUTERS = (runs, protocols, entries)

__all__ = ["ROUTERS", "C", "RunId", "StepId", "answer"]
