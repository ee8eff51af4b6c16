"""The audit log's vocabulary and its pure rules: actions, pseudonyms, PII-free details.

The log names a user only by a keyed pseudonym, ``HMAC-SHA256(key, user_id)``
under a random key per user that erasure destroys, so the entries outlive the
user without identifying anyone. Details are ids, codes and numbers only:
never memory text, never PII.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import uuid
from collections.abc import Mapping
from enum import Enum, StrEnum
from typing import Any

from policies.errors import InvalidField
from policies.linear_re import LinearPattern

__all__ = [
    "AUDIT_KEY_BYTES",
    "MAX_DETAILS",
    "AuditAction",
    "check_details",
    "pseudonym",
]

AUDIT_KEY_BYTES = 32
"""Length of a user's random audit key."""

MAX_DETAILS = 16
"""Most keys one entry's details may hold."""


class AuditAction(StrEnum):
    """What an audit entry records."""

    WRITE = "write"
    """A memory, fact, PII value or business link was stored."""
    DELETE = "delete"
    """A memory or fact was deleted by its user's request."""
    MERGE = "merge"
    """Sandbox items were promoted into long-term memory."""
    FORK = "fork"
    """A session's sandbox was archived and a clean one opened."""
    DISCARD = "discard"
    """A sandbox's unmerged writes were dropped."""
    FEEDBACK = "feedback"
    """A behaviour event moved a memory's confidence."""
    DECAY = "decay"
    """The scheduled decay lowered an unused inference's confidence."""
    STATUS_CHANGE = "status_change"
    """A memory moved between active, pending confirmation and retired."""
    VERIFICATION_CHANGE = "verification_change"
    """A business verifier reported a new state, or failed."""
    PROFILE_UPDATE = "profile_update"
    """The user's profile (preferences, attributes) changed."""
    EXPORT = "export"
    """Everything held about the user was exported."""
    ERASURE = "erasure"
    """The user was erased; this entry is the last that carries their pseudonym."""


_CODE = LinearPattern(r"[A-Za-z][A-Za-z0-9_.:-]{0,63}")
"""A detail string: a short code that starts with a letter (never digits alone: phone
numbers, card numbers and order ids are not codes)."""


def pseudonym(key: bytes, user_id: str) -> str:
    """The hex HMAC-SHA256 of ``user_id`` under the user's audit ``key``."""
    if len(key) != AUDIT_KEY_BYTES:
        raise InvalidField(f"an audit key has {AUDIT_KEY_BYTES} bytes")
    return hmac.new(key, user_id.encode(), hashlib.sha256).hexdigest()


def _detail(value: object) -> Any:
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidField("audit details hold finite numbers only")
        return value
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, str) and _CODE.fullmatch(value) is not None:
        return value
    raise InvalidField(
        "audit details hold ids, codes (a letter then letters, digits, _.:-) and numbers only"
    )


def check_details(details: Mapping[str, Any] | None) -> dict[str, Any]:
    """``details`` as a JSON object, or :class:`InvalidField` if it could carry PII or text.

    Keys are codes; values are ``None``, booleans, finite numbers, UUIDs, enum
    members or codes, or lists of them (at most :data:`MAX_DETAILS` items).
    """
    if details is None:
        return {}
    if len(details) > MAX_DETAILS:
        raise InvalidField(f"audit details hold at most {MAX_DETAILS} keys")
    out: dict[str, Any] = {}
    for key, value in details.items():
        if not isinstance(key, str) or _CODE.fullmatch(key) is None:
            raise InvalidField("audit detail keys are codes")
        if isinstance(value, list | tuple):
            if len(value) > MAX_DETAILS:
                raise InvalidField(f"audit detail lists hold at most {MAX_DETAILS} items")
            out[key] = [_detail(v) for v in value]
        else:
            out[key] = _detail(value)
    return out
