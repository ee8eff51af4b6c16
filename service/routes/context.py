"""``/v1/context``: the token's user's long-term memory block for a prompt."""

from __future__ import annotations

from fastapi import APIRouter

from sdk.wire import ContextBody, ContextOut
from service.deps import TokenFirstRoute, reader

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["context"], route_class=TokenFirstRoute)


@router.post(
    "/context",
    response_model=ContextOut,
    summary="Build the memory block for a prompt",
    name="build",
)
def build_context(caller: reader, body: ContextBody) -> ContextOut:
    """Profile, facts, verified business items, relevant records (within the header's
    sandbox, if any) and pending questions, cut to ``max_tokens``; masked texts only."""
    context = caller.run(
        lambda m: m.build_context(
            caller.user_id, body.query, max_tokens=body.max_tokens, records=body.records
        )
    )
    return ContextOut.of(context)
