"""What the user disowns of what they told an earlier session about themselves stops being
asserted: the words are read (``unstructured_memory/profile/disowned.py``), the profile slot
holding them takes what holds instead (``policies.profile_merge.DISOWNED``), and records and
notes show them as replaced. Pure tests first, then one through a real store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from policies.profile_merge import (
    DISOWNED,
    Observation,
    ObservationKind,
    ProfileState,
    Stable,
    merge,
)
from sdk import MemoryClient
from sdk.context import record_items
from tests.learned_fixtures import learned_profile, record_hit
from unstructured_memory.profile.disowned import Disowned, disowned
from unstructured_memory.profile.rules import RuleExtractor
from unstructured_memory.summariser import summarise
from values.hits import MemoryHit
from values.records import Profile
from values.sessions import Lang, Turn

T0 = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("lang", "said", "words", "now"),
    [
        ("zh", "上回说我家是地暖 我搞错了 那是我姐家 我家是暖气片", "地暖", "暖气片"),
        (
            "zh",
            "之前跟你们说我乳糖不耐受 其实不是 医院查过了 是喝冰的才拉肚子",
            "乳糖不耐受",
            "喝冰的",
        ),
        ("zh", "上次说我高血压那个，其实不是，复查了好几次血压都正常", "高血压", "血压都正常"),
        ("zh", "以前告诉你们我家有两只猫，说错了，是两只狗", "两只猫", "两只狗"),
        ("zh", "哦对了上回我说闺女对虾过敏 搞错了 查了过敏原 是螃蟹", "虾过敏", "螃蟹"),
        (
            "en",
            "I told you my daughter was allergic to peanuts, that's wrong, it's tree nuts",
            "peanuts",
            "tree nuts",
        ),
        (
            "en",
            "that dishwasher thing I told you last time — wrong, that's my parents' place. "
            "we wash everything by hand here. can I return the pods?",
            "dishwasher",
            "by hand",
        ),
        (
            "en",
            "correction from last time, the dog isn't mine, he's my neighbour's. I don't have pets",
            "dog",
            "neighbour",
        ),
        (
            "en",
            "I told you I had a gas stove, but that's wrong, it's induction",
            "gas stove",
            "induction",
        ),
        (  # a mix-up owned, the thing said named without its subject
            "zh",
            "跟你们说一声 上回说的过敏那个是我搞混了 过敏的是我闺女 不是我",
            "过敏",
            "闺女",
        ),
        ("zh", "之前提的腰椎间盘突出那事记混了 是我爸 我腰没事", "腰椎间盘突出", "我爸"),
        (
            "en",
            "wait, ignore the latex thing, I was mixing it up with my old roommate",
            "latex",
            "roommate",
        ),
        (
            "en",
            "forget the night shift bit, that was wrong, I work days now",
            "night shift",
            "work days",
        ),
    ],
)
def test_a_statement_pointed_back_at_and_denied_is_disowned(
    lang: Lang, said: str, words: str, now: str
) -> None:
    (found,) = disowned(said, lang)
    assert found.words == words
    assert now in found.now
    assert "?" not in found.now
    assert "？" not in found.now


@pytest.mark.parametrize(
    ("lang", "said"),
    [
        ("zh", "我不是素食者 只是最近在减肥"),  # a denial with no pointer back: the acts' negation
        ("zh", "你上次说的不对 快递根本没到"),  # the agent's words, not the user's of themselves
        ("zh", "我对虾过敏…哦不对 是螃蟹"),  # put right in the same breath: a correction
        ("zh", "上次说的那个地址不对，改成公司"),  # nothing said of the user themselves
        ("en", "I'm not vegetarian, just cutting back"),
        ("en", "the dog isn't mine"),  # no pointer back: someone else's dog now
        ("en", "I said I wanted the blue one, wrong, the red one"),  # a choice, not the user
        ("zh", "上次说的地址那个是我搞错了 改成公司"),  # an address put right: the vault's
        ("en", "ignore the blue thing, the red one please"),  # no mix-up: a choice
    ],
)
def test_a_denial_without_a_pointer_back_at_the_user_disowns_nothing(lang: Lang, said: str) -> None:
    assert disowned(said, lang) == []


@given(st.text(max_size=200))
def test_any_text_reads_without_error_and_disowns_words_it_holds(text: str) -> None:
    for lang in ("zh", "en"):
        for d in disowned(text, lang):
            assert isinstance(d, Disowned)
            assert d.words
            assert "".join(d.words.split()) in "".join(text.split())


def test_an_id_or_pii_disowned_is_not_kept_as_words() -> None:
    assert disowned("之前说我手机号是13812345678，其实不对", "zh") == []


def _disown(words: str, value: str, at: datetime) -> Observation:
    return Observation(ObservationKind.FACT, DISOWNED, value, "s-2", at, replaces=words)


def test_the_slot_holding_the_disowned_words_takes_what_holds_instead() -> None:
    state = ProfileState(
        facts={
            "diet": Stable("我乳糖不耐受 一喝牛奶就拉肚子", T0, "s-1"),
            "pet": Stable("养了一只布偶猫", T0, "s-1"),
        }
    )
    merged = merge(
        state, [_disown("乳糖不耐受", "不是乳糖不耐受：是喝冰的才拉肚子", T0 + timedelta(days=3))]
    )
    diet = merged.state.facts["diet"]
    assert diet.value == "不是乳糖不耐受：是喝冰的才拉肚子"
    assert diet.formerly[0] == "乳糖不耐受"
    assert "我乳糖不耐受 一喝牛奶就拉肚子" in diet.formerly
    assert merged.state.facts["pet"].value == "养了一只布偶猫"  # another slot stays
    assert [c.slot for c in merged.changes] == ["diet"]


def test_disowned_words_no_slot_holds_get_a_slot_of_their_own() -> None:
    merged = merge(ProfileState(), [_disown("地暖", "不是地暖：我家是暖气片", T0)])
    ((slot, held),) = merged.state.facts.items()
    assert slot.startswith(f"{DISOWNED}:")
    assert held.formerly == ("地暖",)


def test_a_value_said_after_the_disowning_is_not_taken_back() -> None:
    state = ProfileState(facts={"diet": Stable("我乳糖不耐受", T0 + timedelta(days=5), "s-3")})
    merged = merge(state, [_disown("乳糖不耐受", "不是乳糖不耐受", T0)])
    assert merged.state.facts["diet"].value == "我乳糖不耐受"


def test_the_extractor_says_what_was_disowned_and_keeps_no_note_of_it() -> None:
    turns = [
        Turn("user", "上回说我家是地暖 我搞错了 那是我姐家 我家是暖气片", T0),
        Turn("assistant", "好的，记下您家是暖气片供暖。", T0 + timedelta(minutes=1)),
    ]
    extraction = RuleExtractor().extract(turns, summarise("u", "s-2", turns))
    (o,) = [o for o in extraction.observations if o.key == DISOWNED]
    assert o.replaces == "地暖"
    assert "暖气片" in o.value
    assert o.value.startswith("不是地暖")
    assert not [i.text for i in extraction.instructions if "地暖" in i.text]


def _profile(learned: dict[str, Any]) -> Profile:
    return learned_profile(learned, T0)


def _hit(text: str) -> MemoryHit:
    return record_hit(text, T0)


def test_a_record_shows_the_disowned_words_as_replaced() -> None:
    entry = {"value": "不是地暖：我家是暖气片", "formerly": ["地暖", "我家是地暖"]}
    learned = {"facts": {f"{DISOWNED}:1a2b3c4d": entry}}
    (item,) = record_items(
        _profile(learned), [_hit("用户咨询实木复合地板：能铺地暖上吗 我家是地暖")]
    )
    assert "地暖" not in item.text, item.text
    assert "[已更新]" in item.text


def test_disowned_words_stop_being_asserted_for_every_agent(mem: MemoryClient) -> None:
    """Through the store: the first session's note and record name 地暖; after the user
    disowns it, the profile says what holds instead and the context names 地暖 nowhere but as
    replaced (the record) or denied (the profile line)."""
    user = "buyer-disowned"
    mem.profiles.ensure(user)
    then = datetime.now(UTC) - timedelta(days=20)
    for n, said in enumerate(
        [
            "这款实木复合地板能铺地暖上吗 我家是地暖",
            "上回说我家是地暖 我搞错了 那是我姐家 我家是暖气片",
        ]
    ):
        at = then + timedelta(days=7 * n)
        turns = [
            Turn("user", said, at),
            Turn("assistant", "好的，明白了。", at + timedelta(minutes=1)),
        ]
        mem.end_session(user, f"s-{n}", turns)
    notes = [str(f.value) for f in mem.facts.list(user)]
    assert not [n for n in notes if "地暖" in n], notes
    context = mem.build_context(user, "想买个加湿器 家里暖气太干了", max_tokens=600).text
    assert "暖气片" in context, context
    for line in context.splitlines():
        assert "地暖" not in line or "不是地暖" in line, context


def test_a_latin_word_disowned_is_found_whole_only() -> None:
    state = ProfileState(
        facts={
            "pet": Stable("my dog sheds a lot", T0, "s-1"),
            "device_model": Stable("Hotdog toaster", T0, "s-1"),
        }
    )
    merged = merge(state, [_disown("dog", "not dog: he's my neighbour's", T0 + timedelta(days=1))])
    assert merged.state.facts["pet"].value.startswith("not dog")
    assert merged.state.facts["device_model"].value == "Hotdog toaster"
