"""Every page at 1280×800 and at 390 px, light and dark, shot as scripts/screenshots.py
shoots it for docs/: each page renders without a script error, asks nothing of another
host, fits a phone's width, wears its theme, and docs/ holds its screenshot."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from kairos.api import create_app
from kairos.service import Kairos
from tests.web.harness import serve_in_thread
from tests.web.pages import PAGES, ROOT, SIZES, THEMES, TOKENS, all_files, file_name, seed, shots

DOCS = ROOT / "docs" / "screenshots"
BACKGROUND = "() => getComputedStyle(document.body).backgroundColor"


def luminance(css: str) -> float:
    r, g, b = (int(x) / 255 for x in re.findall(r"\d+", css)[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


@pytest.mark.timeout(900)
def test_every_page_at_both_widths_in_both_themes(kairos: Kairos, chromium: Any,
                                                  tmp_path: Path) -> None:
    ids = seed(kairos)
    refused: list[str] = []
    seen = []
    with serve_in_thread(create_app(kairos.service, tokens=TOKENS)) as base:
        for page, size, theme, tab in shots(chromium, base, ids, refused):
            errors: list[str] = []
            tab.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
            shot = tmp_path / file_name(page, size, theme)
            tab.screenshot(path=str(shot))
            assert shot.stat().st_size > 5_000, shot
            where = f"{page.name} {size} {theme}"
            assert errors == [], where
            assert tab.locator(".notice.bad[role=alert]").count() == 0, where
            width = SIZES[size]["width"]
            assert tab.evaluate("document.documentElement.scrollWidth") <= width, where
            light = luminance(tab.evaluate(BACKGROUND))
            assert (light > 0.8) if theme == "light" else (light < 0.2), where
            seen.append(file_name(page, size, theme))
    assert refused == []
    assert seen == all_files() and len(seen) == len(PAGES) * len(SIZES) * len(THEMES)


def test_docs_hold_every_screenshot_and_the_readme_shows_them() -> None:
    assert sorted(p.name for p in DOCS.glob("*.png")) == sorted(all_files())
    index = (DOCS / "README.md").read_text("utf-8")
    assert all(f"]({name})" in index for name in all_files())
    readme = (ROOT / "README.md").read_text("utf-8")
    assert "docs/screenshots/README.md" in readme
    for name in re.findall(r"\]\((docs/screenshots/[^)]+)\)", readme):
        assert (ROOT / name).is_file(), name
