"""A real server on a loopback port in a thread, and Debian's chromium driven by
Playwright: shared by the browser tests, the screenshots and the paint benchmark."""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from collections.abc import Iterator
from typing import Any

import uvicorn

from tests.conftest import loopback_socket

CHROMIUM = os.environ.get("KAIROS_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def chromium_path() -> str | None:
    """The chromium executable, or None when it is not installed."""
    return CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium")


@contextlib.contextmanager
def serve_in_thread(app: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free port of 127.0.0.1; yield its base URL. The
    socket listens before uvicorn starts, so clients may connect at once."""
    sock, port = loopback_socket()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning",
                                           timeout_graceful_shutdown=5))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


@contextlib.contextmanager
def browser() -> Iterator[Any]:
    """A headless chromium (Debian's, not Playwright's download) under Playwright."""
    from playwright.sync_api import sync_playwright

    path = chromium_path()
    if path is None:
        raise RuntimeError("chromium is not installed: run scripts/browser")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()
