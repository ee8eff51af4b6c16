"""The user scope every repository and index method takes first."""

from __future__ import annotations

from dataclasses import dataclass

from policies.validation import check_user_id

__all__ = ["UserScope"]


@dataclass(frozen=True, slots=True)
class UserScope:
    """The trusted user (and calling agent) a store operation is confined to.

    Built by the SDK from a user id the calling service vouches for, or by the
    REST service from a verified JWT ``sub``; never from request data. The id
    is validated on construction, so a scope in hand is always well formed.
    """

    user_id: str
    agent_id: str | None = None

    def __post_init__(self) -> None:
        check_user_id(self.user_id)
        if self.agent_id is not None:
            check_user_id(self.agent_id)
