"""News of a lasting fact, told in passing in a later session, takes the old value's slot
(a child who walks now, a new job, a move to the ground floor): the profile keeps the new
value, not the old one beside it. Pure: no database."""

from __future__ import annotations

import pytest

from policies.profile_merge import slot_of
from unstructured_memory.profile.rules import RuleExtractor
from unstructured_memory.summariser.summary import summarise
from unstructured_memory.summariser.topics import topics_of
from values.sessions import Turn


def _slots(*sessions: str) -> dict[str, str]:
    """The fact slots after each one-turn session in order, the newest value of each."""
    out: dict[str, str] = {}
    for k, said in enumerate(sessions):
        turns = [Turn("user", said), Turn("assistant", "好的 / Sure.")]
        extraction = RuleExtractor().extract(turns, summarise("u-news", f"s-{k}", turns))
        for o in extraction.observations:
            out[slot_of(o.key, o.scenario)] = o.value
    return out


@pytest.mark.parametrize(
    ("before", "news", "slot", "new", "old"),
    [
        (
            "闺女七个月 还不会走 天天满地爬 想买个爬行垫 要没味道的",
            "包裹咋显示签收了 我一天都在家啊 闺女都会走路了满屋跑 门口啥也没看见",
            "family@女儿",
            "会走路",
            "满地爬",
        ),
        (
            "儿子三岁 还不会自己穿鞋 有没有魔术贴的",
            "快递到哪了 儿子现在都上幼儿园了 早上得送他 家里九点后才有人",
            "family@儿子",
            "上幼儿园",
            "不会自己穿鞋",
        ),
        (
            "My son is 9 months, crawling everywhere, need a foam play mat.",
            "where's my parcel? it says delivered. fwiw my son is walking now so I'm chasing "
            "him around all day",
            "family@son",
            "walking now",
            "crawling",
        ),
        (
            "I'm a nurse doing 12-hour shifts, which of your clogs has the best arch support?",
            "the desk lamp flickers. the clogs were great but I left the hospital last month "
            "and I'm teaching at the community college now, so I barely wear them",
            "occupation",
            "teaching",
            "12-hour",
        ),
        (
            "我是外卖骑手 一天在路上十来个钟头 有没有防水的雨衣",
            "手机支架用不上了 能退不 考了个证 现在去工地开塔吊了 风吹不着",
            "occupation",
            "塔吊",
            "外卖",
        ),
        (
            "heads up I'm on the 4th floor of a walk-up, no elevator, the treadmill needs two guys",
            "do you have the knee brace in a large? my knees gave up on the stairs so we swapped "
            "into the ground floor unit in our building",
            "home",
            "ground floor",
            "walk-up",
        ),
        (
            "我住6楼 没电梯 大件得送上楼",
            "上次的柜子挺好 跟你说下我们搬到一楼了 以后送货不用爬楼",
            "home",
            "一楼",
            "没电梯",
        ),
        (
            "每日坚果哪个牌子好吃 我不挑 啥都吃 没啥忌口",
            "燕麦片箱子压扁了 上个月去医院一查对花生过敏 现在买啥都得先看配料表",
            "diet",
            "花生过敏",
            "没啥忌口",
        ),
        (
            "电饭煲2升的够用不 我家就俩人 我跟老公",
            "床垫啥时候到啊 婆婆搬过来跟我们住了 只能先睡沙发床",
            "household",
            "婆婆",
            "就俩人",
        ),
        (
            "is a 1.5 litre kettle enough? it's just me at home",
            "where's the shower chair? my dad moved in with us after his hip surgery",
            "household",
            "moved in",
            "just me",
        ),
    ],
)
def test_news_takes_the_old_values_slot(
    before: str, news: str, slot: str, new: str, old: str
) -> None:
    slots = _slots(before, news)
    assert new in slots.get(slot, ""), slots
    assert old not in slots.get(slot, ""), slots


def test_a_fact_of_a_member_said_before_stays_when_no_news_of_them_follows() -> None:
    slots = _slots(
        "闺女七个月 还不会走 天天满地爬 想买个爬行垫",
        "包裹咋显示签收了 我一天都在家啊 门口啥也没看见",
    )
    assert "满地爬" in slots.get("family@女儿", ""), slots


@pytest.mark.parametrize(
    "said",
    [
        "已经到货开箱了 发现屏幕碎了",
        "现在到店里做个保养要多久",
        "现在在家做饭呢 晚点再说",
        "I got a new job offer email",
    ],
)
def test_words_of_work_in_passing_name_no_job(said: str) -> None:
    assert "occupation" not in [t.key for t in topics_of(said)]


def test_a_parcel_left_on_the_ground_floor_says_nothing_of_the_home() -> None:
    assert "home" not in [t.key for t in topics_of("just leave it on the ground floor by the lift")]
    assert "home" in [t.key for t in topics_of("we're on the ground floor now")]
