"""Input rules shared by both tracks: user ids, agent ids, session ids and texts.

Pure functions of their arguments; they raise typed errors and never touch I/O.
"""

from __future__ import annotations

import json
import math
import re
import uuid
from collections.abc import Collection
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from policies.errors import InvalidField, InvalidText, InvalidUserId
from policies.pii import PiiKind, find_pii

__all__ = [
    "MAX_ID_CHARS",
    "MAX_JSON_DEPTH",
    "MAX_QUERY_BYTES",
    "MAX_TEXT_BYTES",
    "check_aware",
    "check_bool",
    "check_choice",
    "check_device_field",
    "check_field_length",
    "check_int",
    "check_json",
    "check_json_depth",
    "check_no_pii",
    "check_number",
    "check_session_id",
    "check_source",
    "check_text",
    "check_timestamp",
    "check_user_id",
    "check_uuid",
]

MAX_ID_CHARS = 128
"""Longest user, agent, session or entity id accepted."""

MAX_TEXT_BYTES = 64 * 1024
"""Largest memory text accepted, in UTF-8 bytes (64 KiB)."""

MAX_QUERY_BYTES = 4096
"""Largest search query accepted, in UTF-8 bytes."""

_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@\-]*")


def check_user_id(user_id: object) -> str:
    """Return ``user_id`` if it is a well-formed id, else raise :class:`InvalidUserId`.

    Allowed: 1-128 characters from ``A-Z a-z 0-9 _ . : @ -``, starting with a
    letter or digit. The message never echoes the id (it may be PII).
    """
    if not isinstance(user_id, str):
        raise InvalidUserId(f"user id must be a string, got {type(user_id).__name__}")
    if not user_id or len(user_id) > MAX_ID_CHARS or not _ID_RE.fullmatch(user_id):
        raise InvalidUserId(
            f"user id must be 1-{MAX_ID_CHARS} characters of A-Z a-z 0-9 _ . : @ - "
            "starting with a letter or digit",
            length=len(user_id),
        )
    return user_id


def check_text(
    text: object, *, field: str = "text", max_bytes: int = MAX_TEXT_BYTES, allow_empty: bool = False
) -> str:
    """Return ``text`` as a clean ``str`` or raise :class:`InvalidText`.

    ``bytes`` must decode as strict UTF-8. A ``str`` must encode as UTF-8 (no
    lone surrogates, as ``surrogateescape`` decoding leaves) and hold no NUL,
    which PostgreSQL ``text`` cannot store. Whitespace-only counts as empty.
    """
    if isinstance(text, bytes | bytearray):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidText(
                f"{field} is not valid UTF-8 (byte {exc.start})", field=field
            ) from None
    if not isinstance(text, str):
        raise InvalidText(f"{field} must be a string, got {type(text).__name__}", field=field)
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidText(
            f"{field} is not valid UTF-8 (lone surrogate at character {exc.start})", field=field
        ) from None
    if "\x00" in text:
        raise InvalidText(f"{field} contains a NUL character", field=field)
    if size > max_bytes:
        raise InvalidText(
            f"{field} is {size} bytes; the limit is {max_bytes} bytes", field=field, limit=max_bytes
        )
    if not allow_empty and not text.strip():
        raise InvalidText(f"{field} is empty", field=field)
    return text


def check_field_length(field: str, value: str, max_chars: int) -> str:
    """Return ``value`` if it is at most ``max_chars`` characters, else raise."""
    checked = check_text(value, field=field, max_bytes=4 * max_chars, allow_empty=True)
    if len(checked) > max_chars:
        raise InvalidField(
            f"{field} is {len(checked)} characters; the limit is {max_chars}",
            field=field,
            limit=max_chars,
        )
    return checked


def check_no_pii(value: str, field: str, *, allowed: Collection[PiiKind] = ()) -> str:
    """``value`` unless the PII masker (:func:`policies.pii.find_pii`) finds in it a kind
    outside ``allowed``: :class:`InvalidField` naming the field and the kind, never the value.

    For fields kept and shown in clear (session ids, a device's os and browser, a
    fact's source, a link's entity id): outside the vault, erasure cannot reach them.
    """
    for match in find_pii(value):
        if match.kind not in allowed:
            raise InvalidField(
                f"{field} holds personal data (a {match.kind.value.replace('_', ' ')}); "
                "it is kept in clear, so it may hold none",
                field=field,
                kind=match.kind.value,
            )
    return value


def check_session_id(session_id: object) -> str:
    """``session_id`` if it is a string of at most :data:`MAX_ID_CHARS` characters holding no
    PII (:func:`check_no_pii`: ``wx-13987654321`` or an e-mail is refused), else
    :class:`InvalidField`. Whether it may be empty is the caller's rule."""
    if not isinstance(session_id, str):
        raise InvalidField("session_id must be a string", field="session_id")
    return check_no_pii(check_field_length("session_id", session_id, MAX_ID_CHARS), "session_id")


