"""What the pages for people read from the REST API: the home page's store, every problem
of a draft, a step's body without its challenge, plain previews, abandoned runs, and pages
that keep every request on this host."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from kairos.service import Kairos
from tests.spec.seedkit import THREE_STEPS
from tests.surfaces.conftest import run_three
from tests.web.test_browse_api import rest

pytestmark = pytest.mark.anyio


async def test_home_shows_the_newest_protocols_and_runs_and_the_store(
        http: httpx2.AsyncClient, kairos: Kairos, home: Path) -> None:
    empty = (await http.get("/api/v1/home")).json()
    assert empty["protocols"] == {"total": 0, "recent": []}
    assert empty["runs"] == {"total": 0, "active": 0, "recent": []}
    assert empty["space"] == "default" and empty["run_idle_minutes"] == 1440
    if kairos.store.dialect == "sqlite":
        assert empty["store"] == {"backend": "sqlite", "home": str(home)}
    else:
        assert empty["store"] == {"backend": "postgresql", "home": None}

    done = await run_three(rest(http))
    await http.post("/api/v1/runs/begin", json={"uri": done["steps"][0]})
    full = (await http.get("/api/v1/home")).json()
    (protocol,) = full["protocols"]["recent"]
    assert protocol["chain_label"] == "Project Setup"
    assert protocol["stats"] == {**protocol["stats"], "runs": 2, "successes": 1,
                                 "success_rate": 1.0, "proven_runs": 1, "unproven_runs": 0}
    assert full["runs"]["total"] == 2 and full["runs"]["active"] == 1
    assert [r["status"] for r in full["runs"]["recent"]] == ["active", "finished"]


async def test_validation_reports_every_problem(http: httpx2.AsyncClient) -> None:
    doc = ("# Three problems\n\n## Build\nPROOF OF WORK: timeout 99h make\n\n## \n\n"
           "## Check\n```json\n{\"challenge\": {\"type\": \"nope\"}}\n```\n")
    v = (await http.post("/api/v1/protocols/validate", json={"markdown_doc": doc})).json()
    assert v["valid"] is False and v["protocols"] == []
    assert [(e["line"], e["error_code"]) for e in v["errors"]] == [
        (4, "MISSING_CHALLENGE_FIELD"), (6, "NO_HEADING"), (10, "UNKNOWN_CHALLENGE_TYPE")]


async def test_a_step_body_leaves_its_challenge_to_the_card(http: httpx2.AsyncClient) -> None:
    minted = (await http.post("/api/v1/protocols", json={"markdown_doc": THREE_STEPS})).json()
    step_id = minted["items"][0]["uri"].removeprefix("kairos://mem/")
    overview = (await http.get(f"/api/v1/protocols/{step_id}/overview")).json()
    first = overview["steps"][0]
    assert first["body"] == "Create the project directory structure."
    assert "```json" in first["content"]  # the step as written stays where it was


async def test_previews_are_plain_text(http: httpx2.AsyncClient) -> None:
    r = await http.post("/api/v1/entries", json={
        "entity_type": "manual", "category": "operations", "title": "Release notes",
        "content": "# Release notes\n\n**Write** them with `git log` and [the template](x.md)."})
    assert r.status_code == 201, r.text
    (item,) = (await http.get("/api/v1/entries", params={"type": "manual"})).json()["items"]
    assert item["preview"] == "Release notes Write them with git log and the template."


async def test_abandoned_runs_are_listed_by_their_status(http: httpx2.AsyncClient,
                                                          kairos: Kairos) -> None:
    minted = (await http.post("/api/v1/protocols", json={"markdown_doc": THREE_STEPS})).json()
    await http.post("/api/v1/runs/begin", json={"uri": minted["items"][0]["uri"]})
    run_id = kairos.list_runs()["items"][0]["run_id"]
    assert kairos.abandon_run(run_id, "Abandoned: gone home.")
    listed = (await http.get("/api/v1/runs", params={"status": "abandoned"})).json()
    assert [(i["run_id"], i["status"], i["outcome"]) for i in listed["items"]] == [
        (run_id, "abandoned", None)]
    bad = await http.get("/api/v1/runs", params={"status": "gone"})
    assert bad.status_code == 422 and bad.json()["field"] == "status"
    detail = (await http.get(f"/api/v1/runs/{run_id}")).json()
    assert detail["status"] == "abandoned" and detail["message"] == "Abandoned: gone home."


async def test_pages_keep_every_request_on_this_host(http: httpx2.AsyncClient) -> None:
    for path in ("/", "/docs", "/redoc"):
        page = await http.get(path)
        assert "default-src 'self'" in page.headers["content-security-policy"], path
    bundle = await http.get("/docs-assets/redoc.standalone.js")
    assert bundle.status_code == 200 and "cdn.redoc.ly" not in bundle.text
    assert bundle.headers["content-type"].startswith("text/javascript")
