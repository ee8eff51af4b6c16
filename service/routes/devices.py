"""``/v1/devices``: register, list, verify and remove the token's user's devices."""

from service.operations import operation_router

__all__ = ["router"]

router = operation_router("devices")
