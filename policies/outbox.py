"""The operations a derived search index receives through the transactional outbox."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["OutboxOp"]


class OutboxOp(StrEnum):
    """One queued index operation; stored by value in ``fragment_outbox.op``."""

    UPSERT = "upsert"
    DELETE = "delete"
    DROP_USER = "drop_user"
