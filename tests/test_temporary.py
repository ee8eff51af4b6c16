"""When a temporary intent has lapsed (pure, no database)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from policies.temporary import lapsed

SAID = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "days", "over"),
    [
        ("这周我在外地培训 快递先放物业 回来了还是送家里", 10, True),
        ("这周我在外地培训 快递先放物业 回来了还是送家里", 3, False),
        ("这几天家里没人，先放快递柜", 9, True),
        ("今天家里停电，先别送了", 2, True),
        ("今天家里停电，先别送了", 0, False),
        ("I'm at my sister's this week, leave parcels at the porch next door", 12, True),
        ("I'm at my sister's this week, leave parcels at the porch next door", 4, False),
        ("For today only, send it to the gym on Elm Street", 3, True),
        ("这个月在老家，快递寄到老家", 20, False),
        ("这个月在老家，快递寄到老家", 40, True),
        ("暂时先发邮件给我", 60, False),  # no time named: not lapsed
    ],
)
def test_a_temporary_intent_lapses_with_the_time_it_names(text: str, days: int, over: bool) -> None:
    assert lapsed(text, SAID, SAID + timedelta(days=days)) is over
