"""A named entity of a memory or a session record (an order number, a product, masked PII)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Entity"]


@dataclass(frozen=True, slots=True)
class Entity:
    """One entity: ``type`` is a label of
    ``unstructured_memory.summariser.entities.ENTITY_LABELS``.

    ``start``/``end`` are character offsets into the analysed text; ``text`` is
    ``text[start:end]``, except for PII labels, where it is the masked value.
    """

    type: str
    text: str
    start: int
    end: int
