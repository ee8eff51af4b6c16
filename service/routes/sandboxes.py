"""``/v1/sessions/{session_id}/sandbox``: open, fork, merge and discard a session's sandbox.

Open and fork return the sandbox; the client then names it in the
``X-Dualtrack-Sandbox`` header of the requests that work in it, merge and
discard included (required there).
"""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter

from policies.errors import InvalidField
from sdk.wire import DiscardOut, MergeBody, MergeOut, SandboxOut
from service.deps import Caller, TokenFirstRoute, writer
from service.routes.sessions import SessionId

__all__ = ["router"]

router = APIRouter(
    prefix="/v1/sessions/{session_id}/sandbox", tags=["sandboxes"], route_class=TokenFirstRoute
)

_HEADER = "X-Dualtrack-Sandbox"
_NEEDS_HEADER: dict[int | str, dict[str, Any]] = {
    400: {"description": "invalid_field: the X-Dualtrack-Sandbox header is missing"}
}


def _named(caller: Caller) -> uuid.UUID:
    if caller.sandbox_id is None:
        raise InvalidField(f"{_HEADER} must name the sandbox", field=_HEADER)
    return caller.sandbox_id


@router.post(
    "", response_model=SandboxOut, summary="Open (or resume) the session's sandbox", name="open"
)
def open_sandbox(caller: writer, session_id: SessionId) -> SandboxOut:
    """The session's active sandbox, created on first use."""
    return SandboxOut.of(caller.run(lambda m: m.sandboxes.open(caller.user_id, session_id)))


@router.post("/fork", response_model=SandboxOut, summary="Archive the sandbox, start a clean one")
def fork(caller: writer, session_id: SessionId) -> SandboxOut:
    """The new active sandbox; the old one is archived (kept, never searched)."""
    return SandboxOut.of(caller.run(lambda m: m.sandboxes.fork(caller.user_id, session_id)))


@router.post(
    "/merge",
    response_model=MergeOut,
    responses=_NEEDS_HEADER,
    summary="Promote memories of the header's sandbox into long-term memory",
)
def merge(caller: writer, session_id: SessionId, body: MergeBody) -> MergeOut:
    """The ids merged; 409 ``sandbox_closed`` if the sandbox is no longer the active one."""
    box = _named(caller)
    merged = caller.run(
        lambda m: m.sandboxes.merge(caller.user_id, session_id, box, body.memory_ids)
    )
    return MergeOut(merged=merged)


@router.post(
    "/discard",
    response_model=DiscardOut,
    responses=_NEEDS_HEADER,
    summary="Delete what the header's sandbox holds unmerged, and close it",
)
def discard(caller: writer, session_id: SessionId) -> DiscardOut:
    """How many memories were deleted."""
    box = _named(caller)
    count = caller.run(lambda m: m.sandboxes.discard(caller.user_id, session_id, box))
    return DiscardOut(discarded=count)
