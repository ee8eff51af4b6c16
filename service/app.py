"""The FastAPI application: ``create_app(settings, service_settings)``.

One root :class:`MemoryClient` owns the stores for the process; each agent
gets a client over them (``for_agent``), so every memory records the agent
of the token that wrote it. Routes reach the stores only through the SDK.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

from fastapi import FastAPI
from pydantic import SecretStr
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from sdk.client import MemoryClient
from sdk.settings import Settings
from service.auth import TokenVerifier
from service.errors import install_error_handlers
from service.gate import Gate
from service.metrics import ServiceMetrics
from service.middleware.body_limit import BodyLimit
from service.middleware.metrics import RequestMetrics
from service.middleware.request_context import RequestContext
from service.openapi import operation_id
from service.ratelimit import RateLimits
from service.routes import (
    account,
    context,
    devices,
    docs,
    facts,
    feedback,
    links,
    memories,
    ops_tokens,
    profile,
    sandboxes,
    sessions,
)
from service.routes.ops import router as ops_router
from service.routes.probes import metrics_router
from service.routes.probes import router as probes_router
from service.settings import ServiceSettings

__all__ = ["create_app", "openapi_document"]


def create_app(
    settings: Settings | None = None,
    service: ServiceSettings | None = None,
    *,
    client: MemoryClient | None = None,
) -> FastAPI:
    """The service over ``client`` (or a client of ``settings``, closed at shutdown)."""
    svc = service or ServiceSettings()
    mem = client or MemoryClient(settings or Settings.from_env())
    owned = client is None

    limits = RateLimits(lambda: mem.admin.rate_limits, svc.rate_sync_s)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        mem.start()
        try:
            limits.start()
            yield
        finally:
            limits.stop()
            if owned:
                mem.close()

    app = FastAPI(
        title="dualtrack",
        version="1",
        summary="User memory infrastructure for agents: one user per verified token.",
        lifespan=lifespan,
        generate_unique_id_function=operation_id,
        docs_url=None,  # service.routes.docs serves both from local files
        redoc_url=None,
        # FastAPI's own spans and logs record paths, queries and validation messages,
        # which may hold personal data: service.middleware.request_context traces instead
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.mem = mem
    app.state.agent_clients = {}
    app.state.agent_lock = threading.Lock()
    app.state.verifier = TokenVerifier(
        svc, lambda: mem.admin.revoked_tokens.revoked(datetime.now(UTC))
    )
    app.state.gate = Gate(svc, app.state.verifier, limits)
    app.state.metrics = ServiceMetrics(mem)
    install_error_handlers(app)
    for module in (
        profile,
        devices,
        links,
        facts,
        memories,
        context,
        sessions,
        sandboxes,
        feedback,
        account,
        ops_tokens,
    ):
        app.include_router(module.router)
    app.include_router(ops_router)
    app.include_router(docs.router)
    app.include_router(probes_router)
    app.include_router(metrics_router(svc.metrics_access))
    app.add_middleware(BodyLimit, max_bytes=svc.max_body_bytes)
    app.add_middleware(RequestMetrics, histogram=app.state.metrics.request_seconds)
    app.add_middleware(RequestContext)  # outside: the access line has its ids and span
    if svc.trusted_proxies:
        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=svc.trusted_proxies)
    return app


def openapi_document() -> dict[str, Any]:
    """The service's OpenAPI document, built without settings, a token key or any I/O
    (what ``dualtrack openapi`` prints and the clients are generated from)."""
    placeholder = ServiceSettings(jwt_secret=SecretStr(secrets.token_hex(32)))
    return create_app(service=placeholder, client=MemoryClient(Settings())).openapi()
