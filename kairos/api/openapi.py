"""What the REST API answers, for ``/openapi.json``: every error status with its body,
the success body of every operation (the service's own response types,
``domain.responses`` and ``domain.views``) and the bearer-token scheme. Routes send the
service's JSON as it is; the schema fuzzing suite checks every response against this
document, on both backends.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, ConfigDict, Field


class ErrorBody(BaseModel):
    model_config = ConfigDict(extra="allow")

    error_code: str = Field(description="A stable code, e.g. INVALID_INPUT, NOT_FOUND.")
    message: str = Field(description="One line saying what was wrong and what to do.")
    field: str | None = Field(None, description="The request field at fault.")
    expected: str | None = Field(None, description="What the field should have been.")
    line: int | None = Field(None, description="The document line at fault.")
    details: dict[str, Any] | None = None


_ERRORS = {
    400: "The request cannot be served as it stands (e.g. NO_ACTIVE_RUN).",
    401: "A bearer token is required (UNAUTHORIZED).",
    404: "No such step, run, entry or session in this space (NOT_FOUND).",
    409: "A conflict: a title that exists (DUPLICATE_CHAIN), a near-copy, or a record "
         "that kept changing (CONFLICT).",
    413: "The body or a document is over its size limit.",
    421: "A Host header that is not this server's (MISDIRECTED_REQUEST).",
    422: "A field is invalid: `field` names it and `expected` says what it should be.",
    503: "The server cannot serve it now, retry after `Retry-After` seconds: too many "
         "requests in flight and waiting (OVERLOADED), or a storage fault — full "
         "(STORAGE_FULL), read-only (STORAGE_READ_ONLY) or unreachable "
         "(DATABASE_UNAVAILABLE); nothing was written.",
}
ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": text} for status, text in _ERRORS.items()}
"""Every error a REST operation can answer, all in the shape of ``ErrorBody``."""


def ok(body: Any, status: int = 200) -> dict[str, Any]:
    """Route arguments documenting ``body`` (a response type) as the success body, which
    the route sends as the service built it."""
    return {"response_model": None, "status_code": status,
            "responses": {status: {"model": body, "description": "Success."}}}


def json_schema(shape: Any) -> dict[str, Any]:
    """The JSON Schema of a shape written as ``domain.bundle_format.SCHEMA`` is: an object
    of exactly its fields, ``[item]`` an array, ``(None, shape)`` null or the shape, a type
    name (``"string|null"``: either), ``"any"``."""
    if isinstance(shape, tuple):
        return {"anyOf": [{"type": "null"}, json_schema(shape[1])]}
    if isinstance(shape, list):
        return {"type": "array", "items": json_schema(shape[0])}
    if isinstance(shape, dict):
        return {"type": "object", "properties": {k: json_schema(v) for k, v in shape.items()},
                "required": list(shape), "additionalProperties": False}
    return {} if shape == "any" else {"type": shape.split("|") if "|" in shape else shape}


#: Bodies documented by their shape (``json_schema``), by component name.
SHAPES: dict[str, Any] = {}


def ok_schema(name: str, shape: Any, description: str = "Success.") -> dict[str, Any]:
    """Route arguments documenting a success body by its shape, as the component ``name``
    of the document."""
    SHAPES[name] = shape
    return {"response_model": None, "responses": {200: {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}}}}}


# --- the document --------------------------------------------------------------------------

BEARER = {"type": "http", "scheme": "bearer",
          "description": "A token of KAIROS_TOKENS (token → space). A server without tokens "
                         "listens on loopback only and needs none."}


def install(app: FastAPI) -> None:
    """Add the bearer scheme to the generated document (every ``/api`` operation needs it
    when tokens are set)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version,
                                 description=app.description, routes=app.routes)
            components = schema.setdefault("components", {})
            components["securitySchemes"] = {"bearer": BEARER}
            components.setdefault("schemas", {}).update(
                {name: json_schema(shape) for name, shape in SHAPES.items()})
            for path, operations in schema["paths"].items():
                if path.startswith("/api/"):
                    for operation in operations.values():
                        operation["security"] = [{"bearer": []}]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
