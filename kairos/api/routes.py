"""``/api/v1``: each route parses its request, calls one service method, returns its JSON.

Routes are plain ``def`` functions: the service is synchronous (database, embedding), so
FastAPI runs them on its thread pool and the event loop stays free.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request

from ..domain import requests as rq
from ..domain.errors import ValidationError
from ..domain.texts import URI_PREFIX
from ..service import Caller, Kairos
from .auth import identify

Body = dict[str, Any]


class Ctx:
    """The service and who is calling, resolved once per request."""

    def __init__(self, request: Request) -> None:
        self.kairos: Kairos = request.app.state.kairos
        self.caller: Caller
        self.caller, self.session = identify(request)


C = Annotated[Ctx, Depends(Ctx)]

protocols = APIRouter(prefix="/api/v1", tags=["protocols"])
runs = APIRouter(prefix="/api/v1/runs", tags=["runs"])
entries = APIRouter(prefix="/api/v1", tags=["entries"])


# --- protocols ---------------------------------------------------------------------------

@protocols.post("/protocols", status_code=201, summary="Mint markdown as protocols")
def mint(body: rq.Mint, c: C) -> Body:
    return c.kairos.mint(body.markdown_doc, c.caller, llm_model_id=body.llm_model_id,
                         force_update=body.force_update)


@protocols.post("/protocols/search", summary="kairos_search: find a protocol")
def search_protocols(body: rq.Search, c: C) -> Body:
    return c.kairos.search(body.query, c.caller, limit=body.limit)


@protocols.get("/protocols/{step_id}", summary="kairos_dump: a step, or ?protocol=true")
def dump(step_id: Annotated[str, Path(description="The uuid of a step URI.")], c: C,
         protocol: bool = False) -> Body:
    return c.kairos.dump(URI_PREFIX + step_id, c.caller, protocol=protocol)


@protocols.post("/protocols/update", summary="kairos_update: change steps")
def update(body: rq.Update, c: C) -> Body:
    return c.kairos.update(body.uris, c.caller, markdown_doc=body.markdown_doc,
                           updates=body.updates)


@protocols.post("/protocols/delete", summary="kairos_delete: delete steps or protocols")
def delete(body: rq.Delete, c: C) -> Body:
    return c.kairos.delete(body.uris, c.caller, protocol=body.protocol)


# --- runs --------------------------------------------------------------------------------

@runs.post("/begin", summary="kairos_begin: start a run")
def begin(body: rq.Begin, c: C) -> Body:
    return c.kairos.begin(body.uri, c.caller)


@runs.post("/next", summary="kairos_next: answer a challenge, get the next step")
def next_step(body: rq.Next, c: C) -> Body:
    return c.kairos.next(body.uri, body.solution, c.caller)


@runs.post("/attest", summary="kairos_attest: finish a run")
def attest(body: rq.Attest, c: C) -> Body:
    return c.kairos.attest(body.uri, body.outcome, body.message, c.caller,
                           quality_bonus=body.quality_bonus, llm_model_id=body.llm_model_id,
                           solution=body.solution)


@runs.get("", summary="Recent runs of this space")
def history(c: C, limit: Annotated[int, Query(ge=1, le=500)] = 20) -> Body:
    items = c.kairos.run_history(c.caller, limit)
    return {"runs": items, "count": len(items)}


@runs.get("/{run_id}/proofs", summary="The run's proof log")
def proofs(run_id: str, c: C) -> Body:
    return c.kairos.proof_log(run_id, c.caller)


@runs.get("/{run_id}/verify", summary="Recompute the run's proof chain")
def verify(run_id: str, c: C) -> Body:
    return c.kairos.verify_run(run_id, c.caller)


# --- entries, the unified search and its sessions (seed 002) -----------------------------

@entries.post("/search", summary="Unified search of experiences and manuals")
def search(body: rq.SearchEntries, c: C) -> Body:
    return c.kairos.search_entries(body, c.caller, session_id=c.session)


@entries.post("/entries/read", summary="Read entries by id")
def read_entries(body: rq.ReadEntries, c: C) -> Body:
    return c.kairos.read_entries(body, c.caller, session_id=c.session)


@entries.post("/entries", status_code=201, summary="Write an experience or a manual")
def write_entry(body: rq.WriteEntry, c: C) -> Body:
    return c.kairos.write_entry(body, c.caller)


@entries.patch("/entries/{entity_id}", summary="Change fields of an entry")
def patch_entry(entity_id: str, body: rq.EntryFields, c: C) -> Body:
    return c.kairos.update_entry(rq.UpdateEntry(entity_id=entity_id, updates=body), c.caller)


@entries.post("/entries/update", summary="Change fields of an entry")
def update_entry(body: rq.UpdateEntry, c: C) -> Body:
    return c.kairos.update_entry(body, c.caller)


@entries.get("/categories", summary="Categories of experiences and manuals")
def categories(c: C) -> Body:
    return c.kairos.list_categories(c.caller)


@entries.get("/search/session", summary="What a search session has seen and cited")
def session(c: C, session_id: str | None = None) -> Body:
    sid = session_id or c.session
    if not sid:
        raise ValidationError("session_id", "a session id (query parameter or X-CHL-Session)")
    return c.kairos.session_info(sid, c.caller)


@entries.post("/search/session/cited", summary="Record entries the answer cited")
def cited(body: rq.Cite, c: C) -> Body:
    return c.kairos.cite(body.session_id, body.ids, c.caller)


ROUTERS = (protocols, runs, entries)

__all__ = ["ROUTERS"]
