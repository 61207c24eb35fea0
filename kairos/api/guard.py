"""ASGI guards in front of every route: the Host check (DNS rebinding), a bound on requests
in flight, and the request body check (size before it is read, then UTF-8, JSON depth and
text no store can keep). Each refusal is the structured error body, or on the MCP endpoint
a JSON-RPC error carrying it."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

import anyio

from ..domain import limits
from ..domain.errors import (
    KairosError,
    MisdirectedError,
    OverloadedError,
    TooLargeError,
    ValidationError,
)
from .auth import OPEN_PATHS

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
JSONRPC_REFUSED = -32000  # implementation-defined server error range of JSON-RPC
_EXEMPT = frozenset({"/health", "/metrics"})
_INLINE_BYTES = 65_536


async def refuse(scope: Any, send: Any, error: KairosError, *, mcp_path: str | None,
                 headers: dict[str, str] | None = None) -> None:
    """Answer ``error`` with its status: its body on REST, a JSON-RPC error on MCP."""
    payload: dict[str, Any] = error.to_dict()
    if mcp_path is not None and scope.get("path") == mcp_path:
        payload = {"jsonrpc": "2.0", "id": None,
                   "error": {"code": JSONRPC_REFUSED, "message": error.message,
                             "data": payload}}
    body = json.dumps(payload).encode("utf-8")
    raw = [(b"content-type", b"application/json"),
           (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode("latin-1"), v.encode("latin-1"))
            for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": error.status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def _header(scope: Any, name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


def host_name(host: str) -> str:
    """``[::1]:8765`` → ``::1``; ``localhost:8765`` → ``localhost``."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.rpartition(":")[0] if host.count(":") == 1 else host


class HostGuard:
    """Only loopback Host names reach the app (421 otherwise): a page on another site
    that rebinds its name to 127.0.0.1 cannot call the API. Installed when the server
    listens on loopback without tokens; ``/health`` stays open, as it is without tokens."""

    def __init__(self, app: Any, *, mcp_path: str | None = None) -> None:
        self.app = app
        self.mcp_path = mcp_path

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket") and scope.get("path") not in OPEN_PATHS:
            host = _header(scope, b"host")
            if host is None or host_name(host) not in LOOPBACK_NAMES:
                await refuse(scope, send,
                             MisdirectedError(host or "", ", ".join(LOOPBACK_NAMES)),
                             mcp_path=self.mcp_path)
                return
        await self.app(scope, receive, send)


class Inflight:
    """At most ``limit`` requests are served at once; more are answered 503 with
    Retry-After at once, so admitted requests stay fast. ``/health``, ``/metrics`` and the
    MCP event stream (GET) are not counted."""

    def __init__(self, app: Any, *, limit: int | None = None, mcp_path: str | None = None,
                 retry_after: int = 1) -> None:
        self.app = app
        self.limit = limit
        self.mcp_path = mcp_path
        self.retry_after = retry_after
        self.active = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path")
        if (scope["type"] != "http" or path in _EXEMPT
                or (path == self.mcp_path and scope.get("method") == "GET")):
            await self.app(scope, receive, send)
            return
        limit = self.limit or limits.current().inflight
        if self.active >= limit:
            error = OverloadedError(limit, self.retry_after)
            await refuse(scope, send, error, mcp_path=self.mcp_path,
                         headers={"Retry-After": str(self.retry_after)})
            return
        self.active += 1  # one event loop: no lock needed between the check and this
        try:
            await self.app(scope, receive, send)
        finally:
            self.active -= 1


class BodyGuard:
    """Refuses a body over the size limit before reading it whole (Content-Length, then
    counting bytes as they arrive); on REST also a body that is not UTF-8, nests JSON
    deeper than the limit, or holds a NUL or a lone surrogate in any string — a 422 naming
    the field. The body read is handed on unchanged."""

    def __init__(self, app: Any, *, mcp_path: str | None = None) -> None:
        self.app = app
        self.mcp_path = mcp_path

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        problem = _bad_path_or_query(scope)
        if problem is not None:
            await refuse(scope, send, problem, mcp_path=self.mcp_path)
            return
        if scope.get("method") in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        limit = limits.current().body_bytes
        declared = _header(scope, b"content-length")
        if declared is not None and declared.strip().isdigit() and int(declared) > limit:
            await refuse(scope, send, TooLargeError(limit), mcp_path=self.mcp_path)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await refuse(scope, send, TooLargeError(limit), mcp_path=self.mcp_path)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        if scope.get("path") != self.mcp_path and body:
            try:
                if len(body) < _INLINE_BYTES:
                    check_json_body(body)
                else:  # a large body is checked off the event loop
                    await anyio.to_thread.run_sync(check_json_body, body)
            except ValidationError as exc:
                await refuse(scope, send, exc, mcp_path=None)
                return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def _bad_path_or_query(scope: Any) -> ValidationError | None:
    """A path or query string whose decoded text holds a NUL or a lone surrogate."""
    for field, text in (("path", str(scope.get("path", ""))),
                        ("query", unquote(bytes(scope.get("query_string") or b"")
                                          .decode("latin-1")))):
        if limits.BAD_CHAR.search(text):
            return ValidationError(field, "text without NUL characters or lone surrogates",
                                   message=f"Invalid {field}: it holds a NUL character or a "
                                           "lone surrogate.")
    return None


def check_json_body(body: bytes) -> None:
    """The checks of a REST body that the JSON parser would not make, or would fail on:
    UTF-8, nesting depth, NUL, lone surrogates, non-finite and overlong numbers."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError("body", "a UTF-8 encoded JSON body",
                              message=f"Invalid body: not UTF-8 (byte {exc.start}).") from None
    limits.check_json_depth(text, "body")
    if limits.might_hold_bad_text(text):
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            return  # not JSON: the route's parser names the problem
        except ValueError:  # an integer past Python's digit limit
            raise ValidationError("body", "JSON numbers of at most 4300 digits",
                                  message="Invalid body: a number has more than 4300 "
                                          "digits.") from None
        limits.check_value(value)


__all__ = ["BodyGuard", "HostGuard", "Inflight", "check_json_body", "host_name", "refuse"]
