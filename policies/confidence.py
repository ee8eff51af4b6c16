"""Confidence of a memory, moved by behaviour events and by the scheduled decay.

Each event updates ``new = old * 0.95 + weight * 0.05`` with the weight of its
action (:class:`ConfidenceConfig`). A memory's status follows its confidence:
below the pending threshold (0.3) an ``active`` memory becomes
``pending_confirmation`` and is handed to the agent as a question to confirm,
not as a fact; at or above it, ``active`` again. ``confirm`` also restores at
least 0.6, ``reject`` retires the memory for good, and a memory under business
review (``needs_review``) keeps that status whatever the feedback.

The decay is the same rule with weight 0, one step per whole day without use,
for inferred memories unused for over a week (:func:`decay_steps`): day 8
without use is the first step. Its watermark (:func:`decayed_through`) makes
it idempotent: a second run on the same day finds nothing to do, and daily
runs end where one run after many days would.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from types import MappingProxyType

from pydantic import BaseModel, ConfigDict, Field

from policies.errors import InvalidField

__all__ = [
    "DAY",
    "DECAY",
    "DEFAULT_CONFIDENCE",
    "EVENT_WEIGHTS",
    "PENDING_THRESHOLD",
    "ConfidenceConfig",
    "FeedbackAction",
    "MemoryStatus",
    "Standing",
    "after_decay",
    "after_feedback",
    "decay_steps",
    "decayed_through",
    "feedback_action",
    "is_pending",
    "renews",
    "steps_to_pending",
    "update_confidence",
    "weight_for",
]

DECAY = 0.95
PENDING_THRESHOLD = 0.3
DAY = timedelta(days=1)


class MemoryStatus(StrEnum):
    """Lifecycle status of a memory (a fact or a fragment)."""

    ACTIVE = "active"
    PENDING_CONFIRMATION = "pending_confirmation"
    """Confidence fell below the threshold: presented as a question, never as a fact."""
    NEEDS_REVIEW = "needs_review"
    """A business memory whose system of record disagreed."""
    RETIRED = "retired"
    """Rejected by its user: never served again (and expired, so swept)."""


class FeedbackAction(StrEnum):
    """Behaviour events an agent reports about a memory it used or showed."""

    CLICK = "click"
    SKIP = "skip"
    CONFIRM = "confirm"
    REJECT = "reject"
    IGNORE = "ignore"


class ConfidenceConfig(BaseModel):
    """Weights of the feedback actions, thresholds and the decay schedule."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    click: float = Field(default=1.0, ge=0.0, le=1.0, description="Weight of a click.")
    skip: float = Field(default=0.0, ge=0.0, le=1.0, description="Weight of a skip.")
    confirm: float = Field(default=1.0, ge=0.0, le=1.0, description="Weight of a confirm.")
    reject: float = Field(default=0.0, ge=0.0, le=1.0, description="Weight of a reject.")
    ignore: float = Field(default=0.0, ge=0.0, le=1.0, description="Weight of an ignore.")
    pending_below: float = Field(
        default=PENDING_THRESHOLD,
        gt=0.0,
        le=1.0,
        description="An active memory below this confidence becomes pending_confirmation.",
    )
    confirmed: float = Field(
        default=0.6, ge=0.0, le=1.0, description="The least confidence a confirm restores."
    )
    decay_after_days: int = Field(
        default=7, ge=1, description="Days without use before the daily decay starts."
    )
    decay_min_renew_days: int = Field(
        default=30,
        ge=1,
        description="IMPLICIT fragments decay when renewed by at least this many days "
        "(a frequent user's); IMPLICIT facts always do.",
    )

    def weight(self, action: FeedbackAction) -> float:
        """The configured weight of ``action``."""
        weight: float = getattr(self, FeedbackAction(action).value)
        return weight


DEFAULT_CONFIDENCE = ConfidenceConfig()

EVENT_WEIGHTS = MappingProxyType({a.value: DEFAULT_CONFIDENCE.weight(a) for a in FeedbackAction})
"""Default weight of each feedback action."""


def feedback_action(action: object) -> FeedbackAction:
    """``action`` as a :class:`FeedbackAction`; :class:`InvalidField` (naming only the known
    actions) otherwise."""
    if isinstance(action, str) and action in EVENT_WEIGHTS:
        return FeedbackAction(action)
    known = ", ".join(sorted(EVENT_WEIGHTS))
    raise InvalidField(f"unknown feedback action; known: {known}", field="action")


def weight_for(action: str, config: ConfidenceConfig = DEFAULT_CONFIDENCE) -> float:
    """The weight of ``action``; :class:`InvalidField` for an unknown action."""
    return config.weight(feedback_action(action))


