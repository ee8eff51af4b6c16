"""Request latency per route template, as pure ASGI (no ``BaseHTTPMiddleware``)."""

from __future__ import annotations

import time

from prometheus_client import Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["UNMATCHED", "RequestMetrics", "route_template"]

UNMATCHED = "unmatched"
"""The route label of a request no route matched (so paths never become labels)."""

_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def route_template(scope: Scope) -> str:
    """The template of the route that served ``scope`` (``/v1/memories/{memory_id}``)."""
    route = scope.get("route")
    template = getattr(route, "path_format", None) or getattr(route, "path", None)
    return template if isinstance(template, str) else UNMATCHED


class RequestMetrics:
    """Observes each HTTP request's duration under its method, route template and status.

    The router records the matched route in the request's scope, which this
    middleware reads once the response is sent; an exception counts as 500.
    """

    def __init__(self, app: ASGIApp, histogram: Histogram) -> None:
        self.app = app
        self.histogram = histogram

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            method = scope["method"] if scope["method"] in _METHODS else "OTHER"
            self.histogram.labels(method, route_template(scope), str(status)).observe(
                time.perf_counter() - started
            )
