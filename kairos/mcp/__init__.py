"""The MCP surface: one tool table, one low-level server, three ways to run it (in memory,
stdio, streamable HTTP inside ``kairos serve``) and a stdio forwarder to a remote server."""

from .server import ServiceRef, build_server, local_identity
from .tools import INSTRUCTIONS, REGISTRY, TOOLS, Call, ToolSpec

__all__ = ["INSTRUCTIONS", "REGISTRY", "TOOLS", "Call", "ServiceRef", "ToolSpec",
           "build_server", "local_identity"]
