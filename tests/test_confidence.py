"""The pure confidence rules: feedback, status, and the daily decay (no database)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from policies.confidence import (
    DAY,
    DEFAULT_CONFIDENCE,
    ConfidenceConfig,
    FeedbackAction,
    MemoryStatus,
    Standing,
    after_decay,
    after_feedback,
    decay_steps,
    decayed_through,
    feedback_action,
    steps_to_pending,
    weight_for,
)
from policies.errors import InvalidField

ACTIVE, PENDING = MemoryStatus.ACTIVE, MemoryStatus.PENDING_CONFIRMATION
T0 = datetime(2026, 6, 29, 9, 30, tzinfo=UTC)

times = st.datetimes(
    min_value=datetime(2024, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC)
)
offsets = st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=400))
unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
statuses = st.sampled_from(list(MemoryStatus))
actions = st.sampled_from(list(FeedbackAction))


def test_skipping_the_video_three_times_makes_the_preference_a_question() -> None:
    """用户跳过视频三次 → "偏好视频讲解" is no longer served as a fact."""
    video = Standing(0.33, ACTIVE)
    for _ in range(3):
        video = after_feedback(video, FeedbackAction.SKIP)
    assert video.confidence == pytest.approx(0.33 * 0.95**3)
    assert video.status is PENDING
    # "您还希望接收视频内容吗？" → 是的
    confirmed = after_feedback(video, FeedbackAction.CONFIRM)
    assert confirmed == Standing(0.6, ACTIVE)
    # → 不用了
    assert after_feedback(video, FeedbackAction.REJECT).status is MemoryStatus.RETIRED


def test_clicks_on_text_raise_the_text_preference() -> None:
    """偏好图文: each click moves it up by 5% of the gap."""
    text = Standing(0.5, ACTIVE)
    text = after_feedback(text, FeedbackAction.CLICK)
    assert text.status is ACTIVE
    assert text.confidence == pytest.approx(0.525)


def test_weights_are_configurable() -> None:
    config = ConfidenceConfig(skip=0.2)
    assert weight_for("skip", config) == 0.2
    assert after_feedback(Standing(1.0, ACTIVE), FeedbackAction.SKIP, config).confidence == (
        pytest.approx(0.96)
    )
    with pytest.raises(ValidationError):
        ConfidenceConfig(skip=1.5)
    with pytest.raises(ValidationError):
        ConfidenceConfig(teleport=0.5)  # type: ignore[call-arg]


@pytest.mark.parametrize("action", ["teleport", "", None, 3, "CLICK"])
def test_unknown_actions_are_refused(action: object) -> None:
    with pytest.raises(InvalidField) as caught:
        feedback_action(action)
    assert "click" in caught.value.message


def test_a_business_memory_under_review_keeps_its_status() -> None:
    review = Standing(0.5, MemoryStatus.NEEDS_REVIEW)
    assert after_feedback(review, FeedbackAction.CONFIRM).status is MemoryStatus.NEEDS_REVIEW
    assert after_feedback(review, FeedbackAction.SKIP).status is MemoryStatus.NEEDS_REVIEW
    assert after_feedback(review, FeedbackAction.REJECT).status is MemoryStatus.RETIRED


@given(confidence=unit, status=statuses, action=actions)
def test_feedback_keeps_confidence_in_the_unit_interval_and_retired_for_good(
    confidence: float, status: MemoryStatus, action: FeedbackAction
) -> None:
    after = after_feedback(Standing(confidence, status), action)
    assert 0.0 <= after.confidence <= 1.0
    if status is MemoryStatus.RETIRED:
        assert after == Standing(confidence, status)
    if status in (ACTIVE, PENDING) and action not in (FeedbackAction.REJECT,):
        assert (after.status is PENDING) == (after.confidence < 0.3)
    if action is FeedbackAction.CONFIRM and status is not MemoryStatus.RETIRED:
        assert after.confidence >= 0.6


# -- the decay schedule ----------------------------------------------------------------------


def test_the_first_step_is_on_the_eighth_day_without_use() -> None:
    assert decay_steps(T0, None, T0 + 7 * DAY) == 0
    assert decay_steps(T0, None, T0 + 8 * DAY - timedelta(seconds=1)) == 0
    assert decay_steps(T0, None, T0 + 8 * DAY) == 1
    assert decay_steps(T0, None, T0 + 10 * DAY + timedelta(hours=5)) == 3


def test_a_use_restarts_the_clock() -> None:
    through = decayed_through(T0, None, 3, DEFAULT_CONFIDENCE)
    used = T0 + 11 * DAY
    assert decay_steps(used, through, used + 7 * DAY) == 0
    assert decay_steps(used, through, used + 9 * DAY) == 2


@settings(max_examples=300)
@given(used=times, first=offsets, second=offsets)
def test_daily_runs_end_where_one_late_run_would(
    used: datetime, first: timedelta, second: timedelta
) -> None:
    """Idempotent per day, and additive: running at t1 then t2 applies as many steps in
    total as one run at t2; a second run at the same moment applies none."""
    t1, t2 = used + first, used + first + second
    s1 = decay_steps(used, None, t1)
    mark = decayed_through(used, None, s1) if s1 else None
    assert decay_steps(used, mark, t1) == 0
    s2 = decay_steps(used, mark, t2)
    assert s1 + s2 == decay_steps(used, None, t2)
    assert mark is None or mark <= t1


@given(used=times, later=offsets, mark=st.none() | offsets)
def test_steps_count_whole_days_beyond_the_week(
    used: datetime, later: timedelta, mark: timedelta | None
) -> None:
    now = used + later
    watermark = None if mark is None else used + mark
    steps = decay_steps(used, watermark, now)
    assert steps >= 0
    assert steps <= max(0, (later - 7 * DAY) // DAY)
    next_day = decay_steps(used, watermark, now + DAY)
    assert next_day - steps in (0, 1)
    if steps:
        assert next_day == steps + 1


@given(confidence=unit, steps=st.integers(min_value=0, max_value=400))
def test_decay_is_the_rule_with_weight_zero(confidence: float, steps: int) -> None:
    after = after_decay(Standing(confidence, ACTIVE), steps)
    assert after.confidence == pytest.approx(confidence * 0.95**steps, abs=1e-12)
    if steps:
        assert (after.status is PENDING) == (after.confidence < 0.3)
    for status in (PENDING, MemoryStatus.RETIRED, MemoryStatus.NEEDS_REVIEW):
        assert after_decay(Standing(confidence, status), steps) == Standing(confidence, status)


def test_a_strong_inference_takes_weeks_to_become_a_question() -> None:
    """From 1.0, 24 unused days beyond the first week reach pending (0.95**24 < 0.3)."""
    assert after_decay(Standing(1.0, ACTIVE), 23).status is ACTIVE
    assert after_decay(Standing(1.0, ACTIVE), 24).status is PENDING


@given(
    st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
    st.floats(min_value=0.01, max_value=1.0, allow_nan=False),
)
def test_steps_to_pending_is_the_first_decay_step_below_the_threshold(
    confidence: float, threshold: float
) -> None:
    config = ConfidenceConfig(pending_below=threshold)
    standing = Standing(confidence, MemoryStatus.ACTIVE)
    steps = steps_to_pending(standing, config)
    assert steps is not None
    assert steps >= 1
    assert after_decay(standing, steps, config).status is MemoryStatus.PENDING_CONFIRMATION
    assert after_decay(standing, steps - 1, config).status is MemoryStatus.ACTIVE
    for status in (MemoryStatus.PENDING_CONFIRMATION, MemoryStatus.NEEDS_REVIEW):
        assert steps_to_pending(Standing(confidence, status), config) is None
