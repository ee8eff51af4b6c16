"""Pure ASGI middleware of the service (no ``BaseHTTPMiddleware``)."""

from service.middleware.body_limit import BodyLimit

__all__ = ["BodyLimit"]
