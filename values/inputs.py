"""A memory to write, for ``write_many``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from policies.lifecycle import LifecyclePolicy
from policies.ttl import MemoryKind

__all__ = ["MemoryInput"]


class MemoryInput(BaseModel):
    """One memory for :meth:`MemoryClient.write_many`; ``lifecycle_policy`` is required."""

    model_config = ConfigDict(frozen=True)

    user_id: str
    text: str
    lifecycle_policy: LifecyclePolicy
    session_id: str | None = None
    occurred_at: datetime | None = None
    metadata: dict[str, Any] | None = None
    kind: MemoryKind = MemoryKind.NOTE
    private: bool = False
