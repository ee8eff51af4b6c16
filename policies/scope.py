"""Who may see what: the user scope every repository and index method takes first.

A :class:`UserScope` is a pure value: the trusted user, the calling agent and
the session sandbox it works in. Each store renders it into its own filter
(``structured_memory.scoping`` for SQL, each index backend for its query
language), so the rule below is written once, here, and nowhere else:

- a row belongs to the scope's user (``user_id`` equals the scope's);
- a private row is visible only to the agent that wrote it;
- a row written inside a sandbox is visible only inside that sandbox;
  long-term rows (no sandbox) are visible everywhere;
- a row is live until its ``expires_at`` (``None``: never expires).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace

from policies.validation import check_user_id

__all__ = ["UserScope"]


@dataclass(frozen=True, slots=True)
class UserScope:
    """The trusted user (and calling agent, and sandbox) a store operation is confined to.

    Built by the SDK from a user id the calling service vouches for, or by the
    REST service from a verified JWT ``sub``; never from request data. The ids
    are validated on construction, so a scope in hand is always well formed.
    """

    user_id: str
    agent_id: str | None = None
    sandbox_id: uuid.UUID | None = None

    def __post_init__(self) -> None:
        check_user_id(self.user_id)
        if self.agent_id is not None:
            check_user_id(self.agent_id)

    def in_sandbox(self, sandbox_id: uuid.UUID | None) -> UserScope:
        """The same user and agent, working in ``sandbox_id`` (``None``: long-term memory)."""
        return replace(self, sandbox_id=sandbox_id)

    def may_see(
        self, *, user_id: str, agent_id: str | None, private: bool, sandbox_id: uuid.UUID | None
    ) -> bool:
        """Whether a row with these owners is visible in this scope (liveness aside)."""
        return (
            user_id == self.user_id
            and (not private or (agent_id is not None and agent_id == self.agent_id))
            and (sandbox_id is None or sandbox_id == self.sandbox_id)
        )
