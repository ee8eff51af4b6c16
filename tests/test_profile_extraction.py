"""Profile extraction at session end: the merge rules (pure, property-tested), the rules +
NER extractor, the optional chat extractor against a local stand-in server, and the rules
end to end through ``end_session``.

The stand-in (stdlib ``http.server`` on 127.0.0.1, port 0) answers
``POST /v1/chat/completions`` from a per-test script: an answer text, an HTTP status,
``hang`` (answers after the client timeout) or ``garbage`` (a body that is no completion).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from policies.audit import AuditAction
from policies.errors import ConfigurationError
from policies.linear_re import LinearPattern
from policies.profile_merge import (
    PREVIOUS,
    Candidate,
    ChangeKind,
    Observation,
    ObservationKind,
    ProfileState,
    Stable,
    merge,
)
from policies.scope import UserScope
from sdk import MemoryClient
from sdk.settings import Settings
from structured_memory.audit import recent, subject_of
from tests.test_regex_linear import _collect
from unstructured_memory.profile import create_extractor, openai_chat, rules
from unstructured_memory.profile.openai_chat import ChatExtractor, parse_answer
from unstructured_memory.profile.rules import RuleExtractor
from unstructured_memory.summariser import outcome as outcome_module
from unstructured_memory.summariser import summarise
from values.sessions import Turn

FACT, PREF, TEMP = ObservationKind.FACT, ObservationKind.PREFERENCE, ObservationKind.TEMPORARY
T0 = datetime(2026, 7, 1, 10, 0, tzinfo=UTC)
DAY = timedelta(days=1)
USER = "buyer-profile-01"
ADDRESS = "北京市朝阳区建国路88号"
PHONE = "13912345678"


def obs(  # noqa: PLR0917 (a compact constructor for many tests)
    kind: ObservationKind,
    key: str,
    value: str,
    session: str,
    minute: int = 0,
    scenario: str | None = None,
) -> Observation:
    return Observation(kind, key, value, session, T0 + timedelta(minutes=minute), scenario)


# --------------------------------------------------------------------------- merge rules


def test_an_objective_fact_takes_the_newest_value() -> None:
    s = merge(ProfileState(), [obs(FACT, "member_level", "银卡会员", "s1", 0)]).state
    s = merge(s, [obs(FACT, "member_level", "金卡会员", "s2", 10)]).state
    assert s.facts["member_level"].value == "金卡会员"
    late = merge(s, [obs(FACT, "member_level", "银卡会员", "s0", -60)])
    assert late.state.facts["member_level"].value == "金卡会员", "an older session merged late"
    assert late.changes == ()


def test_a_device_switched_to_replaces_the_one_the_user_had() -> None:
    """One device per product: a device switched to takes the slot of the one before it,
    said with another product word or none (a charger for it), and remembers it."""
    s = ProfileState()
    s = merge(s, [obs(FACT, "device_model", "Dell XPS 15", "s1", 10)]).state
    s = merge(s, [obs(FACT, "device_model", "石头 G20", "s1", 11, scenario="扫地机")]).state
    new = replace(obs(FACT, "device_model", "ThinkPad X1", "s2", 20, "电脑包"), replaces=PREVIOUS)
    s = merge(s, [new]).state
    assert s.facts["device_model"].value == "ThinkPad X1"
    assert s.facts["device_model"].formerly == ("Dell XPS 15",)
    assert s.facts["device_model@扫地机"].value == "石头 G20", "another product's stays"
    one = merge(ProfileState(), [obs(FACT, "device_model", "iPhone 13", "s1", 10)]).state
    one = merge(one, [replace(new, scenario=None)]).state
    assert one.facts["device_model"].formerly == ("iPhone 13",)


def test_a_replaced_fact_remembers_what_it_was_newest_first() -> None:
    s = ProfileState()
    for n, model in enumerate(["iPhone 13", "iPhone 15", "华为 Mate 60 Pro", "iPhone 15"]):
        s = merge(s, [obs(FACT, "device_model", model, f"s{n}", 10 * n, scenario="手机")]).state
    assert s.facts["device_model@手机"].value == "iPhone 15"
    assert s.facts["device_model@手机"].formerly == ("华为 Mate 60 Pro", "iPhone 13")
    same = merge(s, [obs(FACT, "device_model", "iPhone 15", "s9", 90, scenario="手机")]).state
    assert same.facts["device_model@手机"].formerly == ("华为 Mate 60 Pro", "iPhone 13")
    many = s
    for n in range(6):
        many = merge(many, [obs(FACT, "member_level", f"V{n}会员", f"m{n}", 100 + n)]).state
    assert many.facts["member_level"].formerly == ("V4会员", "V3会员", "V2会员"), "three kept"


def test_a_replaced_preference_remembers_what_it_was() -> None:
    said = Observation(PREF, "budget", "5000元", "s1", T0, "self", explicit=True)
    s = merge(ProfileState(), [said]).state
    s = merge(s, [replace(said, value="3000元", session_id="s2", observed_at=T0 + DAY)]).state
    assert s.preferences["budget@self"].formerly == ("5000元",)


@pytest.mark.parametrize(
    ("known", "said", "slot", "kept"),
    [
        (
            {"family@son": "My son wears a kids' size 12"},
            ("~he", "he's in a 13 now"),
            "family@son",
            True,
        ),
        (
            {"family@儿子": "儿子5岁", "family@女儿": "女儿8岁"},
            ("~she", "她现在9岁了"),
            "family@女儿",
            True,
        ),
        ({"pet": "家里柯基11公斤"}, ("~it", "它最近减到9公斤了"), "pet", True),
        (
            {"pet": "Our beagle Pretzel is 12 kg"},
            ("~name:Pretzel", "Pretzel's down to 10 kg"),
            "pet",
            True,
        ),
        (
            {"family@儿子": "儿子5岁", "family@老公": "老公在国外"},
            ("~he", "他现在12岁了"),
            None,
            False,
        ),
        ({"family@女儿": "女儿8岁"}, ("~he", "他现在12岁了"), None, False),
        ({}, ("~it", "it's 12 kg now"), None, False),
    ],
)
def test_a_trait_said_of_he_she_it_or_a_name_goes_to_the_one_it_can_mean(
    known: dict[str, str], said: tuple[str, str], slot: str | None, kept: bool
) -> None:
    state = ProfileState(facts={k: Stable(v, T0, "s1") for k, v in known.items()})
    key = "pet" if said[0] == "~it" else "family"  # a name may be a pet's or a person's
    merged = merge(state, [obs(FACT, key, said[1], "s2", 10, scenario=said[0])]).state
    assert not [s for s in merged.facts if "~" in s], "a reference is never a slot"
    if kept:
        assert slot is not None
        assert merged.facts[slot].value == said[1]
        assert merged.facts[slot].formerly == (known[slot],)
    else:
        assert merged.facts == state.facts, "nobody it can mean: nothing changes"


def test_a_trait_referred_to_in_the_session_that_named_them_adds_to_what_it_said() -> None:
    son = obs(FACT, "family", "My son wears a kids' size 12", "s1", 0, scenario="son")
    he = obs(FACT, "family", "He's 7", "s1", 1, scenario="~he")
    facts = merge(ProfileState(), [son, he]).state.facts
    assert facts["family@son"].value == "My son wears a kids' size 12, He's 7"
    assert facts["family@son"].formerly == ()
    again = merge(ProfileState(facts=facts), [son, he])
    assert again.changes == ()
    assert again.state.facts == facts, "merging the same session again changes nothing"
    later = obs(FACT, "family", "he's in a 13 now", "s2", 60, scenario="~he")
    once = merge(ProfileState(facts=facts), [later]).state
    assert merge(once, [later]).state == once


def test_a_fact_restated_differently_takes_its_words_out_of_every_slot() -> None:
    said = "我女儿对芒果过敏"
    s = merge(
        ProfileState(),
        [obs(FACT, "diet", said, "s1", 0), obs(FACT, "family", said, "s1", 0, scenario="女儿")],
    ).state
    later = merge(s, [obs(FACT, "diet", "她其实是对猕猴桃过敏", "s2", 10)])
    assert later.state.facts["diet"].value == "她其实是对猕猴桃过敏"
    assert "family@女儿" not in later.state.facts, "the old words stood as the daughter too"
    assert later.state.facts["diet"].formerly == (said,)
    assert merge(later.state, [obs(FACT, "diet", "她其实是对猕猴桃过敏", "s2", 10)]).changes == ()


def test_a_preference_is_a_candidate_until_two_more_sessions_confirm_it() -> None:
    s = ProfileState()
    for i, session in enumerate(["s1", "s2"]):
        m = merge(s, [obs(PREF, "content_format", "image_text", session, i)])
        s = m.state
        assert "content_format" not in s.preferences
        assert s.candidates[("content_format", "image_text")].sessions == ("s1", "s2")[: i + 1]
        assert m.changes[0].kind is ChangeKind.CANDIDATE
    m = merge(s, [obs(PREF, "content_format", "image_text", "s3", 2)])
    assert m.state.preferences["content_format"].value == "image_text"
    assert m.state.preferences["content_format"].sessions == 3
    assert m.state.candidates == {}
    assert m.changes[0].kind is ChangeKind.PREFERENCE_SET


def test_a_stable_preference_is_not_overturned_by_one_mention() -> None:
    stable = Stable("email", T0, "s0", sessions=3)
    s = ProfileState(preferences={"notification_channel": stable})
    s = merge(s, [obs(PREF, "notification_channel", "wechat", "s1", 1)]).state
    assert s.preferences["notification_channel"].value == "email"
    assert ("notification_channel", "wechat") in s.candidates


def test_repeats_within_one_session_count_once_and_the_threshold_is_configurable() -> None:
    said = [obs(PREF, "notification_channel", "wechat", "s1", i) for i in range(5)]
    s = merge(ProfileState(), said).state
    assert s.candidates[("notification_channel", "wechat")].sessions == ("s1",)
    assert "notification_channel" not in s.preferences
    now = merge(ProfileState(), said[:1], confirmations=0).state
    assert now.preferences["notification_channel"].value == "wechat"
    with pytest.raises(ValueError, match="confirmations"):
        merge(ProfileState(), said, confirmations=-1)


def test_reaffirming_the_stable_value_drops_the_rivals() -> None:
    s = ProfileState(preferences={"content_format": Stable("text", T0, "s0")})
    s = merge(s, [obs(PREF, "content_format", "video", "s1", 1)]).state
    s = merge(s, [obs(PREF, "content_format", "video", "s2", 2)]).state
    s = merge(s, [obs(PREF, "content_format", "text", "s3", 3)]).state
    assert s.candidates == {}
    s = merge(s, [obs(PREF, "content_format", "video", "s4", 4)]).state
    assert s.preferences["content_format"].value == "text", "the count started over"


def test_scenario_specific_preferences_coexist() -> None:
    said = [
        obs(PREF, "budget", "2000-3000元", s, i, scenario="self")
        for i, s in enumerate(["s1", "s2", "s3"])
    ] + [
        obs(PREF, "budget", "500元", s, 10 + i, scenario="parents")
        for i, s in enumerate(["s1", "s2", "s3"])
    ]
    s = merge(ProfileState(), said).state
    assert s.preferences["budget@self"].value == "2000-3000元"
    assert s.preferences["budget@parents"].value == "500元"


def test_temporary_intents_never_enter_the_profile() -> None:
    said = [obs(TEMP, "intent", "下周出差，暂时不报销", "s1")]
    m = merge(ProfileState(), said, confirmations=0)
    assert m.state == ProfileState()
    assert m.temporary == tuple(said)
    assert m.changes == ()


def test_a_candidate_too_old_to_be_kept_changes_nothing_twice() -> None:
    """Six rival candidates of one slot: the oldest is not kept, so merging it again is no
    change (a regression: it used to be added, evicted, and reported as a change each time)."""
    recent = [obs(PREF, "content_format", f"v{i}", f"s{i}", 10 + i) for i in range(5)]
    state = merge(ProfileState(), recent).state
    old = [obs(PREF, "content_format", "oldest", "s9", 0)]
    once = merge(state, old)
    assert once.changes == ()
    assert merge(once.state, old).changes == ()
    assert len(once.state.candidates) == 5


def test_a_candidate_dropped_later_in_the_same_merge_is_no_change() -> None:
    """A candidate (a) recorded and then dropped when a rival (b) became stable in the same
    merge is not reported: merging the same sessions again changes nothing."""
    said = [obs(PREF, "budget", "a", "s1", 0, scenario="self")] + [
        obs(PREF, "budget", "b", s, 0, scenario="self") for s in ("s2", "s3", "s4")
    ]
    once = merge(ProfileState(), said)
    assert once.state.preferences["budget@self"].value == "b"
    assert merge(once.state, said).changes == ()


_sessions = st.sampled_from(["s1", "s2", "s3", "s4"])
_observations = st.builds(
    obs,
    st.sampled_from([FACT, PREF, TEMP]),
    st.sampled_from(["member_level", "notification_channel", "budget"]),
    st.sampled_from(["a", "b", "c"]),
    _sessions,
    st.integers(-5, 5),
    st.sampled_from([None, "self", "parents"]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_observations, max_size=12), st.lists(_observations, max_size=12))
def test_merging_the_same_observations_again_changes_nothing(
    first: list[Observation], again: list[Observation]
) -> None:
    once = merge(merge(ProfileState(), first).state, again)
    twice = merge(once.state, again)
    assert twice.state == once.state
    assert twice.changes == ()


@settings(max_examples=300, deadline=None)
@given(st.lists(_observations, max_size=12), st.lists(_observations, max_size=6))
def test_temporary_observations_change_nothing(
    said: list[Observation], temporary: list[Observation]
) -> None:
    noise = [
        Observation(TEMP, o.key, o.value, o.session_id, o.observed_at, o.scenario)
        for o in temporary
    ]
    mixed = [x for pair in zip(said, noise, strict=False) for x in pair] + said[len(noise) :]
    assert merge(ProfileState(), mixed).state == merge(ProfileState(), said).state


@settings(max_examples=300, deadline=None)
@given(st.permutations([obs(FACT, "member_level", v, f"s{i}", i) for i, v in enumerate("abcde")]))
def test_the_newest_fact_wins_in_any_merge_order(said: list[Observation]) -> None:
    s = ProfileState()
    for o in said:
        s = merge(s, [o]).state
    assert s.facts["member_level"].value == "e"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(_sessions, st.sampled_from(["x", "y"])), max_size=10),
    st.integers(0, 3),
)
def test_a_stable_preference_changes_only_after_enough_sessions(
    said: list[tuple[str, str]], confirmations: int
) -> None:
    """A rival becomes stable only once ``1 + confirmations`` distinct sessions said it
    with no mention of the stable value since the last reset."""
    s = ProfileState(preferences={"notification_channel": Stable("stable", T0, "s0")})
    rivals: dict[str, set[str]] = {}
    for i, (session, value) in enumerate(said):
        before = s.preferences["notification_channel"].value
        s = merge(
            s,
            [obs(PREF, "notification_channel", value, session, i)],
            confirmations=confirmations,
        ).state
        after = s.preferences["notification_channel"].value
        if value == before:
            rivals = {}
        else:
            rivals.setdefault(value, set()).add(session)
        if after != before:
            assert after == value
            assert len(rivals[value]) >= 1 + confirmations
            rivals = {}
        else:
            assert value == before or len(rivals[value]) < 1 + confirmations


@settings(max_examples=200, deadline=None)
@given(st.lists(_observations, max_size=12))
def test_slots_are_independent(said: list[Observation]) -> None:
    only_self = [o for o in said if o.scenario == "self"]
    merged = merge(ProfileState(), said).state
    alone = merge(ProfileState(), only_self).state
    assert {k: v for k, v in merged.preferences.items() if k.endswith("@self")} == dict(
        alone.preferences
    )
    assert {k: c for k, c in merged.candidates.items() if k[0].endswith("@self")} == {
        k: c for k, c in alone.candidates.items() if k[0].endswith("@self")
    }


def test_candidates_per_slot_are_bounded() -> None:
    said = [obs(PREF, "budget", f"{i}00元", f"s{i}", i) for i in range(1, 9)]
    s = merge(ProfileState(), said).state
    assert len(s.candidates) == 5
    assert min(c.last_seen for c in s.candidates.values()) == T0 + timedelta(minutes=4)
    assert all(isinstance(c, Candidate) for c in s.candidates.values())


# --------------------------------------------------------------------------- rules + NER


def _extract(*texts: str) -> list[tuple[str, str, str]]:
    """What the rules observe, a value marked ``!`` when said as an instruction (explicit)
    and ``-`` when refused (negated)."""
    turns = [Turn("user", t, T0) for t in texts]
    found = RuleExtractor().extract(turns, summarise("u", "s", turns)).observations
    return [
        (o.kind.value, o.slot, ("-" if o.negated else "!" if o.explicit else "") + o.value)
        for o in found
    ]


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        (
            "我是金卡会员，以后微信通知我就行",
            [
                ("fact", "member_level", "金卡会员"),
                ("preference", "notification_channel", "!wechat"),
            ],
        ),
        (
            "我是金卡会员，微信通知我就行",  # asked of the agent: a direct instruction
            [
                ("fact", "member_level", "金卡会员"),
                ("preference", "notification_channel", "!wechat"),
            ],
        ),
        (
            "我是金卡会员，微信就行",  # a liking said in passing
            [
                ("fact", "member_level", "金卡会员"),
                ("preference", "notification_channel", "wechat"),
            ],
        ),
        (
            "发图文说明就好，不要视频",
            [
                ("preference", "content_format", "!image_text"),
                ("preference", "content_format", "-video"),
            ],
        ),
        ("不要视频", [("preference", "content_format", "-video")]),
        (
            "别再发邮件了，有事打电话",
            [
                ("preference", "notification_channel", "-email"),
                ("preference", "notification_channel", "!phone"),
            ],
        ),
        (
            "不用打电话，发短信就行",
            [
                ("preference", "notification_channel", "-phone"),
                ("preference", "notification_channel", "!sms"),
            ],
        ),
        ("这次用短信通知我", []),
        (
            "预算：自用 2000-3000 元；为父母选购 500 元档",
            [
                ("preference", "budget@self", "!2000-3000元"),  # a budget stated: explicit
                ("preference", "budget@parents", "500元"),
                ("fact", "family@父母", "为父母选购 500 元档"),
            ],
        ),
        ("我的手机是华为 Mate 60", [("fact", "device_model@手机", "华为 Mate 60")]),
        (
            "订单 88231 的比特 S10 Pro 扫地机无法回充",
            [("fact", "device_model@扫地机", "比特 S10 Pro")],
        ),
        ("下周出差，暂时不报销", [("temporary", "intent", "下周出差，暂时不报销")]),
        ("这周先用短信联系我", [("temporary", "intent", "这周先用短信联系我")]),
        ("下周能发货吗", []),
        ("1999 元买的", []),
        (
            "I'm a gold member, notify me by email. Budget under $300 for my parents.",
            [
                ("fact", "member_level", "gold member"),
                ("preference", "notification_channel", "!email"),
                ("preference", "budget@parents", "!$300"),
                ("fact", "family@parents", "Budget under $300 for my parents"),
            ],
        ),
    ],
)
def test_rules_read_what_the_user_said(said: str, expected: list[tuple[str, str, str]]) -> None:
    assert _extract(said) == expected


@pytest.mark.parametrize(
    ("said", "devices"),
    [
        ("这个 66W 的头能给 Mate 60 满速充吗 我手机就是 Mate 60", ["Mate 60"]),
        (
            "Is this case the right cutout for a Pixel 8 Pro? The camera bar is huge on mine.",
            ["Pixel 8 Pro"],
        ),
        ("这个A4纸跟我那台兄弟DCP-T725DW适配吧，别卡纸", ["兄弟 DCP-T725DW"]),
        ("Is this case right for a Pixel 8 Pro?", []),  # asked about, not owned
        ("滤网啥时候发啊 3309217758 家里石头P10 Pro都报警好几天了", ["石头 P10 Pro"]),
        ("our dishwasher is a Bosch SMS4HVI33E, do these tabs fit", ["Bosch SMS4HVI33E"]),
        ("we have a Skoda Octavia estate, 2019", ["Skoda Octavia"]),
    ],
)
def test_a_device_the_user_says_is_theirs(said: str, devices: list[str]) -> None:
    assert [v for _, slot, v in _extract(said) if slot.startswith("device_model")] == devices


@pytest.mark.parametrize(
    ("said", "devices"),
    [
        ("华为 P40 的钢化膜还有货吗", [("device_model", "华为 P40")]),
        ("OPPO Find X7 的屏幕碎了能修吗", [("device_model", "OPPO Find X7")]),
        ("荣耀 X50 的充电头还有吗", [("device_model", "荣耀 X50")]),
        ("do you stock screen protectors for the Galaxy S23?", [("device_model", "Galaxy S23")]),
        ("filters for my Shark NV360 please", [("device_model", "Shark NV360")]),
        (
            "Need a charger for my Dell XPS 15, the old one frayed",
            [("device_model", "Dell XPS 15")],
        ),
        # the device's product is the one named in its own clause, not what is bought for it
        ("我家扫地机是石头 G20，给我来两套滤网和边刷", [("device_model@扫地机", "石头 G20")]),
        ("Mate 60 的价格多少", []),  # what it costs: asked about, not owned
        ("Mate 60 的续航怎么样", []),
        ("给我妈的 iPhone 13 的壳有吗", []),  # someone else's
        ("screen protectors for a Galaxy S23?", []),  # any one: asked about
    ],
)
def test_a_model_something_is_bought_for_is_the_users_device(
    said: str, devices: list[tuple[str, str]]
) -> None:
    got = [(slot, v) for _, slot, v in _extract(said) if slot.startswith("device_model")]
    assert got == devices


@pytest.mark.parametrize(
    ("said", "devices"),
    [
        ("订单 6555104 的电饭煲用着用着屏幕跳个 E3", []),
        ("订单 6555104 的美的 C21 一开机就显示 E1 然后断电", ["美的 C21"]),
        ("my dishwasher keeps showing E24, order 551207", []),
        ("The display on my Bosch throws error code F21 every morning", ["Bosch"]),
    ],
)
def test_a_code_the_thing_shows_is_no_device(said: str, devices: list[str]) -> None:
    """An error code shown (跳个 E3, 显示 E1, showing E24, error code F21) is no model."""
    assert [v for _, slot, v in _extract(said) if slot.startswith("device_model")] == devices


@pytest.mark.parametrize(
    ("said", "devices"),
    [
        (
            [
                "Which ink fits an Epson ET-2800?",
                "Wait, I looked at the sticker, it is an ET-2850, not the 2800. Same ink?",
            ],
            ["ET-2850"],
        ),
        (
            ["这个滤芯米家净水器 600G 能用吗", "我刚看了下机器背面 写的是 H800G 不是 600G"],
            ["H800G"],
        ),
        (["想买 Mate 60 有货吗", "不对，是 Mate 60 Pro，不是 Mate 60"], []),  # what they want
    ],
)
def test_a_model_put_right_from_the_thing_itself_is_the_users(
    said: list[str], devices: list[str]
) -> None:
    """Looked up on the thing (its label, its settings), a model put right is what they have."""
    got = [v for _, slot, v in _extract(*said) if slot.startswith("device_model")]
    assert got[-1:] == devices


@pytest.mark.parametrize(
    ("said", "devices"),
    [
        ("我的车是 22款宋PLUS EV 前排头枕有点松", [("device_model@车", "22款宋PLUS EV")]),
        ("这个座套我那车是海鸥 24款的 能装吗", [("device_model@车", "海鸥 24款")]),
        ("问下这个膜，我的是10th gen 10.9寸的", [("device_model", "10th gen 10.9寸")]),
        ("mine's a Fairphone (5) so the port is usb-c", [("device_model", "Fairphone (5)")]),
        (
            "My car is a 2017 Honda Civic hatchback, do the mats fit",
            [
                ("device_model@car", "2017 Honda Civic"),
            ],
        ),
        ("我用的是 21款途观L 330TSI 这个脚垫能装吗", [("device_model", "21款途观L 330TSI")]),
        ("我家开的是蔚来 ES6，充电桩能装吗", [("device_model", "蔚来 ES6")]),
        ("I drive a 2015 Subaru Outback, will it fit", [("device_model", "2015 Subaru Outback")]),
        ("we've got a Breville Barista Pro at home", [("device_model", "Breville Barista Pro")]),
        ("I have a question about Prime", []),
        ("I use a Visa card", []),  # one word, no model: not said to be a device
        ("我用的是微信支付", []),
        ("我的是 XL 码的", []),  # a size
        ("我的是上周三到的", []),
        ("我车是白色的", []),
        ("我觉得是 iPhone 的问题", []),  # no possession: what the user thinks
        ("my name is Tom Lee", []),
        ("my husband is a Leo", []),
        ("我的订单是 6630712", []),
    ],
)
def test_what_the_users_thing_is_said_to_be_is_their_device(
    said: str, devices: list[tuple[str, str]]
) -> None:
    got = [(slot, v) for _, slot, v in _extract(said) if slot.startswith("device_model")]
    assert got == devices


@pytest.mark.parametrize(
    ("said", "device"),
    [
        ("小米的不用了，换成了 vivo X100 Pro", "vivo X100 Pro"),
        ("上个月升级到了荣耀 Magic6，这个壳能用吗", "荣耀 Magic6"),
        ("I switched over to a ThinkPad X1 in May", "ThinkPad X1"),
        ("finally upgraded to an iPhone 15 Pro, need a case", "iPhone 15 Pro"),
    ],
)
def test_a_device_switched_to_replaces_the_previous_one(said: str, device: str) -> None:
    turns = [Turn("user", said, T0)]
    found = RuleExtractor().extract(turns, summarise("u", "s", turns)).observations
    got = [(o.value, o.replaces) for o in found if o.key == "device_model"]
    assert got == [(device, PREVIOUS)]


def test_a_device_merely_owned_replaces_nothing() -> None:
    turns = [Turn("user", "我的手机是华为 Mate 60，这个壳能用吗", T0)]
    found = RuleExtractor().extract(turns, summarise("u", "s", turns)).observations
    assert [o.replaces for o in found if o.key == "device_model"] == [None]


@pytest.mark.parametrize(
    ("said", "family"),
    [
        ("School uniforms for my twins, Mia and Leo", "School uniforms for my twins, Mia and Leo"),
        ("replacement, no question. we have a newborn", "we have a newborn"),
        ("宝宝五个月 得能登机的那种", "宝宝五个月 得能登机的那种"),
        ("We're expecting our first baby in March", "We're expecting our first baby in March"),
    ],
)
def test_children_and_a_baby_on_the_way_are_family(said: str, family: str) -> None:
    assert [v for _, slot, v in _extract(said) if slot.startswith("family")] == [family]


@pytest.mark.parametrize(
    ("said", "diet"),
    [
        ("体检说我贫血，医生让我多补蛋白", "医生让我多补蛋白"),
        ("大夫说我得少吃盐，咸的就算了", "大夫说我得少吃盐"),
        ("我在控糖，含糖的别推荐", "我在控糖"),
        ("My doctor wants me to cut down on salt", "My doctor wants me to cut down on salt"),
        ("I'm doing keto, so nothing sugary", "I'm doing keto"),
        ("I'm on a low-sodium diet", "I'm on a low-sodium diet"),
    ],
)
def test_a_diet_the_user_keeps_is_a_fact(said: str, diet: str) -> None:
    assert [v for _, slot, v in _extract(said) if slot == "diet"] == [diet]


@pytest.mark.parametrize(
    "said",
    ["医生让我多休息几天", "The doctor said it's nothing serious", "这款是低盐酱油吗"],
)
def test_rest_or_a_product_low_in_salt_is_no_diet(said: str) -> None:
    assert not [slot for _, slot, _ in _extract(said) if slot == "diet"]


@pytest.mark.parametrize(
    ("said", "slot"),
    [
        ("our son is 12 and plays football every weekend", "family@son"),
        ("Our daughter starts school in September", "family@daughter"),
        ("我们家闺女特别喜欢粉色", "family@女儿"),
        ("咱家老人腿脚不方便", "family@老人"),
        ("家里有小孩，要无味的", "family@孩子"),
        ("周六上午 下午孩子要睡午觉 别下午来", "family@孩子"),  # the household's child
        ("the baby naps in the afternoon, so knock softly", "family@baby"),
    ],
)
def test_a_member_of_the_household_is_family_without_my(said: str, slot: str) -> None:
    assert [s for _, s, _ in _extract(said) if s.startswith("family")] == [slot]


@pytest.mark.parametrize(
    "said",
    ["Our order is late again", "我们家附近就有驿站", "the kids section had nothing in blue"],
)
def test_our_and_the_before_no_member_is_no_family(said: str) -> None:
    assert not [s for _, s, _ in _extract(said) if s.startswith("family")]


@pytest.mark.parametrize(
    ("said", "slot", "family"),
    [
        (
            "月饼礼盒我要退，买给我爸的，他糖尿病十几年了，你们标个低糖",
            "family@爸爸",
            "买给我爸的，他糖尿病十几年了",
        ),
        (
            "will they get here by saturday? they're for my daughter, she's 14 and totally "
            "obsessed with birdwatching",
            "family@daughter",
            "they're for my daughter, she's 14 and totally obsessed with birdwatching",
        ),
    ],
)
def test_what_a_pronoun_goes_on_to_say_of_a_family_member_is_theirs(
    said: str, slot: str, family: str
) -> None:
    assert ("fact", slot, family) in _extract(said)


@pytest.mark.parametrize(
    ("said", "slot", "value"),
    [
        ("Those sneakers are already tight, he's in a 13 now.", "family@~he", "he's in a 13 now"),
        ("上次那个裙子小了，她现在都12岁了", "family@~she", "她现在都12岁了"),
        ("烘干箱声音特别大。对了它最近减到9公斤了", "pet@~it", "对了它最近减到9公斤了"),
        (
            "Reordering the vet diet kibble, Pretzel's down to 10 kg so it's working!",
            "family@~name:Pretzel",
            "Pretzel's down to 10 kg so it's working",
        ),
    ],
)
def test_a_trait_said_of_someone_named_before_refers_to_them(
    said: str, slot: str, value: str
) -> None:
    assert ("fact", slot, value) in _extract(said)


@pytest.mark.parametrize(
    ("said", "slot", "value"),
    [
        ("她牙口不好，要软一点的那种", "family@~she", "她牙口不好"),
        ("不过他腰椎不太好，久坐就疼", "family@~he", "不过他腰椎不太好"),
        ("换个鱼肉的吧，它对鸡肉过敏", "pet@~it", "它对鸡肉过敏"),
        ("上次那条秋裤短了，他现在穿130了", "family@~he", "他现在穿130了"),  # a size, and his
        ("千万别放芒果，它过敏", "pet@~it", "千万别放芒果，它过敏"),
        ("she likes to paint, mostly watercolours", "family@~she", "she likes to paint"),
        ("he loves dinosaurs, anything with a T-rex", "family@~he", "he loves dinosaurs"),
        (
            "no peanuts in anything please, he's severely allergic",
            "family@~he",
            "no peanuts in anything please, he's severely allergic",
        ),
    ],
)
def test_a_condition_said_of_someone_by_a_pronoun_refers_to_them(
    said: str, slot: str, value: str
) -> None:
    assert ("fact", slot, value) in _extract(said)


@pytest.mark.parametrize(
    ("said", "slot"),
    [
        ("我女儿下周过生日，想买个礼物", "family@女儿"),
        ("My son's birthday is next week, any ideas?", "family@son"),
        ("下周出差，我家猫这几天寄养在朋友家", "pet"),
    ],
)
def test_a_member_named_in_a_time_bound_clause_is_still_family(said: str, slot: str) -> None:
    found = _extract(said)
    assert [s for _, s, _ in found if s.startswith(("family", "pet"))] == [slot]
    assert [k for k, _, _ in found if k == "temporary"] == ["temporary"], "the intent stays"


@pytest.mark.parametrize(
    ("said", "pet"),
    [
        ("Which harness fits a border collie? Ours is 18 kg", "border collie, Ours is 18 kg"),
        ("有适合金毛的牵引绳吗？我家的30公斤，劲儿特别大", "金毛，我家的30公斤"),
    ],
)
def test_ours_after_an_animal_named_is_the_users_pet(said: str, pet: str) -> None:
    assert [(s, v) for _, s, v in _extract(said) if s.startswith(("pet", "family"))] == [
        ("pet", pet)
    ]


def test_mine_after_an_animal_with_no_trait_is_no_pet() -> None:
    assert _extract("Is the 5 kg bag for a dog? Mine is 3 weeks late") == []


@pytest.mark.parametrize(
    ("said", "slot", "value"),
    [
        (
            "School uniforms for my twins, Mia and Leo, they're 8",
            "family",
            "School uniforms for my twins, Mia and Leo, they're 8",
        ),
        ("My kids, Sam and Ava, both need new shoes", "family@kids", "My kids, Sam and Ava"),
        ("No, Leo's a lot taller, he's a size 10", "family@~name:Leo", "he's a size 10"),
        ("and Mia's a size 8", "family@~name:Mia", "and Mia's a size 8"),
    ],
)
def test_the_names_of_members_and_what_is_said_of_a_name_go_to_them(
    said: str, slot: str, value: str
) -> None:
    assert ("fact", slot, value) in _extract(said)


@pytest.mark.parametrize(
    "said",
    [
        "快递员来过了，他态度不好",  # no body, no liking: nothing lasting of anyone
        "这台扫地机它电池不太好了",
        "the printer jams a lot, it loves to eat thin paper",  # a thing's habit, no pet's
        "she loves it, thanks!",  # a reaction to the goods
        "她很喜欢，谢谢",
    ],
)
def test_a_pronoun_with_no_condition_of_a_person_refers_to_nobody(said: str) -> None:
    assert not [slot for _, slot, _ in _extract(said) if "~" in slot]


@pytest.mark.parametrize(
    ("said", "slot", "value"),
    [
        (
            "是给我儿子买的，今年七岁了，特别喜欢恐龙",
            "family@儿子",
            "是给我儿子买的，今年七岁了，特别喜欢恐龙",
        ),
        ("我家狗狗十岁了，吃鸡肉会过敏", "pet", "我家狗狗十岁了，吃鸡肉会过敏"),
        ("孩子的，刚满五岁，最近迷上了画画", "family@孩子", "孩子的，刚满五岁，最近迷上了画画"),
    ],
)
def test_what_goes_on_about_a_member_or_pet_without_a_subject_is_theirs(
    said: str, slot: str, value: str
) -> None:
    assert ("fact", slot, value) in _extract(said)


@pytest.mark.parametrize(
    ("said", "slot", "value"),
    [
        ("给我儿子买的，今天能发货吗", "family@儿子", "给我儿子买的"),  # a question ends them
        ("我家猫用的猫砂，我喜欢无香的", "pet", "我家猫用的猫砂"),  # the user speaks of themselves
    ],
)
def test_what_follows_a_member_with_a_subject_or_a_question_is_not_theirs(
    said: str, slot: str, value: str
) -> None:
    assert [(s, v) for _, s, v in _extract(said) if s.split("@")[0] in ("family", "pet")] == [
        (slot, value)
    ]


@pytest.mark.parametrize(
    ("said", "city"),
    [
        ("我们月中搬家了，现在住西安曲江新区，净化器也拉过来了", "西安"),
        ("跟你说下我现在在广州天河这边了", "广州"),
        ("空气净化器到了，能上门装一下不，我在成都高新区", "成都"),
        ("搬到苏州了，以后寄苏州", "苏州"),
        ("这单先别送 这周在外地出差 平时我都在杭州的", "杭州"),
        ("上回那个电暖器退款到账没 搬到南京了 这边冬天湿冷 用不上了", "南京"),
        (
            "First order since we moved to Portland, so make sure it goes to the new place",
            "Portland",
        ),
        ("I live in Austin now, the old address is gone", "Austin"),
        ("I'm based in New York", "New York"),
    ],
)
def test_where_the_user_lives_is_a_fact(said: str, city: str) -> None:
    assert [v for _, slot, v in _extract(said) if slot == "city" and city in v], _extract(said)


@pytest.mark.parametrize(
    "said",
    [
        "发到上海仓库就行",
        "我在北京出差，下周回来",
        "Do you deliver to Sacramento by Saturday?",
        "我在外地，晚点说",
        "I'm in a hurry, just ship it",
    ],
)
def test_a_place_said_in_passing_is_no_home(said: str) -> None:
    assert not [slot for _, slot, _ in _extract(said) if slot == "city"]


@pytest.mark.parametrize(
    "said",
    [
        "he's coming home on the 12th, can it arrive before?",  # a date, no trait
        "他说12点前到",
        "This is a 2 pack right?",
        "it's 199 now? it was 159 yesterday",  # a price, not a pet's weight
    ],
)
def test_a_number_after_a_pronoun_is_no_trait_by_itself(said: str) -> None:
    assert not [slot for _, slot, _ in _extract(said) if "~" in slot]


@pytest.mark.parametrize(
    "said", ["the delivery guy should text, not ring the doorbell", "快递到了别按门铃 孩子在睡觉"]
)
def test_a_doorbell_is_a_drop_off_instruction_not_a_phone_refusal(said: str) -> None:
    turns = [Turn("user", said, T0)]
    found = RuleExtractor().extract(turns, summarise("u", "s", turns))
    assert [i.key for i in found.instructions] == ["dropoff"]
    assert ("notification_channel", "phone") not in [(o.key, o.value) for o in found.observations]


def _notes(said: str) -> list[str]:
    turns = [Turn("user", said, T0)]
    found = RuleExtractor().extract(turns, summarise("u", "s", turns)).instructions
    return [i.text for i in found if i.key.startswith(rules.NOTE_PREFIX)]


@pytest.mark.parametrize(
    ("said", "note"),
    [
        ("我只用无香型的洗衣液，有香味的闻着头疼", "我只用无香型的洗衣液"),
        ("我从来不买含酒精的护肤品，脸受不了", "我从来不买含酒精的护肤品"),
        ("Is it dishwasher safe? I only buy BPA-free stuff", "I only buy BPA-free stuff"),
        ("I never wear wool, it itches", "I never wear wool"),
        ("师傅来之前先打个电话，我不一定在家", "师傅来之前先打个电话"),
        (
            "The courier should ring me first, the gate is locked",
            "The courier should ring me first",
        ),
        ("上门的话只能周末，工作日要上班", "上门的话只能周末"),
        (
            "The fitter can only do weekdays after 5pm, I'm at work till then",
            "The fitter can only do weekdays after 5pm",
        ),
    ],
)
def test_a_standing_wish_of_how_to_be_served_is_kept_in_their_words(said: str, note: str) -> None:
    assert any(note in n for n in _notes(said)), _notes(said)


@pytest.mark.parametrize(
    ("said", "note"),
    [
        ("红色的不要，其他颜色都可以", "红色的不要，其他颜色都可以"),
        ("不要带香味的，太冲了，别的都行", "不要带香味的，太冲了，别的都行"),
        ("除了粉色都行", "除了粉色都行"),
        ("Any colour but grey is fine", "Any colour but grey is fine"),
        ("anything except wool works for me", "anything except wool works for me"),
    ],
)
def test_one_refused_with_the_others_allowed_is_a_standing_wish(said: str, note: str) -> None:
    assert _notes(said) == [note]


@pytest.mark.parametrize(
    "said", ["这个不要了，别的都行", "除了这个都行吧", "anything but this one", "别的颜色都行吗？"]
)
def test_the_goods_at_hand_refused_are_no_standing_wish(said: str) -> None:
    assert _notes(said) == []


@pytest.mark.parametrize(
    "said",
    [
        "我只买了一个，另一个是朋友的",  # what happened
        "只用了两天就坏了",
        "I only bought one last time",
        "I only use it for work",  # the goods at hand
        "这次只能周末送吗？",  # asked
        "he called me first thing this morning",
    ],
)
def test_what_was_done_or_asked_is_no_standing_wish(said: str) -> None:
    assert _notes(said) == []


@pytest.mark.parametrize(
    ("turns", "size"),
    [
        (["尺码没问题，还是 41 的"], "41码"),
        (["码数小了，换大一码，43 的"], "43码"),
        (["这双 39 的刚好合脚，颜色也喜欢"], "39码"),
        (["亲穿多大码呢？", "37，脚背有点高"], "37码"),  # the answer to the agent's question
        (["ordered the grey pair, size is fine, 9.5"], "size 9.5"),
        (["Hoping the 11 fits this time, they run small"], "size 11"),
        (["What size do you wear?", "8.5. Wide if you have it"], "size 8.5"),
    ],
)
def test_a_size_said_in_passing_is_the_users(turns: list[str], size: str) -> None:
    said = [Turn("assistant" if k % 2 else "user", t, T0) for k, t in enumerate(turns[::-1])]
    said.reverse()
    found = RuleExtractor().extract(said, summarise("u", "s", said)).observations
    assert [o.value for o in found if o.key == "size"] == [size]


@pytest.mark.parametrize(
    ("said", "size"),
    [("鞋面撑开了 40码现在刚好 不换了", "40码"), ("跑鞋磨坏两双了 我43码的脚 还是宽脚", "43码")],
)
def test_the_users_feet_or_a_size_that_fits_now_is_the_users_size(said: str, size: str) -> None:
    turns = [Turn("user", said, T0)]
    found = RuleExtractor().extract(turns, summarise("u", "s", turns)).observations
    assert [o.value.split("（")[0] for o in found if o.key == "size"] == [size]


@pytest.mark.parametrize(
    "said",
    [
        "订单 6124408 的码数不对，3 天了还没人理",  # days, no size
        "这台 55 的刚好放得下",  # a television that fits its place
        "The 2 boxes fit in the car fine",
        "Hope the 65 fits on the stand",
        "What's the delivery fee? 12?",
    ],
)
def test_a_number_beside_size_words_is_no_size_by_itself(said: str) -> None:
    assert not [slot for _, slot, _ in _extract(said) if slot == "size"]


@pytest.mark.parametrize(
    ("said", "size"),
    [
        ("行 我肩宽 一般都穿L 下次不买M了", "L码"),  # the refused one is not theirs
        ("尿不湿勒大腿了 换L吧 以后都买L", "L码（尿不湿勒大腿了 换L吧 以后都买L）"),
        ("尿不湿勒大腿了，换L吧，以后都买L", "L码（换L吧，以后都买L）"),  # each clause says it
        ("He's 10 and wears a youth medium", "youth medium"),  # another number: no quote
        ("我圈口是14号", "14号（我圈口是14号）"),
        ("换130吧 120的都穿不了了", "130码"),
        ("现在得穿80C 75B那个以后别给我推了哈", "80C"),
        ("I'm a 32 inseam, not 30", "32 inseam (I'm a 32 inseam)"),
        ("I'm a W34 now, W32 is too tight", "W34 (I'm a W34 now)"),  # not one that won't fit
        ("she's a 6.5 not a 7", "size 6.5"),  # a correction quotes no refused value
    ],
)
def test_a_size_is_kept_as_settled_in_one_spelling(said: str, size: str) -> None:
    assert [v for kind, slot, v in _extract(said) if slot == "size"] == [size]


@pytest.mark.parametrize(
    ("said", "slot", "size"),
    [
        ("给我老婆也买一双同款 她穿37", "size@老婆", "37"),
        ("给我老公买双鞋，他穿43", "size@老公", "43"),
        ("我儿子穿130的", "size@儿子", "130"),
        ("这双给我妈买的 她平时穿38码", "size@妈妈", "38"),
        ("my husband wears a 10.5, can I get these for him", "size@husband", "10.5"),
        ("I'm getting these for my wife, she's a size 8", "size@wife", "8"),
        ("给我老婆买一双，我自己穿42", "size", "42"),  # the user's own, beside hers
    ],
)
def test_a_size_said_of_a_family_member_is_theirs(said: str, slot: str, size: str) -> None:
    sizes = {s: v for _, s, v in _extract(said) if s.partition("@")[0] == "size"}
    assert list(sizes) == [slot], sizes
    assert size in sizes[slot]


@pytest.mark.parametrize(
    ("turns", "channel"),
    [
        (["陌生号码我一般不接 有事你们微信上说就行"], "!wechat"),
        (["texts are better than email for me"], "!sms"),  # the user's own comparison
        (["短信比邮件方便"], "!sms"),
        (["Push notifications in the app are fine."], "app_push"),  # said in passing
    ],
)
def test_a_channel_the_user_states_for_themselves_is_explicit(
    turns: list[str], channel: str
) -> None:
    assert ("preference", "notification_channel", channel) in _extract(*turns)


def test_the_answer_to_the_agents_channel_question_is_an_instruction() -> None:
    turns = [
        Turn("user", "Please refund RF-77120-44", T0),
        Turn("assistant", "Sorry about that. How would you prefer to be notified?", T0),
        Turn("user", "Push notifications in the app are fine. Nothing else.", T0),
    ]
    found = RuleExtractor().extract(turns, summarise("u", "s", turns)).observations
    assert [(o.value, o.explicit) for o in found if o.key == "notification_channel"] == [
        ("app_push", True)
    ]


@pytest.mark.parametrize(
    ("said", "budget"),
    [
        ("给爸妈买的预算七八百吧", ("budget@parents", "700-800元（七八百）")),  # their words kept
        ("自己用两万出头能接受", ("budget@self", "20000元（两万出头）")),
        ("五百来块的就行", ("budget", "500元（五百来块）")),
        ("3000 左右都可以", ("budget", "3000元")),
        ("under three hundred bucks for my kids", ("budget@child", "$300 (three hundred bucks)")),
        ("A grand-ish is fine", ("budget", "$1000 (A grand-ish)")),
        ("budget about 1500 yuan", ("budget", "1500元")),
    ],
)
def test_budgets_said_in_words_or_hedged(said: str, budget: tuple[str, str]) -> None:
    assert ("preference", *budget) in [(k, slot, v.lstrip("!")) for k, slot, v in _extract(said)]


@pytest.mark.parametrize(
    "said",
    [
        "跑了三千米",
        "他四十多岁了",
        "two hundred people came",
        "This one costs more than 500 dollars in the shop",  # a price, not what they spend
    ],
)
def test_numbers_that_are_no_amount_are_no_budget(said: str) -> None:
    assert not [o for o in _extract(said) if o[1].startswith("budget")]


def test_only_the_users_turns_are_read() -> None:
    turns = [Turn("user", "在吗"), Turn("assistant", "我是金卡会员专属客服，微信通知您")]
    assert RuleExtractor().extract(turns, summarise("u", "s", turns)).observations == ()


def test_an_address_is_masked_and_its_clear_value_only_travels_to_the_vault() -> None:
    turns = [Turn("user", f"寄到{ADDRESS}，电话 {PHONE}")]
    (found,) = RuleExtractor().extract(turns, summarise("u", "s", turns)).observations
    assert (found.kind, found.key) == (FACT, "address")
    assert "建国路88号" not in found.value
    assert found.clear == ADDRESS
    assert ADDRESS not in repr(found)
    assert PHONE not in repr(found)


def test_every_new_pattern_runs_in_linear_time() -> None:
    """New regexes over user text are RE2 patterns (the check of tests/test_regex_linear.py)."""
    for module in (rules, openai_chat, outcome_module):
        patterns = [p for v in vars(module).values() for p in _collect(v)]
        assert patterns, module.__name__
        assert all(isinstance(p, LinearPattern) for p in patterns), module.__name__


# --------------------------------------------------------------------------- chat extractor


@dataclass
class ChatServer:
    """State shared with the handler: the script and what was received."""

    url: str = ""
    script: list[str] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)


HANG_S = 0.6


def _handler(state: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            assert self.path == "/v1/chat/completions"
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append(body)
            state.headers.append(dict(self.headers))
            action = state.script.pop(0) if state.script else "[记录] 用户进行了一般咨询"
            if action.isdigit():
                self._send(int(action), b'{"error": {"message": "nope"}}')
                return
            if action == "garbage":
                self._send(200, b'{"object": "list", "data": []}')
                return
            if action == "hang":
                time.sleep(HANG_S)
                action = "[记录] 迟到的回答"
            answer = {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": action},
                        "finish_reason": "stop",
                    }
                ],
            }
            self._send(200, json.dumps(answer, ensure_ascii=False).encode())

    return Handler


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    state = ChatServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    httpd.block_on_close = False
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    yield state
    httpd.shutdown()
    httpd.server_close()


def _chat_config(server: ChatServer, **more: Any) -> dict[str, Any]:
    return {
        "base_url": server.url,
        "model": "qwen-plus",
        "api_key": "sk-test",
        "timeout_s": 0.3,
        **more,
    }


SESSION = [
    Turn("user", f"订单 88231 的比特 S10 Pro 扫地机无法回充，我要退款，电话 {PHONE}", T0),
    Turn("assistant", "已为您发起退款，退款编号 RF20260629001，预计 1-3 个工作日到账", T0),
    Turn("user", f"我是金卡会员，地址改成{ADDRESS}，下周出差，暂时不报销", T0),
]
GOOD = "\n".join(
    [
        "[画像] 事实|会员等级|金卡会员",
        "[画像] 事实|设备型号|扫地机|比特 S10 Pro",
        "[画像] 偏好|通知渠道|通用|微信",
        "[画像] 偏好|预算|父母|500元",
        "[画像] 临时|下周出差，暂时不报销",
        "[记录] 用户因订单 88231 的扫地机无法回充申请退款，客服已发起退款",
    ]
)


def test_the_chat_extractor_reads_profile_and_record_lines(chat: ChatServer) -> None:
    chat.script[:] = [GOOD]
    summary = summarise("u", "s-1", SESSION)
    extractor = create_extractor("openai", _chat_config(chat))
    assert isinstance(extractor, ChatExtractor)
    with extractor:
        got = extractor.extract(SESSION, summary)
    assert got.source == "openai-qwen-plus"
    assert got.fallback is None
    slots = {(o.kind.value, o.slot, o.value) for o in got.observations}
    assert {
        ("fact", "member_level", "金卡会员"),
        ("fact", "device_model@扫地机", "比特 S10 Pro"),
        ("preference", "notification_channel", "wechat"),
        ("preference", "budget@parents", "500元"),
        ("temporary", "intent", "下周出差，暂时不报销"),
    } <= slots
    assert ("fact", "address") in {(o.kind.value, o.slot) for o in got.observations}, (
        "the address comes from the local rules"
    )
    assert got.record_text is not None
    assert "RF20260629001" in got.record_text, "an identifier the model left out is appended"
    sent = json.dumps(chat.requests[0], ensure_ascii=False)
    assert PHONE not in sent, "only masked text leaves"
    assert "建国路88号" not in sent
    assert chat.headers[0]["Authorization"] == "Bearer sk-test"
    assert chat.requests[0]["messages"][0]["content"] == openai_chat.PROMPT


AMENDED = [
    Turn("user", "订单 5530217 的空气炸锅到哪了", T0),
    Turn("assistant", "没有查到订单 5530217，麻烦核对一下。", T0),
    Turn("user", "订单号说错了，不是 5530217，是 5530271。别再发邮件了，有事打电话", T0),
    Turn("user", "以后大件都走德邦", T0),
]
CARELESS = "\n".join(
    [
        "[画像] 偏好|通知渠道|通用|邮件",  # the channel the user refused
        "[画像] 拒绝|通知渠道|邮件",
        "[画像] 指令|通知渠道|通用|电话",
        "[画像] 嘱咐|快递|以后大件都走德邦",
        "[记录] 用户查询订单 5530217 的物流进度",  # the number the user corrected
    ]
)


def test_the_chat_extractor_follows_the_amendment_rules(chat: ChatServer) -> None:
    """The prompt states the amendment rules, and what the model answers is checked against
    the rules' reading: a corrected number never survives, a refused channel is never kept
    as wanted, an instruction is explicit, a slot-less instruction an explicit fact."""
    chat.script[:] = [CARELESS]
    summary = summarise("u", "s-1", AMENDED)
    extractor = create_extractor("openai", _chat_config(chat))
    assert isinstance(extractor, ChatExtractor)
    with extractor:
        got = extractor.extract(AMENDED, summary)
    assert got.fallback is None
    assert "不是 X 是 Y" in openai_chat.PROMPT
    assert "撤回" in openai_chat.PROMPT
    assert got.record_text is not None
    assert "5530271" in got.record_text
    assert "5530217" not in got.record_text, "the corrected number is replaced"
    channel = [
        (o.value, o.explicit, o.negated)
        for o in got.observations
        if o.key == "notification_channel"
    ]
    assert ("email", False, False) not in channel, "a refused channel is never kept as wanted"
    assert ("email", True, True) in channel
    assert ("phone", True, False) in channel
    assert [(i.key, i.text) for i in got.instructions] == [("carrier", "以后大件都走德邦")]


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        (["这不是约定的格式"], "unexpected_line"),
        (["[画像] 事实|会员等级|金卡会员"], "no_record"),
        (["[画像] 偏好|通知渠道|通用|信鸽\n[记录] 用户咨询"], "unknown_value"),
        (["[画像] 爱好|钓鱼\n[记录] 用户咨询"], "unknown_key"),
        (["garbage"], "not_a_completion"),
        (["500"], "http_500"),
        (["401"], "http_401"),
        (["hang"], "timeout"),
    ],
)
def test_a_failing_model_falls_back_to_the_rules_and_logs_no_text(
    chat: ChatServer, caplog: pytest.LogCaptureFixture, script: list[str], reason: str
) -> None:
    chat.script[:] = script
    summary = summarise("u", "s-1", SESSION)
    rules_only = RuleExtractor().extract(SESSION, summary)
    with (
        caplog.at_level(logging.WARNING),
        ChatExtractor(openai_chat.ChatExtractorConfig(**_chat_config(chat))) as extractor,
    ):
        got = extractor.extract(SESSION, summary)
    assert got.fallback == reason
    assert got.observations == rules_only.observations
    assert got.record_text is None
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert reason in logged
    for secret in (PHONE, "建国路88号", "88231", "金卡", "sk-test"):
        assert secret not in logged


def test_parse_answer_tolerates_fences_and_blank_lines() -> None:
    summary = summarise("u", "s-1", SESSION)
    got = parse_answer(f"```\n\n{GOOD}\n```", summary)
    assert got.record_text is not None
    assert len(got.observations) == 5


def test_the_registry_knows_its_extractors_and_forbids_unknown_settings() -> None:
    assert create_extractor("rules", {}).name == "rules"
    with pytest.raises(ConfigurationError, match="known: openai, rules"):
        create_extractor("gpt", {})
    with pytest.raises(ConfigurationError, match="invalid config"):
        create_extractor("rules", {"model": "x"})
    with pytest.raises(ConfigurationError, match="invalid config"):
        create_extractor("openai", {"base_url": "http://x/v1", "model": "m", "temp": 1})
    keyed = openai_chat.ChatExtractorConfig(base_url="http://x/v1", model="m", api_key="sk-1")  # type: ignore[arg-type]
    assert "sk-1" not in repr(keyed)


# --------------------------------------------------------------------------- end to end


def _session(mem: MemoryClient, session: str, *texts: str, minute: int = 0) -> None:
    turns = [Turn("user", t, T0 + timedelta(minutes=minute + i)) for i, t in enumerate(texts)]
    turns.append(Turn("assistant", "好的，已记录", T0 + timedelta(minutes=minute + len(texts))))
    mem.end_session(USER, session, turns)


def _learned(mem: MemoryClient) -> dict[str, Any]:
    learned: dict[str, Any] = mem.profiles.get(USER).attributes.get("learned", {})
    return learned


def _candidates(mem: MemoryClient) -> list[tuple[str, str, int]]:
    with mem.admin.database.transaction() as conn:
        rows = conn.execute(
            text(
                "SELECT slot, value, cardinality(sessions) FROM profile_candidate "
                "WHERE user_id = :u ORDER BY slot, value"
            ),
            {"u": USER},
        ).all()
    return [(r[0], r[1], r[2]) for r in rows]


def test_session_end_merges_the_profile_by_the_rules(mem: MemoryClient) -> None:
    mem.profiles.ensure(USER)
    _session(mem, "s1", "我是银卡会员，微信就行", f"寄到{ADDRESS}")
    version = mem.profiles.get(USER).version
    learned = _learned(mem)
    assert learned["facts"]["member_level"]["value"] == "银卡会员"
    address = learned["facts"]["address"]["value"]
    assert "建国路88号" not in json.dumps(address, ensure_ascii=False)
    (ref,) = address["pii"]
    assert mem.pii.reveal(USER, ref["vault_id"]) == ADDRESS
    assert "preferences" not in learned or "notification_channel" not in learned["preferences"]
    assert _candidates(mem) == [("notification_channel", "wechat", 1)], "said in passing"

    _session(mem, "s2", "我升级成金卡会员了，微信方便", minute=60)
    assert _learned(mem)["facts"]["member_level"]["value"] == "金卡会员", "newest fact wins"
    assert _candidates(mem) == [("notification_channel", "wechat", 2)]
    _session(mem, "s3", "还是微信吧", minute=120)
    profile = mem.profiles.get(USER)
    assert profile.attributes["learned"]["preferences"]["notification_channel"]["value"] == "wechat"
    assert profile.notification_preference == {
        "app_push": False,
        "email": False,
        "phone": False,
        "sms": False,
        "wechat": True,
    }
    assert _candidates(mem) == []
    assert profile.version > version, "each merge bumps the optimistic version"

    _session(mem, "s4", "这次用短信通知我", minute=180)
    assert _candidates(mem) == [], "for this request only: nothing lasting"
    _session(mem, "s5", "短信就行", minute=240)
    assert _learned(mem)["preferences"]["notification_channel"]["value"] == "wechat"
    assert _candidates(mem) == [("notification_channel", "sms", 1)], "one mention: a candidate"

    _session(mem, "s6", "以后都用短信通知我，别再发微信了", minute=300)
    profile = mem.profiles.get(USER)
    assert profile.attributes["learned"]["preferences"]["notification_channel"]["value"] == "sms"
    assert profile.notification_preference["sms"] is True, "an instruction is live at once"
    assert profile.notification_preference["wechat"] is False
    assert _candidates(mem) == []

    subject = subject_of(mem.admin.database, UserScope(USER))
    entries = recent(mem.admin.database, subject=subject, actions=[AuditAction.PROFILE_UPDATE])
    merges = [e for e in entries if e.details.get("source") == "session"]
    assert len(merges) == 5, "the one-off session changed nothing"
    logged = json.dumps([e.details for e in entries], ensure_ascii=False)
    for secret in ("建国路", "银卡", "金卡", "wechat"):
        assert secret not in logged
    _session(mem, "s7", "短信就行", minute=360)
    exported = mem.export_user(USER)
    assert exported["profile"]["candidates"] == [], "a reaffirmed stable value has no rival"


def test_scenario_budgets_coexist_and_temporary_intents_stay_implicit_notes(
    mem: MemoryClient,
) -> None:
    mem.profiles.ensure(USER)
    for i in range(3):
        _session(mem, f"b{i}", "预算：自用 2000-3000 元；为父母选购 500 元档", minute=60 * i)
    prefs = _learned(mem)["preferences"]
    assert prefs["budget@self"]["value"] == "2000-3000元"
    assert prefs["budget@parents"]["value"] == "500元"

    _session(mem, "t1", "下周出差，暂时不报销", minute=300)
    assert "intent" not in json.dumps(_learned(mem))
    assert all("报销" not in slot and "报销" not in value for slot, value, _ in _candidates(mem))
    notes = [m for m in mem.memories.list(USER) if m.kind == "note"]
    assert [(n.text, n.policy, n.session_id) for n in notes] == [
        ("下周出差，暂时不报销", "implicit", "t1")
    ]
    assert notes[0].expires_at is not None
    assert notes[0].expires_at < datetime.now(UTC) + timedelta(days=31)


def test_a_chat_extractor_that_fails_never_loses_the_session(
    settings: Settings, chat: ChatServer
) -> None:
    chat.script[:] = ["503"]
    keyed = settings.model_copy(
        update={"profile_extractor": "openai", "profile_extractor_config": _chat_config(chat)}
    )
    with MemoryClient(keyed, agent_id="llm-agent") as client:
        client.profiles.ensure(USER)
        try:
            record = client.end_session(USER, "s-llm", SESSION)
            stored = client.memories.get(USER, record.memory_id)
            assert stored is not None
            assert "RF20260629001" in stored.text
            assert stored.metadata["fallback"] == "http_503"
            assert stored.metadata["extractor"] == "rules"
            learned = client.profiles.get(USER).attributes["learned"]
            assert learned["facts"]["member_level"]["value"] == "金卡会员"
        finally:
            client.forget_user(USER)


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("想换台扫地机，预算4000", ("budget", "!4000元")),
        ("my budget is 650 for a road bike", ("budget", "!$650")),
        ("预算那个不用卡 2000 了，3500 以内都行", ("budget", "!3500元")),
        ("帮朋友问问预算 300 的耳机", ("budget", "300元")),
        ("两千以内吧，太贵的用不上", ("budget", "!2000元（两千以内）")),  # a cap the user sets
        ("Keep it under $80, it's just a stocking filler", ("budget", "!$80")),
        ("有没有 500 以内的，最好白色", ("budget", "500元")),  # a cap asked for: a mention
        ("Anything under 50 bucks?", ("budget", "$50")),
        ("Keep it under 50 dollars", ("budget", "!$50")),  # a currency word is a unit
        ("I don't want to spend more than 200 bucks", ("budget", "!$200")),
        ("最多花 300，再贵就不买了", ("budget", "!300元")),
    ],
)
def test_a_budget_the_user_states_is_theirs_at_once(said: str, expected: tuple[str, str]) -> None:
    got = [(slot, value) for kind, slot, value in _extract(said) if slot.startswith("budget")]
    assert got == [expected]


@pytest.mark.parametrize(
    ("said", "device"),
    [
        ("原来的小米不用了，换了vivo X100 Pro，这个充电器能用吗", "vivo X100 Pro"),
        ("I switched to a Pixel 8 last month, does this case fit", "Pixel 8"),
    ],
)
def test_a_device_switched_to_is_the_users_own(said: str, device: str) -> None:
    got = [value for kind, slot, value in _extract(said) if slot.startswith("device_model")]
    assert got
    assert got[0].endswith(device)
    assert "小米" not in got[0]


@pytest.mark.parametrize(
    "said",
    [
        "my laptop budget is $1,500 these days",
        "these days I only wear merino, so the wool blend is out",
    ],
)
def test_these_days_is_what_holds_now_not_a_passing_intent(said: str) -> None:
    """ "These days" says what holds now (a lasting value), unlike 这几天 or "this week"."""
    assert not [k for k, _, _ in _extract(said) if k == "temporary"], _extract(said)


@pytest.mark.parametrize(
    ("said", "gone"),
    [
        ("猫粮那单能退吗 猫也送给我姐了 家里用不上了", "送给我姐"),
        ("can I return the unopened dog food? we rehomed the dog last month", "rehomed the dog"),
        ("the hamster passed away last week so cancel the bedding subscription", "passed away"),
    ],
)
def test_a_pet_given_away_is_the_pets_newest_value(said: str, gone: str) -> None:
    """A pet the household no longer has (送人了, rehomed, passed away) is said of the pet
    slot, so it replaces what was said of the pet before (the newest wins)."""
    assert [v for _, slot, v in _extract(said) if slot == "pet" and gone in v], _extract(said)


@pytest.mark.parametrize(
    "said",
    [
        "oh and always leave stuff at the side gate from now on, parcels keep going missing",
        "if im out just put it in the green bin by the shed, lid shuts fine",
        "leave everything behind the planter by the back door going forward",
    ],
)
def test_where_to_leave_parcels_in_plain_words_is_the_drop_off(said: str) -> None:
    """Leave stuff / put it in … names the drop-off as "leave it at …" does."""
    turns = [Turn("user", said, T0)]
    found = RuleExtractor().extract(turns, summarise("u", "s", turns)).instructions
    assert [i for i in found if i.key == "dropoff"], found
