"""``/v1/sessions/{session_id}``: the turns of a long session and its end."""

from service.operations import operation_router

__all__ = ["router"]

router = operation_router("sessions")
