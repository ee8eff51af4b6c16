"""When a temporary intent has lapsed: pure rules.

A session's temporary intent (``这周我出差 快递先放隔壁``, ``I'm at my sister's this week``) is
kept as a note of the session; renewed on use, it may outlive the time it names. The context
an agent reads leaves out a note whose time is over (the ledger keeps it): a day for
``今天``/``today``, a week for ``这周``/``这几天``/``this week``, a month for ``这个月``/``this
month``. A note naming no time (``暂时``, ``for now``) has not lapsed.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Final

from policies.linear_re import LinearPattern

__all__ = ["TEMPORARY_NOTE", "lapsed"]

TEMPORARY_NOTE: Final = "temporary_intent"
"""The ``note`` a temporary intent's memory carries in its metadata."""

_SPANS: Final = (
    (LinearPattern(r"这个月|本月|(?i:this month)"), timedelta(days=31)),
    (
        LinearPattern(
            r"这周|本周|这礼拜|这个礼拜|这星期|这个星期|这几天|这两天|"
            r"(?i:this week|these (?:few |couple of )?days|the next (?:few|couple of) days)"
        ),
        timedelta(days=7),
    ),
    (LinearPattern(r"今天|今晚|今儿|(?i:today|tonight)"), timedelta(days=1)),
)
"""The times a temporary intent names, longest first, and how long each lasts."""


def lapsed(text: str, said_at: datetime, now: datetime) -> bool:
    """Whether the time ``text`` (a temporary intent said at ``said_at``) names is over at
    ``now``: the longest it names, counted from ``said_at``."""
    for pattern, lasts in _SPANS:
        if pattern.search(text) is not None:
            return now - said_at > lasts
    return False
