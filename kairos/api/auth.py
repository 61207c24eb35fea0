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
from ..domain.errors import UNAUTHORIZED, AuthError, KairosError
from ..domain.keys import KEYS_PATH

PRINCIPAL = "kairos.principal"  # the ASGI scope key the middleware fills
OPEN_PATHS = frozenset({"/health", "/", KEYS_PATH})  # the public keys are public
OPEN_PREFIXES = ("/ui/",)  # the web UI's own files: it asks for a token, then sends it
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")  # the loopback names, in the order told
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


#: JSON-RPC error codes of refusals, in the implementation-defined server error range.
JSONRPC_REFUSED = -32000
JSONRPC_UNAUTHORIZED = -32001


async def refuse(scope: Any, send: Any, error: KairosError, *, mcp_path: str | None,
                 headers: dict[str, str] | None = None,
                 jsonrpc_code: int = JSONRPC_REFUSED) -> None:
    """Answer ``error`` with its status: its body on REST; on the MCP endpoint a JSON-RPC
    error whose ``data`` is that body (MCP clients surface a JSON-RPC error body, and would
    otherwise report only "error response")."""
    payload: dict[str, Any] = error.to_dict()
    if mcp_path is not None and scope.get("path") == mcp_path:
        payload = {"jsonrpc": "2.0", "id": None,
                   "error": {"code": jsonrpc_code, "message": error.message,
                             "data": payload}}
    body = json.dumps(payload).encode("utf-8")
    raw = [(b"content-type", b"application/json"),
           (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode("latin-1"), v.encode("latin-1"))
            for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": error.status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


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
            message = ("Missing bearer token: send Authorization: Bearer <token>."
                       if not header else "The bearer token is not valid for this server.")
            await refuse(scope, send, AuthError(UNAUTHORIZED, message, details={"status": 401}),
                         mcp_path=self.mcp_path, jsonrpc_code=JSONRPC_UNAUTHORIZED,
                         headers={"WWW-Authenticate": 'Bearer realm="kairos"'})
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


def identify(request: Any, *, mcp: bool = False) -> tuple[Caller, str | None]:
    """(caller, search session) of a REST request, in its space. The caller id is the
    client's session header, else one id per token (or ``anonymous``). An MCP session id
    means nothing here: it names a session of the MCP endpoint only (``identify_mcp``).
    The search session prefers the client's header (contract §5 R10)."""
    principal: Principal = request.scope.get(PRINCIPAL) or Principal("default")
    chl = session_header(request.headers)
    transport = valid_session_id(request.headers.get(MCP_SESSION_HEADER)) if mcp else None
    caller_id = transport or chl or principal.token_id or "anonymous"
    return Caller(space=principal.space, id=caller_id), chl or transport


def identify_mcp(request: Any) -> tuple[Caller, str | None]:
    """``identify`` for a call on the MCP endpoint: its transport session
    (``mcp-session-id``, which ``McpSessions`` lets through only from the credential that
    opened it) comes before the client's session header."""
    return identify(request, mcp=True)


__all__ = ["OPEN_PATHS", "OPEN_PREFIXES", "PRINCIPAL", "BearerAuth", "Principal",
           "TokenConfigError", "check_bind", "identify", "identify_mcp", "load_tokens",
           "parse_tokens", "read_tokens_file", "refuse", "session_header", "token_id"]
