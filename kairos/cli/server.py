"""The server commands: ``serve`` (MCP and REST over HTTP), ``migrate`` and ``mcp`` (MCP
on stdio). They read the settings and hand them to the composition root
(``kairos.server``), which puts the surfaces together."""

from __future__ import annotations

from typing import Annotated

import typer

from ..domain.errors import ServeError
from . import output as out
from .base import command, load
from .output import CliError

LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")


@command()
def serve(
    host: Annotated[str | None, typer.Option(
        metavar="HOST", help="Address to listen on [default: KAIROS_HOST or 127.0.0.1].")] = None,
    port: Annotated[int | None, typer.Option(
        metavar="PORT", help="Port to listen on [default: KAIROS_PORT or 8765].")] = None,
    stateless: Annotated[bool, typer.Option(
        "--stateless", help="Serve MCP without transport sessions (replicas behind a load "
                            "balancer without sticky sessions).")] = False,
    workers: Annotated[int | None, typer.Option(
        metavar="N", help="Server processes sharing the address, each with its own copy of "
                          "the model [default: KAIROS_WORKERS or 1].")] = None,
    log_level: Annotated[str, typer.Option(
        metavar="LEVEL", help=f"uvicorn log level: {', '.join(LOG_LEVELS)}.")] = "info",
) -> None:
    """Serve MCP (streamable HTTP at /mcp) and REST (/api/v1) in one process or N."""
    from ..server import serve_http

    if log_level not in LOG_LEVELS:
        raise typer.BadParameter(f"{log_level!r} is not one of {', '.join(LOG_LEVELS)}",
                                 param_hint="'--log-level'")
    settings = load(host=host, port=port, workers=workers)
    try:
        serve_http(settings, stateless=stateless, log_level=log_level, say=out.note)
    except ServeError as exc:
        raise CliError(str(exc), exc.exit_code) from None


@command()
def migrate() -> None:
    """Bring the database schema to the newest version, then exit (run it once before
    starting replicas; `serve` does it too, one process at a time)."""
    from ..service.wiring import migrate_store

    settings = load()
    revision = migrate_store(settings)
    out.note(f"schema at revision {revision} ({settings.url.split('@')[-1]})")


@command("mcp")
def mcp_stdio(
    server: Annotated[str | None, typer.Option(
        "--server", metavar="URL",
        help="Forward every call to a `kairos serve` at this URL (e.g. http://host:8765/mcp) "
             "instead of opening a local store.")] = None,
) -> None:
    """Serve MCP on stdin/stdout for one agent host (stdout carries only MCP messages).

    One session id is made at start (override: KAIROS_SESSION_ID or CHL_SESSION_ID). With
    --server it is sent as X-CHL-Session on every call, with Authorization: Bearer
    $KAIROS_TOKEN when that is set."""
    from ..server import serve_stdio

    serve_stdio(load(), server)
