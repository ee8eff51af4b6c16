"""Each HTTP request's id and server span, as pure ASGI (no ``BaseHTTPMiddleware``).

The request id is the caller's ``X-Request-Id`` when it is a plain token (letters,
digits, ``.``, ``_``, ``-``; at most 64), else a new one; it is echoed in the response
and held in :data:`REQUEST_ID` for the log lines of the request. The server span
(``sdk.tracing.incoming``) joins an incoming W3C ``traceparent``; it is named after the
route template, never the path (paths hold session ids and fact keys).
"""

from __future__ import annotations

import re
import uuid
from contextvars import ContextVar

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sdk.tracing import incoming
from service.middleware.metrics import route_template

__all__ = ["REQUEST_ID", "REQUEST_ID_HEADER", "RequestContext"]

REQUEST_ID_HEADER = "X-Request-Id"

REQUEST_ID: ContextVar[str | None] = ContextVar("dualtrack_request_id", default=None)
"""The id of the HTTP request being served (``None`` outside one)."""

_PLAIN = re.compile(r"[A-Za-z0-9._-]{1,64}")
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def request_id_of(headers: Headers) -> str:
    """The caller's request id when it is a plain token, else a new one."""
    given = headers.get(REQUEST_ID_HEADER)
    return given if given is not None and _PLAIN.fullmatch(given) else uuid.uuid4().hex


class RequestContext:
    """Sets the request id and the server span around each HTTP request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        request_id = request_id_of(headers)
        token = REQUEST_ID.set(request_id)
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                MutableHeaders(scope=message)[REQUEST_ID_HEADER] = request_id
            await send(message)

        method = scope["method"] if scope["method"] in _METHODS else "HTTP"
        try:
            with incoming(f"HTTP {method}", headers) as span:
                try:
                    await self.app(scope, receive, sending)
                finally:
                    if span is not None:
                        template = route_template(scope)
                        span.update_name(f"{method} {template}")
                        span.set_attributes(
                            {
                                "http.request.method": method,
                                "http.route": template,
                                "http.response.status_code": status,
                                "dualtrack.request_id": request_id,
                            }
                        )
        finally:
            REQUEST_ID.reset(token)
