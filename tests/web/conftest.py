"""The browser tests' fixtures: Debian's chromium under Playwright, and a page on a real
server on a loopback port that refuses (and counts) every request to another host."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from kairos.api import create_app
from kairos.service import Kairos
from tests.web.harness import browser, chromium_path, serve_in_thread

TIMEOUT = 15_000
LOOPBACK = {"127.0.0.1", "localhost", "[::1]", "::1"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if chromium_path() is not None:
        return
    if os.environ.get("CI"):
        raise RuntimeError("chromium is missing: CI must run the browser tests (scripts/browser)")
    skip = pytest.mark.skip(reason="chromium is not installed (scripts/browser installs it)")
    for item in items:
        if "tests/web/" in str(item.fspath).replace(os.sep, "/") and "browse_api" not in str(
                item.fspath):
            item.add_marker(skip)


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """One browser per module: Playwright's synchronous API keeps an event loop running
    while it is open, which the asynchronous tests of the next module cannot share."""
    with browser() as b:
        yield b


class Site:
    """A served app and a fresh browser page. Every request it makes is recorded; one to
    any host but this loopback server is aborted and kept in ``off_host``."""

    def __init__(self, chromium: Any, base: str, **context: Any) -> None:
        self.base = base
        context.setdefault("viewport", {"width": 1280, "height": 800})
        self.context = chromium.new_context(**context)
        self.context.set_default_timeout(TIMEOUT)
        self.off_host: list[str] = []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def _route(self, route: Any) -> None:
        url = route.request.url
        if url.startswith(("http://", "https://", "ws://", "wss://")) and (
                urlsplit(url).hostname or "") not in LOOPBACK:
            self.off_host.append(url)
            route.abort()
        else:
            route.continue_()

    def go(self, hash_path: str) -> Any:
        """Open the page afresh (a load, not a hash change) and wait until it shows its
        data."""
        self.page.goto("about:blank")
        self.page.goto(f"{self.base}/{hash_path}")
        self.page.wait_for_selector(f'main[data-ready="{hash_path.lstrip("#") or "/"}"]')
        return self.page

    def check_offline(self) -> None:
        assert self.errors == []
        assert self.off_host == []
        assert [u for u in self.requests if not u.startswith(self.base)] == []

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def site(kairos: Kairos, chromium: Any) -> Iterator[Site]:
    with serve_in_thread(create_app(kairos.service)) as base:
        s = Site(chromium, base)
        yield s
        s.close()
