"""Business links: what a link may point at, the user's role on it, and what its id may hold.

Pure rules, shared by the structured track (which stores links, with CHECK
constraints over these values), the SDK's verifiers and the remote client,
which checks a link before sending it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Final

from policies.errors import InvalidField
from policies.pii import PiiKind
from policies.validation import check_choice, check_no_pii

__all__ = [
    "ENTITY_LINK_TYPES",
    "BusinessEntityType",
    "LinkRole",
    "check_entity_id",
    "link_types",
]


class BusinessEntityType(StrEnum):
    """What a business link points at."""

    SUPPLIER = "supplier"
    WAREHOUSE = "warehouse"
    CONTRACT = "contract"
    ORDER = "order"
    REFUND = "refund"
    TICKET = "ticket"
    RETURN = "return"
    EXCHANGE = "exchange"
    WORK_ORDER = "work_order"


class LinkRole(StrEnum):
    """The user's role on a linked business entity."""

    ADMIN = "admin"
    VIEWER = "viewer"
    APPROVER = "approver"
    OWNER = "owner"


ENTITY_LINK_TYPES: Final[Mapping[str, str]] = {
    "ORDER_ID": BusinessEntityType.ORDER.value,
    "REFUND_ID": BusinessEntityType.REFUND.value,
    "RETURN_ID": BusinessEntityType.RETURN.value,
    "EXCHANGE_ID": BusinessEntityType.EXCHANGE.value,
    "TICKET_ID": BusinessEntityType.TICKET.value,
    "WORK_ORDER_ID": BusinessEntityType.WORK_ORDER.value,
}
"""Entity labels of memories that name a business entity, and the link type of each."""

_NUMBERED = frozenset(
    {
        BusinessEntityType.ORDER,
        BusinessEntityType.REFUND,
        BusinessEntityType.RETURN,
        BusinessEntityType.EXCHANGE,
        BusinessEntityType.TICKET,
        BusinessEntityType.WORK_ORDER,
    }
)
"""Entities a system of record numbers itself (orders, refunds, tickets, ...)."""

_NUMBER_SHAPES = frozenset({PiiKind.PHONE, PiiKind.BANK_CARD})
"""What such a number may look like: an 11-digit order number reads as a mobile number,
a 16-19-digit refund number may pass the Luhn check of a bank card."""


def check_entity_id(entity_type: str, entity_id: str) -> str:
    """``entity_id`` read with its (checked) ``entity_type`` as the cue, as the masker reads
    a number after 订单号: an order, refund, return, exchange, ticket or work-order number
    may have the shape of a phone or bank card number, never hold an e-mail, an ID card
    number or an address; a supplier, warehouse or contract id may hold no PII at all.
    Else :class:`InvalidField` (the id is stored and shown in clear)."""
    allowed = _NUMBER_SHAPES if entity_type in _NUMBERED else frozenset()
    return check_no_pii(entity_id, "entity_id", allowed=allowed)


def link_types(value: Iterable[str] | None) -> frozenset[str] | None:
    """``value`` as a set of link types (``None`` stays ``None``: every type), else
    :class:`InvalidField`."""
    if value is None:
        return None
    if not isinstance(value, Iterable) or isinstance(value, str | bytes):
        raise InvalidField("entity_types must be a list of link types", field="entity_types")
    return frozenset(check_choice(BusinessEntityType, t, "entity_types") for t in value)
