"""What stands in front of every route, as one ASGI middleware (``Gate``): request metrics,
the Host check (DNS rebinding), a bound on requests in flight, bearer tokens, the request
body check (size before it is read, then the size of its JSON structure, UTF-8 and text no
store can keep), and the safety net for unmapped exceptions. Each refusal is the structured
error body, or on the MCP endpoint a JSON-RPC error carrying it."""

from __future__ import annotations

import codecs
import json
import logging
import time
from typing import Any
from urllib.parse import unquote

import anyio
import anyio.lowlevel
from starlette.responses import JSONResponse

from ..domain import limits
from ..domain.errors import (
    INTERNAL_ERROR,
    MisdirectedError,
    OverloadedError,
    TooLargeError,
    ValidationError,
)
from ..domain.json_scan import PIECE, JsonScan
from ..domain.limits import Limits
from ..domain.validation import invalid
from .admission import Admission
from .auth import LOCAL_HOSTS, OPEN_PATHS, BearerAuth, refuse
from .metrics import Metrics

log = logging.getLogger("kairos.api")

_EXEMPT = frozenset({"/health", "/metrics"})
_INLINE_BYTES = 65_536
#: FastAPI's error for a body it cannot parse as JSON (answered as ``validation.invalid``).
NOT_JSON = ({"type": "json_invalid", "loc": ("body", 0), "msg": "JSON decode error"},)
INTERNAL_BODY = {"error_code": INTERNAL_ERROR,
                 "message": "The server failed while handling this request. The failure "
                            "was logged; retry later or report it."}


