"""A profile holding learned slots and a record hit, for the context's pure tests."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from values.hits import MemoryHit
from values.records import Profile


def learned_profile(learned: dict[str, Any], at: datetime, language: str = "zh-CN") -> Profile:
    """A profile whose ``attributes["learned"]`` is ``learned``, made and updated at ``at``."""
    return Profile(
        user_id="u",
        created_at=at,
        updated_at=at,
        timezone="Asia/Shanghai",
        language=language,
        notification_preference={},
        attributes={"learned": learned},
        profile_summary="",
        version=1,
    )


def record_hit(text: str, at: datetime) -> MemoryHit:
    """A search hit of an interaction record saying ``text``, said at ``at``."""
    return MemoryHit(
        memory_id=uuid.uuid4(),
        text=text,
        score=1.0,
        intent="general",
        entities=[],
        occurred_at=at,
        metadata={},
        policy="implicit",
        kind="record",
        session_id="s1",
        keyword_score=None,
        vector_score=None,
    )
