"""The composition root: where the surfaces are put together into running processes.

``kairos serve`` runs the REST app with the MCP server inside it; ``kairos mcp`` runs the
MCP server on stdio (or a proxy to a remote server). Surfaces never import each other;
this module, called by the CLI, is the one place that knows them all.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from .domain.errors import ServeError

if TYPE_CHECKING:
    from .config import Settings
    from .service import Kairos


def listen(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    """Bind and listen before anything is announced: an address in use is reported as
    one error instead of after a start-up banner."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}",
                         exit_code=1) from None
    sock.set_inheritable(True)
    return sock


def listen_all(host: str, port: int, workers: int) -> list[socket.socket]:
    """One listening socket per worker process. On Linux each worker has its own
    (SO_REUSEPORT), and the kernel spreads new connections evenly over them; with one
    shared socket, the worker that wakes first may accept a whole burst of connections
    (say, every agent's at start) and keep them. Elsewhere the workers share one."""
    if workers == 1 or sys.platform != "linux":
        return [listen(host, port)] * workers
    listen(host, port).close()  # an address in use is refused here, not joined
    return [listen(host, port, reuse_port=True) for _ in range(workers)]


def tokens_of(settings: Settings) -> dict[str, str]:
    """token → space, from KAIROS_API_TOKENS or the tokens file (ServeError when
    malformed). Imports are lazy: ``kairos mcp`` must start without the web stack."""
    from .api import TokenConfigError, load_tokens

    try:
        return load_tokens(settings)
    except TokenConfigError as exc:
        raise ServeError(str(exc)) from None


def uvicorn_options() -> dict[str, Any]:
    """The event loop and HTTP parser of every server process: uvloop and httptools where
    they are installed, else asyncio's loop and h11. ``bench/floor_http.py`` serves its
    floor with these same options."""
    import importlib.util

    def has(module: str) -> bool:
        return importlib.util.find_spec(module) is not None

    return {"loop": "uvloop" if has("uvloop") else "asyncio",
            "http": "httptools" if has("httptools") else "h11"}


def serve_banner(bind: str, port: int) -> str:
    """The line that says the server is ready and where each of its surfaces is; a
    wildcard address is named by the machine's host name, which a browser can open."""
    host = socket.gethostname() if bind in ("0.0.0.0", "::", "") else bind
    base = f"http://{f'[{host}]' if ':' in host else host}:{port}"
    return (f"KAIROS on {base}: web UI {base}/, MCP {base}/mcp, REST {base}/api/v1, "
            f"docs {base}/docs")


def serve_http(settings: Settings, *, stateless: bool, log_level: str,
               say: Callable[[str], None]) -> None:
    """Serve MCP and REST in ``settings.workers`` processes (KAIROS_WORKERS, --workers),
    each with its own service (``open_service``), made after the fork."""
    from .api import check_bind
    from .service.signing import open_signing
    from .service.wiring import open_service

    tokens = tokens_of(settings)
    open_signing(settings)  # a bad key file is one line now, not one per worker later
    service = partial(open_service, settings, background=True)
    bind, port, workers = str(settings.host), int(settings.port), int(settings.workers)
    problem = check_bind(bind, tokens)
    if problem:
        raise ServeError(problem)
    socks = listen_all(bind, port, workers)
    try:
        if tokens:
            spaces = ", ".join(sorted(set(tokens.values())))
            say(f"{len(tokens)} API token(s) configured (spaces: {spaces}); every request "
                "except /health needs Authorization: Bearer <token>.")
        else:
            say(f"No API tokens configured: listening on {bind} only, without "
                "authentication. Set KAIROS_API_TOKENS or KAIROS_TOKENS_FILE to serve a "
                "network.")
        banner = serve_banner(bind, port)
        run = partial(_serve, service, tokens, bind, port, stateless=stateless,
                      log_level=log_level)
        from .workers import serve_alone, supervise

        if workers == 1:
            serve_alone(socks[0], run, partial(say, banner))
        else:
            supervise(socks, run, say=say, banner=f"{banner} ({workers} worker processes)")
    finally:
        for sock in set(socks):
            sock.close()


def _serve(service: Callable[[], Kairos], tokens: dict[str, str], bind: str, port: int,
           sock: socket.socket, ready: Callable[[], None], *, stateless: bool,
           log_level: str) -> None:
    """One server process: the service, its model loaded, then uvicorn on ``sock``;
    ``ready`` is called just before the first request can arrive."""
    import uvicorn

    from .api import create_app
    from .mcp import ServiceRef, build_server
    from .service.wiring import settle

    k = service()
    try:
        k.embedder.load()  # the local model, before the first request rather than during it
        web = create_app(k, tokens=tokens, host=bind, mcp_stateless=stateless,
                         mcp_factory=partial(build_server, ServiceRef.of(k)))
        settle()
        ready()
        config = uvicorn.Config(web, host=bind, port=port, log_level=log_level,
                                **uvicorn_options())
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        k.close()


def serve_stdio(settings: Settings, server_url: str | None) -> None:
    """``kairos mcp``: MCP on stdin/stdout, served here or forwarded to ``server_url``."""
    from .mcp.stdio import process_session_id, run_stdio

    session_id = process_session_id()
    if server_url:
        from .mcp.proxy import run_proxy

        run_proxy(server_url, session_id=session_id,
                  token=os.environ.get("KAIROS_TOKEN") or None)
    else:
        from .service.signing import open_signing

        open_signing(settings)  # before the handshake: a bad key file is one line
        run_stdio(settings, session_id)
