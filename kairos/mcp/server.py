"""The KAIROS MCP server, on the SDK's low-level ``Server``.

The low-level server lets us publish the request models' schemas and return exact JSON
bodies (success and error) as both text and structured content. It does not validate
arguments, so we do (``domain.requests.parse``), and it leaks exception text to the
client when a handler raises, so every exception is turned into a tool result here.

The service is reached through a ``ServiceRef`` so that a stdio process can answer
``initialize`` and ``tools/list`` before the database layer is even imported.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext

from .. import version
from ..domain.caller import Caller
from ..domain.errors import INTERNAL_ERROR, KairosError, NotFoundError
from ..domain.jsontext import compact
from ..domain.limits import Limits, check_value
from ..domain.validation import parse
from .guarded import INTERNAL_BODY
from .prompts import prompt_handlers
from .resources import resource_handlers
from .subscriptions import Subscriptions
from .tools import INSTRUCTIONS, REGISTRY, TOOLS, Call

if TYPE_CHECKING:
    from ..service import Kairos

log = logging.getLogger("kairos.mcp")

Identify = Callable[[Any], "tuple[Caller, str | None]"]
"""Maps ``ctx.request`` (the HTTP request, or None on stdio and in memory) to the call's
``(caller, search session id)``."""

ToolObserver = Callable[[str, float, str], None]
"""Told ``(tool, seconds, outcome)`` after every call; outcome is ok, error or internal."""


class ServiceRef:
    """The service, built on first use and shared by every call of the process."""

    def __init__(self, factory: Callable[[], Kairos]) -> None:
        self._factory = factory
        self._service: Kairos | None = None
        self._lock = threading.Lock()
        self._warming = False
        self._built: list[Callable[[Kairos], object]] = []

    @classmethod
    def of(cls, service: Kairos) -> ServiceRef:
        ref = cls(lambda: service)
        ref._service = service
        return ref

    def get(self) -> Kairos:
        if self._service is None:
            with self._lock:
                if self._service is None:
                    service = self._factory()
                    for hook in self._built:
                        hook(service)
                    self._service = service
        return self._service

    def when_built(self, hook: Callable[[Kairos], object]) -> None:
        """Call ``hook`` with the service once it exists (now, if it does)."""
        with self._lock:
            if self._service is None:
                self._built.append(hook)
                return
        hook(self._service)

    def warm(self) -> None:
        """Build the service on a background thread, once, so the first tool call is fast."""
        if self._service is not None or self._warming:
            return
        self._warming = True

        def build() -> None:
            try:
                self.get()
            except Exception:  # the first call reports it again, as a tool error
                log.exception("KAIROS service failed to start")

        threading.Thread(target=build, name="kairos-warm-up", daemon=True).start()

    def close(self) -> None:
        with self._lock:
            if self._service is not None:
                self._service.close()
                self._service = None


def local_identity(space: str, session_id: str) -> Identify:
    """One identity for the whole process: stdio and in-memory servers serve one agent."""

    who = (Caller(space=space, id=session_id), session_id)
    return lambda _request: who


def result(body: dict[str, Any], *, error: bool = False) -> types.CallToolResult:
    """A JSON body as text content and as structured content."""
    return types.CallToolResult(content=[types.TextContent(type="text", text=compact(body))],
                                structured_content=body, is_error=error)


def tool_list() -> list[types.Tool]:
    return [
        types.Tool(name=t.name, title=t.title, description=t.description,
                   input_schema=t.input_schema,
                   annotations=types.ToolAnnotations(title=t.title, read_only_hint=t.read_only,
                                                     open_world_hint=False))
        for t in TOOLS
    ]


def build_server(service: ServiceRef, *, identify: Identify, limits: Limits,
                 observe: ToolObserver | None = None, name: str = "kairos",
                 legacy_subscriptions: bool = True) -> Server[Any]:
    """The MCP server for one service: tools, resources and prompts. ``identify`` decides
    who calls (see ``Identify``); ``limits`` bound the arguments; ``observe`` receives
    per-tool timings (metrics); ``legacy_subscriptions`` serves the handshake era's
    ``resources/subscribe`` (not on stateless HTTP, which cannot deliver it). The server's
    ``subscriptions`` are told of every change the service makes."""
    tools = tool_list()
    subs = Subscriptions()

    service.when_built(lambda k: k.changes.listen(subs.changed))

    async def list_tools(ctx: ServerRequestContext[Any, Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        service.warm()
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any, Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        started = time.perf_counter()
        spec = REGISTRY.get(params.name)
        outcome = "ok"
        try:
            if spec is None:
                raise NotFoundError(f"Unknown tool '{params.name}'. Known tools: "
                                    f"{', '.join(REGISTRY)}.", field="name")
            arguments = dict(params.arguments or {})
            call = Call(*identify(ctx.request))
            handler, model = spec.handler, spec.model

            def run() -> Any:  # off the event loop: the checks walk every argument
                check_value(arguments, limits.json_depth)
                return handler(service.get(), parse(model, arguments, context=params.name),
                               call)

            body = await anyio.to_thread.run_sync(run)
            response = result(body)
        except KairosError as exc:
            outcome = "error"
            response = result(exc.to_dict(), error=True)
        except Exception:
            outcome = "internal"
            log.exception("tool %s failed", params.name)
            response = result(dict(INTERNAL_BODY), error=True)
        if observe is not None:
            observe(params.name if spec else "unknown", time.perf_counter() - started, outcome)
        return response

    def input_schema(tool: str) -> dict[str, Any] | None:
        spec = REGISTRY.get(tool)
        return spec.input_schema if spec else None

    server: Server[Any] = Server(
        name, version=version(), instructions=INSTRUCTIONS,
        get_tool_input_schema=input_schema, on_list_tools=list_tools, on_call_tool=call_tool,
        **resource_handlers(service, identify, subs,
                            legacy_subscriptions=legacy_subscriptions),
        **prompt_handlers(service, identify))
    server.subscriptions = subs  # type: ignore[attr-defined]
    return server


__all__ = ["INSTRUCTIONS", "INTERNAL_ERROR", "Identify", "ServiceRef", "ToolObserver",
           "build_server", "local_identity", "result", "tool_list"]
