"""The REST routes, one module per resource, all under ``/v1``."""

from service.routes import memories, profile

__all__ = ["memories", "profile"]
