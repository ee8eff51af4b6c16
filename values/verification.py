"""What a system of record says about a business entity, and the errors of asking it.

A caller registers a :class:`Verifier` per link type; each check gives a
:class:`Verification` (see ``sdk.verification`` for how verifiers are run).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Protocol

from policies.errors import ConfigurationError, DualtrackError, InvalidField, StoreUnavailable
from policies.validation import check_aware

__all__ = [
    "MAX_DETAIL_CHARS",
    "MAX_STATE_CHARS",
    "BusinessState",
    "Verification",
    "VerificationStatus",
    "Verifier",
    "VerifierMissing",
    "VerifierTimeout",
    "VerifierUnavailable",
]

MAX_STATE_CHARS = 128
"""Longest state a verifier may report (it is stored on the link)."""

MAX_DETAIL_CHARS = 1024
"""Longest detail a verifier may report (returned, never stored)."""


class VerifierUnavailable(StoreUnavailable):
    """A verifier raised, or answered with something that is not a :class:`BusinessState`."""

    code = "verifier_unavailable"


class VerifierTimeout(VerifierUnavailable):
    """A verifier did not answer within ``verifier_timeout_ms``."""

    code = "verifier_timeout"


class VerifierMissing(ConfigurationError):
    """No verifier is registered for the link type."""

    code = "verifier_missing"


class VerificationStatus(StrEnum):
    """The outcome of verifying one business entity."""

    VERIFIED = "verified"
    """The system of record reported the state stored before (or the first one)."""
    CHANGED = "changed"
    """It reported another state: the link was refreshed and the change audited."""
    UNKNOWN = "unknown"
    """The system of record does not know the entity."""
    UNVERIFIED = "unverified"
    """No answer (error, timeout, no verifier, not linked): nothing here is current."""


@dataclass(frozen=True)
class BusinessState:
    """What a system of record reports about one entity: ``state`` ("已到账",
    "cancelled"), an optional ``detail``, and the time the state held (``as_of``,
    timezone-aware; default now). PII in either text is masked before it is stored
    or returned."""

    state: str
    detail: str | None = None
    as_of: datetime = field(default_factory=lambda: datetime.now(UTC))

    def __post_init__(self) -> None:
        if not isinstance(self.state, str) or not self.state.strip():
            raise InvalidField("state must be a non-empty string", field="state")
        if len(self.state) > MAX_STATE_CHARS:
            raise InvalidField(f"state is over {MAX_STATE_CHARS} characters", field="state")
        if self.detail is not None and (
            not isinstance(self.detail, str) or len(self.detail) > MAX_DETAIL_CHARS
        ):
            raise InvalidField(
                f"detail must be a string of at most {MAX_DETAIL_CHARS} characters",
                field="detail",
            )
        if not isinstance(self.as_of, datetime):
            raise InvalidField("as_of must be a datetime", field="as_of")
        check_aware(self.as_of, "as_of")


class Verifier(Protocol):
    """Asks a system of record for the live state of one business entity."""

    def __call__(self, entity_type: str, entity_id: str, /) -> BusinessState | None:
        """The entity's live state, or ``None`` when the system of record does not know it.

        ``entity_type`` is a link type (``order``, ``refund``, ``return``,
        ``exchange``, ``ticket``, ``work_order``, ...). Called from pool
        threads, concurrently: it must be thread-safe. Any exception it raises
        makes the entity ``unverified`` (logged by class name only, never its
        message); so does not answering within ``verifier_timeout_ms``.
        """
        ...


@dataclass(frozen=True)
class Verification:
    """One business entity linked to the user, as checked just now.

    ``state``, ``detail``, ``as_of`` and ``verified_at`` are set only when
    ``status`` is ``verified`` or ``changed``: they are current.
    ``previous_state`` and ``previous_verified_at`` are what the link held
    before this check: the last verified state, a lead to confirm, never the
    live state. ``error`` says why an entity is ``unverified``.
    """

    entity_type: str
    entity_id: str
    status: VerificationStatus
    state: str | None = None
    detail: str | None = None
    as_of: datetime | None = None
    verified_at: datetime | None = None
    previous_state: str | None = None
    previous_verified_at: datetime | None = None
    error: DualtrackError | None = None

    @property
    def current(self) -> bool:
        """Whether ``state`` is the live state (``verified`` or ``changed``)."""
        return self.status in (VerificationStatus.VERIFIED, VerificationStatus.CHANGED)
