"""Screenshots of every page of the web UI for the README, at 1280×800 and at 390 px,
light and dark (``tests/web/pages.py`` lists them): a temporary store is seeded, served
on a loopback port and shot with Debian's chromium into docs/screenshots/, with an index
(docs/screenshots/README.md). tests/web/test_screenshots.py checks the same pages.

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
from tests.web.pages import PAGES, SIZES, THEMES, TOKENS, all_files, file_name, seed, shots  # noqa: E402

OUT = ROOT / "docs" / "screenshots"


def index() -> str:
    """docs/screenshots/README.md: every page, desktop then phone, light and dark."""
    lines = ["# Screenshots of the web UI", "",
             "Every page at 1280×800 and at 390 px wide, light and dark, made by "
             "`scripts/screenshots.py` (`tests/web/test_screenshots.py` checks the same "
             "pages).", ""]
    for page in PAGES:
        lines += [f"## {page.title}", "", "| " + " | ".join(
            f"{size}, {theme}" for size in SIZES for theme in THEMES) + " |",
            "|" + "---|" * (len(SIZES) * len(THEMES)),
            "| " + " | ".join(f"![{page.title}, {size}, {theme}]({file_name(page, size, theme)})"
                             for size in SIZES for theme in THEMES) + " |", ""]
    return "\n".join(lines)


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    k = Kairos(load_settings(env={"KAIROS_HOME": tempfile.mkdtemp(), "KAIROS_EMBEDDER": "none"}),
               background=False)
    refused: list[str] = []
    try:
        ids = seed(k)
        with serve_in_thread(create_app(k, tokens=TOKENS)) as base, browser() as b:
            for page, size, theme, tab in shots(b, base, ids, refused):
                path = OUT / file_name(page, size, theme)
                tab.screenshot(path=str(path))
                print(path)
    finally:
        k.close()
    if refused:
        raise SystemExit(f"requests off the host: {refused}")
    for stale in set(p.name for p in OUT.glob("*.png")) - set(all_files()):
        (OUT / stale).unlink()
    (OUT / "README.md").write_text(index() + "\n", "utf-8")


if __name__ == "__main__":
    main()
