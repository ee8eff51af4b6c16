"""Input rules shared by both tracks: user ids, agent ids and texts.

Pure functions of their arguments; they raise typed errors and never touch I/O.
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum

from policies.errors import InvalidField, InvalidText, InvalidUserId

__all__ = [
    "MAX_ID_CHARS",
    "MAX_TEXT_BYTES",
    "check_aware",
    "check_choice",
    "check_field_length",
    "check_text",
    "check_user_id",
]

MAX_ID_CHARS = 128
"""Longest user, agent, session or entity id accepted."""

MAX_TEXT_BYTES = 64 * 1024
"""Largest memory text accepted, in UTF-8 bytes (64 KiB)."""

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
