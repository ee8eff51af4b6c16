"""Lifecycle policies: every write names one, there is no default."""

from __future__ import annotations

from enum import StrEnum

from policies.errors import PolicyMissing

__all__ = ["LifecyclePolicy", "require_policy"]


class LifecyclePolicy(StrEnum):
    """How long a memory lives and how it is protected.

    - ``EXPLICIT``: the user said it; permanent until changed or deleted.
    - ``IMPLICIT``: inferred from behaviour; a TTL that each use resets.
    - ``SENSITIVE``: holds PII; encrypted in the vault, masked everywhere else.
    - ``BUSINESS``: mirrors a system of record; verified before use.
    """

    EXPLICIT = "explicit"
    IMPLICIT = "implicit"
    SENSITIVE = "sensitive"
    BUSINESS = "business"


def require_policy(value: object) -> LifecyclePolicy:
    """Return ``value`` as a policy or raise :class:`PolicyMissing`.

    Accepts a :class:`LifecyclePolicy` or its string value (from JSON).
    """
    if value is None:
        raise PolicyMissing("every write must name a lifecycle_policy; there is no default")
    if isinstance(value, LifecyclePolicy):
        return value
    if isinstance(value, str):
        try:
            return LifecyclePolicy(value.lower())
        except ValueError:
            pass
    known = ", ".join(p.value for p in LifecyclePolicy)
    raise PolicyMissing(f"unknown lifecycle_policy {value!r}; known: {known}")
