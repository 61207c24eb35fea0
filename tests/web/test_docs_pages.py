"""The API reference pages draw a line at once, before their large bundles have run, and
the reference replaces it when drawn."""

from __future__ import annotations

import pytest

from .conftest import Site

PAGES = [("/docs", ".swagger-ui .info", "swagger-ui-bundle.js"),
         ("/redoc", "text=Download OpenAPI specification", "redoc.standalone.js")]
LOADING = "text=KAIROS API reference: loading"


@pytest.mark.parametrize(("path", "ready", "bundle"), PAGES)
def test_the_reference_pages_paint_before_their_bundle(site: Site, path: str, ready: str,
                                                       bundle: str) -> None:
    site.page.route(f"**/{bundle}", lambda route: route.abort())
    site.page.goto(f"{site.base}{path}")
    site.page.wait_for_selector(LOADING)
    site.page.wait_for_function("performance.getEntriesByName('first-contentful-paint')"
                                ".length === 1")
    site.page.unroute(f"**/{bundle}")
    site.page.goto(f"{site.base}{path}")
    site.page.wait_for_selector(ready)
    assert site.page.locator(LOADING).count() == 0
