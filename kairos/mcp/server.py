"""The KAIROS MCP server, on the SDK's low-level ``Server``.

The low-level server lets us publish hand-written schemas and return exact JSON bodies
(success and error) as both text and structured content. It does not validate arguments,
so we do (top-level shape only), and it leaks exception text to the client when a handler
raises, so every exception is turned into a tool result here.

The service is reached through a ``ServiceRef`` so that a stdio process can answer
``initialize`` and ``tools/list`` before the database layer is even imported.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext

from kairos.domain.errors import INTERNAL_ERROR

from ..domain import limits
from ..domain.errors import KairosError, NotFoundError, ValidationError
from .tools import INSTRUCTIONS, REGISTRY, TOOLS, Call, ToolSpec

if TYPE_CHECKING:
    from ..service import Caller, Kairos

log = logging.getLogger("kairos.mcp")

INTERNAL_BODY = {
    "error_code": INTERNAL_ERROR,
    "message": "The server failed while handling this call. The failure was logged; "
               "retry later or report it.",
}

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

    @classmethod
    def of(cls, service: Kairos) -> ServiceRef:
        ref = cls(lambda: service)
        ref._service = service
        return ref

    def get(self) -> Kairos:
        if self._service is None:
            with self._lock:
                if self._service is None:
                    self._service = self._factory()
        return self._service

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

    @cache
    def who() -> tuple[Caller, str | None]:
        from ..service import Caller

        return Caller(space=space, id=session_id), session_id

    return lambda _request: who()


def result(body: dict[str, Any], *, error: bool = False) -> types.CallToolResult:
    """A JSON body as text content and as structured content."""
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                structured_content=body, is_error=error)


@cache
def _validator(name: str) -> Any:
    import jsonschema

    return jsonschema.Draft202012Validator(REGISTRY[name].input_schema)


def _schema_error(spec: ToolSpec, error: Any) -> ValidationError:
    """A jsonschema error as the service's own ValidationError shape, naming the field."""
    path = [str(p) for p in error.absolute_path]
    kind = error.validator
    properties = sorted(error.schema.get("properties", {})) if isinstance(error.schema,
                                                                             dict) else []
    if kind == "required":
        missing = [k for k in error.validator_value if k not in error.instance]
        field = ".".join([*path, *missing[:1]])
        return ValidationError(field, "a value",
                               message=f"Missing required argument '{field}' for {spec.name}.")
    if kind == "additionalProperties":
        extra = sorted(set(error.instance) - set(properties))
        field = ".".join([*path, *extra[:1]])
        expected = "one of: " + ", ".join(properties) if properties else "no arguments"
        return ValidationError(field, expected,
                               message=f"Unknown argument '{field}' for {spec.name}; "
                                       f"expected {expected}.")
    field = ".".join(path) or "arguments"
    return ValidationError(field, _expected(error),
                           message=f"Invalid {field} for {spec.name}: {error.message}.")


def _expected(error: Any) -> str:
    kind, value = error.validator, error.validator_value
    if kind == "anyOf":
        kinds = [str(option.get("type", "value")) for option in value]
        return "a value of type " + " or ".join(kinds)
    if kind == "type":
        names = value if isinstance(value, list) else [value]
        return "a value of type " + " or ".join(map(str, names))
    if kind == "enum":
        return "one of " + ", ".join(map(str, value))
    if kind == "minItems":
        return f"at least {value} item(s)"
    if kind == "minProperties":
        return f"an object with at least {value} field(s)"
    return str(error.message)


def check_arguments(spec: ToolSpec, arguments: dict[str, Any]) -> None:
    """Raise the ValidationError of the most relevant schema violation, if any."""
    import jsonschema

    error = jsonschema.exceptions.best_match(_validator(spec.name).iter_errors(arguments))
    if error is not None:
        raise _schema_error(spec, error)


def tool_list() -> list[types.Tool]:
    return [
        types.Tool(name=t.name, title=t.title, description=t.description,
                   input_schema=t.input_schema,
                   annotations=types.ToolAnnotations(title=t.title, read_only_hint=t.read_only,
                                                     open_world_hint=False))
        for t in TOOLS
    ]


def build_server(service: ServiceRef, *, identify: Identify,
                 observe: ToolObserver | None = None, name: str = "kairos") -> Server[Any]:
    """The MCP server for one service. ``identify`` decides who calls (see ``Identify``);
    ``observe`` receives per-tool timings (metrics)."""
    tools = tool_list()

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
            limits.check_value(arguments)
            check_arguments(spec, arguments)
            call = Call(*identify(ctx.request))
            handler = spec.handler
            body = await anyio.to_thread.run_sync(
                lambda: handler(service.get(), arguments, call))
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

    return Server(name, version=_version(), instructions=INSTRUCTIONS,
                  get_tool_input_schema=input_schema,
                  on_list_tools=list_tools, on_call_tool=call_tool)


@cache
def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kairos")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0"


__all__ = ["INSTRUCTIONS", "INTERNAL_ERROR", "Identify", "ServiceRef", "ToolObserver",
           "build_server", "check_arguments", "local_identity", "result", "tool_list"]
