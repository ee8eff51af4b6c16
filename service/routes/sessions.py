"""``/v1/sessions/{session_id}``: the turns of a long session and its end."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from sdk.wire import SessionOut, TranscriptBody, TurnsAppendedOut, TurnsBody
from service.deps import TokenFirstRoute, writer

__all__ = ["SessionId", "router"]

router = APIRouter(prefix="/v1/sessions", tags=["sessions"], route_class=TokenFirstRoute)

SessionId = Annotated[str, Path(min_length=1, max_length=128)]


@router.post(
    "/{session_id}/turns",
    response_model=TurnsAppendedOut,
    summary="Keep new turns of a long session",
)
def append_turns(caller: writer, session_id: SessionId, body: TurnsBody) -> TurnsAppendedOut:
    """A memory id per non-empty turn; ``record`` once enough turns were gathered."""
    turns = [t.to_turn() for t in body.turns]
    appended = caller.run(lambda m: m.append_turns(caller.user_id, session_id, turns))
    return TurnsAppendedOut.of(appended)


@router.post(
    "/{session_id}/end",
    response_model=SessionOut,
    summary="End a session: store its record and update the profile",
    name="end",
)
def end_session(caller: writer, session_id: SessionId, body: TranscriptBody) -> SessionOut:
    """The record (masked summary, intent, entities; never a clear PII value)."""
    turns = [t.to_turn() for t in body.transcript]
    record = caller.run(lambda m: m.end_session(caller.user_id, session_id, turns))
    return SessionOut.of(record)
