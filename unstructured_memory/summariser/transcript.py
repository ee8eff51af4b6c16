"""The conversation turns the summariser reads."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal, get_args

from policies.errors import InvalidField

__all__ = ["ROLES", "Role", "Turn"]

Role = Literal["user", "assistant", "system"]
"""Who spoke a turn: the user, the agent, or the system (notices, tool output)."""

ROLES: Final[frozenset[str]] = frozenset(get_args(Role))
"""The valid roles."""


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn of a transcript; ``time`` is when it was said, if known.

    A naive ``time`` is read as UTC. An unknown ``role`` raises
    :class:`policies.errors.InvalidField`; the text is checked by the summariser.
    """

    role: Role
    text: str
    time: datetime | None = None

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise InvalidField(
                f"turn role must be one of {sorted(ROLES)}", field="role", value=str(self.role)[:32]
            )
