"""The HTTP application: REST under ``/api/v1``, MCP (streamable HTTP) at ``/mcp``,
``/health``, ``/metrics`` and the OpenAPI document, in one ASGI app.

Errors are mapped here and only here: a ``KairosError`` becomes its ``.status`` with its
``to_dict()`` body; request validation becomes a 422 in the same shape, naming the field;
anything unexpected becomes a generic JSON 500, logged, never a traceback.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from fastapi.telemetry import TelemetryConfig
from starlette.exceptions import HTTPException
from starlette.routing import Match

from .. import version
from ..domain.errors import INTERNAL_ERROR, NOT_FOUND, AuthError, KairosError
from ..domain.responses import Health
from ..domain.validation import invalid
from ..service import Kairos
from . import openapi
from .auth import LOCAL_HOSTS, BearerAuth, identify_mcp
from .datasets import datasets
from .guard import INTERNAL_BODY, Gate
from .mcp_sessions import McpSessions
from .metrics import Metrics
from .routes import ROUTERS
from .ui import mount_ui
from .views import router as views_router
from .views import well_known

log = logging.getLogger("kairos.api")

MCP_PATH = "/mcp"
HTTP_CODES = {404: NOT_FOUND, 405: "METHOD_NOT_ALLOWED"}

#: FastAPI's OpenTelemetry hooks, off: ``/metrics`` is the server's telemetry, and the hooks
#: would look for a configured provider on every request.
TELEMETRY_OFF = TelemetryConfig(tracing=False, metrics=False, logs=False)

McpFactory = Callable[..., Any]
"""Builds the MCP server: called with ``identify=`` (request → caller and session),
``observe=`` (per-tool metrics), ``limits=`` (the service's limits) and
``legacy_subscriptions=`` (False when stateless); returns an SDK
``Server``. Injected so that this surface never imports the MCP surface."""


async def _kairos_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, KairosError)
    headers = {"WWW-Authenticate": 'Bearer realm="kairos"'} if isinstance(exc, AuthError) else {}
    retry_after = getattr(exc, "retry_after", None)
    if retry_after is not None:  # a state of the server, not of the request: ask again
        headers["Retry-After"] = str(retry_after)
    return JSONResponse(exc.to_dict(), status_code=exc.status, headers=headers)


async def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    return JSONResponse(invalid(exc.errors(), located=True).to_dict(), status_code=422)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = HTTP_CODES.get(exc.status_code, "HTTP_ERROR")
    message = (f"No route {request.method} {request.url.path}." if exc.status_code == 404
               else str(exc.detail))
    headers = dict(exc.headers or {})
    if exc.status_code == 405:  # every method some route serves on this path, not one route's
        headers["Allow"] = ", ".join(_methods(request))
    return JSONResponse({"error_code": code, "message": message},
                        status_code=exc.status_code, headers=headers)


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")


def _methods(request: Request) -> list[str]:
    """The methods some route answers on this path (a route matches fully with them)."""
    routes = request.app.router.routes
    return [method for method in _METHODS
            if any(route.matches({**request.scope, "method": method})[0] is Match.FULL
                   for route in routes)]


def create_app(kairos: Kairos, *, tokens: Mapping[str, str] | None = None,
               mcp_factory: McpFactory | None = None, host: str = "127.0.0.1",
               mcp_stateless: bool = False, max_inflight: int | None = None,
               max_queue: int | None = None, max_wait_ms: int | None = None) -> FastAPI:
    """One app for one service. ``tokens`` maps bearer token → space (empty: no auth, the
    configured space); ``host`` is where the server listens, for MCP's Host checks.
    ``mcp_stateless`` serves MCP without transport sessions, so replicas behind a load
    balancer need no sticky sessions (run state is in the database; a client's identity
    then comes from its X-CHL-Session header or its token). ``max_inflight`` bounds the
    requests served at once, ``max_queue`` those waiting for a slot and ``max_wait_ms``
    their wait (default: the configured limits; see ``admission.Admission``)."""
    metrics = Metrics()
    mcp_server = (mcp_factory(identify=identify_mcp, observe=metrics.observe_tool,
                              limits=kairos.limits, legacy_subscriptions=not mcp_stateless)
                  if mcp_factory is not None else None)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # A mounted app's lifespan is not run by FastAPI: run the MCP sessions here.
        if mcp_server is None:
            yield
            return
        async with mcp_server.session_manager.run():
            try:
                yield
            finally:  # open listen streams would hold the graceful stop
                subscriptions = getattr(mcp_server, "subscriptions", None)
                if subscriptions is not None:
                    subscriptions.close()

    app = FastAPI(title="KAIROS", version=version(), lifespan=lifespan, docs_url=None,
                  redoc_url=None, telemetry=TELEMETRY_OFF,
                  description="A memory server for AI agents: protocols run step by step "
                              "with proof, experiences and manuals. MCP is served at /mcp.")
    app.state.kairos = kairos
    # The run loop's routes first: routes are matched in order.
    for router in (*ROUTERS, views_router, well_known, datasets):
        app.include_router(router)
    mount_ui(app)
    openapi.install(app)
    app.add_exception_handler(KairosError, _kairos_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(HTTPException, _http_error)

    @app.get("/health", tags=["operations"], summary="Store, embedder and index state",
             response_model=None,
             responses={200: {"model": Health, "description": "Healthy."},
                        503: {"model": Health, "description": "Unhealthy."}})
    def health() -> JSONResponse:
        try:
            body = kairos.health()
        except Exception as exc:
            log.exception("health check failed")
            return JSONResponse({"status": "unhealthy", "store": {"ok": False},
                                 "embedder": {}, "index": {},
                                 "error": type(exc).__name__}, status_code=503)
        return JSONResponse(body, status_code=200 if body.get("status") == "healthy" else 503)

    @app.get("/metrics", tags=["operations"], summary="Prometheus metrics",
             response_class=PlainTextResponse)
    def prometheus() -> Response:
        payload, content_type = metrics.render()
        return Response(payload, media_type=content_type)

    if mcp_server is not None:
        from mcp.server.transport_security import TransportSecuritySettings

        security = (None if host in LOCAL_HOSTS
                    else TransportSecuritySettings(enable_dns_rebinding_protection=False))
        mcp_app: Any = mcp_server.streamable_http_app(streamable_http_path=MCP_PATH, host=host,
                                                      transport_security=security,
                                                      stateless_http=mcp_stateless)
        if not mcp_stateless:
            manager = mcp_server.session_manager
            # The SDK's table of the sessions it serves: one forgets an idle session there.
            mcp_app = McpSessions(mcp_app, lambda: manager._server_instances,
                                  lambda: kairos.limits.mcp_sessions, MCP_PATH)
        app.router.add_route(MCP_PATH, mcp_app, include_in_schema=False)

    mcp_path = MCP_PATH if mcp_server is not None else None
    # One middleware for metrics, the Host check, the bound in flight, tokens, the body
    # check and the safety net for unmapped exceptions (see guard.Gate for their order).
    auth = BearerAuth(tokens=dict(tokens or {}), default_space=str(kairos.settings.space),
                      mcp_path=mcp_path)
    app.add_middleware(Gate, auth=auth, metrics=metrics, limits=kairos.limits,
                       limit=max_inflight, queue=max_queue, wait_ms=max_wait_ms,
                       host_guard=not tokens and host in LOCAL_HOSTS, mcp_path=mcp_path)
    return app


__all__ = ["INTERNAL_BODY", "INTERNAL_ERROR", "TELEMETRY_OFF", "McpFactory", "create_app"]
