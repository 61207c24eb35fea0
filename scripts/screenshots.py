"""Screenshots of the web UI for the README: a temporary store with the examples minted,
runs made and an entry written, served on a loopback port and shot with Debian's chromium
(1280×800, one at phone width, one dark) into docs/screenshots/.

    .venv/bin/python scripts/screenshots.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kairos.api import create_app  # noqa: E402
from kairos.config import load_settings  # noqa: E402
from kairos.service import Kairos  # noqa: E402
from tests.web.harness import browser, serve_in_thread  # noqa: E402

OUT = ROOT / "docs" / "screenshots"


def answer(challenge: dict, ok: bool = True) -> dict:
    body = {"shell": {"exit_code": 0 if ok else 1, "stdout": "done"},
            "mcp": {"success": True, "result": "ok"},
            "user_input": {"confirmation": "yes"},
            "comment": {"text": "Checked the result by hand and it looks right to me."}}
    kind = challenge["type"]
    return {"type": kind, "nonce": challenge["nonce"], "proof_hash": challenge["proof_hash"],
            kind: body[kind]}


def seed(k: Kairos) -> tuple[str, str]:
    uris = []
    for path in sorted((ROOT / "examples").glob("*.md")):
        uris.extend(item["uri"] for item in k.mint(path.read_text("utf-8"))["items"])
    first = uris[0]
    steps = [s["uri"] for s in k.dump(first, protocol=True)["steps"]]
    run_id = ""
    for n in range(4):
        r = k.begin(first)
        for uri in steps[1:]:
            r = k.next(uri, answer(r["challenge"]))
        done = k.attest(steps[-1], "failure" if n == 2 else "success", "release shipped",
                        solution=answer(r["challenge"]))
        run_id = run_id or done["run_id"]
    k.write_entry({"entity_type": "experience", "category": "deployment",
                   "title": "Drain the queue before deploying",
                   "playbook": "Stop the workers and wait for the job queue to drain before "
                               "a deployment, or jobs run twice."})
    k.write_entry({"entity_type": "manual", "category": "operations",
                   "title": "Release checklist", "summary": "What a release needs.",
                   "content": "Tag, build, publish, announce. Each with its owner."})
    return first.removeprefix("kairos://mem/"), run_id


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    home = tempfile.mkdtemp()
    k = Kairos(load_settings(env={"KAIROS_HOME": home, "KAIROS_EMBEDDER": "none"}),
               background=False)
    try:
        pid, run_id = seed(k)
        shots = [("search", "#/search?q=release", {}), ("protocol", f"#/protocol/{pid}", {}),
                 ("editor", "#/editor", {}), ("runs", "#/runs", {}),
                 ("run", f"#/run/{run_id}", {}), ("guided-run", f"#/go/{pid}", {}),
                 ("entries", "#/entries?type=experience", {}),
                 ("quality", f"#/quality?protocol={pid}", {}),
                 ("protocol-phone", f"#/protocol/{pid}", {"width": 390, "height": 844}),
                 ("run-dark", f"#/run/{run_id}", {"dark": True})]
        with serve_in_thread(create_app(k)) as base, browser() as b:
            for name, hash_path, opts in shots:
                ctx = b.new_context(
                    viewport={"width": opts.get("width", 1280), "height": opts.get("height", 800)},
                    color_scheme="dark" if opts.get("dark") else "light")
                page = ctx.new_page()
                page.goto(f"{base}/{hash_path}")
                page.wait_for_selector(f'main[data-ready="{hash_path.lstrip("#")}"]')
                page.wait_for_timeout(400)
                page.screenshot(path=str(OUT / f"{name}.png"))
                ctx.close()
                print(OUT / f"{name}.png")
    finally:
        k.close()


if __name__ == "__main__":
    main()
