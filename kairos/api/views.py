"""``/api/v1``, the reads for people and UIs: pages of protocols, runs and entries (their
query strings parsed into the request models), one protocol's overview and quality, one
run, the home view, and markdown checked without storing it. Thin like ``routes``: parse,
call the service, send its JSON."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from ..domain import keys, responses, views
from ..domain.bundle_format import SCHEMA as BUNDLE
from ..domain.requests import ListEntries, ListProtocols, ListRuns, ProtocolRef, RunRef, Validate
from ..domain.texts import URI_PREFIX
from ..domain.validation import parse
from ..domain.versions import VersionDiff, VersionList, VersionsDiff
from .openapi import ERRORS, ok, ok_schema
from .routes import C, RunId, StepId, answer

router = APIRouter(prefix="/api/v1", tags=["browse"], responses=ERRORS)
#: What ``keys.key_set`` serves: every trusted key as a JWK.
KEY_SET = {"keys": [dict.fromkeys(("kid", "kty", "crv", "x", "alg"), "string")]}
well_known = APIRouter(tags=["operations"])


@router.get("/protocols", summary="List protocols, a page at a time, with their statistics",
            **ok(views.ProtocolPage))
def list_protocols(c: C, query: Annotated[ListProtocols, Query()]) -> JSONResponse:
    return answer(c.kairos.list_protocols(query, c.caller))


@router.post("/protocols/validate", summary="Parse markdown as a mint would, without "
             "storing it", **ok(responses.Validation))
def validate(body: Validate, c: C) -> JSONResponse:
    return answer(c.kairos.validate_markdown(body, c.caller))


@router.get("/protocols/{step_id:uuid_text}/overview",
            summary="A protocol's steps with their challenges, and its statistics",
            **ok(views.ProtocolOverview))
def overview(step_id: StepId, c: C) -> JSONResponse:
    return answer(c.kairos.protocol_overview(ProtocolRef(uri=URI_PREFIX + step_id), c.caller))


@router.get("/protocols/{step_id:uuid_text}/quality",
            summary="Runs and success rate of a protocol per day", **ok(views.Quality))
def quality(step_id: StepId, c: C) -> JSONResponse:
    return answer(c.kairos.protocol_quality(ProtocolRef(uri=URI_PREFIX + step_id), c.caller))


@router.get("/protocols/{step_id:uuid_text}/versions",
            summary="A protocol's versions: number, content hash, created, runs on each",
            **ok(VersionList))
def versions(step_id: StepId, c: C) -> JSONResponse:
    return answer(c.kairos.versions(ProtocolRef(uri=URI_PREFIX + step_id), c.caller))


@router.get("/protocols/{step_id:uuid_text}/diff",
            summary="The unified diff of two versions of a protocol", **ok(VersionsDiff))
def diff(step_id: StepId, c: C, from_: Annotated[int, Query(alias="from", ge=1)],
         to: Annotated[int, Query(ge=1)]) -> JSONResponse:
    request = parse(VersionDiff, {"uri": URI_PREFIX + step_id, "from": from_, "to": to})
    return answer(c.kairos.diff_versions(request, c.caller))


@router.get("/home", summary="The newest protocols and runs of the space, and the store it "
            "is in", **ok(views.Home))
def home(c: C) -> JSONResponse:
    return answer(c.kairos.home(c.caller))


@router.get("/runs", summary="List runs, a page at a time, with whether each is proven",
            **ok(views.RunPage))
def list_runs(c: C, query: Annotated[ListRuns, Query()]) -> JSONResponse:
    return answer(c.kairos.list_runs(query, c.caller))


@router.get("/runs/{run_id:uuid_text}", summary="One run: status, steps, and its proof "
            "chain checked link by link", **ok(views.RunDetail))
def one_run(run_id: RunId, c: C) -> JSONResponse:
    return answer(c.kairos.run_detail(RunRef(run_id=run_id), c.caller))


@router.get("/runs/{run_id:uuid_text}/proofs", summary="The run's proof log",
            **ok(views.ProofLog))
def proofs(run_id: RunId, c: C) -> JSONResponse:
    return answer(c.kairos.proof_log(RunRef(run_id=run_id), c.caller))


@router.get("/runs/{run_id:uuid_text}/verify", summary="Recompute the run's proof chain",
            **ok(views.Verification))
def verify(run_id: RunId, c: C) -> JSONResponse:
    return answer(c.kairos.verify_run(RunRef(run_id=run_id), c.caller))


@router.get("/runs/{run_id:uuid_text}/bundle", summary="The run as a signed bundle that "
            "anyone holding the server's keys verifies offline (docs/bundle.md)",
            **ok_schema("RunBundle", BUNDLE,
                        "The bundle, as a file to keep (Content-Disposition)."))
def bundle(run_id: RunId, c: C) -> JSONResponse:
    body = c.kairos.export_run(RunRef(run_id=run_id), c.caller)
    name = f"run-{body['run']['id']}.bundle.json"
    return JSONResponse(body, headers={"Content-Disposition": f'attachment; filename="{name}"'})


@well_known.get(keys.KEYS_PATH, summary="The public keys run bundles are signed with (no "
                "token needed)", **ok_schema("KeySet", KEY_SET))
def key_set(c: C) -> JSONResponse:
    return answer(c.kairos.key_set())


@router.get("/entries", summary="List experiences or manuals, optionally of one category",
            **ok(views.EntryPage))
def list_entries(c: C, query: Annotated[ListEntries, Query()]) -> JSONResponse:
    return answer(c.kairos.list_entries(query, c.caller))


__all__ = ["router", "well_known"]
