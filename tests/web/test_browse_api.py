"""The browsing endpoints through ``httpx2.ASGITransport``: listings with paging, one run
with its chain checked link by link (also after tampering), validation without storing,
quality over time, entries by category, the UI shell and the offline API docs."""

from __future__ import annotations

import re
from typing import Any

import httpx2
import pytest
from sqlalchemy import update

from kairos.api import create_app
from kairos.service import Kairos
from kairos.store import schema as t
from tests.conftest import BASE
from tests.spec.seedkit import THREE_STEPS
from tests.surfaces.conftest import run_three

pytestmark = pytest.mark.anyio
MISSING = "00000000-0000-0000-0000-00000000dead"
OPERATIONS = {"kairos_mint": "/api/v1/protocols", "kairos_begin": "/api/v1/runs/begin",
              "kairos_next": "/api/v1/runs/next", "kairos_attest": "/api/v1/runs/attest"}
EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//|url\(\s*["']?(?:https?:)?//"""
                      r"""|@import\s+["']?(?:https?:)?//""")
BROKEN = '# T\n\n## A\nx\n\n```json\n{"challenge": {"type": "nope"}}\n```\n'


def rest(http: httpx2.AsyncClient) -> Any:
    async def call(tool: str, args: dict[str, Any]) -> dict[str, Any]:
        response = await http.post(OPERATIONS[tool], json=args)
        assert response.status_code in (200, 201), response.text
        return dict(response.json())
    return call


def doc(title: str, steps: int = 2) -> str:
    body = "".join(f"## Step {i}\nDo part {i} of {title.lower()} carefully.\n\n"
                   f"PROOF OF WORK: echo {i}\n\n" for i in range(1, steps + 1))
    return f"# {title}\n\n{body}"


async def test_protocols_are_listed_a_page_at_a_time(http: httpx2.AsyncClient) -> None:
    titles = ["Alpha deploy", "Beta rollback", "Gamma backup", "Delta restore", "Epsilon audit"]
    for title in titles:
        r = await http.post("/api/v1/protocols", json={"markdown_doc": doc(title),
                                                       "force_update": True})
        assert r.status_code == 201, r.text
    first = (await http.get("/api/v1/protocols", params={"limit": 2, "sort": "title"})).json()
    assert [i["chain_label"] for i in first["items"]] == ["Alpha deploy", "Beta rollback"]
    assert (first["total"], first["limit"], first["offset"], first["has_more"]) == (5, 2, 0, True)
    last = (await http.get("/api/v1/protocols",
                           params={"limit": 2, "offset": 4, "sort": "title"})).json()
    assert [i["chain_label"] for i in last["items"]] == ["Gamma backup"]
    assert last["has_more"] is False
    found = (await http.get("/api/v1/protocols", params={"title": "ROLL"})).json()
    assert [i["chain_label"] for i in found["items"]] == ["Beta rollback"]
    item = found["items"][0]
    assert item["step_count"] == 2 and item["uri"].startswith("kairos://mem/")
    assert item["stats"] == {"runs": 0, "successes": 0, "failures": 0, "success_rate": None,
                             "proven_runs": 0, "unproven_runs": 0, "last_outcome": None,
                             "last_run_at": None}
    builtins = (await http.get("/api/v1/protocols", params={"title": "create"})).json()
    assert builtins["total"] == 0  # built-in protocols are not the space's own


@pytest.mark.parametrize(("params", "field"), [
    ({"limit": 0}, "limit"), ({"limit": 501}, "limit"), ({"offset": -1}, "offset"),
    ({"limit": "x"}, "limit"), ({"sort": "size"}, "sort")])
async def test_bad_paging_is_a_422_naming_the_field(http: httpx2.AsyncClient,
                                                    params: dict[str, Any], field: str) -> None:
    for path in ("/api/v1/protocols", "/api/v1/runs", "/api/v1/entries"):
        if field == "sort" and path != "/api/v1/protocols":
            continue
        r = await http.get(path, params=params)
        assert r.status_code == 422, (path, r.text)
        assert r.json()["field"] == field


