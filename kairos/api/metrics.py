"""Prometheus metrics: request counts and latencies per route, calls and latencies per MCP
tool. Each app has its own registry, so several apps (tests, replicas in one process)
never share or double-register collectors."""

from __future__ import annotations

import time
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram
from prometheus_client.exposition import generate_latest

UNMATCHED = "unmatched"  # requests no route matched (404s, refused tokens): one label, bounded


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

    def observe_tool(self, tool: str, seconds: float, outcome: str) -> None:
        self.tool_calls.labels(tool, outcome).inc()
        self.tool_latency.labels(tool).observe(seconds)

    def render(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class MetricsMiddleware:
    """ASGI middleware timing every HTTP request; the route label is the matched route's
    path template (``/api/v1/runs/{run_id}/verify``), never the raw path."""

    def __init__(self, app: Any, *, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_wrapper(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            route = getattr(scope.get("route"), "path", None) or UNMATCHED
            method = scope.get("method", "GET")
            self.metrics.requests.labels(method, route, str(status)).inc()
            self.metrics.latency.labels(method, route).observe(time.perf_counter() - started)


__all__ = ["Metrics", "MetricsMiddleware"]
