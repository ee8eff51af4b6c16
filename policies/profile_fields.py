"""The fields of a user's profile a caller may change, and the check of each.

Pure functions of the values given (no I/O): the structured track runs them
before it writes a change, the remote client before it sends one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from policies.errors import InvalidField
from policies.validation import check_field_length, check_json, check_json_depth

__all__ = ["MAX_ATTRIBUTES_BYTES", "MAX_SUMMARY_CHARS", "NOTIFICATION_CHANNELS", "validate_changes"]

NOTIFICATION_CHANNELS = frozenset({"email", "wechat", "sms", "app_push", "phone"})
"""The channels ``notification_preference`` may name."""
MAX_ATTRIBUTES_BYTES = 64 * 1024
"""Largest ``attributes`` accepted, as JSON in UTF-8 bytes."""
MAX_SUMMARY_CHARS = 4000
"""Longest ``profile_summary`` accepted."""


def _check_timezone(value: object) -> str:
    if not isinstance(value, str):
        raise InvalidField(
            "timezone must be an IANA name such as 'Asia/Shanghai'", field="timezone"
        )
    name = check_field_length("timezone", value, 64)
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise InvalidField(
            "unknown timezone (an IANA name such as 'Asia/Shanghai')", field="timezone"
        ) from None
    return name


def _check_language(value: object) -> str:
    if not isinstance(value, str):
        raise InvalidField("language must be a string such as 'zh-CN'", field="language")
    return check_field_length("language", value, 16)


def _check_notifications(value: object) -> dict[str, bool]:
    if not isinstance(value, Mapping) or not all(isinstance(v, bool) for v in value.values()):
        raise InvalidField(
            "notification_preference must map channels to true/false",
            field="notification_preference",
        )
    if not set(value) <= NOTIFICATION_CHANNELS:
        raise InvalidField(
            f"unknown notification channel; known: {sorted(NOTIFICATION_CHANNELS)}",
            field="notification_preference",
        )
    return dict(value)


def _check_attributes(value: object) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise InvalidField("attributes must be a JSON object", field="attributes")
    attributes = dict(value)
    check_json(
        check_json_depth(attributes, "attributes"), "attributes", max_bytes=MAX_ATTRIBUTES_BYTES
    )
    return attributes


def _check_summary(value: object) -> str:
    if not isinstance(value, str):
        raise InvalidField("profile_summary must be a string", field="profile_summary")
    return check_field_length("profile_summary", value, MAX_SUMMARY_CHARS)


_VALIDATORS: dict[str, Callable[[object], Any]] = {
    "timezone": _check_timezone,
    "language": _check_language,
    "notification_preference": _check_notifications,
    "attributes": _check_attributes,
    "profile_summary": _check_summary,
}


def validate_changes(changes: Mapping[str, object]) -> dict[str, Any]:
    """Check profile changes; raise :class:`InvalidField` for an unknown or bad field.

    ``notification_preference`` changes are partial: the given channels are
    merged into the stored preference by :meth:`ProfileRepository.update`.
    """
    if not isinstance(changes, Mapping):
        raise InvalidField("profile changes must be a mapping of field names", field="changes")
    unknown = [name for name in changes if name not in _VALIDATORS]
    if unknown:
        raise InvalidField(
            f"{len(unknown)} unknown profile field(s); known: {sorted(_VALIDATORS)}",
            field="changes",
        )
    return {name: _VALIDATORS[name](value) for name, value in changes.items()}
