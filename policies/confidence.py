"""Confidence of a memory, moved by behaviour events.

Each event updates ``new = old * 0.95 + weight * 0.05``; a memory whose
confidence falls below :data:`PENDING_THRESHOLD` is handed to the agent as a
question to confirm, not as a fact.
"""

from __future__ import annotations

from types import MappingProxyType

from policies.errors import InvalidField

__all__ = [
    "DECAY",
    "EVENT_WEIGHTS",
    "PENDING_THRESHOLD",
    "is_pending",
    "update_confidence",
    "weight_for",
]

DECAY = 0.95
PENDING_THRESHOLD = 0.3

EVENT_WEIGHTS = MappingProxyType(
    {
        "confirm": 1.0,
        "click": 1.0,
        "use": 0.8,
        "ignore": 0.0,
        "skip": 0.0,
        "reject": 0.0,
    }
)
"""Weight of each behaviour event in the confidence update."""


def weight_for(action: str) -> float:
    """The weight of ``action``; :class:`InvalidField` for an unknown action."""
    try:
        return EVENT_WEIGHTS[action]
    except KeyError:
        known = ", ".join(sorted(EVENT_WEIGHTS))
        raise InvalidField(f"unknown feedback action {action!r}; known: {known}") from None


def update_confidence(old: float, weight: float) -> float:
    """``old * 0.95 + weight * 0.05``, both in [0, 1]."""
    if not (0.0 <= old <= 1.0 and 0.0 <= weight <= 1.0):
        raise InvalidField("confidence and weight must lie in [0, 1]")
    return old * DECAY + weight * (1.0 - DECAY)


def is_pending(confidence: float) -> bool:
    """Whether a memory at ``confidence`` must be confirmed before use."""
    return confidence < PENDING_THRESHOLD
