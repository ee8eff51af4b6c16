"""``/v1/export`` and ``/v1/me``: everything stored about the token's user, and its erasure."""

from service.operations import operation_router

__all__ = ["router"]

router = operation_router("account")
