"""The REST routes, one module per resource, all under ``/v1``."""

from service.routes import (
    account,
    context,
    devices,
    docs,
    facts,
    feedback,
    links,
    memories,
    ops_tokens,
    profile,
    sandboxes,
    sessions,
)

__all__ = [
    "account",
    "context",
    "devices",
    "docs",
    "facts",
    "feedback",
    "links",
    "memories",
    "ops_tokens",
    "profile",
    "sandboxes",
    "sessions",
]
