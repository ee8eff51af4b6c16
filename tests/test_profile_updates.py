"""A lasting value the user changes in a later session (moved, switched, now a new size,
a new diet, more people at home): the later value is read as the slot's, and the former
one stops being shown (pure, no database)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from policies.profile_merge import (
    PREVIOUS,
    Change,
    ChangeKind,
    Observation,
    ObservationKind,
    ProfileState,
    merge,
)
from policies.superseded import superseded_words
from sdk import MemoryClient
from sdk.context import fact_items, record_items
from tests.learned_fixtures import learned_profile, record_hit
from unstructured_memory.profile.rules import RuleExtractor
from unstructured_memory.summariser import summarise
from values.hits import MemoryHit
from values.records import Fact, Profile
from values.sessions import Turn

T0 = datetime(2026, 7, 1, 10, 0, tzinfo=UTC)


def _facts(said: str, key: str) -> list[str]:
    turns = [Turn("user", said, T0)]
    found = RuleExtractor().extract(turns, summarise("u", "s", turns)).observations
    return [o.value for o in found if o.slot.partition("@")[0] == key]


@pytest.mark.parametrize(
    ("said", "city"),
    [
        ("调到厦门工作了，新家在思明区，燃气灶能上门装吗", "厦门"),
        ("新家安在了宁波，以后寄这边", "宁波"),
        ("我回老家长沙发展了，以后寄长沙", "长沙"),
        ("Just got the keys to our new house in Glasgow! Can you send a doormat there?", "Glasgow"),
        ("Where's my parcel? It's going to my flat in Manchester, Ancoats.", "Manchester"),
        ("Our new place in Cardiff has a tiny hallway, is the rack slim?", "Cardiff"),
    ],
)
def test_a_new_home_or_ones_flat_in_a_city_is_where_the_user_lives(said: str, city: str) -> None:
    assert [v for v in _facts(said, "city") if city in v], _facts(said, "city")


@pytest.mark.parametrize(
    "said",
    [
        "我在北京出差，下周回来",
        "Do you deliver to Sacramento by Saturday?",
        "我妈的新家在成都吗",
        "出差回到北京了，快递改天再送",
    ],
)
def test_a_place_said_in_passing_is_still_no_home(said: str) -> None:
    assert not _facts(said, "city")


@pytest.mark.parametrize(
    ("said", "diet"),
    [
        ("我现在改吃纯素了，鸡蛋牛奶都不碰了", "纯素"),
        ("我是蛋奶素，这个面包里有猪油吗", "蛋奶素"),
        ("我吃全素，五辛也不吃", "全素"),
        ("I'm pescatarian, fish is fine but no meat.", "pescatarian"),
        ("I've gone fully vegan now.", "vegan"),
    ],
)
def test_a_kind_of_vegetarian_is_a_diet(said: str, diet: str) -> None:
    assert [v for v in _facts(said, "diet") if diet in v], _facts(said, "diet")


@pytest.mark.parametrize(
    ("said", "held"),
    [
        ("家里就我们小两口，电饭煲 3 升的够吗", "小两口"),
        ("现在家里五口人了，添了个宝宝，有没有大一点的电饭煲", "五口人"),
        ("我们一家三口，买多大的冰箱合适", "一家三口"),
        ("It's just me at home, is the 2-quart rice cooker big enough?", "just me at home"),
        ("My partner moved in, so there are three of us at home now.", "three of us"),
        ("We're a family of four, which air fryer size?", "family of four"),
    ],
)
def test_how_many_live_at_home_is_a_fact(said: str, held: str) -> None:
    assert [v for v in _facts(said, "household") if held in v], _facts(said, "household")


@pytest.mark.parametrize(
    "said", ["这个锅三个人用够吗", "It's just me asking, no rush", "家里有两只猫"]
)
def test_a_count_that_is_no_household_is_not_one(said: str) -> None:
    assert not _facts(said, "household")


def test_a_size_worn_now_after_one_no_longer_worn_is_the_size() -> None:
    said = "减肥瘦了二十斤，不再穿 XL 了，现在 L 码就行，这条运动裤能换小一码吗"
    assert [v for v in _facts(said, "size") if "L码" in v.replace(" ", "")], _facts(said, "size")


def test_a_short_former_place_is_replaced_by_its_name_too() -> None:
    """ "We live in Austin": a record says "the delivery of the Austin parcel", not the
    clause; the name goes too."""
    words = superseded_words("We live in Austin", "We moved to Leeds", names=True)
    assert words == ("We live in Austin", "Austin")


@pytest.mark.parametrize(
    ("former", "now", "words"),
    [
        (
            "It's going to my flat in Manchester, Ancoats",
            "Just got the keys to our new house in Glasgow",
            ("Manchester", "Ancoats"),
        ),
        ("I switched to a Pixel 9 last week, love it", "I'm on an iPhone 16 now", ("Pixel 9",)),
        (
            "It's in London, Camden, right by the canal",
            "We moved within London to Hackney",
            ("Camden",),
        ),
    ],
)
def test_a_long_former_value_is_replaced_by_its_names(
    former: str, now: str, words: tuple[str, ...]
) -> None:
    assert superseded_words(former, now, names=True) == words
    assert superseded_words(former, now) == ()  # a person's traits: their names stay


def _profile(learned: dict[str, Any], language: str = "zh-CN") -> Profile:
    return learned_profile(learned, T0, language)


def _entry(value: str, *formerly: str) -> dict[str, Any]:
    return {"value": value, "at": T0.isoformat(), "session": "s2", "formerly": list(formerly)}


def _hit(text: str) -> MemoryHit:
    return record_hit(text, T0)


@pytest.mark.parametrize(
    ("learned", "record", "gone", "kept"),
    [
        (  # a former channel named as the way to reach the user
            {"preferences": {"notification_channel": _entry("sms", "wechat")}},
            "用户要求以后物流消息微信通知",
            "微信",
            "物流消息",
        ),
        (  # a former city and its district, from a clause
            {"facts": {"city": _entry("我们家上个月搬到合肥了", "我住南京鼓楼区，六楼没电梯")}},
            "用户查询寄到南京鼓楼区的书架的物流进度",
            "南京",
            "书架",
        ),
        (  # the names of a former English city clause
            {
                "facts": {
                    "city": _entry("our new house in Glasgow", "my flat in Manchester, Ancoats")
                }
            },
            "The user asked about the delivery of the Manchester parcel to Ancoats",
            "Manchester",
            "parcel",
        ),
    ],
)
def test_a_record_shows_a_former_channel_or_city_as_replaced(
    learned: dict[str, Any], record: str, gone: str, kept: str
) -> None:
    (item,) = record_items(_profile(learned), [_hit(record)])
    assert gone not in item.text, item.text
    assert kept in item.text


def test_a_channel_the_record_refuses_stays_as_said() -> None:
    learned = {"preferences": {"notification_channel": _entry("sms", "wechat")}}
    (item,) = record_items(_profile(learned), [_hit("用户说别再发微信了，改短信")])
    assert "别再发微信了" in item.text


def _sessions(mem: MemoryClient, user: str, *said: str) -> None:
    then = datetime.now(UTC) - timedelta(days=40)
    for n, text in enumerate(said):
        at = then + timedelta(days=15 * n)
        turns = [
            Turn("user", text, at),
            Turn("assistant", "好的，已记下。", at + timedelta(minutes=1)),
        ]
        mem.end_session(user, f"s-{n}", turns)


def test_a_note_naming_a_channel_switched_from_shows_it_as_replaced(mem: MemoryClient) -> None:
    """A note kept with the first channel (物流有动静微信通知我) no longer names it once the
    user switched to another: the profile holds the new one and nowhere the old."""
    mem.profiles.ensure("buyer-switched")
    _sessions(mem, "buyer-switched", "以后物流有什么动静微信通知我就行", "以后通知改成短信吧")
    notes = [str(f.value) for f in mem.facts.list("buyer-switched")]
    assert notes, "the note stays (its procedure still holds)"
    assert not [n for n in notes if "微信" in n], notes
    assert mem.profiles.get("buyer-switched").notification_preference.get("sms")


def test_a_note_naming_a_city_moved_from_shows_it_as_replaced(mem: MemoryClient) -> None:
    mem.profiles.ensure("buyer-moved")
    _sessions(
        mem,
        "buyer-moved",
        "我住南京鼓楼区，以后大件都送货上楼，别放楼下",
        "我们家搬到合肥了，现在住蜀山区",
    )
    assert not [f.value for f in mem.facts.list("buyer-moved") if "南京" in str(f.value)]


def test_a_device_is_not_of_a_product_asked_about_in_the_next_sentence() -> None:
    """ "I'm on a ThinkPad X1 Carbon now. Does your 65W GaN charger work with it?": the laptop
    is the user's device, not the charger's (an English full stop ends its clause)."""
    said = (
        "My old laptop went to my nephew for school, I'm on a ThinkPad X1 Carbon now. "
        "Does your 65W GaN charger work with it?"
    )
    turns = [Turn("user", said, T0)]
    found = RuleExtractor().extract(turns, summarise("u", "s", turns)).observations
    assert [o.slot for o in found if o.key == "device_model"] == ["device_model"]


@pytest.mark.parametrize(
    ("said", "device"),
    [
        ("科沃斯 T20 的滚刷有卖吗", "科沃斯 T20"),
        ("石头 G20 的拖布还有货吗", "石头 G20"),
    ],
)
def test_a_part_asked_for_tells_the_users_device(said: str, device: str) -> None:
    assert _facts(said, "device_model") == [device]


@pytest.mark.parametrize("said", ["iPhone 15 的价格多少钱", "Mate 60 的颜色有没有白的"])
def test_an_attribute_asked_about_tells_no_device(said: str) -> None:
    assert not _facts(said, "device_model")


@pytest.mark.parametrize(
    "said",
    ["家里那台扫地机坏了，已经换了台追觅 X40", "我换了个 vivo X100 Pro，之前那台给我妈用了"],
)
def test_a_device_switched_to_with_a_measure_word_replaces_the_one_before(said: str) -> None:
    turns = [Turn("user", said, T0)]
    found = RuleExtractor().extract(turns, summarise("u", "s", turns)).observations
    assert [o.replaces for o in found if o.key == "device_model"][:1] == [PREVIOUS]


def test_a_brand_in_the_clause_before_is_not_the_models() -> None:
    """ "之前那台苹果给我妈用了，有没有 X100 Pro 的钢化膜": the old phone's brand, in the clause
    before, is not the brand of the model the user has now."""
    said = "我换了个 vivo X100 Pro，之前那台苹果给我妈用了，有没有 X100 Pro 的钢化膜"
    assert "苹果 X100 Pro" not in _facts(said, "device_model")


def _fact(key: str, value: str) -> Fact:
    return Fact(
        id=uuid.uuid4(),
        user_id="u",
        key=key,
        value=value,
        policy="explicit",
        confidence=1.0,
        status="active",
        expires_at=None,
        last_used_at=T0,
        source="agent",
        agent_id="shopping-agent",
        created_at=T0,
        updated_at=T0,
        version=1,
    )


def test_a_fact_line_shows_a_value_replaced_since_as_replaced() -> None:
    """A fact an agent stored before the user moved (送南京鼓楼区的家里) shows the old city as
    replaced; the stored fact stays as the agent wrote it."""
    learned = {"facts": {"city": _entry("我们家上个月搬到合肥了", "我住南京鼓楼区")}}
    fact = _fact("送货备注", "大件送南京鼓楼区的家里，要送货上楼")
    (item,) = fact_items(_profile(learned), [fact], lambda _: "")
    assert "南京" not in item.text
    assert "送货上楼" in item.text
    assert fact.value == "大件送南京鼓楼区的家里，要送货上楼"


@pytest.mark.parametrize(
    ("former", "now", "record", "gone"),
    [
        (  # the diet's name, whatever the pronoun the record gives the user
            "I'm vegetarian",
            "I'm vegan now, not just vegetarian",
            "The user asked about protein bars (in the user's words: they're vegetarian)",
            "vegetarian",
        ),
        ("我是蛋奶素", "我现在改吃纯素了", "用户咨询面包（用户原话：是蛋奶素）", "蛋奶素"),
        (  # a value the new one names only to deny it
            "我住南京鼓楼区",
            "不再住南京了，搬到合肥了",
            "用户查询寄到南京的书架",
            "南京",
        ),
    ],
)
def test_a_former_value_the_new_one_denies_is_replaced(
    former: str, now: str, record: str, gone: str
) -> None:
    key = "city" if "住" in former else "diet"
    learned = {"facts": {key: _entry(now, former)}}
    language = "en-US" if record.isascii() else "zh-CN"
    (item,) = record_items(_profile(learned, language), [_hit(record)])
    assert gone not in item.text


def test_a_former_value_the_new_one_still_states_stays() -> None:
    learned = {"facts": {"diet": _entry("I'm vegetarian and gluten-free now", "I'm vegetarian")}}
    (item,) = record_items(_profile(learned, "en-US"), [_hit("they're vegetarian")])
    assert "vegetarian" in item.text


def _said(key: str, value: str, session: str, minute: int) -> Observation:
    return Observation(ObservationKind.FACT, key, value, session, T0 + timedelta(minutes=minute))


def test_a_move_takes_what_was_said_with_the_old_home() -> None:
    """ "我住南京鼓楼区，六楼没电梯" then, a session later, "我们家搬到合肥了": the floor and the
    address said with the old city are no longer the user's; what another session said of
    the home stays (nothing ties it to the old city), and so does the rest."""
    first = merge(
        ProfileState(),
        [
            _said("city", "我住南京鼓楼区", "s1", 0),
            _said("home", "六楼没电梯", "s1", 0),
            _said("address", "南京市鼓楼区[地址]", "s1", 1),
            _said("pet", "家里有只橘猫", "s1", 1),
        ],
    ).state
    after = merge(first, [_said("city", "我们家搬到合肥了", "s3", 60)])
    assert set(after.state.facts) == {"city", "pet"}
    assert Change("home", ChangeKind.FACT_CLEARED) in after.changes
    told = merge(first, [_said("home", "门口有三级台阶", "s2", 30)]).state
    moved = merge(told, [_said("city", "我们家搬到合肥了", "s3", 60)]).state
    assert set(moved.facts) == {"city", "pet", "home"}


def test_the_same_city_said_again_takes_nothing() -> None:
    before = merge(
        ProfileState(),
        [_said("city", "我住南京鼓楼区", "s1", 0), _said("home", "六楼没电梯", "s1", 0)],
    ).state
    after = merge(before, [_said("city", "我住南京鼓楼区", "s2", 60)])
    assert "home" in after.state.facts


@pytest.mark.parametrize(
    ("said", "gone"),
    [
        ("换了个华为 Mate 60，之前那台 iPhone 15 送我妈了，Mate 60 的膜有吗", "iPhone 15"),
        ("以前那部小米 13 已经卖了，我现在用的是 OPPO Find X7", "小米 13"),
        ("旧的 iPad Air 4 给闺女上网课了，我的 iPad Pro 的膜有吗", "iPad Air 4"),
        ("I gave my old Pixel 7 to my brother, my phone is a Galaxy S24 now", "Pixel 7"),
        ("Sold my old Kindle Paperwhite, does this case fit my Kindle Oasis?", "Kindle Paperwhite"),
    ],
)
def test_a_device_given_away_or_sold_is_no_longer_the_users(said: str, gone: str) -> None:
    devices = _facts(said, "device_model")
    assert devices, "the one they have now is kept"
    assert not [d for d in devices if gone in d], devices


@pytest.mark.parametrize(
    ("said", "device"),
    [
        ("我用的是老款 MacBook Air，这个扩展坞能用吗", "MacBook Air"),
        ("My Pixel 7 is now really slow, is this charger any faster?", "Pixel 7"),
    ],
)
def test_an_old_model_still_used_is_the_users(said: str, device: str) -> None:
    assert [d for d in _facts(said, "device_model") if device in d], _facts(said, "device_model")


@pytest.mark.parametrize(
    ("said", "diet"),
    [
        ("I'm vegan now, not just vegetarian. Is the dark chocolate dairy-free?", "I'm vegan now"),
        ("我现在吃纯素了，不再是蛋奶素了", "我现在吃纯素了"),
        ("I don't eat pork, no shellfish either", "I don't eat pork, no shellfish either"),
    ],
)
def test_a_clause_only_denying_a_diet_beside_one_stating_it_adds_nothing(
    said: str, diet: str
) -> None:
    assert _facts(said, "diet") == [diet]
