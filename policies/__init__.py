"""Pure rules, no I/O: lifecycle policies, TTLs, confidence, validation, errors."""

from policies.errors import DualtrackError
from policies.lifecycle import LifecyclePolicy
from policies.scope import UserScope

__all__ = ["DualtrackError", "LifecyclePolicy", "UserScope"]
