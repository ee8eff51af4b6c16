"""``/v1/links``: the token's user's business links (order, refund, supplier, ...)."""

from service.operations import operation_router

__all__ = ["router"]

router = operation_router("links")
