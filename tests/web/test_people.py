"""The web UI as a person meets it, in a real browser: the home page, the guided run from
Start to a refused last answer and back, plain words instead of agent language, the
editor's problems and its state after a mint, and the small things around them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from kairos.api import create_app
from kairos.domain.texts import CREATE_PROTOCOL_URI
from kairos.service import Kairos
from tests.web.conftest import Site
from tests.web.harness import serve_in_thread
from tests.web.test_browser import RELEASE

AGENT_WORDS = re.compile(r"kairos_\w+|[A-Z]{3,}_[A-Z_]{3,}|next_action|min_score|top_score")


def ids(uri: str) -> str:
    return uri.removeprefix("kairos://mem/")


def test_the_guided_run_starts_on_start_and_finishes_after_a_refused_last_answer(
        site: Site, kairos: Kairos) -> None:
    uri = kairos.mint(RELEASE)["items"][0]["uri"]
    page = site.go(f"#/go/{ids(uri)}")
    page.wait_for_selector("#start-run")
    assert kairos.list_runs()["total"] == 0  # looking at the page records nothing
    assert "Nothing is recorded until you press Start" in page.inner_text("#before-start")
    page.click("#start-run")

    page.wait_for_selector("#exit-code")
    card = page.inner_text("section[aria-label='Current step']")
    assert card.count("make build") == 1  # the command once, not its PROOF OF WORK line too
    assert "PROOF OF WORK" not in card and "Step 1 of 4: Build" in card
    (active,) = kairos.list_runs()["items"]
    assert active["status"] == "active"
    page.click("#submit-answer")
    page.wait_for_selector("#confirmation")
    page.click("#submit-answer")
    page.wait_for_selector("#mcp-result")
    page.click("#submit-answer")
    page.wait_for_selector("#comment")

    page.fill("#comment", "done, completed as described")  # says nothing: refused
    page.click("#submit-answer")
    refused = page.wait_for_selector("#refused")
    assert refused.inner_text().startswith("Not accepted: Comment does not say what was done")
    assert not AGENT_WORDS.search(page.inner_text("main"))
    page.fill("#comment", "Wrote down release 1.4.2: the bundle went to the prod bucket.")
    page.click("#submit-answer")
    done = page.wait_for_selector("#run-done")
    assert "success, 4 proofs" in done.inner_text()
    (run,) = kairos.list_runs()["items"]
    assert run["status"] == "finished" and run["outcome"] == "success" and run["proven"]
    site.check_offline()


def test_the_home_page_shows_the_store_and_how_to_fill_it(site: Site, kairos: Kairos,
                                                          home: Path) -> None:
    page = site.go("#/")
    first = page.inner_text("#first-run")
    assert "Nothing is stored here yet" in first
    if kairos.store.dialect == "sqlite":
        assert f"KAIROS_HOME={home} .venv/bin/kairos mint examples/release.md" in first
    assert page.locator("[data-nav='home'][aria-current='page']").count() == 1

    uri = kairos.mint(RELEASE)["items"][0]["uri"]
    steps = [s["uri"] for s in kairos.dump(uri, protocol=True)["steps"]]
    kairos.begin(steps[0])
    page = site.go("#/")
    assert page.locator("#first-run").count() == 0
    row = page.locator("#recent-protocols tbody tr").first
    assert row.locator("a").inner_text() == "Browser release check"
    assert "4 steps" in row.inner_text()
    headers = page.locator("#recent-protocols th").all_inner_texts()
    assert headers[:4] == ["protocol", "runs", "success", "proven"]
    assert "active" in page.inner_text("#recent-runs")
    assert "1 active" in page.inner_text("main")
    page.fill("#q", "release check")
    page.keyboard.press("Enter")
    page.wait_for_selector('main[data-ready^="/search?q=release"]')
    site.check_offline()


def test_search_speaks_plain_words_and_links_refine_and_create(site: Site,
                                                                kairos: Kairos) -> None:
    kairos.write_entry({"entity_type": "manual", "category": "operations",
                        "title": "Release checklist", "summary": "What a release needs.",
                        "content": "Tag, build, publish, announce. Each with its owner."})
    page = site.go("#/search?q=zebra+migration+patterns&min_score=0.99")
    notices = page.inner_text("#results")
    assert "Nothing matched well" in notices or "Nothing found." in notices
    assert not AGENT_WORDS.search(page.inner_text("main")), page.inner_text("main")
    create = page.locator("tr[data-role='create'] a")
    assert create.inner_text() == "Create a protocol"
    assert create.get_attribute("href") == f"#/go/{ids(CREATE_PROTOCOL_URI)}"
    assert page.locator("tr[data-role='refine'] a").inner_text() == "Refine the search"
    create.click()
    page.wait_for_selector("#start-run")
    assert "Create New KAIROS Protocol Chain" in page.inner_text("h1")
    assert kairos.list_runs()["total"] == 0
    site.check_offline()


BROKEN_TWICE = """# Three problems

