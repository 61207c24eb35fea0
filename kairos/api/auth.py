"""Bearer tokens for HTTP, and who a request speaks for.

A token names a space: ``KAIROS_API_TOKENS="token1:spaceA,token2:spaceB"`` or a file
(``KAIROS_TOKENS_FILE``) with one ``token space`` per line. With tokens configured every
request except ``/health`` and the public keys must carry ``Authorization: Bearer
<token>``, and the token's space is the only space it can see. Without tokens the server
is local-only (see ``check_bind``) and every request speaks for the configured space.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..domain.caller import Caller, valid_session_id
from ..domain.errors import UNAUTHORIZED, AuthError
from ..domain.keys import KEYS_PATH

PRINCIPAL = "kairos.principal"  # the ASGI scope key the middleware fills
OPEN_PATHS = frozenset({"/health", "/", KEYS_PATH})  # the public keys are public
OPEN_PREFIXES = ("/ui/",)  # the web UI's own files: it asks for a token, then sends it
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
SESSION_HEADERS = ("x-chl-session", "x-kairos-session")
MCP_SESSION_HEADER = "mcp-session-id"
_SPACE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._\-]{0,63}$")


class TokenConfigError(ValueError):
    """The token configuration cannot be read; the message says which entry and why."""


@dataclass(frozen=True)
class Principal:
    """What a request is allowed to see: one space. ``token_id`` is a digest, never the
    token itself, so it can appear in caller ids and logs."""

    space: str
    token_id: str | None = None


def token_id(token: str) -> str:
    return "tok-" + hashlib.sha256(token.encode("utf-8")).hexdigest()[:12]


def _add(tokens: dict[str, str], token: str, space: str, where: str) -> None:
    if not token or not _SPACE.match(space):
        raise TokenConfigError(f"{where}: expected a token and a space name "
                               f"(letters, digits, . _ -), got {space!r}.")
    tokens[token] = space


def parse_tokens(spec: str) -> dict[str, str]:
    """``token1:spaceA,token2:spaceB`` → {token: space}."""
    tokens: dict[str, str] = {}
    for i, item in enumerate(p.strip() for p in spec.split(",")):
        if not item:
            continue
        token, sep, space = item.rpartition(":")
        if not sep:
            raise TokenConfigError(f"KAIROS_API_TOKENS entry {i + 1}: expected token:space.")
        _add(tokens, token.strip(), space.strip(), f"KAIROS_API_TOKENS entry {i + 1}")
    return tokens


def read_tokens_file(path: Path) -> dict[str, str]:
    """One ``token space`` per line; blank lines and ``#`` comments are skipped."""
    try:
        lines = path.read_text("utf-8").splitlines()
    except OSError as exc:
        raise TokenConfigError(f"Cannot read the tokens file {path}: {exc.strerror}.") from None
    tokens: dict[str, str] = {}
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2:
            raise TokenConfigError(f"{path}:{n}: expected `token space`.")
        _add(tokens, parts[0], parts[1], f"{path}:{n}")
    return tokens


def load_tokens(settings: Any) -> dict[str, str]:
    """Tokens from ``api_tokens`` and ``tokens_file`` (both may be set; they merge)."""
    tokens = parse_tokens(str(settings.api_tokens or ""))
    if settings.tokens_file:
        tokens.update(read_tokens_file(Path(str(settings.tokens_file)).expanduser()))
    return tokens


def check_bind(host: str, tokens: Mapping[str, str]) -> str | None:
    """Why the server must not listen on ``host``, or None. Without tokens anyone who can
    reach the port could read and change every protocol, so only loopback is allowed."""
    if tokens or host in LOCAL_HOSTS:
        return None
    return (f"Refusing to listen on {host}: no API tokens are configured, so the server "
            "would be open to anyone who can reach it. Set KAIROS_API_TOKENS "
            "(token:space,...) or KAIROS_TOKENS_FILE, or listen on 127.0.0.1.")


JSONRPC_UNAUTHORIZED = -32001  # implementation-defined server error range of JSON-RPC


