"""The dualtrack SDK: ``MemoryClient`` is the one facade agents call."""

from sdk.client import MemoryClient
from sdk.settings import Settings

__all__ = ["MemoryClient", "Settings"]
