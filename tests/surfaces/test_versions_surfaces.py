"""Versions on every surface: REST (versions, diff, dump at a version), MCP
(``kairos_dump`` with ``version``) and the command line (``versions``, ``diff``,
``dump --version``), each with the structured error for a version that does not exist."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest
from mcp import Client

from kairos.mcp import ServiceRef, build_server, local_identity
from kairos.service import Kairos
from tests.surfaces.test_cli import env, one_error, run  # noqa: F401  (env: a fixture)
from tests.surfaces.test_mcp_memory import call, error

DOC = """# Surface Versions

## Prepare

Prepare the release.

PROOF OF WORK: timeout 30s make prepare

## Ship

Ship the release.

PROOF OF WORK: timeout 30s make ship
"""
NEW = DOC.replace("Ship the release.", "Ship the signed release.")


def _two(k: Kairos) -> list[str]:
    steps = [s["uri"] for s in k.mint(DOC)["items"][0]["steps"]]
    k.mint(NEW, force_update=True)
    return steps


def _id(uri: str) -> str:
    return uri.removeprefix("kairos://mem/")


@pytest.mark.anyio
async def test_rest_versions_diff_and_dump(http: httpx2.AsyncClient, kairos: Kairos) -> None:
    steps = _two(kairos)
    got = await http.get(f"/api/v1/protocols/{_id(steps[0])}/versions")
    assert got.status_code == 200
    body = got.json()
    assert [v["version"] for v in body["versions"]] == [1, 2]
    assert body["versions"][1]["current"] is True and body["current_version"] == 2
    diff = (await http.get(f"/api/v1/protocols/{_id(steps[0])}/diff",
                           params={"from": 1, "to": 2})).json()
    assert "-Ship the release.\n+Ship the signed release.\n" in diff["diff"]
    assert {"kind": "added", "text": "+Ship the signed release."} in diff["lines"]
    old = (await http.get(f"/api/v1/protocols/{_id(steps[1])}",
                          params={"version": 1})).json()
    assert old["content"].startswith("Ship the release.") and old["version"] == 1
    for params, field in (({"version": 3}, "version"), ({"version": 0}, "version")):
        bad = await http.get(f"/api/v1/protocols/{_id(steps[1])}", params=params)
        assert bad.status_code in (400, 404, 422), bad.text
        assert bad.json()["field"] == field
    for params, field in (({"from": 1, "to": 9}, "to"), ({"from": 0, "to": 1}, "from"),
                          ({"to": 1}, "from")):
        bad = await http.get(f"/api/v1/protocols/{_id(steps[0])}/diff", params=params)
        assert bad.status_code in (400, 404, 422), bad.text
        assert bad.json()["field"] == field, bad.json()


@pytest.mark.anyio
async def test_mcp_dump_takes_a_version(kairos: Kairos) -> None:
    steps = _two(kairos)
    server = build_server(ServiceRef.of(kairos.service), limits=kairos.limits,
                          identify=local_identity("default", "conversation-1"))
    async with Client(server) as client:
        body = await call(client, "kairos_dump", {"uri": steps[0], "protocol": True,
                                                  "version": 1})
        assert "Ship the release." in body["markdown_doc"] and body["version"] == 1
        bad = await error(client, "kairos_dump", {"uri": steps[0], "version": 5})
        assert (bad["error_code"], bad["field"]) == ("NOT_FOUND", "version")
        bad = await error(client, "kairos_dump", {"uri": steps[0], "version": "2"})
        assert bad["field"] == "version"


def test_cli_versions_and_diff(env: Path) -> None:  # noqa: F811
    from tests.conftest import make_kairos

    k = make_kairos(env)
    try:
        steps = _two(k)
    finally:
        k.close()
    listed = run("versions", steps[0])
    assert listed.exit_code == 0, listed.stderr
    rows = [line.split("\t") for line in listed.stdout.splitlines()]
    assert [r[0] for r in rows] == ["1", "2*"] and len(rows[0][1]) == 64
    as_json = json.loads(run("versions", steps[0], "--json").stdout)
    assert as_json["current_version"] == 2
    diff = run("diff", steps[0], "1", "2")
    assert diff.exit_code == 0
    assert "-Ship the release.\n+Ship the signed release.\n" in diff.stdout
    assert "\x1b[" not in diff.stdout  # plain in a pipe
    old = run("dump", steps[1], "--version", "1")
    assert old.stdout.startswith("## Ship\n\nShip the release.")
    missing = run("diff", steps[0], "1", "4")
    assert missing.exit_code != 0 and "version 4" in one_error(missing.stderr)
