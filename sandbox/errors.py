"""Errors of the sandbox package (codes registered in the one error tree)."""

from __future__ import annotations

from policies.errors import Conflict, NotFound

__all__ = ["SandboxClosed", "SandboxNotFound"]


class SandboxClosed(Conflict):
    """The sandbox was forked, discarded or expired meanwhile; nothing was written.

    Reopen the session's sandbox (``mem.sandbox(user_id, session_id)``) and retry.
    """

    code = "sandbox_closed"


class SandboxNotFound(NotFound):
    """No sandbox with that id belongs to the calling user and agent (it may be another
    agent's or another user's: the answer is the same as for an id that never existed)."""

    code = "sandbox_not_found"
