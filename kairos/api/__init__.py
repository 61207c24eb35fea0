"""The REST surface (``/api/v1``), bearer-token auth and the HTTP app that also hosts MCP."""

from .app import create_app
from .auth import TokenConfigError, check_bind, load_tokens

__all__ = ["TokenConfigError", "check_bind", "create_app", "load_tokens"]
