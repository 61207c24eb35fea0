"""The web UI at ``/`` (files shipped in ``kairos/web/static``) and the API docs at
``/docs`` and ``/redoc`` with their Swagger UI and ReDoc assets from the installed
``fastapi-offline`` package: nothing is loaded from the internet."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

UI_PREFIX = "/ui"
DOCS_ASSETS = "/docs-assets"


def ui_dir() -> Path:
    return Path(str(resources.files("kairos.web").joinpath("static")))


def docs_dir() -> Path:
    import fastapi_offline

    return Path(fastapi_offline.__file__).parent / "static"


STYLESHEET = '<link rel="stylesheet" href="/ui/app.css">'


def shell_html(static: Path) -> str:
    """The UI's HTML shell with its stylesheet inlined: the first paint needs one request."""
    html = (static / "index.html").read_text("utf-8")
    css = (static / "app.css").read_text("utf-8")
    return html.replace(STYLESHEET, f"<style>\n{css}</style>")


def mount_ui(app: FastAPI) -> None:
    """Serve the UI shell, its assets and the offline API docs on ``app``."""
    static = ui_dir()
    shell = shell_html(static)
    app.mount(UI_PREFIX, StaticFiles(directory=static), name="ui")
    app.mount(DOCS_ASSETS, StaticFiles(directory=docs_dir()), name="docs-assets")

    @app.get("/", include_in_schema=False)
    def index() -> HTMLResponse:
        return HTMLResponse(shell, headers={"Cache-Control": "no-cache"})

    @app.get("/docs", include_in_schema=False)
    def swagger() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json", title="KAIROS API",
            swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{UI_PREFIX}/favicon.svg",
            swagger_ui_parameters={"validatorUrl": None})

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        return get_redoc_html(openapi_url=app.openapi_url or "/openapi.json",
                              title="KAIROS API", redoc_js_url=f"{DOCS_ASSETS}/redoc.standalone.js",
                              redoc_favicon_url=f"{UI_PREFIX}/favicon.svg",
                              with_google_fonts=False)


__all__ = ["DOCS_ASSETS", "UI_PREFIX", "mount_ui"]
