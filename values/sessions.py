"""A session: the turns a caller hands over, and the record the summariser makes of them.

``end_session`` and ``append_turns`` take :class:`Turn` values and return a
:class:`SessionRecord` (its :class:`SessionSummary`: intent, entities, outcomes,
the masked one-sentence record) or :class:`TurnsAppended`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Final, Literal, get_args

from policies.errors import InvalidField
from values.dialogue import Dialogue
from values.entities import Entity

if TYPE_CHECKING:
    from policies.pii import PiiMatch

__all__ = [
    "ROLES",
    "Intent",
    "Lang",
    "Outcome",
    "Role",
    "SessionRecord",
    "SessionSummary",
    "Turn",
    "TurnsAppended",
]

Role = Literal["user", "assistant", "system"]
"""Who spoke a turn: the user, the agent, or the system (notices, tool output)."""

ROLES: Final[frozenset[str]] = frozenset(get_args(Role))
"""The valid roles."""

Lang = Literal["zh", "en"]
"""The language of a text or transcript: Chinese or English."""


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


class Intent(StrEnum):
    """The intents the classifier tells apart."""

    RETURN_REQUEST = "return_request"
    REFUND_STATUS = "refund_status"
    TRACKING_INQUIRY = "tracking_inquiry"
    COMPLAINT = "complaint"
    PRODUCT_CONSULT = "product_consult"
    INVOICE = "invoice"
    ACCOUNT = "account"
    OTHER = "other"


class Outcome(StrEnum):
    """An outcome the agent gave; the value is the code stored with the record."""

    TICKET_OPENED = "ticket_opened"
    WORK_ORDER_OPENED = "work_order_opened"
    EXCHANGE_APPROVED = "exchange_approved"
    EXCHANGE_SUBMITTED = "exchange_submitted"
    RETURN_APPROVED = "return_approved"
    RETURN_SUBMITTED = "return_submitted"
    REFUND_COMPLETED = "refund_completed"
    REFUND_ISSUED = "refund_issued"
    COUPON_ISSUED = "coupon_issued"
    INVOICE_ISSUED = "invoice_issued"
    SERVICE_OPENED = "service_opened"
    RESHIPMENT = "reshipment"
    DECLINED = "declined"


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """The record of one session; everything but ``pii`` is masked.

    ``entities`` are deduplicated by (type, text), first occurrence kept.
    ``occurred_at`` is the time of the last timed turn, else the time of the call (UTC).
    """

    user_id: str
    session_id: str
    intent: Intent
    intent_confidence: float
    entities: list[Entity]
    occurred_at: datetime
    summary_text: str
    language: Lang
    pii: list[PiiMatch] = field(repr=False)  # clear values: never in a repr or a log
    outcomes: tuple[Outcome, ...] = ()
    """What the agent did, in order of first mention (codes stored with the record)."""
    dialogue: Dialogue = field(default_factory=lambda: Dialogue(()), repr=False)
    """The session's acts after amendment (offsets only), turn ``i`` of it being
    ``turns[turn_index[i]]`` of the turns summarised."""
    turn_index: tuple[int, ...] = ()
    turn_entities: tuple[tuple[Entity, ...], ...] = field(default=(), repr=False)
    """The entities of each summarised turn (offsets into the turn), as the transcript
    read them: the profile rules read the same ones."""


@dataclass(frozen=True)
class SessionRecord:
    """What ``end_session`` stored: the record's id and the (masked) summary it came from."""

    memory_id: uuid.UUID
    summary: SessionSummary


@dataclass(frozen=True)
class TurnsAppended:
    """What ``append_turns`` stored: a memory id per non-empty turn, and the record written
    when the session gathered enough unprocessed turns (else ``None``)."""

    memory_ids: list[uuid.UUID]
    record: SessionRecord | None