## Build
PROOF OF WORK: timeout 99h make build

{EMPTY_STEP}

## Check
```json
{"challenge": {"type": "telepathy"}}
```
""".replace("{EMPTY_STEP}", "## ")  # a step heading without text


def test_the_editor_shows_every_problem_and_what_a_mint_changed(site: Site,
                                                                 kairos: Kairos) -> None:
    page = site.go("#/editor")
    page.fill("#markdown-input", BROKEN_TWICE)
    page.wait_for_selector('#validation .notice.bad[data-line="10"]')
    problems = page.query_selector_all("#validation .notice.bad")
    lines = [e.get_attribute("data-line") for e in problems]
    assert lines == ["4", "6", "10"]
    assert page.locator(".gutter span.err").all_inner_texts() == ["4", "6", "10"]

    page.fill("#markdown-input", "# Single step check\n\n## Only\nPROOF OF WORK: make check\n")
    valid = page.wait_for_selector("#validation .notice.ok")
    assert valid.inner_text() == "Valid: Single step check (1 step)"
    assert page.locator("#save").inner_text() == "Mint"
    page.click("#save")
    page.wait_for_selector("#minted-link")
    page.wait_for_selector("#saved-state")
    assert page.locator("#save").inner_text() == "Update" and page.locator("#save").is_disabled()
    assert "Valid" not in page.inner_text("#validation")
    assert not AGENT_WORDS.search(page.inner_text("main"))
    assert page.url.endswith(f"#/editor/{ids(kairos.list_protocols()['items'][0]['uri'])}")
    page.fill("#markdown-input", "# Single step check\n\n## Only\nPROOF OF WORK: make test\n")
    page.wait_for_selector("#save:not([disabled])")  # its own title is no clash

    page = site.go("#/editor")  # a new protocol with the title in use: said in words
    page.fill("#markdown-input", "# Single step check\n\n## Again\nPROOF OF WORK: make all\n")
    warning = page.wait_for_selector("#validation .notice.warn")
    assert warning.inner_text().startswith("A protocol titled “Single step check” already exists")
    assert not AGENT_WORDS.search(page.inner_text("main"))
    assert page.locator("#save").is_disabled()
    site.check_offline()


def test_small_texts_plots_previews_and_the_not_found_page(site: Site, kairos: Kairos) -> None:
    uri = kairos.mint(RELEASE)["items"][0]["uri"]
    steps = [s["uri"] for s in kairos.dump(uri, protocol=True)["steps"]]
    kairos.begin(steps[0])
    page = site.go("#/quality")
    assert page.locator("#quality-protocol option").all_inner_texts() == [
        "Browser release check (1 run)"]
    bar = page.locator(".chart rect.bar")
    assert bar.count() == 1 and float(bar.get_attribute("width") or 0) <= 36  # not the plot
    page = site.go("#/entries?type=experience")
    assert page.locator("a[href^='#/entry-new']").inner_text() == "Write an experience"

    kairos.write_entry({"entity_type": "manual", "category": "operations",
                        "title": "Release notes", "summary": "How to write them.",
                        "content": "# Release notes\n\n**Bold** start, a `code` span and a "
                                   "[link](https://example.com/x).\n\n- one\n- two\n"})
    page = site.go("#/entries?type=manual")
    preview = page.locator(".card").first.inner_text()
    assert "Release notes Bold start, a code span and a link. one two" in preview
    assert not re.search(r"[#*`]|\]\(|https://", preview)

    page = site.go("#/protocols")
    assert page.locator("[data-nav='protocols'][aria-current='page']").count() == 1
    page = site.go("#/no-such-page")
    assert page.inner_text("h1") == "Not found"
    assert page.locator("[aria-current='page']").count() == 0

    page.click("#token-btn")  # no tokens configured: the dialog does not claim otherwise
    why = page.wait_for_selector("#token-dialog[open] #token-why").inner_text()
    assert why.startswith("This server has not asked for a token")
    site.check_offline()


def test_the_runs_table_fits_a_phone_and_shows_abandoned_runs(kairos: Kairos,
                                                               chromium: Any) -> None:
    uri = kairos.mint(RELEASE)["items"][0]["uri"]
    steps = [s["uri"] for s in kairos.dump(uri, protocol=True)["steps"]]
    for _ in range(3):
        kairos.begin(steps[0])
    run_id = kairos.list_runs()["items"][0]["run_id"]
    assert kairos.abandon_run(run_id, "Abandoned: nobody answered.")
    with serve_in_thread(create_app(kairos.service)) as base:
        s = Site(chromium, base, viewport={"width": 390, "height": 844})
        try:
            page = s.go("#/runs")
            assert page.evaluate("document.documentElement.scrollWidth") <= 390
            wrap = page.locator(".table-wrap")
            assert wrap.evaluate("e => e.scrollWidth <= e.clientWidth")
            for cell in page.locator("#runs td.proof").all():
                box = cell.bounding_box()
                assert box is not None and box["x"] + box["width"] <= 390
            row = page.locator("tr[data-status='abandoned']")
            assert row.count() == 1 and "abandoned" in row.inner_text()
            page.select_option("select[aria-label='Status']", "abandoned")
            page.wait_for_selector("main[data-ready='/runs?status=abandoned']")
            assert page.locator("#runs tbody tr").count() == 1
            s.check_offline()
        finally:
            s.close()


def test_no_page_makes_a_request_off_the_host(site: Site, kairos: Kairos) -> None:
    uri = kairos.mint(RELEASE)["items"][0]["uri"]
    steps = [s["uri"] for s in kairos.dump(uri, protocol=True)["steps"]]
    kairos.begin(steps[0])
    run_id = kairos.list_runs()["items"][0]["run_id"]
    entry = kairos.write_entry({"entity_type": "manual", "category": "operations",
                                "title": "Links", "content": "![logo](https://example.com/a.png)"
                                                             " and [a link](https://example.com)"})
    for path in ("#/", "#/search?q=release", "#/protocols", f"#/protocol/{ids(uri)}",
                 "#/editor", f"#/editor/{ids(uri)}", "#/runs", f"#/run/{run_id}",
                 f"#/go/{ids(uri)}", "#/entries?type=manual", f"#/entry/{entry['entity_id']}",
                 "#/entry-new?type=manual", "#/quality", "#/nope"):
        site.go(path)
    for path, ready in (("/docs", ".swagger-ui .info"),
                        ("/redoc", "text=Download OpenAPI specification")):
        site.page.goto(f"{site.base}{path}")
        site.page.wait_for_selector(ready)
        site.page.wait_for_load_state("networkidle")
    site.check_offline()
