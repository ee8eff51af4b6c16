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
        ("I commute two hours a day", "commute two hours"),
        ("As someone who's left-handed, will this mouse actually be comfy for me", "left-handed"),
        ("Oh and I can't stand coriander, can that be left out?", "can't stand coriander"),
        ("作为一个左撇子，这把剪刀我能用吗", "作为一个左撇子"),
    ],
)
def test_a_fact_no_topic_names_is_kept_in_the_users_words(said: str, kept: str) -> None:
    notes = _notes(("user", said))
    assert any(kept in text for text in notes.values()), notes


def test_a_fact_said_in_a_session_that_took_something_back_is_kept() -> None:
    """A session that took a request back keeps the facts the user stated (我是左撇子),
    though the clause stating one goes on about the goods."""
    notes = _notes(
        (
            "user",
            "文具套装少了把剪刀 订单6619302 算了剪刀别补了 补了我也用不了 我是左撇子"
            " 普通剪刀在我手里剪不动 补一把美工刀吧",
        ),
        ("assistant", "好的，剪刀不补了，给您补一把美工刀。"),
    )
    assert any("左撇子" in text for text in notes.values()), notes


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        ("I work nights, so please don't call before 2pm", "I work nights"),
        ("can it come on a friday? I work from home on Fridays", "I work from home on Fridays"),
        ("我上夜班 白天在家补觉 别敲门", "我上夜班"),
    ],
)
def test_the_hours_one_works_are_the_occupation_fact_in_the_users_words(
    said: str, kept: str
) -> None:
    turns = [Turn("user", said)]
    got = RuleExtractor().extract(turns, summarise("u", "s", turns)).observations
    assert any(o.key == "occupation" and kept in o.value for o in got), got


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
        "oh and while I have you, is the lamp in stock?",
        "while I've got you, can you check the lamp?",
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


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        # between spaces inside a question or a request about an order
        (
            "空气炸锅那单到哪了 730218846601 毕竟家里老太太牙口不好 就等着它做软烂的菜",
            "老太太牙口不好",
        ),
        ("取暖器啥时候发 620391847752 我们这边冬天没集中供暖的 全靠它了", "冬天没集中供暖"),
        ("这件冲锋衣能换个大号吗 平时每周都去爬山 里面得穿抓绒", "每周都去爬山"),
        ("这个加湿器噪音大吗 主要是我有慢性咽炎 一干就咳", "我有慢性咽炎"),
        ("这个枕头有矮一点的吗 我也不是打呼 就是一直趴着睡", "一直趴着睡"),
        # English: after since / fwiw, before so / and
        (
            "can you rush the ergonomic chair, order 618204? fwiw I've got a herniated disc "
            "so sitting on a stool is killing me",
            "herniated disc",
        ),
        (
            "has 551902 shipped? it's the fragrance-free sunscreen. I've got eczema and the "
            "usual stuff burns",
            "I've got eczema",
        ),
        (
            "need the rain cover by Friday since I start work at 6am every day",
            "I start work at 6am every day",
        ),
    ],
)
def test_a_fact_said_in_passing_inside_another_clause_is_kept(said: str, kept: str) -> None:
    """A statement of the user (or theirs) said in passing, between spaces inside a question
    or request, or after since / fwiw, is kept though the clause holding it is not one."""
    notes = _notes(("user", said))
    assert any(kept in text for text in notes.values()), notes


@pytest.mark.parametrize(
    ("said", "absent"),
    [
        ("如果我以后养猫 这个吸尘器吸猫毛行吗", "养猫"),
        ("我也不是腰不好 就是想买个软点的床垫", "腰不好"),
        ("这个吹风机噪音大吗 我昨天刚搬家 还没收拾好", "搬家"),
        ("脚垫拍错了 我选的是奔驰C级的 我车是宝马3系", "奔驰"),
        ("我这包裹咋显示签收了 我今天一天都在家啊 门口啥也没看见", "在家"),
        ("where's my parcel? I'm home all day today and nothing came", "home all day"),
        ("is the lamp in stock? I'm not a night owl so the dim setting is fine", "night owl"),
    ],
)
def test_what_is_supposed_denied_or_past_in_passing_is_no_fact(said: str, absent: str) -> None:
    notes = _notes(("user", said))
    assert not [t for t in notes.values() if absent in t], notes
