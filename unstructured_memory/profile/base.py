"""The profile-extractor protocol and what an extraction returns."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

from policies.profile_merge import Observation

if TYPE_CHECKING:
    from values.sessions import SessionSummary, Turn

__all__ = ["NOTE_PREFIX", "Extraction", "Instruction", "ProfileExtractor", "note_key"]

NOTE_PREFIX: Final = "note:"
"""The key prefix of a note: an instruction no topic holds, kept in its words."""


def note_key(words: str) -> str:
    """The key of a note of ``words``: :data:`NOTE_PREFIX` and a digest of them, case aside
    (the same words said again keep one note)."""
    return NOTE_PREFIX + hashlib.sha256(words.casefold().encode()).hexdigest()[:8]


@dataclass(frozen=True, slots=True)
class Instruction:
    """A direct instruction about how to treat the user that no profile field holds
    ("大件都走德邦"): stored as the explicit fact ``key``, ``text`` the user's masked
    words. A newer instruction of the same key replaces it."""

    key: str
    text: str


@dataclass(frozen=True)
class Extraction:
    """What one session (or one chunk of it) said about the user.

    ``observations`` go to :func:`policies.profile_merge.merge`; ``instructions``
    become explicit facts in the same transaction, and the explicit facts named in
    ``withdrawn`` (topics the user took back) are deleted, with the instruction or note
    each of ``revoked`` (the words the user named an earlier instruction by as they voided
    it: :func:`~unstructured_memory.profile.revoked.revoked`) finds; ``record_text``, when given,
    is the masked record sentence to store instead of the rule summary's;
    ``source`` names the extractor that produced the result and ``fallback``
    the reason code when an extractor fell back to the rules.
    """

    observations: tuple[Observation, ...]
    record_text: str | None = None
    source: str = "rules"
    fallback: str | None = None
    instructions: tuple[Instruction, ...] = ()
    withdrawn: tuple[str, ...] = ()
    revoked: tuple[str, ...] = ()


class ProfileExtractor(Protocol):
    """Turns a session's turns into profile observations (and maybe a record sentence)."""

    @property
    def name(self) -> str:
        """A short name, recorded with the record (``rules``, ``openai-<model>``)."""
        ...

    def extract(self, turns: Sequence[Turn], summary: SessionSummary) -> Extraction:
        """Observations about the user in ``turns``, stamped with ``summary``'s session.

        ``summary`` is the rule summary of the same turns. Never raises for what the
        turns say or for a failing remote service (it falls back to the rules):
        a session is never lost to extraction.
        """
        ...

    def close(self) -> None:
        """Release what the extractor holds (an HTTP connection pool)."""
        ...
