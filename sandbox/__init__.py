"""Per-session sandboxes: create, fork, archive, merge, discard; the current one in a ContextVar."""

from sandbox.current import ActiveSandbox, current, enter, leave
from sandbox.errors import SandboxClosed, SandboxNotFound
from sandbox.repository import Sandbox, SandboxRepository, Swept

__all__ = [
    "ActiveSandbox",
    "Sandbox",
    "SandboxClosed",
    "SandboxNotFound",
    "SandboxRepository",
    "Swept",
    "current",
    "enter",
    "leave",
]
