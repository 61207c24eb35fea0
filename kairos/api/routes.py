"""``/api/v1``: each route parses its request, calls one service method, returns its JSON.

Routes are plain ``def`` functions: the service is synchronous (database, embedding), so
FastAPI runs them on its thread pool and the event loop stays free. That is the one thread
hop of a request: who is calling is resolved on the loop, and the answer is sent as the
service's JSON without a second pass.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.convertors import Convertor, register_url_convertor

from ..domain import limits
from ..domain import requests as rq
from ..domain.caller import Caller
from ..domain.errors import NotFoundError, ValidationError
from ..domain.texts import URI_PREFIX
from ..service import Kairos
from . import openapi as o
from .auth import identify

Body = dict[str, Any]


class Ctx:
    """The service and who is calling, resolved once per request; an unknown query
    parameter is refused like an unknown body field, so a typo never passes silently."""

    def __init__(self, request: Request) -> None:
        if request.query_params:
            route: APIRoute = request.scope["route"]
            known = {p.alias for p in route.dependant.query_params}
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


async def _ctx(request: Request) -> Ctx:
    """On the event loop: it reads headers only, and a thread hop costs more than it."""
    return Ctx(request)


C = Annotated[Ctx, Depends(_ctx)]


def answer(body: Body, status: int = 200) -> JSONResponse:
    """The service's JSON as it is: a Response is sent without FastAPI's second pass over
    the body (the models in ``openapi`` document it; the test suite checks it)."""
    return JSONResponse(body, status_code=status)


class _UuidText(Convertor[str]):
    """A path segment that is a uuid, kept as text: ``/protocols/update`` is then not a
    step id, so each path is served by exactly the routes it names."""

    regex = rq.UUID_PATTERN

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("uuid_text", _UuidText())
_UUID = {"pattern": f"^{rq.UUID_PATTERN}$"}
StepId = Annotated[str, Path(description="The uuid of a step URI.", json_schema_extra=_UUID)]
RunId = Annotated[str, Path(description="A run's id (run_id).", json_schema_extra=_UUID)]
"""Path ids are uuids (``uuid_text``): an id of another form names no route (404)."""

protocols = APIRouter(prefix="/api/v1", tags=["protocols"], responses=o.ERRORS)
runs = APIRouter(prefix="/api/v1/runs", tags=["runs"], responses=o.ERRORS)
entries = APIRouter(prefix="/api/v1", tags=["entries"], responses=o.ERRORS)


# --- protocols ---------------------------------------------------------------------------

@protocols.post("/protocols", summary="Mint markdown as protocols", **o.ok(o.MintResult, 201))
def mint(body: rq.Mint, c: C) -> JSONResponse:
    return answer(c.kairos.mint(body.markdown_doc, c.caller, llm_model_id=body.llm_model_id,
                                force_update=body.force_update), 201)


@protocols.post("/protocols/search", summary="kairos_search: find a protocol",
                **o.ok(o.SearchResult))
def search_protocols(body: rq.Search, c: C) -> JSONResponse:
    return answer(c.kairos.search(body.query, c.caller, limit=body.limit))


@protocols.post("/protocols/update", summary="kairos_update: change steps",
                **o.ok(o.UpdateResult))
def update(body: rq.Update, c: C) -> JSONResponse:
    return answer(c.kairos.update(body.uris, c.caller, markdown_doc=body.markdown_doc,
                                  updates=body.updates))


@protocols.post("/protocols/delete", summary="kairos_delete: delete steps or protocols",
                **o.ok(o.DeleteResult))
def delete(body: rq.Delete, c: C) -> JSONResponse:
    return answer(c.kairos.delete(body.uris, c.caller, protocol=body.protocol))


@protocols.get("/protocols/{step_id:uuid_text}", summary="kairos_dump: a step, or ?protocol=true",
               **o.ok(o.StepDump | o.ProtocolDump))
def dump(step_id: StepId, c: C, protocol: bool = False) -> JSONResponse:
    return answer(c.kairos.dump(URI_PREFIX + step_id, c.caller, protocol=protocol))


@protocols.get("/protocols/{step_id:uuid_text}/triggers",
               summary="A protocol's author triggers and learned triggers",
               **o.ok(o.TriggerList))
def triggers(step_id: StepId, c: C) -> JSONResponse:
    return answer(c.kairos.triggers(URI_PREFIX + step_id, c.caller))


@protocols.delete("/protocols/{step_id:uuid_text}/triggers",
                  summary="Remove every learned trigger of a protocol", **o.ok(o.TriggerList))
def forget_triggers(step_id: StepId, c: C) -> JSONResponse:
    return answer(c.kairos.forget_triggers(URI_PREFIX + step_id, None, c.caller))


@protocols.delete("/protocols/{step_id:uuid_text}/triggers/{trigger_id:uuid_text}",
                  summary="Remove one learned trigger of a protocol", **o.ok(o.TriggerList))
def forget_trigger(step_id: StepId, c: C, trigger_id: Annotated[str, Path(
        description="A learned trigger's id.", json_schema_extra=_UUID)]) -> JSONResponse:
    return answer(c.kairos.forget_triggers(URI_PREFIX + step_id, [trigger_id], c.caller))


# --- runs --------------------------------------------------------------------------------

@runs.post("/begin", summary="kairos_begin: start a run", **o.ok(o.StepResult))
def begin(body: rq.Begin, c: C) -> JSONResponse:
    return answer(c.kairos.begin(body.uri, c.caller))


@runs.post("/next", summary="kairos_next: answer a challenge, get the next step",
           **o.ok(o.StepResult))
def next_step(body: rq.Next, c: C) -> JSONResponse:
    return answer(c.kairos.next(body.uri, body.solution, c.caller))


@runs.post("/attest", summary="kairos_attest: finish a run",
           **o.ok(o.AttestResult | o.StepResult))
def attest(body: rq.Attest, c: C) -> JSONResponse:
    return answer(c.kairos.attest(body.uri, body.outcome, body.message, c.caller,
                                  quality_bonus=body.quality_bonus,
                                  llm_model_id=body.llm_model_id, solution=body.solution))


@runs.get("", summary="Recent runs of this space", **o.ok(o.RunList))
def history(c: C, limit: Annotated[int, Query(ge=1, le=500)] = 20) -> JSONResponse:
    items = c.kairos.run_history(c.caller, limit)
    return answer({"runs": items, "count": len(items)})


@runs.get("/{run_id:uuid_text}/proofs", summary="The run's proof log", **o.ok(o.ProofLog))
def proofs(run_id: RunId, c: C) -> JSONResponse:
    return answer(c.kairos.proof_log(run_id, c.caller))


@runs.get("/{run_id:uuid_text}/verify", summary="Recompute the run's proof chain",
          **o.ok(o.Verification))
def verify(run_id: RunId, c: C) -> JSONResponse:
    return answer(c.kairos.verify_run(run_id, c.caller))


# --- entries, the unified search and its sessions (seed 002) -----------------------------

@entries.post("/search", summary="Unified search of experiences and manuals",
              **o.ok(o.UnifiedResult))
def search(body: rq.SearchEntries, c: C) -> JSONResponse:
    return answer(c.kairos.search_entries(body, c.caller, session_id=c.session))


@entries.post("/entries/read", summary="Read entries by id", **o.ok(o.EntriesRead))
def read_entries(body: rq.ReadEntries, c: C) -> JSONResponse:
    return answer(c.kairos.read_entries(body, c.caller, session_id=c.session))


@entries.post("/entries", summary="Write an experience or a manual",
              **o.ok(o.EntryWritten, 201))
def write_entry(body: rq.WriteEntry, c: C) -> JSONResponse:
    return answer(c.kairos.write_entry(body, c.caller), 201)


@entries.patch("/entries/{entity_id}", summary="Change fields of an entry",
               **o.ok(o.EntryWritten))
def patch_entry(entity_id: str, body: rq.EntryFields, c: C) -> JSONResponse:
    request = rq.UpdateEntry(entity_id=entity_id, updates=body)
    return answer(c.kairos.update_entry(request, c.caller))


@entries.post("/entries/update", summary="Change fields of an entry",
              **o.ok(o.EntryWritten))
def update_entry(body: rq.UpdateEntry, c: C) -> JSONResponse:
    return answer(c.kairos.update_entry(body, c.caller))


@entries.get("/categories", summary="Categories of experiences and manuals",
             **o.ok(o.CategoryList))
def categories(c: C) -> JSONResponse:
    return answer(c.kairos.list_categories(c.caller))


@entries.get("/search/session", summary="What a search session has seen and cited",
             **o.ok(o.SessionInfo))
def session(c: C, session_id: Annotated[str | None, Query(
        max_length=limits.SESSION_ID_CHARS,
        description="The session; else the X-CHL-Session header's.")] = None
            ) -> JSONResponse:
    sid = session_id or c.session
    if not sid:  # no session named is no session found
        raise NotFoundError("No session named: pass session_id or the X-CHL-Session "
                            "header.", field="session_id")
    return answer(c.kairos.session_info(sid, c.caller))


@entries.post("/search/session/cited", summary="Record entries the answer cited",
              **o.ok(o.SessionInfo))
def cited(body: rq.Cite, c: C) -> JSONResponse:
    return answer(c.kairos.cite(body.session_id, body.ids, c.caller))


ROUTERS = (runs, protocols, entries)

__all__ = ["ROUTERS"]
