"""``make demo`` tells the design's story, and the story holds: the day-2 prompt carries
the refund with its verified state, order 88231 and the S10 Pro, unrepeated."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from sdk import Settings
from sdk.demo import run


def test_the_demo_story_holds(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    assert settings.postgres_dsn is not None
    assert settings.pii_keys is not None
    monkeypatch.setenv("DUALTRACK_POSTGRES_DSN", settings.postgres_dsn.get_secret_value())
    monkeypatch.setenv("DUALTRACK_PII_KEYS", settings.pii_keys.get_secret_value())
    monkeypatch.setenv("DUALTRACK_DATA_DIR", str(settings.data_dir))
    out = io.StringIO()
    contexts = run(Console(file=out, width=120))
    refund = contexts["refund"].text
    assert "RF20260629001：已到账（已核实" in refund, "the state verified overnight"
    assert "退款处理中" not in refund
    assert "88231" in refund
    assert "通知渠道 wechat" in refund, "day 1's 以后有事微信通知我 is an instruction, live at once"
    assert "不回充" in refund, "the record keeps why the user asked for the refund"
    assert "S10 Pro" in contexts["recommend"].text
    assert "3000" not in contexts["fresh"].text, "the fork started from long-term memory"
    assert "messages" in out.getvalue()
