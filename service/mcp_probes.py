"""``/healthz`` and ``/metrics`` on the MCP port, as pure ASGI in front of its gate.

Both answer as the REST service's do (``service.routes.probes``): ``/healthz``
takes no token; ``/metrics`` needs an ``ops`` token unless
``DUALTRACK_METRICS_ACCESS=open``. The metrics are the MCP app's own registry:
its request latencies per route and the store's numbers.
"""

from __future__ import annotations

import anyio.to_thread
from starlette.datastructures import Headers
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from policies.errors import DualtrackError
from sdk.client import MemoryClient
from service.auth import Scope as TokenScope
from service.errors import error_response
from service.gate import Gate
from service.metrics import ServiceMetrics
from service.routes.probes import PROMETHEUS_TEXT, health_report

__all__ = ["McpProbes"]

_NO_STORE = {"Cache-Control": "no-store"}


class McpProbes:
    """Answers ``GET /healthz`` and ``GET /metrics``; every other request goes to ``app``."""

    def __init__(
        self, app: ASGIApp, mem: MemoryClient, metrics: ServiceMetrics, gate: Gate, open_: bool
    ) -> None:
        self._app = app
        self._mem = mem
        self._metrics = metrics
        self._gate = gate
        self._open = open_

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path") if scope["type"] == "http" else None
        if path not in ("/healthz", "/metrics") or scope["method"] not in ("GET", "HEAD"):
            await self._app(scope, receive, send)
            return
        try:
            response = await anyio.to_thread.run_sync(self._answer, path, scope)
        except DualtrackError as exc:
            response = error_response(exc)
        await response(scope, receive, send)

    def _answer(self, path: str, scope: Scope) -> Response:
        if path == "/healthz":
            report = health_report(self._mem)
            return JSONResponse(
                report.model_dump(mode="json"),
                status_code=503 if report.status == "down" else 200,
                headers=_NO_STORE,
            )
        if not self._open:
            client = scope.get("client")
            header = Headers(scope=scope).get("authorization")
            self._gate.enter(header, client[0] if client else None, TokenScope.OPS)
        return Response(self._metrics.render(), media_type=PROMETHEUS_TEXT, headers=_NO_STORE)
