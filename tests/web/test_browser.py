"""The web UI in a real browser: Debian's chromium driven by Playwright against a real
server on a loopback port, on the test's store (SQLite or PostgreSQL)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import update

from kairos.api import create_app
from kairos.service import Caller, Kairos
from kairos.store import schema as t
from tests.web.conftest import Site
from tests.web.harness import serve_in_thread

RELEASE = """# Browser release check

## Build
Build the release artifacts.

PROOF OF WORK: make build

## Confirm
Ask the person in charge.

PROOF OF WORK: user_input "Ship it?"

## Publish
Publish through the release tool.

PROOF OF WORK: mcp release_tool

## Notes
Write down what was released and where it went.

PROOF OF WORK: comment min_length=20
"""
BROKEN = RELEASE.replace("PROOF OF WORK: mcp release_tool",
                         '```json\n{"challenge": {"type": "telepathy"}}\n```')


def test_mint_find_run_and_verify_in_the_browser(site: Site, kairos: Kairos) -> None:
    page = site.go("#/editor")
    page.fill("#markdown-input", BROKEN)
    error = page.wait_for_selector('#validation .notice.bad[data-line="17"]')
    assert "Line 17" in error.inner_text() and "telepathy" in error.inner_text()
    assert page.locator(".gutter span.err").inner_text() == "17"
    assert page.locator("#save").is_disabled()

    page.fill("#markdown-input", RELEASE)
    page.wait_for_selector("#validation .notice.ok")
    assert "Browser release check (4 steps)" in page.locator("#validation").inner_text()
    page.click("#save")
    page.wait_for_selector("#minted-link")
    assert kairos.list_protocols()["total"] == 1

    page = site.go("#/search?q=release+check&types=protocol")
    match = page.wait_for_selector('tr[data-role="match"] a')
    assert match.inner_text() == "Browser release check"
    match.click()
    page.wait_for_selector("text=Run it").click()
    page.wait_for_selector("#start-run").click()  # nothing is recorded before Start

    page.wait_for_selector("#exit-code")  # step 1: a shell result pasted
    page.fill("#stdout", "built dist/app.tar.gz")
    page.click("#submit-answer")
    page.wait_for_selector("#confirmation")  # step 2: the person confirms
    page.fill("#confirmation", "yes")
    page.keyboard.press("Enter")
    page.wait_for_selector("#mcp-result")  # step 3: an MCP result pasted
    page.fill("#mcp-result", '{"published": true}')
    page.click("#submit-answer")
    page.wait_for_selector("#comment")  # step 4: a comment, sent with the attestation
    page.fill("#comment", "Wrote down what was released and where it went: v1.2 to prod.")
    page.click("#submit-answer")
    page.wait_for_selector("#run-done")
    assert "success, 4 proofs" in page.locator("#run-done").inner_text()

    page.click("#run-link")
    verdict = page.wait_for_selector("#verdict.ok")
    assert "Chain verified: 4 links" in verdict.inner_text()
    assert page.locator('section.link[data-state="valid"]').count() == 4
    run = kairos.list_runs()["items"][0]
    assert run["proven"] and run["outcome"] == "success"
    site.check_offline()


def test_a_tampered_proof_shows_the_first_broken_link(site: Site, kairos: Kairos) -> None:
    steps = [s["uri"] for s in kairos.mint(RELEASE)["items"][0]["steps"]]
    response = kairos.begin(steps[0])
    answers = [{"shell": {"exit_code": 0}}, {"user_input": {"confirmation": "yes"}},
               {"mcp": {"success": True, "result": "ok"}}]
    for uri, body in zip(steps[1:], answers, strict=True):
        c = response["challenge"]
        response = kairos.next(uri, {"type": c["type"], "nonce": c["nonce"],
                                     "proof_hash": c["proof_hash"], **body})
    run_id = kairos.list_runs()["items"][0]["run_id"]
    with kairos.store.engine.begin() as conn:  # rewrite step 2's proof behind the server
        row = conn.execute(t.proofs.select().where(t.proofs.c.run_id == run_id,
                                                   t.proofs.c.seq == 1)).mappings().one()
        forged = dict(row["record"], solution={"type": "user_input",
                                               "user_input": {"confirmation": "no"}})
        conn.execute(update(t.proofs).where(t.proofs.c.run_id == run_id, t.proofs.c.seq == 1)
                     .values(record=forged))
    page = site.go(f"#/run/{run_id}")
    verdict = page.wait_for_selector("#verdict.bad")
    assert "Chain broken at link 2" in verdict.inner_text()
    broken = page.locator("section.link.broken")
    assert broken.count() == 1
    assert "Link 2 · 2. Confirm" in broken.inner_text()
    assert "first broken link" in broken.inner_text()
    assert [page.locator("section.link").nth(i).get_attribute("data-state")
            for i in range(3)] == ["valid", "broken", "unchecked"]
    site.check_offline()


def test_an_entry_written_and_found_with_a_token(kairos: Kairos, chromium: Any) -> None:
    with serve_in_thread(create_app(kairos.service, tokens={"web-secret": "team"})) as base:
        s = Site(chromium, base)
        try:
            page = s.go("#/entry-new?type=experience")
            asked = page.wait_for_selector("#token-dialog[open] #token-why")  # a 401 came
            assert asked.inner_text().startswith("This server asks for a token.")
            page.fill("#token-input", "web-secret")
            page.keyboard.press("Enter")
            page.wait_for_selector("#f-title")
            page.select_option("#f-category", "deployment")
            page.fill("#f-title", "Drain the queue before deploying")
            page.fill("#f-playbook", "Stop the workers and wait for the job queue to drain "
                                     "before a deployment, or jobs run twice.")
            page.click("#entry-form button[type=submit]")
            page.wait_for_selector("#entry-link")

            page = s.go("#/search?q=drain+queue+deploying&types=experience,manual")
            hit = page.wait_for_selector("#results .card h3 a")
            assert hit.inner_text() == "Drain the queue before deploying"
            hit.click()
            page.wait_for_selector("h1:has-text('Drain the queue before deploying')")
            assert "jobs run twice" in page.locator("main").inner_text()

            page = s.go("#/entries?type=experience&category=deployment")
            assert "Drain the queue" in page.locator("main").inner_text()
            s.check_offline()
        finally:
            s.context.close()
    assert kairos.list_entries(Caller("team"))["total"] == 1
    assert kairos.list_entries()["total"] == 0


def test_triggers_are_shown_and_a_learned_one_removed_and_search_explains(
        site: Site, kairos: Kairos) -> None:
    doc = "---\ntriggers:\n  - ship the release to customers\n---\n" + RELEASE
    steps = [s["uri"] for s in kairos.mint(doc)["items"][0]["steps"]]
    agent = Caller(id="browser-agent")
    kairos.search("get the new version out the door", agent)
    kairos.search_engine.learning.flush()
    response = kairos.begin(steps[0], agent)
    answers = [{"shell": {"exit_code": 0, "stdout": "", "stderr": ""}},
               {"user_input": {"confirmation": "yes"}},
               {"mcp": {"tool_name": "release_tool", "success": True, "arguments": {},
                        "result": None}}]
    for uri, answer in zip(steps[1:], answers, strict=False):
        ch = response["challenge"]
        response = kairos.next(uri, {"type": ch["type"], "nonce": ch["nonce"],
                                     "proof_hash": ch["proof_hash"], **answer}, agent)
    ch = response["challenge"]
    kairos.attest(steps[-1], "success", "done", agent, solution={
        "type": "comment", "nonce": ch["nonce"], "proof_hash": ch["proof_hash"],
        "comment": {"text": "Released v2.3 to production from the browser test."}})
    assert kairos.triggers(steps[0])["learned"]

    page = site.go(f"#/protocol/{steps[0].removeprefix('kairos://mem/')}")
    page.wait_for_selector("table.learned-triggers")
    section = page.locator("#triggers")
    assert "ship the release to customers" in section.locator("ul.author-triggers").inner_text()
    assert "get the new version out the door" in section.inner_text()
    page.click("table.learned-triggers button")
    page.wait_for_selector("#triggers >> text=No learned triggers yet.")
    assert kairos.triggers(steps[0])["learned"] == []

    page = site.go("#/search?q=release+check&types=protocol")
    page.click("#explain summary")
    row = page.wait_for_selector('#explain tr[data-listed="yes"]')
    assert "Browser release check" in row.inner_text() and "listed:" in row.inner_text()
    assert "Relevant: relevance" in page.locator("#explain").inner_text()
    site.check_offline()
