"""A session's dialogue acts as values: what each clause does, and the amendments read.

:func:`unstructured_memory.summariser.acts.read_dialogue` makes them; a
:class:`~values.sessions.SessionSummary` carries its session's :class:`Dialogue`.
Offsets and labels only, never text: no clear PII.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from values.entities import Entity

__all__ = ["Act", "ActKind", "Correction", "Dialogue", "Utterance"]


class ActKind(StrEnum):
    """What a clause does."""

    REQUEST = "request"
    INSTRUCTION = "instruction"
    PREFERENCE = "preference"
    FACT = "fact"
    CORRECTION = "correction"
    RETRACTION = "retraction"
    TEMPORARY = "temporary"
    QUESTION = "question"
    SMALL_TALK = "small_talk"
    STATEMENT = "statement"
    COMMITMENT = "commitment"
    """The agent's: a step it took or promised (``已为您提交退款``)."""


@dataclass(frozen=True, slots=True)
class Utterance:
    """One turn as the act reader sees it: the speaker, the text, its entities (offsets
    into ``text``)."""

    role: str
    text: str
    entities: tuple[Entity, ...] = ()


@dataclass(frozen=True, slots=True)
class Act:
    """One clause of turn ``turn``: ``text[start:end]`` of that turn.

    ``families`` are the kinds of request the clause names (``refund``, ``return``…,
    :data:`~unstructured_memory.summariser.cues.REQUEST_FAMILIES`); ``one_off`` that it
    is limited to the present request (``这次``); ``topics`` the keys of the lasting
    topics it states (:data:`~unstructured_memory.summariser.topics.TOPICS`, ``note``);
    ``refusal`` that it refuses a request (``不是要退款``); ``live`` that no later act
    amended it.
    """

    kind: ActKind
    role: str
    turn: int
    start: int
    end: int
    families: tuple[str, ...] = ()
    one_off: bool = False
    topics: tuple[str, ...] = ()
    refusal: bool = False
    live: bool = True


@dataclass(frozen=True, slots=True)
class Correction:
    """A correction in turn ``turn``: the value at ``right`` replaces the one at
    ``wrong`` (a ``(turn, start, end)`` span; ``None`` when nothing said matches)."""

    turn: int
    right: tuple[int, int]
    wrong: tuple[int, int, int] | None
    label: str | None
    """The entity label of the right value, or of the wrong one it replaces."""


@dataclass(frozen=True)
class Dialogue:
    """A session's acts after amendment, and the amendments themselves. Holds offsets and
    labels only, never text, so it carries no clear PII."""

    acts: tuple[Act, ...]
    corrections: tuple[Correction, ...] = ()
    retracted: tuple[str, ...] = ()
    """Request families the user took back, in order."""
    unmatched: tuple[str, ...] = ()
    """Retracted families no earlier request of this session names (an earlier one's)."""
    withdrawn_topics: tuple[str, ...] = ()
    """Keys of lasting topics the user took back ("之前说的周末送货不用了")."""
    picked: tuple[Act, ...] = ()
    """The user's clauses choosing one of the ways the agent offered ("约上门维修吧")."""
    undone: bool = False
    """Something an earlier session arranged was taken back in words naming no request:
    the agent undid an arrangement (已为您取消上门安装, visit cancelled, I've withdrawn
    PA-73019), or the user took back what no request of this session names (那单算了
    留着用吧)."""

    def live(self, role: str | None = None) -> list[Act]:
        """The live acts, of ``role`` when given."""
        return [a for a in self.acts if a.live and (role is None or a.role == role)]

    def wrong_spans(self) -> list[tuple[int, int, int]]:
        """``(turn, start, end)`` of every value corrected away."""
        return [c.wrong for c in self.corrections if c.wrong is not None]

    def pairs(self, texts: Sequence[str]) -> list[tuple[str, str]]:
        """``(wrong, right)`` of every correction, as said in ``texts`` (the turns read,
        by their index here)."""
        out = []
        for c in self.corrections:
            if c.wrong is None:
                continue
            t, a, b = c.wrong
            wrong, right = texts[t][a:b].strip(), texts[c.turn][c.right[0] : c.right[1]].strip()
            if wrong and right and wrong.casefold() != right.casefold():
                out.append((wrong, right))
        return out
