"""``/v1/context``: the token's user's long-term memory block for a prompt."""

from service.operations import operation_router

__all__ = ["router"]

router = operation_router("context")
