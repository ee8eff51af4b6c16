"""The long-term memory block an agent places right after its system prompt.

``mem.build_context`` returns a :class:`MemoryContext`; how it is assembled
(sections, budget, wording) is ``sdk.context``'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["ContextItem", "MemoryContext", "Section"]


class Section(StrEnum):
    """Where an item stands in the block, in order of priority."""

    PROFILE = "profile"
    FACT = "fact"
    BUSINESS = "business"
    RECORD = "record"
    QUESTION = "question"


@dataclass(frozen=True)
class ContextItem:
    """One line of the block and where it came from (``ref``: a memory, fact or link id)."""

    section: Section
    text: str
    ref: str | None = None
    status: str = "active"


@dataclass(frozen=True)
class MemoryContext:
    """The block (``text``), its estimated ``tokens``, the items it holds and how many
    items the budget left out."""

    text: str
    tokens: int
    items: list[ContextItem]
    omitted: int = 0
    degraded: bool = False

    def message(self) -> dict[str, str]:
        """The block as a chat message, to place right after the system prompt."""
        return {"role": "system", "content": self.text}
