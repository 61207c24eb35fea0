"""The web UI at ``/`` (files shipped in ``kairos/web/static``) and the API docs at
``/docs`` and ``/redoc`` with their Swagger UI and ReDoc assets from the installed
``fastapi-offline`` package: nothing is loaded from the internet.

ReDoc's bundle shows its vendor's logo from a CDN: it is served with that address
replaced by an empty inline image. The three pages also carry a Content-Security-Policy
that keeps every request on this host, whatever a bundle or a stored text links to."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

UI_PREFIX = "/ui"
DOCS_ASSETS = "/docs-assets"


def docs_dir() -> Path:
    import fastapi_offline

    return Path(fastapi_offline.__file__).parent / "static"


STYLESHEET = '<link rel="stylesheet" href="/ui/app.css">'
REDOC_JS = "redoc.standalone.js"
REDOC_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"
EMPTY_IMAGE = "data:image/svg+xml,%3Csvg%20xmlns='http://www.w3.org/2000/svg'/%3E"
#: Scripts, styles, images, fonts, workers and API calls from this host only (inline
#: scripts and styles are the pages' own: the theme switch, Swagger's and ReDoc's set-up).
SAME_HOST = {"Content-Security-Policy": (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; "
    "connect-src 'self'; frame-ancestors 'self'; base-uri 'self'; form-action 'self'")}


def shell_html(static: Path) -> str:
    """The UI's HTML shell with its stylesheet inlined: the first paint needs one request."""
    html = (static / "index.html").read_text("utf-8")
    css = (static / "app.css").read_text("utf-8")
    return html.replace(STYLESHEET, f"<style>\n{css}</style>")


#: Shown at once, until the bundle has parsed and drawn the reference in its place.
LOADING = ('<p style="font: 16px system-ui, sans-serif; margin: 2rem">KAIROS API reference: '
           'loading…</p>')


def _reference_page(page: HTMLResponse, *, mark: str) -> HTMLResponse:
    """``page`` kept on this host, with the loading line drawn before its bundle runs."""
    body = bytes(page.body).decode("utf-8").replace(mark, mark + LOADING, 1)
    return HTMLResponse(body, headers=SAME_HOST)


def mount_ui(app: FastAPI) -> None:
    """Serve the UI shell, its assets and the offline API docs on ``app``."""
    static = Path(str(resources.files("kairos.web").joinpath("static")))
    shell = shell_html(static)
    redoc_js = (docs_dir() / REDOC_JS).read_text("utf-8").replace(REDOC_LOGO, EMPTY_IMAGE)

    @app.get(f"{DOCS_ASSETS}/{REDOC_JS}", include_in_schema=False)
    def redoc_bundle() -> Response:  # matched before the static mount below
        return Response(redoc_js, media_type="text/javascript",
                        headers={"Cache-Control": "public, max-age=86400"})

    app.mount(UI_PREFIX, StaticFiles(directory=static), name="ui")
    app.mount(DOCS_ASSETS, StaticFiles(directory=docs_dir()), name="docs-assets")

    @app.get("/", include_in_schema=False)
    def index() -> HTMLResponse:
        return HTMLResponse(shell, headers={"Cache-Control": "no-cache", **SAME_HOST})

    @app.get("/docs", include_in_schema=False)
    def swagger() -> HTMLResponse:
        return _reference_page(get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json", title="KAIROS API",
            swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{UI_PREFIX}/favicon.svg",
            swagger_ui_parameters={"validatorUrl": None}), mark='<div id="swagger-ui">')

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        spec = app.openapi_url or "/openapi.json"
        return _reference_page(get_redoc_html(
            openapi_url=spec, title="KAIROS API",
            redoc_js_url=f"{DOCS_ASSETS}/{REDOC_JS}",
            redoc_favicon_url=f"{UI_PREFIX}/favicon.svg", with_google_fonts=False),
            mark=f'<redoc spec-url="{spec}">')


__all__ = ["DOCS_ASSETS", "UI_PREFIX", "mount_ui"]
