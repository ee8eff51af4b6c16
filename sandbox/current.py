"""The current sandbox of the running context (thread or asyncio task).

``MemoryClient`` reads it when it turns a user id into a scope, so every read
and write inside ``with mem.sandbox(...)`` attaches the sandbox without being
passed, for the block's user and agent only (another agent's client in the
block works outside it, as another user's calls do). A ``contextvars.ContextVar``
gives each thread and each task its own value; ``enter``/``leave`` bracket a
block and always restore the previous one.
"""

from __future__ import annotations

import uuid
from contextvars import ContextVar, Token
from dataclasses import dataclass

__all__ = ["ActiveSandbox", "current", "enter", "leave"]


@dataclass
class ActiveSandbox:
    """The sandbox a block works in; ``sandbox_id`` changes when the block forks."""

    user_id: str
    agent_id: str | None
    session_id: str
    sandbox_id: uuid.UUID


_CURRENT: ContextVar[ActiveSandbox | None] = ContextVar("dualtrack_sandbox", default=None)


def current() -> ActiveSandbox | None:
    """The sandbox of this context, or ``None`` (long-term memory)."""
    return _CURRENT.get()


def enter(active: ActiveSandbox) -> Token[ActiveSandbox | None]:
    """Make ``active`` current; returns the token :func:`leave` needs."""
    return _CURRENT.set(active)


def leave(token: Token[ActiveSandbox | None]) -> None:
    """Restore the sandbox that was current before :func:`enter`."""
    _CURRENT.reset(token)
