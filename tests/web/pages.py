"""Every page of the web UI, at desktop and phone width, light and dark: the list the
screenshot test checks and ``scripts/screenshots.py`` writes to ``docs/screenshots``.

A store is seeded with the examples minted, runs made (one left active, one abandoned)
and entries written; one more space stays empty for the first-run home page."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kairos.domain.texts import CREATE_PROTOCOL_URI
from kairos.service import Caller, Kairos

ROOT = Path(__file__).resolve().parents[2]
SIZES = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
THEMES = ("light", "dark")
TOKENS = {"screenshots-default": "default", "screenshots-empty": "empty"}


@dataclass(frozen=True)
class Page:
    name: str
    title: str
    path: str                  # a hash route, with {protocol}, {run}, {entry} to fill
    token: str = "screenshots-default"
    start: bool = False        # press Start (the guided run's first step)


PAGES = (
    Page("home", "Home", "#/"),
    Page("first-run", "Home of an empty store", "#/", token="screenshots-empty"),
    Page("search", "Search", "#/search?q=publish+a+release"),
    Page("protocols", "Protocols", "#/protocols"),
    Page("protocol", "A protocol", "#/protocol/{protocol}"),
    Page("editor", "Editor", "#/editor/{protocol}"),
    Page("runs", "Runs", "#/runs"),
    Page("run", "A run and its proof chain", "#/run/{run}"),
    Page("guided-run", "Guided run, before Start", "#/go/{protocol}"),
    Page("guided-step", "Guided run, a step", "#/go/{protocol}", start=True),
    Page("entries", "Experiences and manuals", "#/entries?type=manual"),
    Page("entry", "A manual", "#/entry/{entry}"),
    Page("entry-new", "Writing an experience", "#/entry-new?type=experience"),
    Page("quality", "Quality over time", "#/quality?protocol={protocol}"),
)


def file_name(page: Page, size: str, theme: str) -> str:
    return f"{page.name}-{size}-{theme}.png"


def all_files() -> list[str]:
    return [file_name(p, s, t) for p in PAGES for s in SIZES for t in THEMES]


def _answer(challenge: dict[str, Any], ok: bool = True) -> dict[str, Any]:
    body = {"shell": {"exit_code": 0 if ok else 1, "stdout": "done"},
            "mcp": {"success": True, "result": "ok"},
            "user_input": {"confirmation": "yes"},
            "comment": {"text": "Checked the version in the footer: 2.4.1, errors flat."}}
    kind = challenge["type"]
    return {"type": kind, "nonce": challenge["nonce"], "proof_hash": challenge["proof_hash"],
            kind: body[kind]}


def seed(k: Kairos) -> dict[str, str]:
    """The examples minted, four runs to the end (one failed), one left at step 2, one
    abandoned; an experience and a manual. Returns the ids the page paths name."""
    uris = [item["uri"] for path in sorted((ROOT / "examples").glob("*.md"))
            for item in k.mint(path.read_text("utf-8"))["items"]]
    steps = [s["uri"] for s in k.dump(uris[0], protocol=True)["steps"]]
    run_id = ""
    for n in range(4):
        r = k.begin(steps[0])
        for uri in steps[1:]:
            r = k.next(uri, _answer(r["challenge"]))
        done = k.attest(steps[-1], "failure" if n == 2 else "success", "release shipped",
                        solution=_answer(r["challenge"]))
        run_id = run_id or done["run_id"]
    left = k.begin(steps[0], Caller(id="walked-away"))
    k.abandon_run(k.run_of_nonce(left["challenge"]["nonce"], Caller(id="walked-away"))
                  ["run_id"], "Abandoned: no answer for 1440 minutes.", Caller(id="walked-away"))
    r = k.begin(steps[0], Caller(id="agent"))
    k.next(steps[1], _answer(r["challenge"]), Caller(id="agent"))
    k.write_entry({"entity_type": "experience", "category": "deployment",
                   "title": "Drain the queue before deploying",
                   "playbook": "Stop the workers and wait for the job queue to drain before "
                               "a deployment, or jobs run twice."})
    manual = k.write_entry({
        "entity_type": "manual", "category": "operations", "title": "Release checklist",
        "summary": "What a release needs.",
        "content": "# Release checklist\n\n1. **Tag** the version (`git tag -a`).\n2. Build "
                   "and publish.\n3. Announce it in the [changelog](CHANGELOG.md)."})
    return {"protocol": uris[0].removeprefix("kairos://mem/"), "run": run_id,
            "entry": manual["entity_id"], "builtin": CREATE_PROTOCOL_URI}


def shots(browser: Any, base: str, ids: dict[str, str], refused: list[str]
          ) -> Iterator[tuple[Page, str, str, Any]]:
    """Each page loaded in a fresh context of its size and theme, ready to be shot:
    (page, size, theme, the Playwright page). A request to any other host is aborted and
    added to ``refused``."""
    def route(r: Any) -> None:
        if r.request.url.startswith(base):
            r.continue_()
        else:
            refused.append(r.request.url)
            r.abort()

    for page in PAGES:
        for size, viewport in SIZES.items():
            for theme in THEMES:
                ctx = browser.new_context(viewport=viewport, color_scheme=theme)
                ctx.route("**/*", route)
                ctx.add_init_script(f"sessionStorage.setItem('kairos.token', '{page.token}')")
                tab = ctx.new_page()
                path = page.path.format(**ids)
                tab.goto(f"{base}/{path}")
                tab.wait_for_selector(f'main[data-ready="{path.lstrip("#")}"]')
                if page.start:
                    tab.click("#start-run")
                    tab.wait_for_selector("#answer")
                try:
                    yield page, size, theme, tab
                finally:
                    ctx.close()
