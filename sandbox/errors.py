"""Errors of the sandbox package (codes registered in the one error tree)."""

from __future__ import annotations

from policies.errors import Conflict

__all__ = ["SandboxClosed"]


class SandboxClosed(Conflict):
    """The sandbox was forked, discarded or expired meanwhile; nothing was written.

    Reopen the session's sandbox (``mem.sandbox(user_id, session_id)``) and retry.
    """

    code = "sandbox_closed"
