"""``/v1/feedback``: a behaviour event on one of the token's user's memories."""

from __future__ import annotations

from fastapi import APIRouter

from sdk.wire import FeedbackBody, FeedbackOut
from service.deps import TokenFirstRoute, writer

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["feedback"], route_class=TokenFirstRoute)


@router.post(
    "/feedback", response_model=FeedbackOut, summary="Report a behaviour event", name="report"
)
def feedback(caller: writer, body: FeedbackBody) -> FeedbackOut:
    """Update the memory's confidence; 404 ``record_not_found`` if the user has no such
    visible, live memory (another user's included)."""
    result = caller.run(lambda m: m.feedback(caller.user_id, body.memory_id, action=body.action))
    return FeedbackOut.of(result)
