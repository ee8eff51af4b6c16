"""Per-session sandboxes: create, fork, archive, merge, discard; the current one in a ContextVar.

The repository (``Sandbox``, ``SandboxRepository``, ``Swept``) loads when first
named, so its errors and the current sandbox cost no database library.
"""

from typing import TYPE_CHECKING, Any

from sandbox.current import ActiveSandbox, current, enter, leave
from sandbox.errors import SandboxClosed, SandboxNotFound

if TYPE_CHECKING:
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

_REPOSITORY = frozenset({"Sandbox", "SandboxRepository", "Swept"})


def __getattr__(name: str) -> Any:
    if name not in _REPOSITORY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from sandbox import repository

    return getattr(repository, name)