async def test_one_run_with_its_chain_verified_then_tampered(
        http: httpx2.AsyncClient, kairos: Kairos) -> None:
    run = await run_three(rest(http))
    run_id = run["final"]["run_id"]
    detail = (await http.get(f"/api/v1/runs/{run_id}")).json()
    assert detail["status"] == "finished" and detail["outcome"] == "success"
    assert detail["proven"] is True
    assert [s["proven"] for s in detail["steps"]] == [True, True, True]
    assert detail["verification"] == {"valid": True, "proofs": 3, "first_broken": None}
    assert [link["state"] for link in detail["links"]] == ["valid"] * 3
    assert detail["protocol"]["chain_label"] == "Project Setup"
    listed = (await http.get("/api/v1/runs")).json()
    assert listed["total"] == 1
    assert {k: listed["items"][0][k] for k in ("run_id", "proofs", "step_count", "proven")} == {
        "run_id": run_id, "proofs": 3, "step_count": 3, "proven": True}
    overview = (await http.get(
        f"/api/v1/protocols/{run['steps'][0].removeprefix('kairos://mem/')}/overview")).json()
    assert overview["stats"]["proven_runs"] == 1 and overview["stats"]["success_rate"] == 1.0
    assert [s["challenge"]["type"] for s in overview["steps"]] == ["shell"] * 3

    with kairos.store.engine.begin() as conn:  # change what step 2's proof says it did
        row = conn.execute(t.proofs.select().where(t.proofs.c.run_id == run_id,
                                                   t.proofs.c.seq == 1)).mappings().one()
        record = dict(row["record"], solution={"type": "shell", "forged": True})
        conn.execute(update(t.proofs).where(t.proofs.c.run_id == run_id, t.proofs.c.seq == 1)
                     .values(record=record))
    tampered = (await http.get(f"/api/v1/runs/{run_id}")).json()
    assert tampered["verification"]["valid"] is False
    assert tampered["verification"]["first_broken"]["index"] == 1
    assert [link["state"] for link in tampered["links"]] == ["valid", "broken", "unchecked"]
    assert tampered["links"][1]["expected_hash"] != tampered["links"][1]["record"]["proof_hash"]
    verify = (await http.get(f"/api/v1/runs/{run_id}/verify")).json()
    assert verify["first_broken"]["index"] == 1  # the same verdict as the verify endpoint


async def test_unknown_ids_are_404(http: httpx2.AsyncClient) -> None:
    for path in (f"/api/v1/runs/{MISSING}", f"/api/v1/protocols/{MISSING}/overview",
                 f"/api/v1/protocols/{MISSING}/quality"):
        r = await http.get(path)
        assert r.status_code == 404, path
        assert r.json()["error_code"] == "NOT_FOUND"
    for action in ("begin", "next", "attest"):  # POST-only: not mistaken for a run id
        assert (await http.get(f"/api/v1/runs/{action}")).status_code == 405
    bad = await http.get("/api/v1/protocols/not-a-uuid/overview")  # not a step id: no route
    assert bad.status_code == 404 and bad.json()["error_code"] == "NOT_FOUND"
    runs = await http.get("/api/v1/runs", params={"protocol": "nope"})
    assert runs.status_code == 422 and runs.json()["field"] == "protocol"


async def test_validation_names_the_line_and_warns_before_saving(
        http: httpx2.AsyncClient, kairos: Kairos) -> None:
    broken = await http.post("/api/v1/protocols/validate", json={"markdown_doc": BROKEN})
    assert broken.status_code == 200
    assert broken.json() == {"valid": False, "protocols": [], "errors": [
        {"error_code": "UNKNOWN_CHALLENGE_TYPE", "line": 7,
         "message": "Unknown challenge type 'nope' on line 7; expected one of shell, mcp, "
                    "user_input, comment"}]}
    good = (await http.post("/api/v1/protocols/validate",
                            json={"markdown_doc": THREE_STEPS})).json()
    assert good["valid"] is True and good["errors"] == []
    assert good["protocols"][0]["existing_uri"] is None
    assert good["protocols"][0]["step_count"] == 3
    assert (await http.get("/api/v1/protocols")).json()["total"] == 0  # nothing stored
    await http.post("/api/v1/protocols", json={"markdown_doc": THREE_STEPS})
    again = (await http.post("/api/v1/protocols/validate",
                             json={"markdown_doc": THREE_STEPS})).json()
    assert again["protocols"][0]["existing_uri"].startswith("kairos://mem/")
    assert again["protocols"][0]["warnings"] == [  # sentences for people, no error codes
        "A protocol titled 'Project Setup' already exists; a mint replaces it only when "
        "forced."]
    renamed = (await http.post("/api/v1/protocols/validate", json={
        "markdown_doc": THREE_STEPS.replace("# Project Setup", "# Project Setup Again")})).json()
    assert renamed["protocols"][0]["duplicates"][0]["chain_label"] == "Project Setup"
    top = renamed["protocols"][0]["duplicates"][0]
    assert top["blocks_mint"] is True and top["score"] >= 0.9
    assert renamed["protocols"][0]["warnings"] == [
        f"This protocol is {top['score']:.0%} similar to 'Project Setup'; a mint adds it only "
        "when forced."]
    wrong = await http.post("/api/v1/protocols/validate", json={"markdown_doc": 3})
    assert wrong.status_code == 422 and wrong.json()["field"] == "markdown_doc"


