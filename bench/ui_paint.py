"""First paint of every web UI page on a 7,425-protocol store.

Mints every tldr page (bench/workload.py's converter, the titles of bench/corpus.py) into a
temporary SQLite store with ``KAIROS_EMBEDDER=none`` (no vectors: painting does not depend
on them; the advisory duplicate check is skipped while building, as bench/corpus.py does),
adds runs and entries so every page has data, serves it on a loopback port, and loads
each page in Debian's chromium under Playwright, a fresh browser context per load.

Per page: ``first-contentful-paint`` from the Performance API, and the time until the
page's data is on screen (the UI marks ``main[data-ready]`` after rendering it), the median
of ``--loads`` loads. Writes bench/results/ui_paint.json.

    .venv/bin/python bench/ui_paint.py [--size 7425] [--loads 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from corpus import _no_duplicate_check, real_items  # noqa: E402

from kairos.api import create_app  # noqa: E402
from kairos.config import load_settings  # noqa: E402
from kairos.service.wiring import open_service  # noqa: E402
from tests.client import Agent  # noqa: E402
from tests.web.harness import browser, serve_in_thread  # noqa: E402

BATCH = 500
DOCS_READY = {"/docs": ".swagger-ui .info", "/redoc": "text=Download OpenAPI specification"}
RUNS = 60
READY_JS = """() => {
  const fcp = performance.getEntriesByName('first-contentful-paint')[0];
  return {fcp: fcp ? fcp.startTime : null, ready: window.__readyAt || null};
}"""
MARK_READY = """new MutationObserver((_, obs) => {
  const m = document.getElementById('main');
  if (m && m.dataset.ready !== undefined) {
    window.__readyAt = performance.now(); obs.disconnect();
  }
}).observe(document, {subtree: true, attributes: true, attributeFilter: ['data-ready']});"""


def answer(challenge: dict[str, Any]) -> dict[str, Any]:
    body = {"shell": {"exit_code": 0}, "mcp": {"success": True},
            "user_input": {"confirmation": "yes"},
            "comment": {"text": "Ran the command and checked its output by hand."}}
    kind = challenge["type"]
    return {"type": kind, "nonce": challenge["nonce"], "proof_hash": challenge["proof_hash"],
            kind: body[kind]}


def build(k: Agent, size: int) -> tuple[str, str]:
    items = real_items()[:size]
    k.search_engine.duplicates.check = _no_duplicate_check  # type: ignore[method-assign]
    started = time.perf_counter()
    for i in range(0, len(items), BATCH):
        results = k.mint_many([it.markdown for it in items[i:i + BATCH]], force_update=True)
        bad = [r for r in results if not isinstance(r, dict)]
        assert not bad, bad[:3]
    print(f"minted {len(items)} protocols in {time.perf_counter() - started:.0f} s")
    page = k.list_protocols(limit=40, sort="title")["items"]
    run_id = ""
    for n in range(RUNS):
        uri = page[n % len(page)]["uri"]
        steps = [s["uri"] for s in k.dump(uri, protocol=True)["steps"]]
        r = k.begin(uri)
        for step in steps[1:]:
            r = k.next(step, answer(r["challenge"]))
        done = k.attest(steps[-1], "success" if n % 4 else "failure", "bench run",
                        solution=answer(r["challenge"]))
        run_id = done["run_id"]
    for n in range(50):
        k.write_entry({"entity_type": "experience", "category": "tooling",
                       "title": f"Lesson {n} about shell tools",
                       "playbook": f"Lesson {n}: read the manual page before scripting a tool."})
    return page[0]["uri"].removeprefix("kairos://mem/"), run_id


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=7425)
    ap.add_argument("--loads", type=int, default=7)
    args = ap.parse_args()
    home = tempfile.mkdtemp()
    k = Agent(open_service(load_settings(env={"KAIROS_HOME": home, "KAIROS_EMBEDDER": "none"}),
                           background=False))
    try:
        pid, run_id = build(k, args.size)
        pages = {"home": "#/", "search": "#/search?q=compress+files", "protocols": "#/protocols",
                 "protocols (sorted by runs)": "#/protocols?sort=runs",
                 "protocol": f"#/protocol/{pid}", "editor": "#/editor", "runs": "#/runs",
                 "run": f"#/run/{run_id}", "guided run": f"#/go/{pid}",
                 "entries": "#/entries?type=experience", "quality": "#/quality",
                 "docs": "/docs", "redoc": "/redoc",
                 "baseline: one-line HTML page": "/ui/blank"}
        report: dict[str, Any] = {"protocols": k.list_protocols(limit=1)["total"],
                                  "embedder": "none", "loads": args.loads, "pages": {}}
        with serve_in_thread(create_app(k.service)) as base, browser() as b:
            for name, target in pages.items():
                fcps, readies = [], []
                for _ in range(args.loads + 1):  # the first load warms the server
                    ctx = b.new_context(viewport={"width": 1280, "height": 800})
                    page = ctx.new_page()
                    page.add_init_script(MARK_READY)
                    if target.startswith("#"):
                        page.goto(f"{base}/{target}")
                        page.wait_for_selector("main[data-ready]")
                    elif target == "/ui/blank":
                        page.goto(f"data:text/html,<p>{base}</p>")
                    else:
                        page.goto(f"{base}{target}")
                        page.wait_for_selector(DOCS_READY[target])
                    page.wait_for_function("performance.getEntriesByName("
                                           "'first-contentful-paint').length > 0")
                    got = page.evaluate(READY_JS)
                    fcps.append(got["fcp"])
                    if got["ready"] is not None:
                        readies.append(got["ready"])
                    ctx.close()
                fcps, readies = fcps[1:], readies[1:]
                row = {"fcp_ms": round(statistics.median(fcps), 1),
                       "fcp_max_ms": round(max(fcps), 1),
                       "content_ms": round(statistics.median(readies), 1) if readies else None}
                report["pages"][name] = row
                print(f"{name:28} FCP {row['fcp_ms']:7.1f} ms (max {row['fcp_max_ms']:.1f})"
                      f"   content {row['content_ms'] or '-'} ms")
        out = HERE / "results" / "ui_paint.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {out}")
    finally:
        k.close()


if __name__ == "__main__":
    main()