def _unauthorized(message: str, *, jsonrpc: bool) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The 401 body: the error shape of REST, or on the MCP endpoint a JSON-RPC error whose
    ``data`` is that same shape (MCP clients surface a JSON-RPC error body, and would
    otherwise report only "error response")."""
    error = AuthError(UNAUTHORIZED, message, details={"status": 401}).to_dict()
    payload: dict[str, Any] = error
    if jsonrpc:
        payload = {"jsonrpc": "2.0", "id": None,
                   "error": {"code": JSONRPC_UNAUTHORIZED, "message": message, "data": error}}
    body = json.dumps(payload).encode("utf-8")
    headers = [(b"content-type", b"application/json"),
               (b"content-length", str(len(body)).encode()),
               (b"www-authenticate", b'Bearer realm="kairos"')]
    return headers, body


class BearerAuth:
    """Checks the bearer token of a request and records its Principal in the scope, for
    REST routes and the mounted MCP endpoint alike (``guard.Gate`` calls ``admit``)."""

    def __init__(self, *, tokens: Mapping[str, str], default_space: str,
                 mcp_path: str | None = None) -> None:
        self.mcp_path = mcp_path
        self.by_digest = {hashlib.sha256(t.encode()).digest(): Principal(space, token_id(t))
                          for t, space in tokens.items()}
        self.default = Principal(default_space)

    async def admit(self, scope: Any, send: Any, headers: Mapping[bytes, bytes]) -> bool:
        """True with ``scope[PRINCIPAL]`` set; False once the 401 has been sent.
        ``headers``: the request's headers by lower-case name."""
        path = scope.get("path") or ""
        if not self.by_digest or path in OPEN_PATHS or path.startswith(OPEN_PREFIXES):
            scope[PRINCIPAL] = self.default
            return True
        header = headers.get(b"authorization", b"").decode("latin-1")
        scheme, _, token = header.partition(" ")
        found = (self.by_digest.get(hashlib.sha256(token.strip().encode()).digest())
                 if scheme.lower() == "bearer" and token.strip() else None)
        if found is None:
            head, body = _unauthorized(
                "Missing bearer token: send Authorization: Bearer <token>."
                if not header else "The bearer token is not valid for this server.",
                jsonrpc=path == self.mcp_path)
            await send({"type": "http.response.start", "status": 401, "headers": head})
            await send({"type": "http.response.body", "body": body})
            return False
        scope[PRINCIPAL] = found
        return True


def session_header(headers: Mapping[str, str]) -> str | None:
    """The client's conversation id: ``X-CHL-Session``, or ``X-Kairos-Session`` (the same
    header under our name). A malformed value is ignored, never an error."""
    for name in SESSION_HEADERS:
        value = valid_session_id(headers.get(name))
        if value:
            return value
    return None


def identify(request: Any) -> tuple[Caller, str | None]:
    """(caller, search session) of a REST request. The caller id is the client's session
    header, else one id per token (or ``anonymous``); in the request's space. An MCP
    session id means nothing here: it names a session of the MCP endpoint only."""
    return _identify(request, None)


def identify_mcp(request: Any) -> tuple[Caller, str | None]:
    """(caller, search session) of a call on the MCP endpoint: its transport session
    (``mcp-session-id``, which ``McpSessions`` lets through only from the credential that
    opened it), else the client's session header, else the token; the search session
    prefers the client's header (contract §5 R10)."""
    return _identify(request, valid_session_id(request.headers.get(MCP_SESSION_HEADER)))


def _identify(request: Any, transport_session: str | None) -> tuple[Caller, str | None]:
    principal: Principal = request.scope.get(PRINCIPAL) or Principal("default")
    chl = session_header(request.headers)
    caller_id = transport_session or chl or principal.token_id or "anonymous"
    return Caller(space=principal.space, id=caller_id), chl or transport_session


__all__ = ["OPEN_PATHS", "OPEN_PREFIXES", "PRINCIPAL", "BearerAuth", "Principal",
           "TokenConfigError", "check_bind", "identify", "identify_mcp", "load_tokens",
           "parse_tokens", "read_tokens_file", "session_header", "token_id"]
