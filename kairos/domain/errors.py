"""The one exception hierarchy. Surfaces map it to MCP tool errors and HTTP statuses."""

from __future__ import annotations

from typing import Any

# Structured error codes (not the step-answer codes, which live in ``texts``).
INVALID_INPUT = "INVALID_INPUT"
INVALID_URI = "INVALID_URI"
NOT_FOUND = "NOT_FOUND"
DUPLICATE_CHAIN = "DUPLICATE_CHAIN"
SIMILAR_MEMORY_FOUND = "SIMILAR_MEMORY_FOUND"
DOCUMENT_TOO_LARGE = "DOCUMENT_TOO_LARGE"
NO_HEADING = "NO_HEADING"
INVALID_CHALLENGE_JSON = "INVALID_CHALLENGE_JSON"
UNKNOWN_CHALLENGE_TYPE = "UNKNOWN_CHALLENGE_TYPE"
MISSING_CHALLENGE_FIELD = "MISSING_CHALLENGE_FIELD"
DUPLICATE_CHALLENGE = "DUPLICATE_CHALLENGE"
NO_ACTIVE_RUN = "NO_ACTIVE_RUN"
BUILTIN_READ_ONLY = "BUILTIN_READ_ONLY"
UNAUTHORIZED = "UNAUTHORIZED"
CONFLICT = "CONFLICT"
INTERNAL_ERROR = "INTERNAL_ERROR"
UPSTREAM_UNAVAILABLE = "UPSTREAM_UNAVAILABLE"
REQUEST_TOO_LARGE = "REQUEST_TOO_LARGE"
OVERLOADED = "OVERLOADED"
MISDIRECTED_REQUEST = "MISDIRECTED_REQUEST"
TOO_MANY_SESSIONS = "TOO_MANY_SESSIONS"
# Faults of the storage: a state the server is in, not a problem of the request.
STORAGE_FULL = "STORAGE_FULL"
STORAGE_READ_ONLY = "STORAGE_READ_ONLY"
DATABASE_UNAVAILABLE = "DATABASE_UNAVAILABLE"


class KairosError(Exception):
    """An error a caller can act on: a code, a message, and where the problem is."""

    status = 400

    def __init__(
        self,
        code: str,
        message: str,
        *,
        field: str | None = None,
        expected: str | None = None,
        line: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field
        self.expected = expected
        self.line = line
        self.details = details

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled with every attribute (an error crosses from a worker process whole)."""
        return (_restore, (type(self), self.message, dict(self.__dict__)))

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"error_code": self.code, "message": self.message}
        for key in ("field", "expected", "line", "details"):
            value = getattr(self, key)
            if value is not None:
                body[key] = value
        return body


def _restore(cls: type[KairosError], message: str, state: dict[str, Any]) -> KairosError:
    error = Exception.__new__(cls)
    Exception.__init__(error, message)
    error.__dict__.update(state)
    return error


class ValidationError(KairosError):
    status = 422

    def __init__(self, field: str, expected: str, message: str | None = None, **kw: Any) -> None:
        super().__init__(
            kw.pop("code", INVALID_INPUT),
            message or f"Invalid {field}: expected {expected}.",
            field=field,
            expected=expected,
            **kw,
        )


class MarkdownError(KairosError):
    """A document that cannot be minted; ``line`` is 1-based."""

    status = 422

    def __init__(self, code: str, message: str, line: int | None = None,
                 expected: str | None = None, *, field: str = "markdown_doc") -> None:
        super().__init__(code, message, field=field, expected=expected, line=line)


class NotFoundError(KairosError):
    status = 404

    def __init__(self, message: str, *, field: str = "uri") -> None:
        super().__init__(NOT_FOUND, message, field=field)


class ConflictError(KairosError):
    status = 409


class AuthError(KairosError):
    status = 401


class TooLargeError(KairosError):
    """A request body over the size limit, refused before it is read whole."""

    status = 413

    def __init__(self, limit: int) -> None:
        super().__init__(REQUEST_TOO_LARGE,
                         f"The request body is larger than the limit of {limit} bytes.",
                         field="body", expected=f"at most {limit} bytes")


class OverloadedError(KairosError):
    """Every slot taken and the wait queue full (or the wait too long); retry after
    ``retry_after`` s."""

    status = 503

    def __init__(self, limit: int, queue: int, retry_after: int = 1) -> None:
        super().__init__(OVERLOADED,
                         f"The server is busy ({limit} requests in flight, {queue} more "
                         f"waiting); retry in {retry_after} s.",
                         details={"retry_after": retry_after})
        self.retry_after = retry_after


class MisdirectedError(KairosError):
    """A Host header this server does not answer for (DNS-rebinding protection)."""

    status = 421

    def __init__(self, host: str, allowed: str) -> None:
        super().__init__(MISDIRECTED_REQUEST,
                         f"Host {host!r} is not served here: without API tokens only "
                         f"loopback names ({allowed}) are accepted.",
                         field="host", expected=allowed)


class SessionLimitError(KairosError):
    """A credential that already holds as many MCP sessions as it may."""

    status = 429

    def __init__(self, limit: int) -> None:
        super().__init__(TOO_MANY_SESSIONS,
                         f"This credential already holds {limit} open MCP sessions, the most "
                         "it may: end one (DELETE /mcp with its mcp-session-id header) or "
                         "let one idle out, then open a new one.",
                         details={"limit": limit})


_FAULTS = {
    STORAGE_FULL: "The storage of {where} is full",
    STORAGE_READ_ONLY: "The storage of {where} is read-only",
    DATABASE_UNAVAILABLE: "The database ({where}) cannot be reached",
}


class StorageError(KairosError):
    """The storage cannot serve the request (full, read-only, unreachable): nothing of it
    was written. ``code`` says which; retry once the operator has fixed it."""

    status = 503
    retry_after = 5

    def __init__(self, code: str, where: str, reason: str = "") -> None:
        detail = f" ({reason})" if reason else ""
        super().__init__(code, _FAULTS[code].format(where=where) + detail
                         + ": nothing was written. Retry once it is fixed.",
                         details={"retry_after": self.retry_after})


class ServeError(Exception):
    """A configuration that must not be served, or an address that cannot be listened on
    (message says why; ``exit_code`` 2 for configuration, 1 for a failure). Not a request's
    error: the server does not start."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code
