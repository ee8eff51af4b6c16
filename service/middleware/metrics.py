"""Request latency and the access log per route template, as pure ASGI (no
``BaseHTTPMiddleware``).

The access log names the route template (``POST /v1/sessions/{session_id}/end``), never
the path: a path holds session ids and fact keys, which may be personal data. ``dualtrack
serve`` turns uvicorn's own access log (which prints paths) off and routes
:data:`ACCESS_LOGGER` to uvicorn's access handler, in uvicorn's format.
"""

from __future__ import annotations

import logging
import time

from prometheus_client import Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["ACCESS_LOGGER", "UNMATCHED", "RequestMetrics", "route_template"]

UNMATCHED = "unmatched"
"""The route label of a request no route matched (so paths never become labels)."""

ACCESS_LOGGER = "dualtrack.access"
"""The logger of the access log: one line per request, with uvicorn's five arguments."""

_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
_access = logging.getLogger(ACCESS_LOGGER)


def route_template(scope: Scope) -> str:
    """The template of the route that served ``scope`` (``/v1/memories/{memory_id}``)."""
    route = scope.get("route")
    template = getattr(route, "path_format", None) or getattr(route, "path", None)
    return template if isinstance(template, str) else UNMATCHED


def _client(scope: Scope) -> str:
    client = scope.get("client")
    return f"{client[0]}:{client[1]}" if client else "-"


class RequestMetrics:
    """Observes each HTTP request's duration under its method, route template and status,
    and writes its access line.

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
            template = route_template(scope)
            self.histogram.labels(method, template, str(status)).observe(
                time.perf_counter() - started
            )
            _access.info(
                '%s - "%s %s HTTP/%s" %d',
                _client(scope),
                method,
                template,
                scope.get("http_version", "1.1"),
                status,
            )
