"""``/readyz``, ``/healthz`` and ``/metrics``: what orchestrators and Prometheus call.

The probes take no token and are not rate limited, so they show nothing
sensitive: booleans, counts, ages and schema revisions only (no key id, no user,
no address). ``/metrics`` needs an ``ops`` token unless
``DUALTRACK_METRICS_ACCESS=open``.

- ``/readyz`` is 200 while PostgreSQL answers and its schema is within the
  range this code serves, else 503. The search index is not consulted: an
  index outage degrades searches to the ledger, it must not take every pod
  out of rotation.
- ``/healthz`` reports everything (database, schema, index, outbox lag, the
  PII key's age): ``ok``, ``degraded`` (200: the index, the outbox or the key
  needs attention) or ``down`` (503: the database or its schema).
- ``/metrics`` is the app's Prometheus registry in the text format (it reads the
  store: an ops token, and the ops agent's rate limit, bound what it costs).
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse

from sdk.client import MemoryClient
from sdk.reports import HealthReport, ReadinessReport
from service.auth import Scope
from service.deps import Needs, TokenFirstRoute
from service.metrics import metrics_of
from structured_memory.pii.keyring import MAX_KEY_AGE_DAYS

__all__ = ["OUTBOX_LAG_DEGRADED_S", "PROMETHEUS_TEXT", "health_report", "metrics_router", "router"]

router = APIRouter(tags=["probes"], route_class=TokenFirstRoute)

OUTBOX_LAG_DEGRADED_S = 300.0
"""An outbox entry older than this makes ``/healthz`` report ``degraded``."""

PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


def _mem(request: Request) -> MemoryClient:
    mem: MemoryClient = request.app.state.mem
    return mem


@router.get(
    "/readyz",
    response_model=ReadinessReport,
    responses={503: {"model": ReadinessReport, "description": "not ready"}},
    summary="Readiness: PostgreSQL answers and its schema is served",
)
def readyz(request: Request) -> JSONResponse:
    """200 when ready, 503 otherwise; a search-index outage does not count."""
    report = _mem(request).admin.ops.readiness()
    return JSONResponse(
        report.model_dump(mode="json"),
        status_code=200 if report.ready else 503,
        headers={"Cache-Control": "no-store"},
    )


@router.get(
    "/healthz",
    response_model=HealthReport,
    responses={503: {"model": HealthReport, "description": "down"}},
    summary="Health of every dependency: database, schema, index, outbox, PII key",
)
def healthz(request: Request) -> JSONResponse:
    """``ok`` or ``degraded`` (200), ``down`` (503)."""
    report = health_report(_mem(request))
    return JSONResponse(
        report.model_dump(mode="json"),
        status_code=503 if report.status == "down" else 200,
        headers={"Cache-Control": "no-store"},
    )


def health_report(mem: MemoryClient) -> HealthReport:
    """What ``/healthz`` answers (the REST service's and the MCP port's)."""
    h = mem.admin.health()
    outbox = h.outbox
    down = not (h.database and h.schema_supported)
    lagging = outbox.failing > 0 or outbox.oldest_age_s > OUTBOX_LAG_DEGRADED_S
    degraded = not h.index_reachable or lagging or h.active_key_stale
    return HealthReport(
        status="down" if down else "degraded" if degraded else "ok",
        database=h.database,
        schema_supported=h.schema_supported,
        index=h.index,
        index_reachable=h.index_reachable,
        outbox_pending=outbox.pending,
        outbox_oldest_age_s=outbox.oldest_age_s,
        outbox_failing=outbox.failing,
        key_age_days=h.active_key_age_days,
        key_rotation_days=MAX_KEY_AGE_DAYS,
        key_stale=h.active_key_stale,
    )


def metrics(request: Request) -> Response:
    """Request latency per route, writes by policy, searches (degraded or not), and the
    store's outbox lag, pending confirmations, decays, sweeps and verifier outcomes."""
    return Response(metrics_of(request).render(), media_type=PROMETHEUS_TEXT)


def metrics_router(access: Literal["ops", "open"]) -> APIRouter:
    """``/metrics``, behind an ``ops`` token (``access="ops"``) or open to anyone."""
    router = APIRouter(tags=["probes"], route_class=TokenFirstRoute)
    router.add_api_route(
        "/metrics",
        metrics,
        response_class=Response,
        dependencies=[Depends(Needs(Scope.OPS))] if access == "ops" else [],
        responses={200: {"content": {PROMETHEUS_TEXT: {}}, "description": "Prometheus text"}},
        summary="Prometheus metrics of this process",
    )
    return router
