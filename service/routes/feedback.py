"""``/v1/feedback``: a behaviour event on one of the token's user's memories."""

from service.operations import operation_router

__all__ = ["router"]

router = operation_router("feedback")
