"""Compatibility: the conversation turns, re-exported for one release.

They are ``values.sessions``'s now; import them from there.
"""

from values.sessions import ROLES, Role, Turn

__all__ = ["ROLES", "Role", "Turn"]
