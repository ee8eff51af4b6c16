"""``/v1/facts``: the token's user's keyed structured memories."""

from service.operations import operation_router

__all__ = ["router"]

router = operation_router("facts")