def check_device_field(field: str, value: str) -> str:
    """A device's ``os`` or ``browser`` if it is at most 64 characters holding no PII (they
    are stored and listed in clear), else :class:`InvalidField`."""
    return check_no_pii(check_field_length(field, value, 64), field)


def check_source(source: str) -> str:
    """A fact's ``source`` if it is at most 64 characters holding no PII (it is stored and
    shown in clear), else :class:`InvalidField`."""
    return check_no_pii(check_field_length("source", source, 64), "source")


def check_choice(choices: type[StrEnum], value: str, field: str) -> str:
    """``value`` if it is one of the enum's values, else :class:`InvalidField` listing them."""
    try:
        return choices(str(value)).value
    except ValueError:
        known = ", ".join(c.value for c in choices)
        raise InvalidField(
            f"unknown {field.replace('_', ' ')} {str(value)[:64]!r}; known: {known}", field=field
        ) from None


def check_aware(value: datetime | None, field: str) -> datetime | None:
    """``value`` unless it is a naive datetime (:class:`InvalidField`); ``None`` passes."""
    if value is not None and value.tzinfo is None:
        raise InvalidField(f"{field} must be timezone-aware", field=field)
    return value


EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)
LATEST = datetime(2200, 1, 1, tzinfo=UTC)


def check_timestamp(value: datetime | None, field: str) -> datetime | None:
    """``value`` if it is timezone-aware and lies in [1900, 2200) UTC, else :class:`InvalidField`.

    The range keeps every stored time readable back in any time zone (a
    ``datetime.min`` at UTC+14 would not be), and within what the search
    indexes can hold. ``None`` passes.
    """
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise InvalidField(f"{field} must be a datetime", field=field)
    check_aware(value, field)
    try:
        utc = value.astimezone(UTC)
    except (OverflowError, ValueError):
        utc = None
    if utc is None or not EARLIEST <= utc < LATEST:
        raise InvalidField(f"{field} must lie between 1900 and 2200 (UTC)", field=field)
    return value


def check_json(value: Any, field: str, *, max_bytes: int) -> Any:
    """``value`` if it is JSON PostgreSQL can store, else :class:`InvalidField`.

    Refused: non-JSON types, NaN and infinities, NUL characters (``jsonb``
    cannot hold ``\\u0000``), lone surrogates, and more than
    ``max_bytes`` of UTF-8. The message never echoes the value.
    """
    try:
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        reason = "a NaN or infinite number" if "Out of range float" in str(exc) else "not JSON"
        raise InvalidField(f"{field} is {reason}", field=field) from None
    if "\\u0000" in encoded:
        raise InvalidField(f"{field} contains a NUL character", field=field)
    check_text(encoded, field=field, max_bytes=max_bytes, allow_empty=True)
    return value


MAX_JSON_DEPTH = 32
"""Deepest nesting of lists and objects accepted in stored JSON (metadata, attributes, facts)."""

_MAX_JSON_NODES = 100_000


def check_json_depth(value: Any, field: str, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``value`` if its lists and objects nest at most ``max_depth`` deep, else raise.

    Deeper values store fine but fail to serialise on the way out (``export_user``),
    so they are refused on the way in (:class:`InvalidField`). Iterative, with a
    bound on the values visited, so neither deep nor self-referencing input can
    exhaust the stack.
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    visited = 0
    while stack:
        item, depth = stack.pop()
        visited += 1
        if visited > _MAX_JSON_NODES:
            raise InvalidField(f"{field} holds too many values", field=field)
        if isinstance(item, dict | list | tuple):
            if depth > max_depth:
                raise InvalidField(
                    f"{field} nests deeper than {max_depth} levels", field=field, limit=max_depth
                )
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return value


def check_int(value: object, field: str, *, low: int, high: int) -> int:
    """``value`` if it is an ``int`` (not a ``bool``) in ``[low, high]``, else raise
    :class:`InvalidField`."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidField(f"{field} must be an integer in {low}..{high}", field=field)
    return value


def check_number(value: object, field: str, *, low: float, high: float) -> float:
    """``value`` as a ``float`` if it is a finite number (not a ``bool``) in ``[low, high]``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not low <= value <= high
    ):
        raise InvalidField(f"{field} must be a number in [{low}, {high}]", field=field)
    return float(value)


def check_bool(value: object, field: str) -> bool:
    """``value`` if it is a ``bool``, else :class:`InvalidField`."""
    if not isinstance(value, bool):
        raise InvalidField(f"{field} must be true or false", field=field)
    return value


def check_uuid(value: object, field: str) -> uuid.UUID:
    """``value`` as a UUID (a ``UUID`` or its string form), else :class:`InvalidField`."""
    if isinstance(value, uuid.UUID):
        return value
    if isinstance(value, str) and len(value) <= 64:
        try:
            return uuid.UUID(value)
        except ValueError:
            pass
    raise InvalidField(f"{field} must be a UUID", field=field)
