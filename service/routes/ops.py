"""``/v1/ops/...``: statistics across users for operators (``ops`` scope), and ``/ops``,
the dashboard that plots them.

Each route is one ``mem.admin.ops`` call; the numbers are counts, days and
key ids, never a memory's text, a user id or PII. The dashboard is a static
page of this package (``service/static/``) that calls these same routes with
the ops token its user pastes in; nothing on it comes from another origin.
"""

from __future__ import annotations

from importlib import resources
from typing import Annotated

from fastapi import APIRouter, Query, Response
from fastapi.responses import HTMLResponse

from policies.errors import RecordNotFound
from sdk.ops import MAX_WINDOW_DAYS
from sdk.reports import (
    ActivityReport,
    ConfidenceReport,
    ExpiryReport,
    KeysReport,
    OutboxReport,
    TenantsReport,
    VerifiersReport,
)
from service.deps import TokenFirstRoute, ops_caller

__all__ = ["DASHBOARD_CSP", "router"]

router = APIRouter(tags=["ops"], route_class=TokenFirstRoute)

Days = Annotated[int, Query(ge=1, le=MAX_WINDOW_DAYS, description="Days in the window.")]

DASHBOARD_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
"""The dashboard loads only this service's own script and style and talks only to it."""

_ASSETS = {"ops.js": "text/javascript", "ops.css": "text/css"}


@router.get("/v1/ops/expiry", response_model=ExpiryReport, summary="Memories expiring per day")
def expiry(caller: ops_caller, days: Days = 30) -> ExpiryReport:
    """Live fragments and facts of every user expiring per UTC day, today to ``days``
    ahead, by lifecycle policy."""
    return caller.mem.admin.ops.expiry(days=days)


@router.get(
    "/v1/ops/confidence",
    response_model=ConfidenceReport,
    summary="Confidence histogram and pending confirmations",
)
def confidence(
    caller: ops_caller,
    buckets: Annotated[int, Query(ge=2, le=100)] = 10,
    forecast_days: Annotated[
        int, Query(ge=1, le=MAX_WINDOW_DAYS, description="Days the decay forecast looks ahead.")
    ] = 7,
) -> ConfidenceReport:
    """The confidence of live memories in equal buckets by status, the queue of memories
    pending their user's confirmation (counts and the longest wait), and the decay
    forecast: inferred memories expected to fall below the threshold per day, unused."""
    return caller.mem.admin.ops.confidence(buckets=buckets, forecast_days=forecast_days)


@router.get(
    "/v1/ops/activity", response_model=ActivityReport, summary="Decays, sweeps, renewals per day"
)
def activity(caller: ops_caller, days: Days = 30) -> ActivityReport:
    """Per UTC day over the last ``days`` days: confidence decays, memories swept,
    renewals (memories on the day of their latest use; a search's use is written within
    ``renewal_flush_s``)."""
    return caller.mem.admin.ops.activity(days=days)


@router.get("/v1/ops/outbox", response_model=OutboxReport, summary="Outbox lag")
def outbox(caller: ops_caller) -> OutboxReport:
    """Index operations not applied yet, the oldest one's age and the failing ones."""
    return caller.mem.admin.ops.outbox()


@router.get("/v1/ops/tenants", response_model=TenantsReport, summary="Index tenants hot and cold")
def tenants(caller: ops_caller) -> TenantsReport:
    """Weaviate's tenants by activity; ``applicable: false`` for an index without them."""
    return caller.mem.admin.ops.tenants()


@router.get("/v1/ops/keys", response_model=KeysReport, summary="PII key age against rotation")
def keys(caller: ops_caller) -> KeysReport:
    """The active PII key's age against the 90-day rotation, entries still to re-wrap."""
    return caller.mem.admin.ops.keys()


@router.get("/v1/ops/verifiers", response_model=VerifiersReport, summary="Verifier outcomes")
def verifiers(caller: ops_caller, days: Days = 30) -> VerifiersReport:
    """Business links by latest verification; verification changes per day by outcome."""
    return caller.mem.admin.ops.verifiers(days=days)


def _static(name: str) -> bytes:
    return resources.files("service").joinpath("static", name).read_bytes()


@router.get(
    "/ops",
    response_class=HTMLResponse,
    include_in_schema=False,
    summary="The ops dashboard (a static page)",
)
def dashboard() -> HTMLResponse:
    """The page; its data calls need an ``ops`` token (pasted in, or ``#token=`` in the URL)."""
    return HTMLResponse(
        _static("ops.html"),
        headers={
            "Content-Security-Policy": DASHBOARD_CSP,
            "Referrer-Policy": "no-referrer",
            "X-Content-Type-Options": "nosniff",
            "Cache-Control": "no-store",
        },
    )


@router.get("/ops/static/{name}", include_in_schema=False)
def asset(name: str) -> Response:
    """The dashboard's script and style sheet (only those)."""
    media = _ASSETS.get(name)
    if media is None:
        raise RecordNotFound("no such asset")
    return Response(
        _static(name),
        media_type=media,
        headers={"X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache"},
    )