def update_confidence(old: float, weight: float) -> float:
    """``old * 0.95 + weight * 0.05``, both in [0, 1]."""
    if not (0.0 <= old <= 1.0 and 0.0 <= weight <= 1.0):
        raise InvalidField("confidence and weight must lie in [0, 1]")
    return old * DECAY + weight * (1.0 - DECAY)


def is_pending(confidence: float, config: ConfidenceConfig = DEFAULT_CONFIDENCE) -> bool:
    """Whether a memory at ``confidence`` must be confirmed before use."""
    return confidence < config.pending_below


@dataclass(frozen=True, slots=True)
class Standing:
    """A memory's confidence and status."""

    confidence: float
    status: MemoryStatus


def _settled(confidence: float, status: MemoryStatus, config: ConfidenceConfig) -> Standing:
    """``status`` re-derived from ``confidence`` where the confidence decides it."""
    if status in (MemoryStatus.ACTIVE, MemoryStatus.PENDING_CONFIRMATION):
        status = (
            MemoryStatus.PENDING_CONFIRMATION
            if is_pending(confidence, config)
            else MemoryStatus.ACTIVE
        )
    return Standing(confidence, status)


def after_feedback(
    standing: Standing, action: FeedbackAction, config: ConfidenceConfig = DEFAULT_CONFIDENCE
) -> Standing:
    """Where one feedback event leaves a memory.

    ``confirm``: at least :attr:`ConfidenceConfig.confirmed`, and active unless
    under business review. ``reject``: retired. Otherwise the status follows
    the new confidence. A retired memory stays retired.
    """
    action = FeedbackAction(action)
    if standing.status is MemoryStatus.RETIRED:
        return standing
    new = update_confidence(standing.confidence, config.weight(action))
    if action is FeedbackAction.REJECT:
        return Standing(new, MemoryStatus.RETIRED)
    if action is FeedbackAction.CONFIRM:
        new = max(new, config.confirmed)
        if standing.status is MemoryStatus.PENDING_CONFIRMATION:
            return Standing(new, MemoryStatus.ACTIVE)
    return _settled(new, standing.status, config)


def renews(action: FeedbackAction) -> bool:
    """Whether the event counts as a use of the memory (its TTL and decay clock restart)."""
    return FeedbackAction(action) in (FeedbackAction.CLICK, FeedbackAction.CONFIRM)


def _anchor(last_used_at: datetime, last_decayed_at: datetime | None, after: timedelta) -> datetime:
    start = last_used_at + after
    return start if last_decayed_at is None or last_decayed_at < start else last_decayed_at


def decay_steps(
    last_used_at: datetime,
    last_decayed_at: datetime | None,
    now: datetime,
    config: ConfidenceConfig = DEFAULT_CONFIDENCE,
) -> int:
    """Decay steps due at ``now``: one per whole day since the later of
    ``last_used_at`` plus :attr:`~ConfidenceConfig.decay_after_days` and the
    watermark ``last_decayed_at``."""
    anchor = _anchor(last_used_at, last_decayed_at, timedelta(days=config.decay_after_days))
    return 0 if now <= anchor else (now - anchor) // DAY


def decayed_through(
    last_used_at: datetime,
    last_decayed_at: datetime | None,
    steps: int,
    config: ConfidenceConfig = DEFAULT_CONFIDENCE,
) -> datetime:
    """The watermark after applying ``steps``: the anchor plus whole days, so the part of a
    day not yet decayed counts towards the next step."""
    anchor = _anchor(last_used_at, last_decayed_at, timedelta(days=config.decay_after_days))
    return anchor + steps * DAY


def after_decay(
    standing: Standing, steps: int, config: ConfidenceConfig = DEFAULT_CONFIDENCE
) -> Standing:
    """``steps`` applications of the rule with weight 0; only an active memory decays."""
    if steps <= 0 or standing.status is not MemoryStatus.ACTIVE:
        return standing
    return _settled(standing.confidence * DECAY**steps, standing.status, config)


def steps_to_pending(
    standing: Standing, config: ConfidenceConfig = DEFAULT_CONFIDENCE
) -> int | None:
    """How many daily decay steps (:func:`after_decay`) take a memory from ``standing`` to
    ``pending_confirmation``; ``None`` when the decay never moves it (it is not active).
    Finite: the threshold is positive and each step multiplies by :data:`DECAY`."""
    if standing.status is not MemoryStatus.ACTIVE:
        return None
    steps = 1
    while after_decay(standing, steps, config).status is MemoryStatus.ACTIVE:
        steps += 1
    return steps
