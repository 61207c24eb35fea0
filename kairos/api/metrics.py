"""Prometheus metrics: request counts and latencies per route, calls and latencies per MCP
tool. Each app has its own registry, so several apps (tests, replicas in one process)
never share or double-register collectors."""

from __future__ import annotations

from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram
from prometheus_client.exposition import generate_latest

UNMATCHED = "unmatched"  # requests no route matched (404s, refused tokens): one label, bounded
#: The methods counted by name; any other method a client sends is counted as OTHER, so
#: the label set stays bounded whatever clients send.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
OTHER = "OTHER"


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("kairos_http_requests", "HTTP requests by route and status",
                                ["method", "route", "status"], registry=self.registry)
        self.latency = Histogram("kairos_http_request_duration_seconds",
                                 "HTTP request latency by route", ["method", "route"],
                                 registry=self.registry)
        self.tool_calls = Counter("kairos_mcp_tool_calls", "MCP tool calls by outcome",
                                  ["tool", "outcome"], registry=self.registry)
        self.tool_latency = Histogram("kairos_mcp_tool_duration_seconds",
                                      "MCP tool latency", ["tool"], registry=self.registry)

        self._children: dict[tuple[str, str, int], tuple[Any, Any]] = {}

    def observe_request(self, method: str, route: str | None, status: int,
                        seconds: float) -> None:
        """One HTTP request; ``route`` is the matched route's path template
        (``/api/v1/runs/{run_id}/verify``), never the raw path, or None (UNMATCHED). The
        labelled series are looked up once per (method, route, status), not per request."""
        key = (method if method in METHODS else OTHER, route or UNMATCHED, status)
        children = self._children.get(key)
        if children is None:
            children = (self.requests.labels(key[0], key[1], str(status)),
                        self.latency.labels(key[0], key[1]))
            self._children[key] = children
        children[0].inc()
        children[1].observe(seconds)

    def observe_tool(self, tool: str, seconds: float, outcome: str) -> None:
        self.tool_calls.labels(tool, outcome).inc()
        self.tool_latency.labels(tool).observe(seconds)

    def render(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


__all__ = ["METHODS", "OTHER", "UNMATCHED", "Metrics"]
