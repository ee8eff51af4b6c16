"""``/v1/export`` and ``/v1/me``: everything stored about the token's user, and its erasure."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from sdk.wire import ExportOut
from service.deps import TokenFirstRoute, eraser, exporter

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["account"], route_class=TokenFirstRoute)


@router.get("/export", response_model=ExportOut, summary="Export everything about the user")
def export(caller: exporter) -> Any:
    """Profile, devices, links, facts, PII (decrypted: the user's own), memories. Audited.

    Needs ``account:export`` (no agent holds it by default: the export is the user's own
    data-portability request) and is limited to one per user every
    ``DUALTRACK_EXPORT_INTERVAL_S`` (429)."""
    return caller.run(lambda m: m.export_user(caller.user_id))


@router.delete(
    "/me", status_code=204, response_class=Response, summary="Erase everything about the user"
)
def erase(caller: eraser) -> Response:
    """Idempotent: 204 whether or not anything was stored. Needs ``memory:erase``."""
    caller.run(lambda m: m.forget_user(caller.user_id))
    return Response(status_code=204)