def host_name(host: str) -> str:
    """``[::1]:8765`` → ``::1``; ``localhost:8765`` → ``localhost``."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.rpartition(":")[0] if host.count(":") == 1 else host


class Gate:
    """Everything in front of the routes, in one ASGI middleware (one call and one ``send``
    wrapper per request instead of one per concern), in this order:

    1. metrics: every HTTP request is counted and timed (``Metrics.observe_request``),
       refusals included; the route label is the matched route's path template;
    2. the Host check (``host_guard``): only loopback Host names reach the app (421
       otherwise), so a page on another site that rebinds its name to 127.0.0.1 cannot
       call the API; installed when the server listens on loopback without tokens;
       ``/health`` stays open, as it is without tokens;
    3. admission (``admission.Admission``): at most ``limit`` requests served at once,
       up to ``queue`` more waiting their turn for at most ``wait_ms``; beyond that, 503
       with Retry-After (``/health``, ``/metrics`` and the MCP event stream, a GET, are
       not counted);
    4. bearer tokens (``auth``): the request's Principal, recorded in the scope, or 401;
    5. the body check: a body over the size limit is refused before it is read whole
       (Content-Length, then counting bytes as they arrive); each message of the body is
       checked as it arrives (``BodyCheck``, which says what it checks), on the event
       loop, in steps of a fraction of a millisecond; only a body that may hold bad text
       is parsed (off the loop when large). What it refuses is a 422 naming the field (on
       MCP a JSON-RPC error carrying it), sent once the rest of the body is read and
       dropped (``_drain``). The body read is handed on unchanged;
    6. the safety net: an exception no handler mapped is logged and answered with a
       generic JSON 500 (unless the response already started), and not re-raised.

    WebSocket requests go through the Host check and the token check only; other scopes
    (lifespan) pass straight through. Each refusal is the structured error body, or on the
    MCP endpoint a JSON-RPC error carrying it."""

    def __init__(self, app: Any, *, auth: BearerAuth, metrics: Metrics, limits: Limits,
                 host_guard: bool = False, limit: int | None = None,
                 queue: int | None = None, wait_ms: int | None = None,
                 mcp_path: str | None = None) -> None:
        self.app = app
        self.auth = auth
        self.metrics = metrics
        self.host_guard = host_guard
        self.mcp_path = mcp_path
        self.limits = limits
        self._admission: Admission | None = None
        self._bounds = (limit, queue, wait_ms)

    @property
    def admission(self) -> Admission:
        """Made at the first request, from the limits (unless given)."""
        if self._admission is None:
            limit, queue, wait_ms = self._bounds
            self._admission = Admission(limit or self.limits.inflight, queue or self.limits.queue,
                                        (wait_ms or self.limits.wait_ms) / 1000)
        return self._admission

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "websocket":
            headers = _headers(scope)
            if (await self._host_ok(scope, send, headers)
                    and await self.auth.admit(scope, send, headers)):
                await self.app(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def _http(self, scope: Any, receive: Any, send: Any) -> None:
        started = time.perf_counter()
        status = 500
        response_started = False

        async def send_wrapper(message: Any) -> None:
            nonlocal status, response_started
            if message["type"] == "http.response.start":
                status = message["status"]
                response_started = True
            await send(message)

        counted = False
        try:
            headers = _headers(scope)
            if not await self._host_ok(scope, send_wrapper, headers):
                return
            path = scope.get("path")
            if (path not in _EXEMPT
                    and not (path == self.mcp_path and scope.get("method") == "GET")):
                admission = self.admission
                shed = await admission.enter()
                if shed is not None:
                    await refuse(scope, send_wrapper,
                                 OverloadedError(admission.limit, admission.queue, shed),
                                 mcp_path=self.mcp_path, headers={"Retry-After": str(shed)})
                    return
                counted = True
            if not await self.auth.admit(scope, send_wrapper, headers):
                return
            receive = await self._body(scope, receive, send_wrapper, headers)
            if receive is None:
                return
            try:
                await self.app(scope, receive, send_wrapper)
            except Exception:
                log.exception("unhandled error on %s %s", scope.get("method"), path)
                if not response_started:
                    await JSONResponse(dict(INTERNAL_BODY), status_code=500)(
                        scope, receive, send_wrapper)
        finally:
            if counted:
                self.admission.leave()
            self.metrics.observe_request(scope.get("method", "GET"),
                                         getattr(scope.get("route"), "path", None),
                                         status, time.perf_counter() - started)

    async def _host_ok(self, scope: Any, send: Any, headers: dict[bytes, bytes]) -> bool:
        """The Host check; False once the refusal has been sent."""
        if self.host_guard and scope.get("path") not in OPEN_PATHS:
            raw = headers.get(b"host")
            host = None if raw is None else raw.decode("latin-1")
            if host is None or host_name(host) not in LOCAL_HOSTS:
                await refuse(scope, send,
                             MisdirectedError(host or "", ", ".join(LOCAL_HOSTS)),
                             mcp_path=self.mcp_path)
                return False
        return True

    async def _body(self, scope: Any, receive: Any, send: Any,
                    headers: dict[bytes, bytes]) -> Any:
        """The ``receive`` to hand on (the checked body, replayed), or None once a refusal
        has been sent (or the client went away)."""
        problem = _bad_path_or_query(scope)
        if problem is not None:
            await refuse(scope, send, problem, mcp_path=self.mcp_path)
            return None
        if scope.get("method") in ("GET", "HEAD", "OPTIONS"):
            return receive
        limit = self.limits.body_bytes
        declared = headers.get(b"content-length")
        if declared is not None and declared.strip().isdigit() and int(declared) > limit:
            await refuse(scope, send, TooLargeError(limit), mcp_path=self.mcp_path)
            return None
        check = BodyCheck(self.limits.json_depth, rest=scope.get("path") != self.mcp_path,
                          json_content=_json_content(headers))
        more = True
        try:
            while more:
                message = await receive()
                if message["type"] != "http.request":  # the client went away
                    return None
                chunk = message.get("body", b"")
                if check.size + len(chunk) > limit:
                    await refuse(scope, send, TooLargeError(limit), mcp_path=self.mcp_path)
                    return None
                more = message.get("more_body", False)
                # Each message as it comes, a piece at a time: other requests are served
                # between pieces, whatever the body holds.
                for start in range(0, len(chunk), PIECE):
                    if start:
                        await anyio.lowlevel.checkpoint()
                    check.feed(chunk[start:start + PIECE])
            body = check.finish()
            if check.size < _INLINE_BYTES:
                check.decode()
            elif check.must_decode:  # a large body is parsed off the event loop
                await anyio.to_thread.run_sync(check.decode)
        except ValidationError as exc:
            if more and not await _drain(receive, limit - check.size):
                return None  # the client went away
            await refuse(scope, send, exc, mcp_path=self.mcp_path)
            return None
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return replay


async def _drain(receive: Any, room: int) -> bool:
    """Reads and drops the rest of a refused body, up to ``room`` more bytes, before the
    refusal is sent; False if the client went away. Answered before its body is read, a
    sender learns the answer while its last bytes still wait in the socket and sends the
    next body at once: the event loop never catches up, and requests served beside it
    wait (bench/README.md, Stalls). Read first, a refused body paces its sender as any
    body does."""
    while room >= 0:
        message = await receive()
        if message["type"] != "http.request":
            return False
        if not message.get("more_body", False):
            break
        room -= len(message.get("body", b""))
    return True


def _headers(scope: Any) -> dict[bytes, bytes]:
    """The request's headers by lower-case name, read once: of a repeated header the
    first, except Authorization, the last."""
    out: dict[bytes, bytes] = {}
    for key, value in scope.get("headers") or ():
        key = key.lower()
        if key == b"authorization":
            out[key] = value
        else:
            out.setdefault(key, value)
    return out


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


class BodyCheck:
    """Every check the gate makes of a body, fed as it arrives (``feed``), then ``finish``
    and ``decode``: the size of its structure (values, nesting up to ``json_depth``,
    number length) on every body; on REST (``rest``) also UTF-8, text that is certainly not
    JSON when it says it is (``json_content``), NUL, lone surrogates and non-finite numbers
    (an MCP tool's arguments are checked by the tool call). Each step raises a
    ValidationError naming the field."""

    def __init__(self, json_depth: int, *, rest: bool = True,
                 json_content: bool = True) -> None:
        self.json_depth = json_depth
        self.rest = rest
        self.json_content = json_content
        self.size = 0
        self._scan = JsonScan("body", json_depth)
        self._utf8 = codecs.getincrementaldecoder("utf-8")()
        self._chunks: list[bytes] = []
        self.body = b""

    def feed(self, data: bytes) -> None:
        """The checks of the next piece."""
        self._scan.feed(data)
        self._check_utf8(data)
        self.size += len(data)
        self._chunks.append(data)

    def _check_utf8(self, data: bytes, final: bool = False) -> None:
        """On REST, not UTF-8 is refused naming the offset of the first byte that is not."""
        if not self.rest:
            return
        held = len(self._utf8.getstate()[0])  # an unfinished character from before
        try:
            self._utf8.decode(data, final)
        except UnicodeDecodeError as exc:
            raise ValidationError("body", "a UTF-8 encoded JSON body",
                                  message="Invalid body: not UTF-8 (byte "
                                          f"{self.size - held + exc.start}).") from None

    def finish(self) -> bytes:
        """The checks of the whole body that need no parsing; the body."""
        self._scan.finish()
        self._check_utf8(b"", final=True)
        self.body = self._chunks[0] if len(self._chunks) == 1 else b"".join(self._chunks)
        if self.rest and self.body and self._scan.not_json and self.json_content:
            # what the route's parser would answer, without parsing it
            raise invalid(NOT_JSON, located=True)
        return self.body

    @property
    def must_decode(self) -> bool:
        """Whether ``decode`` parses: only a REST body that might hold bad text."""
        return self.rest and bool(self.body) and self._scan.suspect

    def decode(self) -> None:
        """The checks that only the decoded value shows: text no store can keep (NUL, lone
        surrogates) and non-finite numbers (``limits.check_value``); a number past
        Python's digit limit. Text that is not JSON passes: the route's parser names it."""
        if not self.must_decode:
            return
        try:
            value = json.loads(self.body)
        except json.JSONDecodeError:
            return
        except ValueError:  # an integer past Python's digit limit
            raise ValidationError("body", "JSON numbers of at most 4300 digits",
                                  message="Invalid body: a number has more than 4300 "
                                          "digits.") from None
        limits.check_value(value, self.json_depth)


def _json_content(headers: dict[bytes, bytes]) -> bool:
    """Whether the request says its body is JSON (what FastAPI parses as JSON)."""
    kind = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
    return kind == b"application/json" or (kind.startswith(b"application/")
                                           and kind.endswith(b"+json"))


__all__ = ["INTERNAL_BODY", "BodyCheck", "Gate", "host_name", "refuse"]
