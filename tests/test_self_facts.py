"""What the user says of themselves that no topic names is kept as a note in their words,
and a fact said again with another value replaces its note
(``unstructured_memory/profile/self_facts.py``). Pure: no database."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from unstructured_memory.profile.rules import NOTE_PREFIX, RuleExtractor
from unstructured_memory.profile.self_facts import frame
from unstructured_memory.summariser.summary import summarise
from values.sessions import Role, Turn


def _notes(*turns: tuple[Role, str]) -> dict[str, str]:
    said = [Turn(role, text) for role, text in turns]
    extraction = RuleExtractor().extract(said, summarise("buyer-sf-01", "s-1", said))
    return {i.key: i.text for i in extraction.instructions if i.key.startswith(NOTE_PREFIX)}


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        ("我在医院上班，白天一般接不到电话", "我在医院上班"),
        ("我是老客户了，你们家东西买了好几年", "我是老客户了"),
        ("I'm left-handed, so the mouse needs to be symmetric", "I'm left-handed"),
        ("I have a small apartment, no dishwasher", "I have a small apartment"),
        ("I've got two kids under five, so nothing with small parts", "two kids under five"),
        ("我喜欢简约风的，花里胡哨的不要", "我喜欢简约风的"),
        ("娃肠胃敏感，奶粉别乱换", "娃肠胃敏感"),
        ("我睡眠浅，晚上别打电话", "我睡眠浅"),
        ("I prefer matte finishes, glossy shows fingerprints", "I prefer matte finishes"),
        ("I work nights, so please don't call before 2pm", "I work nights"),
        ("I commute two hours a day", "commute two hours"),
        ("As someone who's left-handed, will this mouse actually be comfy for me", "left-handed"),
        ("can it come on a friday? I work from home on Fridays", "I work from home on Fridays"),
        ("Oh and I can't stand coriander, can that be left out?", "can't stand coriander"),
        ("作为一个左撇子，这把剪刀我能用吗", "作为一个左撇子"),
    ],
)
def test_a_fact_no_topic_names_is_kept_in_the_users_words(said: str, kept: str) -> None:
    notes = _notes(("user", said))
    assert any(kept in text for text in notes.values()), notes


@pytest.mark.parametrize(
    "said",
    [
        "我有个问题想问下",
        "我在等快递，什么时候到",
        "我是上周买的，订单 5530217",
        "我对这个很失望",
        "我家里有个快递没收到",
        "I have a question about my order 5530217",
        "I'm not happy with it at all",
        "I'm calling about the refund",
        "I am waiting for the parcel",
        "我刚收到货，我觉得还行吧",
        "我不太懂这些",
        "I tried resetting it, I just want my money back",
        "Okay, and texts are better than email for me, I miss emails.",
        "默认送公司就行 星河大厦 前台会收",
    ],
)
def test_the_matter_at_hand_a_feeling_or_an_activity_is_no_fact(said: str) -> None:
    assert _notes(("user", said)) == {}


def test_a_fact_with_pii_is_not_kept_as_a_note() -> None:
    notes = _notes(("user", "我是 13812345678 这个号的机主，家住幸福小区"))
    assert not any("13812345678" in text for text in notes.values()), notes


def test_a_fact_said_again_with_another_value_keeps_the_key_of_the_old_one() -> None:
    before = _notes(("user", "I commute two hours a day"))
    after = _notes(("user", "I commute three hours a day now"))
    assert set(before) == set(after), (before, after)
    assert any("three hours" in text for text in after.values())
    other = _notes(("user", "我在医院上班，白天一般接不到电话"))
    assert set(other) != set(before)


@given(st.sampled_from(["三", "四", "5", "两", "六"]), st.sampled_from(["", "现在", "已经"]))
def test_a_frame_ignores_numbers_and_words_of_change(n: str, change: str) -> None:
    assert frame(f"我们家{change}{n}口人") == frame("我们家三口人")
    assert frame(f"We {change and 'now '}have {n} cats".replace("  ", " ")) == frame(
        "We have 3 cats"
    )


def test_a_liking_of_a_session_the_user_amended_is_not_kept() -> None:
    notes = _notes(
        ("user", "I'd like the Stanley Quencher 40 oz in Rose Quartz"),
        ("assistant", "Rose Quartz is back-ordered for two weeks; Azure ships today."),
        ("user", "Two weeks is too long. I'll take the blue one instead."),
    )
    assert not any("Rose Quartz" in text for text in notes.values()), notes
    kept = _notes(
        ("user", "我在医院上班，冰箱要静音的"),
        ("assistant", "推荐这款 500 升的"),
        ("user", "算了，还是要那款 450 升的吧"),
    )
    assert any("医院上班" in text for text in kept.values()), kept  # a fact survives
