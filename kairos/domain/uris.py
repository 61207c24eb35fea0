"""``kairos://mem/<uuid>`` URIs."""

from __future__ import annotations

import contextlib
import uuid

from .errors import INVALID_URI, ValidationError
from .texts import URI_PREFIX


def to_uri(step_id: str) -> str:
    return URI_PREFIX + step_id


def parse_uri(uri: object, field: str = "uri") -> str:
    """The step id inside a URI; a structured error when it is not one."""
    if isinstance(uri, str) and uri.startswith(URI_PREFIX):
        with contextlib.suppress(ValueError):
            return str(uuid.UUID(uri[len(URI_PREFIX):]))
    expected = "a URI of the form kairos://mem/<uuid>"
    raise ValidationError(field, expected, code=INVALID_URI,
                          message=f"Invalid {field} {uri!r}: expected {expected}.")


def uri_list(uris: str | list[str]) -> list[str]:
    """``uris`` as a list: the tools take one URI or several."""
    return [uris] if isinstance(uris, str) else uris


def new_id() -> str:
    return str(uuid.uuid4())
