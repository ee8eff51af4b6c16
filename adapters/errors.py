"""The adapters' own errors, in the one tree of :mod:`policies.errors`::

InvalidInput
└── InvalidField
    └── NamespaceWithoutUser   a store namespace that names no user
"""

from __future__ import annotations

from policies.errors import InvalidField

__all__ = ["NamespaceWithoutUser"]


class NamespaceWithoutUser(InvalidField):
    """A store namespace (or prefix) that does not reach the user segment of the store's
    layout, or whose labels do not match it: no memory is read or written without a user."""

    code = "namespace_without_user"
