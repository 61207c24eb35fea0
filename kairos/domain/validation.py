"""Request validation, the same on every surface: a model's errors become one
``ValidationError`` naming the first wrong field and what it expected; and a model's JSON
Schema in the plain shape MCP hosts expect."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import pydantic
from pydantic import BaseModel

from .errors import ValidationError

M = TypeVar("M", bound=BaseModel)

_TYPE_TAGS = {"str", "int", "float", "bool", "dict", "list", "none", "literal"}
_EXPECTED = {
    "string_type": "a string", "int_type": "an integer", "bool_type": "true or false",
    "float_type": "a number", "list_type": "a list", "dict_type": "an object",
    "model_type": "an object", "model_attributes_type": "an object",
    "int_from_float": "an integer", "finite_number": "a finite number",
    "string_too_short": "a non-empty string", "missing": "a value",
}
# What the field should have been, from the limit the error's context holds.
_EXPECTED_WITHIN = {
    "string_too_long": "at most {max_length} characters",
    "too_short": "at least {min_length} item(s)", "too_long": "at most {max_length} item(s)",
}
_BOUNDS = {"greater_than_equal": "≥", "less_than_equal": "≤", "greater_than": ">",
           "less_than": "<"}


def field_of(error: Mapping[str, Any], *, located: bool = False) -> str:
    """The request field a pydantic error is about: without union member tags
    (``uris.str``), a JSON decoder's character offset or, when ``located`` (FastAPI's
    errors), the location prefix (body, query, path, header)."""
    if error.get("type") == "json_invalid":
        return "body"
    parts = [str(p) for p in error.get("loc", ())]
    if located and parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    parts = [p for p in parts
             if "[" not in p and p.split("-")[0].lower() not in _TYPE_TAGS]
    return ".".join(parts) or "body"


def expected_of(error: Mapping[str, Any]) -> str:
    """What the field should have been, in words."""
    kind, ctx = error.get("type", ""), error.get("ctx") or {}
    if kind in _EXPECTED:
        return _EXPECTED[kind]
    if kind in _EXPECTED_WITHIN:
        return _EXPECTED_WITHIN[kind].format_map(ctx)
    if kind in _BOUNDS:
        return f"a number {_BOUNDS[kind]} {next(iter(ctx.values()), '')}"
    if kind == "literal_error":
        return "one of " + str(ctx.get("expected", ""))
    if kind == "string_pattern_mismatch":
        return ("text that is not blank" if ctx.get("pattern") == r"\S"
                else f"text matching {ctx.get('pattern')}")
    if kind == "value_error":
        return str(error.get("msg", "")).removeprefix("Value error, ")
    return str(error.get("msg", "a valid value"))


def invalid(errors: Sequence[Mapping[str, Any]], *, allowed: Sequence[str] = (),
            context: str = "", located: bool = False) -> ValidationError:
    """Pydantic errors as one ValidationError: the first field named, what it expected (the
    alternatives of a union joined), every problem in ``details.errors``."""
    problems = [{"field": field_of(e, located=located), "expected": expected_of(e),
                 "type": e.get("type", "")} for e in errors]
    problems = problems or [{"field": "body", "expected": "a valid request", "type": ""}]
    first = problems[0]
    field = first["field"]
    wants = list(dict.fromkeys(p["expected"] for p in problems if p["field"] == field))
    expected = " or ".join(wants)
    where = f" for {context}" if context else ""
    if first["type"] == "missing":
        message = f"Missing required argument '{field}'{where}."
    elif first["type"] == "extra_forbidden":
        expected = "one of: " + ", ".join(allowed) if allowed else "a known field"
        message = f"Unknown argument '{field}'{where}; expected {expected}."
    else:
        message = f"Invalid {field}{where}: expected {expected}."
    return ValidationError(field, expected, message=message, details={"errors": problems})


def parse(model: type[M], data: Any, *, context: str = "") -> M:
    """``data`` as ``model`` (an instance passes through), or the ValidationError naming
    the first wrong field."""
    if isinstance(data, model):
        return data
    if not isinstance(data, Mapping):
        where = f" for {context}" if context else ""
        raise ValidationError("body", "an object",
                              message=f"Invalid request{where}: expected a JSON object.")
    try:
        return model.model_validate(dict(data))
    except pydantic.ValidationError as exc:
        raise invalid(exc.errors(include_url=False), allowed=list(model.model_fields),
                      context=context) from None


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema with nested models inlined and generated titles dropped:
    the plain shape MCP hosts expect as a tool's input schema."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return inline(defs[node["$ref"].rsplit("/", 1)[1]])
            return {k: inline(v) for k, v in node.items() if k != "title"
                    or not isinstance(v, str)}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    out: dict[str, Any] = inline(schema)
    out.pop("description", None)
    return out


__all__ = ["expected_of", "field_of", "invalid", "json_schema", "parse"]