async def test_quality_over_time(http: httpx2.AsyncClient) -> None:
    first = await run_three(rest(http))
    await run_three(rest(http))
    step_id = first["steps"][0].removeprefix("kairos://mem/")
    q = (await http.get(f"/api/v1/protocols/{step_id}/quality")).json()
    assert q["bucket"] == "day" and len(q["series"]) == 1
    point = q["series"][0]
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", point["date"])
    assert (point["runs"], point["successes"], point["failures"], point["success_rate"],
            point["cumulative_runs"]) == (2, 2, 0, 1.0, 2)


async def test_entries_are_listed_by_category(http: httpx2.AsyncClient) -> None:
    for title, category in (("Pin versions", "coding"), ("Rotate keys", "security")):
        r = await http.post("/api/v1/entries", json={
            "entity_type": "experience", "category": category, "title": title,
            "playbook": f"{title}: a lesson written down so the next run goes better."})
        assert r.status_code == 201, r.text
    every = (await http.get("/api/v1/entries")).json()
    assert every["total"] == 2
    coding = (await http.get("/api/v1/entries", params={"category": "coding"})).json()
    assert [e["title"] for e in coding["items"]] == ["Pin versions"]
    assert coding["items"][0]["preview"].startswith("Pin versions: a lesson")
    manuals = (await http.get("/api/v1/entries", params={"type": "manual"})).json()
    assert manuals["total"] == 0
    bad = await http.get("/api/v1/entries", params={"type": "protocol"})
    assert bad.status_code == 422 and bad.json()["field"] == "type"


async def test_the_ui_and_the_docs_load_nothing_from_elsewhere(http: httpx2.AsyncClient) -> None:
    seen: set[str] = set()
    queue = ["/", "/docs", "/redoc"]
    while queue:
        path = queue.pop()
        if path in seen:
            continue
        seen.add(path)
        r = await http.get(path)
        assert r.status_code == 200, path
        text = r.text
        if not path.endswith(".js"):  # pages and stylesheets: no external src/href/url()
            assert not EXTERNAL.search(text), (path, EXTERNAL.search(text))
        if path.startswith("/ui/") or path in ("/", "/docs", "/redoc"):
            own = re.sub(r"http://www\.w3\.org/2000/svg", "", text)  # a namespace, not fetched
            assert not re.search(r"https?://", own), (path, re.search(r"https?://.{0,40}", own))
        for ref in re.findall(r"""(?:src|href)=["'](/[^"']*)["']""", text):
            queue.append(ref)
        for ref in re.findall(r"""(?:import|from)\s+["'](/[^"']+)["']""", text):
            queue.append(ref)
    assert "<style>" in (await http.get("/")).text  # the stylesheet, inlined for first paint
    assert (await http.get("/ui/app.css")).status_code == 200
    assert {"/ui/app.js", "/docs-assets/swagger-ui-bundle.js",
            "/docs-assets/swagger-ui.css", "/docs-assets/redoc.standalone.js"} <= seen
    spec = (await http.get("/openapi.json")).json()
    for path in ("/api/v1/protocols", "/api/v1/runs/{run_id}", "/api/v1/runs",
                 "/api/v1/protocols/validate", "/api/v1/entries"):
        assert path in spec["paths"], path
    schema = spec["paths"]["/api/v1/runs/{run_id}"]["get"]["responses"]["200"]["content"]
    assert schema["application/json"]["schema"]["$ref"].endswith("/RunDetail")


async def test_with_tokens_the_shell_is_open_and_the_data_is_not(kairos: Kairos) -> None:
    app = create_app(kairos.service, tokens={"alpha-secret": "A"})
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app),
                                 base_url=BASE) as client:
        assert (await client.get("/")).status_code == 200
        assert (await client.get("/ui/app.js")).status_code == 200
        assert (await client.get("/api/v1/protocols")).status_code == 401
        assert (await client.get("/docs-assets/swagger-ui.css")).status_code == 401
        auth = {"Authorization": "Bearer alpha-secret"}
        minted = await client.post("/api/v1/protocols", headers=auth,
                                   json={"markdown_doc": THREE_STEPS})
        assert minted.status_code == 201
        mine = (await client.get("/api/v1/protocols", headers=auth)).json()
        assert mine["total"] == 1
    assert kairos.list_protocols()["total"] == 0  # the default space sees nothing of A's
