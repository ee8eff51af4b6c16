"""The dialogue-act layer (unstructured_memory/summariser/acts.py and its readers): later
acts amend earlier ones before anything is stored. Pure functions: no database here."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unstructured_memory.profile.rules import RuleExtractor
from unstructured_memory.summariser import Turn, summarise
from unstructured_memory.summariser.acts import (
    ActKind,
    Utterance,
    families,
    negated,
    read_dialogue,
)
from unstructured_memory.summariser.amended import substitute
from unstructured_memory.summariser.choice import final_choice, options
from unstructured_memory.summariser.entities import Entity, Lang, extract_entities
from unstructured_memory.summariser.outcome import committed_items
from unstructured_memory.summariser.restated import restate
from unstructured_memory.summariser.topics import TOPICS
from unstructured_memory.summariser.variants import confirmed_variant
from values.sessions import Role

T0 = datetime(2026, 11, 20, 10, 0, tzinfo=UTC)


def _turns(*said: tuple[str, str]) -> list[Turn]:
    return [Turn("user" if role == "u" else "assistant", text, T0) for role, text in said]


def _ids(turns: list[Turn]) -> set[str]:
    return {e.text for e in summarise("u", "s", turns).entities}


def _observed(*texts: str) -> list[tuple[str, str, str]]:
    """What the rules keep for the profile: ``!`` an instruction, ``-`` a refusal."""
    turns = [Turn("user", t, T0) for t in texts]
    got = RuleExtractor().extract(turns, summarise("u", "s", turns)).observations
    return [
        (o.kind.value, o.slot, ("-" if o.negated else "!" if o.explicit else "") + o.value)
        for o in got
    ]


def _instructions(*texts: str) -> list[tuple[str, str]]:
    turns = [Turn("user", t, T0) for t in texts]
    got = RuleExtractor().extract(turns, summarise("u", "s", turns)).instructions
    return [(i.key, i.text) for i in got]


# --------------------------------------------------------------------------- corrections


@pytest.mark.parametrize(
    ("said", "wrong", "right"),
    [
        ("年货想买个海鲜礼盒 我对虾过敏…哦不对 是螃蟹 吃螃蟹身上起疹子", "虾", "螃蟹"),
        ("放小区北门的快递柜就行 哦不对南门 南门那排蓝色的柜子", "北门", "南门"),
        ("要那个红色的保温杯 送到仓库 哦不对 蓝色", "红色", "蓝色"),
        (
            "grabbing the flannel shirt. I wear a medium — sorry, large, I always forget",
            "medium",
            "large",
        ),
        ("the scarf in grey, no wait, navy", "grey", "navy"),
        ("the grey sneakers, size 10 please. sorry, 9.5, they run big", "10", "9.5"),
        (
            "I'm allergic to latex... no wait, not latex, nickel. nickel gives me a rash",
            "latex",
            "nickel",
        ),
    ],
)
def test_a_bare_word_put_right_replaces_the_word_alike_said_before_it(
    said: str, wrong: str, right: str
) -> None:
    """After a word of error, a bare word replaces the last word alike in the clause before:
    a noun by a noun in Chinese, a size, colour or day by one of its class in English."""
    turns = _turns(("u", said))
    pairs = summarise("u", "s", turns).dialogue.pairs([said])
    assert any(wrong in w and r == right for w, r in pairs), pairs


@pytest.mark.parametrize(
    ("said", "right", "wrong"),
    [
        ("the grey sneakers, size 10 please. sorry, 9.5, they run big", "9.5", "size 10"),
        ("the Trailhawk runners in olive, size 8 pls. wait no, 7.5, they run big", "7.5", "size 8"),
    ],
)
def test_a_bare_value_put_right_keeps_the_clause_it_corrects(
    said: str, right: str, wrong: str
) -> None:
    """ "size 10 please. sorry, 9.5": the record says size 9.5, not nothing."""
    text = summarise("u", "s", _turns(("u", said))).summary_text
    assert right in text, text
    assert wrong not in text, text


def test_a_measure_put_right_in_the_next_turn_replaces_the_one_of_its_unit() -> None:
    """ "哦不对 五岁了" opening the user's next turn puts right the age of their previous one."""
    turns = _turns(
        ("u", "想给孩子买个平衡车 孩子4岁"),
        ("a", "4岁的小朋友一般推荐12寸的平衡车。"),
        ("u", "哦不对 五岁了 上礼拜刚过的生日"),
    )
    values = [
        o.value
        for o in RuleExtractor().extract(turns, summarise("u", "s", turns)).observations
        if o.key == "family"
    ]
    assert any("五岁" in v for v in values), values
    assert not any("4岁" in v for v in values), values


@pytest.mark.parametrize(
    "said",
    [
        "I wear a medium — sorry, I always forget",  # nothing of its class put right
        "我对虾过敏…哦不对 是真的很严重",  # no noun put right
        "small, not large, please",  # a courtesy after "not X," is no value
    ],
)
def test_a_word_of_error_with_no_word_alike_puts_nothing_right(said: str) -> None:
    pairs = summarise("u", "s", _turns(("u", said))).dialogue.pairs([said])
    assert not [(w, r) for w, r in pairs if r.casefold() in ("i", "真的", "please")], pairs


@pytest.mark.parametrize(
    ("said", "kept", "gone"),
    [
        ("年货想买个海鲜礼盒 我对虾过敏…哦不对 是螃蟹 吃螃蟹身上起疹子", "螃蟹", "虾过敏"),
        (
            "I'm allergic to latex... no wait, not latex, nickel. nickel gives me a rash",
            "nickel",
            "latex",
        ),
        (
            "grabbing the flannel shirt. I wear a medium — sorry, large, I always forget",
            "L",
            "size M",
        ),
    ],
)
def test_a_fact_about_the_user_put_right_in_the_same_turn_holds_the_right_value(
    said: str, kept: str, gone: str
) -> None:
    values = [v for _, _, v in _observed(said)]
    assert any(kept in v for v in values), values
    assert not any(gone in v for v in values), values


@pytest.mark.parametrize(
    ("turns", "right", "wrong"),
    [
        (
            _turns(
                ("u", "帮我查下订单 5530217 到哪了"),
                ("a", "系统里没有查到 5530217 这个订单。"),
                ("u", "订单号说错了，不是 5530217，是 5530271"),
            ),
            "5530271",
            "5530217",
        ),
        (
            _turns(
                ("u", "顺丰单号 SF6312087734510 三天没动了"),
                ("u", "哦哦抄错了，最后两位反了，是 SF6312087734501"),
            ),
            "SF6312087734501",
            "SF6312087734510",
        ),
        (
            _turns(("u", "my order 88412 is late"), ("u", "sorry, I meant 88421")),
            "88421",
            "88412",
        ),
        (
            _turns(("u", "退款单号 RF7733001 还没到"), ("u", "不好意思看串行了，是 RF7733010")),
            "RF7733010",
            "RF7733001",
        ),
        # an interjection of no said straight after the value (哦不, 啊不, wait no, no wait)
        (_turns(("u", "订单号 88231045，哦不，88231054，到哪了")), "88231054", "88231045"),
        (_turns(("u", "单号 77120394 啊不是，77120349 帮我查下")), "77120349", "77120394"),
        (_turns(("u", "Order 5521907, wait no, 5521970, where is it?")), "5521970", "5521907"),
    ],
)
def test_a_corrected_identifier_survives_and_the_wrong_one_does_not(
    turns: list[Turn], right: str, wrong: str
) -> None:
    summary = summarise("u", "s", turns)
    assert right in summary.summary_text
    assert wrong not in summary.summary_text
    assert wrong not in _ids(turns), "no link is made to the wrong number"


@pytest.mark.parametrize(
    ("later", "right", "wrong"),
    [
        ("哦说错了，是 X100 Pro", "vivo X100 Pro", None),
        ("我说错了，是 X200", "vivo X200", "X100"),
    ],
)
def test_a_device_put_right_after_who_erred_replaces_the_model(
    later: str, right: str, wrong: str | None
) -> None:
    turns = _turns(("u", "我的手机是 vivo X100"), ("a", "好的"), ("u", later))
    summary = summarise("u", "s", turns)
    devices = [
        o.value
        for o in RuleExtractor().extract(turns, summary).observations
        if o.key == "device_model"
    ]
    assert devices == [right], devices
    if wrong is not None:
        assert wrong not in summary.summary_text


@pytest.mark.parametrize(
    ("said", "right", "wrong"),
    [
        ("我儿子 8 岁，哦不，刚满 9 岁", "9", "8"),
        ("My son is 8, wait no, he just turned 9", "9", "8"),
    ],
)
def test_a_fact_put_right_in_its_turn_keeps_the_fact_with_the_right_value(
    said: str, right: str, wrong: str
) -> None:
    turns = _turns(("u", said))
    summary = summarise("u", "s", turns)
    family = [o.value for o in RuleExtractor().extract(turns, summary).observations]
    assert any(right in v and wrong not in v for v in family), family
    assert f"{wrong} 岁" not in summary.summary_text
    assert f"is {wrong}" not in summary.summary_text
    assert "哦不" not in summary.summary_text
    assert "wait no" not in summary.summary_text


@pytest.mark.parametrize(
    ("turns", "pair"),
    [
        (
            _turns(
                ("u", "Can you check order 48213077? It's the standing desk."),
                ("a", "I can't find 48213077. Could you double-check the number?"),
                ("u", "Oops, fat fingers. It's 48213707."),
            ),
            ("48213077", "48213707"),
        ),
        (
            _turns(("u", "Tuesday won't work anymore. Can we do Thursday after 5 instead?")),
            ("Tuesday", "Thursday"),
        ),
        (_turns(("u", "周二不行了，我要上班，改周四吧")), ("周二", "周四")),
        (_turns(("u", "周六我家闺女有比赛去不了了 能改下周一晚上不")), ("周六", "下周一晚上")),
        (_turns(("u", "下周二家里没人 能推到下周四寄吗")), ("下周二", "下周四")),
        (
            _turns(("u", "Thursday doesn't work anymore. Can we do Saturday afternoon?")),
            ("Thursday", "Saturday"),
        ),
        (
            _turns(
                ("u", "Levi's 511 in W32 L32 please."),
                ("a", "Sure, W32 L32 in dark indigo?"),
                ("u", "Hold on, I'm a W34 now. Make it W34 L32."),
            ),
            ("W32 L32", "W34 L32"),
        ),
    ],
)
def test_a_slip_or_a_plan_that_no_longer_works_is_a_correction(
    turns: list[Turn], pair: tuple[str, str]
) -> None:
    summary = summarise("u", "s", turns)
    assert summary.dialogue.pairs([t.text for t in turns]) == [pair]
    assert pair[0] not in summary.summary_text


def test_a_correction_in_words_replaces_the_value_wherever_it_is_quoted() -> None:
    turns = _turns(
        ("u", "洗碗机到了，约个师傅上门安装，周二下午吧"),
        ("a", "好的，给您约周二下午。"),
        ("u", "啊不对，周三不是周二，我记错日子了"),
    )
    summary = summarise("u", "s", turns)
    assert "周三" in summary.summary_text
    assert "周二" not in summary.summary_text


@pytest.mark.parametrize(
    "moved", ["周三不行了 临时要出差 换周五下午行不", "周三不行了，临时要出差，换周五下午行不"]
)
def test_a_time_range_is_no_price_and_the_rescheduled_day_is_not_a_note(moved: str) -> None:
    """ "周三上午9-12点" offers no option at 12; the day moved away is named nowhere, and the
    sentence moving it is no temporary intent (its clauses apart by spaces or commas)."""
    turns = _turns(
        ("u", "美的那个嵌入式洗碗机 安装约的周三上午对吧"),
        ("a", "是的，安装单 AZ26110457，周三上午9-12点。"),
        ("u", moved),
        ("a", "可以，已改到周五下午2-6点，师傅上门前会联系您。"),
    )
    summary = summarise("u", "s", turns)
    assert "周三" not in summary.summary_text
    assert "（12" not in summary.summary_text
    assert [kind for kind, _, _ in _observed(*(t.text for t in turns if t.role == "user"))] == []


def test_a_colour_meant_replaces_the_one_said_and_asides_about_it_go() -> None:
    turns = _turns(
        ("u", "I'll take the cast iron dutch oven, the sage green one."),
        ("a", "Great, sage green added, order 6533540."),
        ("u", "Wait, sorry, I meant olive. Sage is the pale one, right? I want the darker one."),
    )
    text = summarise("u", "s", turns).summary_text
    assert "olive" in text
    assert "sage" not in text.casefold()


def test_a_misspelling_named_is_a_correction_of_an_earlier_session() -> None:
    turns = _turns(
        ("u", "I misspelled my friend's name on the card for 6536118. It's Markus, not Marcus.")
    )
    summary = summarise("u", "s", turns)
    assert summary.dialogue.pairs([t.text for t in turns]) == [("Marcus", "Markus")]
    assert "Marcus" not in summary.summary_text


def test_a_plain_word_said_against_another_is_no_correction_without_a_word_of_error() -> None:
    turns = _turns(("u", "It's a gift, not a return"))
    assert summarise("u", "s", turns).dialogue.corrections == ()


def test_a_corrected_model_is_the_device_the_profile_keeps() -> None:
    got = _observed("我家扫地机是石头 G20", "上次我说错型号了，我家扫地机是石头 P10，不是 G20")
    devices = [value for kind, slot, value in got if slot.startswith("device_model")]
    assert len(devices) == 1
    assert "P10" in devices[0]
    assert "G20" not in devices[0]


@pytest.mark.parametrize(
    ("turns", "right", "wrong"),
    [
        (
            _turns(
                ("u", "这款钢化膜适配小米 13 吗"),
                ("a", "适配小米 13，直屏设计。"),
                ("u", "等下，我说错了，我手机是小米 14，不是 13，去年就换了"),
            ),
            "小米 14",
            "13",
        ),
        (
            _turns(
                ("u", "这个手机壳华为 nova 11 能用不"),
                ("u", "等会儿 我刚看了下设置 写的是 nova 12 不是 11，我记混了"),
            ),
            "nova 12",
            "11",
        ),
        (
            _turns(
                ("u", "Does this case fit an iPhone 13?"),
                ("u", "Sorry, it's an iPhone 15, not 13."),
            ),
            "iPhone 15",
            "13",
        ),
    ],
)
def test_a_generation_corrected_by_its_number_keeps_the_name_before_it(
    turns: list[Turn], right: str, wrong: str
) -> None:
    text = summarise("u", "s", turns).summary_text
    name = right.rsplit(" ", 1)[0]
    assert right in text
    assert f"{name} {wrong}" not in text
    assert f"{name} {name}" not in text, "the name is not said twice"


def test_a_generation_corrected_by_its_number_is_the_device_the_profile_keeps() -> None:
    got = _observed("这款钢化膜适配小米 13 吗", "等下，我说错了，我手机是小米 14，不是 13")
    assert [value for _, slot, value in got if slot.startswith("device_model")] == ["小米 14"]


@pytest.mark.parametrize(
    "later",
    ["说错了，是 5530271，算了", "哦说错了，是 5530271。6353712 退货就算了"],
)
def test_a_turn_taken_back_whole_after_a_correction_extracts_nothing(later: str) -> None:
    turns = _turns(("u", "订单 6353712 退货"), ("u", later))
    got = RuleExtractor().extract(turns, summarise("u", "s", turns)).observations
    assert [o for o in got if o.slot.startswith("device_model")] == []


def test_a_model_named_by_a_letter_corrects_the_model_not_the_brand() -> None:
    got = _observed(
        "TPE脚垫那个快递YT6629048813570到哪了，我车是特斯拉Model 3，你们没发错版本吧",
        "啊不对不对 是Model Y 我打错了 Y没错 别改",
    )
    assert [value for _, slot, value in got if slot.startswith("device_model")] == [
        "特斯拉 Model Y"
    ]


def test_a_device_said_before_its_correction_is_kept_as_corrected() -> None:
    got = _observed(
        "订单 6336471 买的电池装不上，我的吸尘器是戴森 V10",
        "我看了下机身铭牌，是 V12，不是 V10，我记错了",
    )
    devices = [value for kind, slot, value in got if slot.startswith("device_model")]
    assert devices == ["戴森 V12"]


@pytest.mark.parametrize(
    ("first", "again", "right", "wrong"),
    [
        ("我是油皮，推荐个洗面奶", "哦说反了，我是干皮，冬天脸上还起皮", "干皮", "油皮"),
        (
            "I have oily skin, which cleanser would you suggest?",
            "Sorry, I mixed it up: I have dry skin, it flakes in winter",
            "dry skin",
            "oily skin",
        ),
    ],
)
def test_a_fact_stated_again_after_a_word_of_error_replaces_the_first(
    first: str, again: str, right: str, wrong: str
) -> None:
    turns = _turns(("u", first), ("a", "好的 / Sure."), ("u", again))
    text = summarise("u", "s", turns).summary_text
    assert wrong not in text
    facts = [value for kind, slot, value in _observed(first, again) if slot == "skin"]
    assert facts
    assert right in facts[-1]
    assert wrong not in facts[-1]


def test_substitution_replaces_a_code_holding_the_wrong_part() -> None:
    assert (
        substitute("适配 HL-L2370DW 的硒鼓", [("L2370", "HL-L2350DW")]) == "适配 HL-L2350DW 的硒鼓"
    )
    assert substitute("订单 5530217 已发货", [("5530217", "5530271")]) == "订单 5530271 已发货"


@pytest.mark.parametrize(
    ("text", "pairs", "expected"),
    [
        ("order 7730418825 is short", [("30", "32")], "order 7730418825 is short"),
        ("订单 6353012 的 L30 太短", [("30", "32")], "订单 6353012 的 L32 太短"),
        ("尺码 30 太小", [("30", "32")], "尺码 32 太小"),
    ],
)
def test_a_wrong_number_is_never_replaced_inside_a_longer_one(
    text: str, pairs: list[tuple[str, str]], expected: str
) -> None:
    assert substitute(text, pairs) == expected


def test_a_number_put_right_by_a_word_is_no_correction() -> None:
    """ "I'm a 32 inseam, not 30": the value put right is 32, never the word "inseam"; and
    the order id holding 30 keeps its digits."""
    turns = _turns(
        ("u", "Hi, the Levi's 511 from order 7730418825 are way too short. I ordered W32 L30"),
        ("a", "Would you like to exchange them for a different length?"),
        ("u", "Yeah. I'm a 32 inseam, not 30. So W32 L32 please"),
    )
    summary = summarise("u", "s", turns)
    texts = [t.text for t in turns]
    assert all(right != "inseam" for _, right in summary.dialogue.pairs(texts))
    assert "7730418825" in summary.summary_text


@settings(max_examples=60, deadline=None)
@given(
    st.integers(10**6, 10**8),
    st.integers(1, 9),
    st.sampled_from(["说错了", "写错了", "记错了", "打错了"]),
)
def test_any_corrected_order_number_is_dropped(number: int, shift: int, mark: str) -> None:
    wrong, right = str(number), str(number + shift)
    turns = _turns(("u", f"订单 {wrong} 的快递到哪了"), ("u", f"订单号{mark}，是 {right}"))
    summary = summarise("u", "s", turns)
    assert wrong not in summary.summary_text
    assert right in summary.summary_text


@pytest.mark.parametrize(
    ("turns", "pair"),
    [
        (
            _turns(
                ("u", "帮我看看工单 WX-72-11093 处理到哪一步了"),
                ("a", "WX-72-11093 这个编号查不到，您核对一下？"),
                ("u", "我看了下邮件，是 WX-72-11039"),
            ),
            ("WX-72-11093", "WX-72-11039"),
        ),
        (
            _turns(
                ("u", "寄修单 KM31-0412-7751 帮我查一下"),
                ("a", "没有查到这个单号。"),
                ("u", "抱歉 手滑多打了个7 应该是 KM31-0412-751"),
            ),
            ("KM31-0412-7751", "KM31-0412-751"),
        ),
        (
            _turns(
                ("u", "Any news on case CS-88-20417?"),
                ("a", "I can't find CS-88-20417 on your account, could you double-check?"),
                ("u", "Found the email, it's CS-88-20471."),
            ),
            ("CS-88-20417", "CS-88-20471"),
        ),
        (
            _turns(
                ("u", "Repair ticket RK45-1102-3361 please"),
                ("a", "Hmm, nothing under that number."),
                ("u", "Fat fingers, I typed an extra 3: RK45-1102-361"),
            ),
            ("RK45-1102-3361", "RK45-1102-361"),
        ),
    ],
)
def test_an_id_given_again_in_its_shape_after_it_was_not_found_puts_it_right(
    turns: list[Turn], pair: tuple[str, str]
) -> None:
    summary = summarise("u", "s", turns)
    assert summary.dialogue.pairs([t.text for t in turns]) == [pair]
    assert pair[0] not in summary.summary_text
    assert pair[1] in summary.summary_text


@pytest.mark.parametrize(
    "turns",
    [
        _turns(
            ("u", "订单 6532813 的物流查下"),
            ("a", "这个订单查不到，麻烦核对下"),
            ("u", "那帮我查下退款 RF20261102 吧"),
        ),
        _turns(
            ("u", "order 7712345 arrived damaged"),
            ("a", "Sorry to hear that! Anything else?"),
            ("u", "yes, order 7712354 is late too"),
        ),
    ],
)
def test_another_id_of_another_shape_or_without_doubt_puts_nothing_right(
    turns: list[Turn],
) -> None:
    assert summarise("u", "s", turns).dialogue.pairs([t.text for t in turns]) == []


# --------------------------------------------------------------------------- retractions


def test_a_retracted_return_replaced_by_an_exchange_is_recorded_as_the_exchange() -> None:
    summary = summarise(
        "u",
        "s",
        _turns(
            ("u", "耳机左边没声音，我要退货"), ("a", "好的"), ("u", "退货就算了，帮我换个颜色吧")
        ),
    )
    assert "换货" in summary.summary_text
    assert "退货" not in summary.summary_text


def test_a_refused_request_is_no_request() -> None:
    summary = summarise(
        "u",
        "s",
        _turns(("u", "订单 6124408 的跑鞋小了"), ("u", "不是要退款哈，是要换货！换大一码")),
    )
    assert "换货" in summary.summary_text
    assert "退款" not in summary.summary_text
    english = summarise(
        "u",
        "s",
        _turns(("u", "I don't want to cancel order 6174456, just hold it until the 12th")),
    )
    assert "cancel" not in english.summary_text.lower()


@pytest.mark.parametrize(
    ("turns", "kept", "gone"),
    [
        (
            _turns(
                ("u", "电饭煲内胆有划痕，订单 7723105，退点钱给我吧"),
                ("a", "可以给您部分退款 35 元，或者换一个新内胆，您选哪个？"),
                ("u", "钱就算了，还是给我换个内胆吧"),
            ),
            "7723105",
            "35 元",
        ),
        (
            _turns(
                ("u", "The lid of my kettle is cracked, order 5512093, can I get some money back?"),
                ("a", "We can offer a partial refund of $15, or send a replacement lid."),
                ("u", "Forget the money, just send a new lid please"),
            ),
            "5512093",
            "$15",
        ),
    ],
)
def test_the_amount_of_a_refund_taken_back_is_no_amount_of_the_case(
    turns: list[Turn], kept: str, gone: str
) -> None:
    text = summarise("u", "s", turns).summary_text
    assert kept in text
    assert gone not in text


@pytest.mark.parametrize(
    ("turns", "belief"),
    [
        (
            _turns(
                ("u", "把订单 7781204 取消吧，我妈可能已经在超市买了同款电水壶"),
                ("a", "这单今天下午发货，确定取消吗？"),
                ("u", "哦 她买的是保温杯 不取消了 照常发吧"),
            ),
            "已经在超市买了",
        ),
        (
            _turns(
                ("u", "Cancel order 4410923 please, I believe my husband already ordered one."),
                ("a", "Sure, before I do: it ships today, cancel it?"),
                ("u", "Wait, he got a toaster. Don't cancel, I'll keep it coming."),
            ),
            "already ordered",
        ),
    ],
)
def test_a_cancellation_refused_later_is_withdrawn_with_the_belief_it_rested_on(
    turns: list[Turn], belief: str
) -> None:
    summary = summarise("u", "s", turns)
    assert summary.dialogue.retracted == ("cancel",)
    assert belief not in summary.summary_text
    got = RuleExtractor().extract(turns, summary).observations
    assert not any(belief in str(o.value) for o in got)


@pytest.mark.parametrize(
    ("said", "family", "words"),
    [
        ("换货单 HX778102 帮我撤销吧，鞋子其实挺合脚的", "exchange", "撤回"),
        ("Please cancel refund RF550217, the parcel turned up after all.", "refund", "withdrew"),
        ("Cancel return RT220913 please, my son decided to keep the jacket.", "return", "withdrew"),
    ],
)
def test_cancelling_an_earlier_request_by_its_form_withdraws_it(
    said: str, family: str, words: str
) -> None:
    summary = summarise("u", "s", _turns(("u", said)))
    assert summary.dialogue.retracted == (family,)
    assert summary.dialogue.unmatched == (family,), "an earlier session's request"
    assert words in summary.summary_text


@pytest.mark.parametrize(
    ("turns", "dropped"),
    [
        (
            _turns(
                ("u", "帮我把订单 7781203 的地址改一下"),
                ("a", "好的，请提供新地址"),
                ("u", "改成浦东新区张江路 88 号吧……哦不对，还是原来的地址，我周末回家住"),
            ),
            "浦东新区",
        ),
        (
            _turns(
                ("u", "Can you change the delivery address on order 5521907?"),
                ("a", "Sure, what's the new address?"),
                ("u", "14 Elm Road, Leeds. Hmm, no, actually keep the original address"),
            ),
            "Leeds",
        ),
    ],
)
def test_going_back_to_the_original_keeps_no_change(turns: list[Turn], dropped: str) -> None:
    summary = summarise("u", "s", turns)
    assert dropped not in summary.summary_text
    assert "address" in summary.dialogue.retracted
    got = RuleExtractor().extract(turns, summary).observations
    assert not [o for o in got if o.key == "address"], got


@pytest.mark.parametrize(
    "said",
    [
        "工单 TK-88-00412 还没处理，订单 2409-1558-8120 的取件码 A7Q3 也不对",
        "订单 7781203 的退货运单号查不到物流，快递员说没揽收",
        "The return label for order 4410923 won't scan at the drop-off point",
    ],
)
def test_no_request_is_recorded_that_nobody_made(said: str) -> None:
    """Words of a return's paperwork (取件码, 退货运单, return label) ask for no return."""
    text = summarise("u", "s", _turns(("u", said))).summary_text
    assert "申请退货" not in text, text
    assert "requested a return" not in text, text


@pytest.mark.parametrize(
    ("said", "family"),
    [
        ("那个退款申请帮我撤了吧，商家已经补发了", "refund"),
        ("投诉先撤掉，快递员刚给我打电话道歉了", "complaint"),
        ("换货单撤一下，尺码其实没问题", "exchange"),
    ],
)
def test_a_request_withdrawn_in_colloquial_words_is_no_request(said: str, family: str) -> None:
    summary = summarise("u", "s", _turns(("u", said)))
    assert summary.dialogue.retracted == (family,)
    live = summary.dialogue.live("user")
    assert not [a for a in live if a.kind is ActKind.REQUEST and family in a.families]
    assert summary.summary_text.startswith(("用户撤回", "用户取消")), summary.summary_text


@pytest.mark.parametrize(
    ("turns", "why", "stale"),
    [
        (
            _turns(
                ("u", "电热水壶不加热了，订单 6352731，我要退款，你们上门取件吧"),
                ("a", "已提交退款申请 RF6352731A，明天上午快递员上门取件。"),
                ("u", "等下，是底座插头松了，插紧就好了。退款不退了，上门取件也取消吧"),
                ("a", "好的，已撤销退款申请 RF6352731A，并取消上门取件。"),
            ),
            "插头松",
            "不加热",
        ),
        (
            _turns(
                ("u", "I want to return the drill, order 88123, it keeps overheating"),
                ("a", "Return opened."),
                ("u", "Actually never mind the return, it was the battery, a new one works fine"),
            ),
            "battery",
            "overheating",
        ),
    ],
)
def test_a_withdrawal_is_recorded_with_the_reason_given_for_it(
    turns: list[Turn], why: str, stale: str
) -> None:
    summary = summarise("u", "s", turns)
    assert why in summary.summary_text
    assert stale not in summary.summary_text, "the first reason no longer holds"
    live = summary.dialogue.live("user")
    asked = {f for a in live if a.kind is ActKind.REQUEST for f in a.families}
    assert not asked, "every request was taken back"


@pytest.mark.parametrize(
    "said", ["出差取消了，昨天说放驿站的不用了，正常送到家", "Trip's cancelled, forget the locker"]
)
def test_taking_a_plan_back_is_no_cancellation(said: str) -> None:
    summary = summarise("u", "s", _turns(("u", said)))
    assert summary.intent.value != "return_request"
    assert "取消订单" not in summary.summary_text
    assert "cancellation" not in summary.summary_text


@pytest.mark.parametrize(
    ("offer", "answer", "chosen", "rejected"),
    [
        (
            "可以退货退款，也可以给您换一台新的。",
            "退货还得自己打包寄回太麻烦了，给我换一台吧",
            "换",
            "退货",
        ),
        (
            "I can refund it, or we can send a replacement.",
            "A refund takes ages, just send a replacement please",
            "replacement",
            "refund",
        ),
    ],
)
def test_the_way_picked_among_those_offered_is_the_request(
    offer: str, answer: str, chosen: str, rejected: str
) -> None:
    turns = _turns(("u", "收到的扫地机 T8 不回充"), ("a", offer), ("u", answer))
    summary = summarise("u", "s", turns)
    assert summary.dialogue.picked, "a pick among the offered ways"
    assert chosen in summary.summary_text
    assert rejected not in summary.summary_text.replace(answer, "")


def test_a_second_way_added_with_a_word_of_addition_is_no_pick() -> None:
    turns = _turns(
        ("u", "订单 6702214 少发了一件"),
        ("a", "可以给您退这一件的款，也可以帮您补发。"),
        ("u", "先退款吧，另外也帮我补发一件"),
    )
    assert summarise("u", "s", turns).dialogue.picked == ()


def test_a_plan_chosen_among_priced_ones_is_recorded_with_its_own_price() -> None:
    turns = _turns(
        ("u", "视频会员怎么开"),
        ("a", "月卡 25 元，年卡 218 元。"),
        ("u", "年卡是便宜，但不一定一直看……还是先开个月卡吧"),
    )
    text = summarise("u", "s", turns).summary_text
    assert "月卡" in text
    assert "25 元" in text
    assert "218" not in text


def test_asking_the_agent_to_repair_it_is_a_repair_request() -> None:
    turns = _turns(
        ("u", "吹风机用了半年，热风时有时无"),
        ("a", "您是想退货还是维修？"),
        ("u", "不退了，帮我修一下就行"),
    )
    text = summarise("u", "s", turns).summary_text
    assert "维修" in text
    assert "退货" not in text


def test_a_withdrawn_complaint_says_it_was_withdrawn() -> None:
    summary = summarise("u", "s", _turns(("u", "那个投诉撤回吧，已经解决了")))
    assert "撤回了投诉" in summary.summary_text
    assert summary.dialogue.unmatched == ("complaint",), "an earlier session's complaint"


def test_no_thanks_after_an_offer_retracts_nothing() -> None:
    turns = _turns(("u", "我要退款"), ("a", "已提交退款。还有其他需要吗？"), ("u", "不用了，谢谢"))
    summary = summarise("u", "s", turns)
    assert summary.dialogue.retracted == ()
    assert "退款" in summary.summary_text


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(["退货", "退款", "换货", "投诉"]),
    st.sampled_from(["就算了", "不用了", "撤回吧"]),
)
def test_a_retracted_request_is_never_what_the_user_asked_for(request: str, back: str) -> None:
    turns = _turns(("u", f"订单 88231 的耳机坏了，我要{request}"), ("u", f"{request}{back}"))
    d = summarise("u", "s", turns).dialogue
    assert not [a for a in d.live("user") if a.kind is ActKind.REQUEST and a.families]


# --------------------------------------------------------------------------- negation, instructions


@pytest.mark.parametrize("said", ["I didn't call the courier yet", "I didn't email them back yet"])
def test_a_call_the_user_did_not_make_refuses_no_channel(said: str) -> None:
    assert not [o for o in _observed(said) if o[1] == "notification_channel"]


@pytest.mark.parametrize(
    ("said", "value"),
    [
        ("取件码 8-2-3301 输进去说无效", "8-2-3301"),
        ("工单 TK-88-00412 还没处理，订单 2409-1558-8120 的取件码 A7Q3 也不对", "TK-88-00412"),
        ("Ticket CS-772014 is still open, nobody has called me", "CS-772014"),
    ],
)
def test_an_id_the_record_quotes_already_is_not_said_again(said: str, value: str) -> None:
    text = summarise("u", "s", _turns(("u", said))).summary_text
    assert text.count(value) == 1, text


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        ("My skin is sensitive, alcohol-free products only", "alcohol-free products only"),
        ("Unscented detergent only please, my son has eczema", "Unscented detergent only"),
    ],
)
def test_a_kind_only_is_a_standing_wish(said: str, kept: str) -> None:
    notes = [t for k, t in _instructions(said) if k.startswith("note:")]
    assert any(kept in t for t in notes), _instructions(said)


@pytest.mark.parametrize("said", ["This one only, not the pack", "Just the charger only"])
def test_the_goods_at_hand_only_is_no_standing_wish(said: str) -> None:
    assert not [t for k, t in _instructions(said) if "only" in t], _instructions(said)


@pytest.mark.parametrize(
    ("said", "city"),
    [
        ("We just moved to a house in Bristol", "Bristol"),
        ("I've moved into a flat in Leeds", "Leeds"),
        ("we finally closed on a townhouse in Raleigh last month", "Raleigh"),
        ("we bought a place in Tucson, moving in next week", "Tucson"),
        ("上个月在合肥买了房 一家人都搬过去了", "合肥"),
        ("刚在佛山交了房 上周已经搬过去了", "佛山"),
    ],
)
def test_a_move_into_a_home_in_a_city_names_the_city(said: str, city: str) -> None:
    got = [v for _, slot, v in _observed(said) if slot == "city"]
    assert any(city in v for v in got), _observed(said)


@pytest.mark.parametrize(
    ("said", "wanted", "refused"),
    [
        ("I'd rather you didn't call, email works", "email", "phone"),
        ("Please don't text, email works for me", "email", "sms"),
        ("We'd prefer you didn't ring, texts are best", "sms", "phone"),
    ],
)
def test_a_channel_refused_without_me_and_one_that_works_instead(
    said: str, wanted: str, refused: str
) -> None:
    got = [(k, v) for k, s, v in _observed(said) if s == "notification_channel"]
    assert ("preference", f"!{wanted}") in got, got
    assert ("preference", f"-{refused}") in got, got
    assert ("preference", f"!{refused}") not in got, got


@pytest.mark.parametrize(
    ("text", "word", "expected"),
    [
        ("别再发邮件了，有事打电话", "邮件", True),
        ("别再发邮件了，有事打电话", "电话", False),
        ("不用打电话，发短信就行", "电话", True),
        ("不用打电话，发短信就行", "短信", False),
        ("I don't want calls, just email me", "calls", True),
        ("I don't want calls, just email me", "email", False),
    ],
)
def test_negation_governs_the_word_after_it_in_its_clause(
    text: str, word: str, expected: bool
) -> None:
    lang: Lang = "en" if text.isascii() else "zh"
    assert negated(text, text.index(word), lang) is expected


@pytest.mark.parametrize(
    ("text", "word", "expected"),
    [
        ("email我从来不看", "email", True),
        ("之前说的短信通知别发了，就 app 推送吧", "短信", True),
        ("之前说的短信通知别发了，就 app 推送吧", "app", False),
        ("电话就不用打了，微信上说", "电话", True),
        ("短信通知我，不要打电话", "短信", False),  # the refusal governs the next word
        ("短信我很少看", "短信", True),
        ("微信我天天看", "微信", False),
    ],
)
def test_a_refusal_after_a_word_governs_it(text: str, word: str, expected: bool) -> None:
    lang: Lang = "en" if text.isascii() else "zh"
    at = text.index(word)
    assert negated(text, at, lang, end=at + len(word)) is expected
    assert not negated(text, at, lang) or expected, "without its end, only what comes before"


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(["邮件", "短信", "微信", "电话"]),
    st.sampled_from(["{c}就别{v}了，", "{c}我基本不{r}", "{c}通知不用了，"]),
    st.sampled_from(["", "有事 app 推送", "退款到了说一声"]),
)
def test_a_channel_refused_after_its_name_is_never_preferred(
    channel: str, template: str, rest: str
) -> None:
    verb, read = ("打", "接") if channel == "电话" else ("发", "看")
    got = _observed(template.format(c=channel, v=verb, r=read) + rest)
    code = {"邮件": "email", "短信": "sms", "微信": "wechat", "电话": "phone"}[channel]
    assert ("preference", "notification_channel", f"-{code}") in got
    assert not [v for _, slot, v in got if slot == "notification_channel" and v.lstrip("!") == code]


@pytest.mark.parametrize(
    ("said", "channel"),
    [
        ("行吧，有结果微信上跟我说，别打电话，上班不方便接", "!wechat"),
        ("不用打电话了，有进展短信和我说一声", "!sms"),
        ("到了打电话给我，我不咋看消息", "!phone"),  # asked of the agent: an instruction
        ("k. just text me once it posts", "!sms"),
        ("上次说退款到了打电话，算了，改发短信吧", "!sms"),  # a switch of channel
        ("ok 退款ok了call我一下就行 email我从来不看", "!phone"),  # mixed scripts
        ("ok 退款ok了call我一下就行 email我从来不看", "-email"),  # refused after the word
        ("Please switch me over to email", "!email"),
        ("之前说的短信通知别发了，就 app 推送吧", "-sms"),
        ("之前说的短信通知别发了，就 app 推送吧", "!app_push"),
        ("短信通知我，不要打电话", "!sms"),
        ("不过到了微信跟我说一声", "!wechat"),  # 不过 is no contact that happened
    ],
)
def test_a_channel_said_as_the_way_to_tell_the_user_is_a_channel(said: str, channel: str) -> None:
    assert ("preference", "notification_channel", channel) in _observed(said)


def test_an_instruction_is_explicit_and_a_passing_mention_is_not() -> None:
    assert _observed("以后都用微信通知我") == [("preference", "notification_channel", "!wechat")]
    assert _observed("微信就行") == [("preference", "notification_channel", "wechat")]
    assert _observed("微信通知我就行") == [("preference", "notification_channel", "!wechat")]
    assert _observed("昨天给我打了三次电话") == [], "a narrative asks nothing"
    assert _observed("你们给我打过电话吗") == [], "a question asks nothing"
    assert _observed("这次用短信通知我") == [], "for this request only"
    assert _observed("From now on, please email me the updates") == [
        ("preference", "notification_channel", "!email")
    ]


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(["邮件", "短信", "微信", "电话"]),
    st.sampled_from(["别再用{c}联系我了", "不要{c}通知我", "以后别给我发{c}了"]),
)
def test_a_negated_channel_is_never_the_preferred_one(channel: str, template: str) -> None:
    got = _observed(template.format(c=channel.replace("电话", "打电话")))
    assert got, "the refusal is observed"
    assert all(value.startswith("-") for kind, slot, value in got if slot == "notification_channel")


@pytest.mark.parametrize(
    ("texts", "key", "word"),
    [
        (("大件都走德邦",), "carrier", "德邦"),
        (("以后我的快递全部放小区东门的丰巢柜",), "dropoff", "丰巢"),
        (("有事找我的话，工作日晚上8点以后打给我",), "contact_time", "8点"),
        # a call said with a bare 打 at the clause's end, the time a few words off
        (("售后要回电话的话 只能下午三点到四点之间打 别的时候在开会",), "contact_time", "三点"),
        (("你们有啥事晚上九点以后打 白天千万别打",), "contact_time", "九点"),
        (("不要发票纸质版，电子的就行",), "invoice", "电子"),
        # how the invoice is sent: by email, as a PDF
        (
            ("my accountant went digital so just email me PDF invoices from here on",),
            "invoice",
            "PDF",
        ),
        (("以后发票直接发我邮箱就行 会计要PDF的",), "invoice", "邮箱"),
        (("For anything I send abroad from now on, please use DHL, never EMS",), "carrier", "DHL"),
        (("以后换货别让我自己拿去寄了，都直接安排上门取件",), "note:", "上门取件"),
        (("你们默认发啥快递？除了中通都行，上回丢过一箱书",), "carrier", "除了中通都行"),
        (("韵达以外都行，太慢了",), "carrier", "韵达以外都行"),
        (("Any courier is fine, anything but ZTO, they lost two parcels",), "carrier", "but ZTO"),
        (("Please no Yunda, it took three weeks last time",), "carrier", "no Yunda"),
        (
            ("上个月那单发票抬头开成个人了，要改成公司的：苏州沐岚文化传媒有限公司，以后都开这个",),
            "invoice",
            "苏州沐岚文化传媒有限公司",
        ),
        (
            ("From now on put the invoice under my company, Harbor Lane Studio LLC",),
            "invoice",
            "Harbor Lane Studio LLC",
        ),
    ],
)
def test_an_instruction_no_field_holds_becomes_an_explicit_fact(
    texts: tuple[str, ...], key: str, word: str
) -> None:
    got = _instructions(*texts)
    assert [k for k, _ in got if k.startswith(key)], got
    assert any(word in text for _, text in got)


def test_a_company_said_in_passing_is_no_invoice_title() -> None:
    said = _instructions("我在深圳市腾讯计算机系统有限公司上班，快递寄公司")
    assert not [k for k, _ in said if not k.startswith("note:")]  # where they work is a note


@pytest.mark.parametrize(
    "said",
    [
        "Can you always double-box fragile stuff for me?",
        "Could you always leave parcels with the concierge?",
        "以后能不能都放快递柜？",
        "能不能每次发货前给我打个电话？",
    ],
)
def test_a_standing_wish_asked_as_a_question_is_an_instruction(said: str) -> None:
    acts = summarise("u", "s", _turns(("u", said))).dialogue.live("user")
    assert [a.kind for a in acts] == [ActKind.INSTRUCTION], acts
    assert _instructions(said), "kept for every later session"


@pytest.mark.parametrize("said", ["以后能不能退货？", "Can you always return sale items?"])
def test_asking_what_is_allowed_from_now_on_is_still_a_question(said: str) -> None:
    acts = summarise("u", "s", _turns(("u", said))).dialogue.live("user")
    assert [a.kind for a in acts] == [ActKind.QUESTION], acts


@pytest.mark.parametrize(
    "said",
    [
        "Send all my parcels to the office address",
        "Anything I order, leave it at the back door",
        "Whatever we buy, please ship it with UPS",
    ],
)
def test_a_directive_on_all_the_users_goods_is_an_instruction(said: str) -> None:
    assert _instructions(said), "kept for every later session"


def test_all_my_parcels_with_a_directive_is_an_instruction_in_one_clause() -> None:
    acts = summarise("u", "s", _turns(("u", "Send all my parcels to the office address")))
    assert [a.kind for a in acts.dialogue.live("user")] == [ActKind.INSTRUCTION]


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        ("我在 3 号楼 2 单元，以后送货打我老婆电话", "以后送货打我老婆电话"),
        ("From now on, my son signs for the big parcels", "my son signs for the big parcels"),
    ],
)
def test_an_instruction_naming_a_family_member_is_kept_as_a_note_too(said: str, kept: str) -> None:
    notes = [t for k, t in _instructions(said) if k.startswith("note:")]
    assert any(kept in t for t in notes), _instructions(said)


def test_an_instruction_about_a_size_leaves_it_to_the_size_slot() -> None:
    said = "生完娃以后变了，现在得穿80C，75B那个以后别给我推了"
    assert not [t for k, t in _instructions(said) if "75B" in t], _instructions(said)


def test_an_instruction_said_over_two_clauses_is_kept_whole_and_left_out_of_the_record() -> None:
    turns = _turns(("u", "If you need to call me, do it after 6pm, I'm at the office all day"))
    assert [(k, t) for k, t in _instructions(turns[0].text) if k == "contact_time"] == [
        ("contact_time", "If you need to call me, do it after 6pm")
    ]
    assert "6pm" not in summarise("u", "s", turns).summary_text


@pytest.mark.parametrize(
    ("said", "body"),
    [
        (
            "going forward, please hold my orders until everything's in stock. I hate five "
            "deliveries a week",
            "hold my orders until everything's in stock",
        ),
        ("From now on, leave parcels with the concierge", "leave parcels with the concierge"),
        ("以后，发货前先在群里跟我对一下货号", "发货前先在群里跟我对一下货号"),
    ],
)
def test_an_instruction_cue_said_as_a_clause_alone_keeps_what_it_governs(
    said: str, body: str
) -> None:
    kept = [t for _, t in _instructions(said)]
    assert any(body in t for t in kept), kept


@pytest.mark.parametrize(
    ("said", "note", "fact"),
    [
        (
            "Hiking's out for now, my wife has a bad knee, she had surgery last spring",
            "Hiking's out for now",
            ("family@wife", "bad knee"),
        ),
        ("I'm away next week, leave it with the concierge", "concierge", None),
        ("这周出差，快递先放公司前台吧", "前台", None),
        ("这几天先别打电话，我老婆刚生完孩子在休息", "别打电话", ("family@老婆", "老婆")),
    ],
)
def test_a_time_bound_sentence_keeps_its_intent_as_a_note_and_its_facts_as_facts(
    said: str, note: str, fact: tuple[str, str] | None
) -> None:
    got = _observed(said)
    notes = [value for kind, _, value in got if kind == "temporary"]
    assert len(notes) == 1
    assert note in notes[0]
    lasting = [(slot, value) for kind, slot, value in got if kind != "temporary"]
    if fact is None:
        assert lasting == [], "what to do meanwhile is no instruction"
    else:
        assert [slot for slot, _ in lasting] == [fact[0]]
        assert fact[1] in lasting[0][1]


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        ("US men's 10. Wide. Save it.", ["US men's 10", "Wide"]),
        ("鞋码 42，脚背高，记住哈", ["鞋码 42", "脚背高"]),
        ("我家门禁坏了，快递到了打电话叫我下楼拿。帮我记一下", ["门禁坏了", "下楼拿"]),
    ],
)
def test_what_the_user_asks_to_have_remembered_is_one_explicit_note(
    said: str, kept: list[str]
) -> None:
    notes = [text for key, text in _instructions(said) if key.startswith("note:")]
    assert len(notes) == 1
    assert all(k in notes[0] for k in kept)
    assert not any(w in notes[0] for w in ("Save it", "记住", "记一下"))


def test_asking_whether_something_can_be_saved_is_no_memo() -> None:
    assert _instructions("Can you save it?") == []


@pytest.mark.parametrize(
    "said",
    [
        "The hinge squeaks every time I open the lid",
        "The parcel never arrived",
        "每次打开盖子都吱吱响",
        "耳机总是断连，一直都连不上",
        "每次都给我发错",
        "It always breaks the seal when I open it",
        "The courier always leaves late",
    ],
)
def test_a_word_of_frequency_in_a_problem_is_no_instruction(said: str) -> None:
    assert _instructions(said) == []
    assert summarise("u", "s", _turns(("u", said))).summary_text.count("画像") == 0


@pytest.mark.parametrize(
    ("said", "key"),
    [
        ("每次发货前先打电话给我", "note"),
        ("Never call me before 9am", "contact_time"),
        ("Perfect. Always book me weekday evenings after 6 pm, I'm at work before that", "note"),
        ("Please always wrap the glasses twice", "note"),
    ],
)
def test_a_word_of_frequency_with_a_directive_instructs(said: str, key: str) -> None:
    assert [k.split(":")[0] for k, _ in _instructions(said)] == [key]


def test_a_short_clause_going_on_with_a_note_keeps_the_note() -> None:
    said = "以后发货前跟我确认一下，晚上也行"
    notes = [text for key, text in _instructions(said) if key.startswith("note:")]
    assert notes == [said]


def test_a_fact_said_before_what_happened_still_stands() -> None:
    got = _observed("好嘞 我圈口是14号 上次量的 应该没问题吧")
    assert [value[:3] for _, slot, value in got if slot == "size"] == ["14号"]
    assert _observed("上周你们放门口那件羽绒服被人顺走了") == []


@pytest.mark.parametrize("said", ["我手指圈号11号的，这个偏小", "我手指太细了，平时戒指都戴11号的"])
def test_a_ring_size_is_a_size(said: str) -> None:
    assert [value[:3] for _, slot, value in _observed(said) if slot == "size"] == ["11号"]


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        ("顺便给我加个防水床笠，我家床1米5乘2米的，别拿成1米8的了", "我家床1米5乘2米的"),
        ("ugh I just realized our bed is a California king, is the insert too wide?", "California"),
    ],
)
def test_the_size_of_the_users_bed_is_a_fact(said: str, kept: str) -> None:
    beds = [value for kind, slot, value in _observed(said) if slot == "bed"]
    assert len(beds) == 1
    assert kept in beds[0]
    assert "1米8" not in beds[0]


def test_an_imperative_that_opens_like_a_question_is_a_request() -> None:
    turns = _turns(
        ("u", "I paid $1,099 for the TV (order 6443713) and now it's $979. Should I return it?"),
        ("a", "No need, I can issue a price adjustment of $120."),
        ("u", "Oh nice, do the price adjustment then"),
        ("a", "Price adjustment PA-64-3317 submitted: $120 back to your card in 3-5 days."),
    )
    text = summarise("u", "s", turns).summary_text
    assert "price adjustment" in text.casefold()
    assert "requested a return" not in text


@pytest.mark.parametrize(
    ("first", "then", "withdrawn"),
    [
        (
            "6537290 那个筋膜枪帮我取消了吧 冲动消费了",
            "哎哎等下 先别取消，我老公要用，还是照常发",
            "撤回了取消订单的请求",
        ),
        ("帮我把 6537290 取消掉", "算了别取消了，照常发吧", "撤回了取消订单的请求"),
        (
            "帮我把订单 6353016 取消了，我好像买重了",  # 买重: a slip, no purchase
            "等等先别取消！我看错了，另一单是给我妈买的。这单我要的",
            "撤回了取消订单的请求",
        ),
    ],
)
def test_a_cancellation_said_in_few_words_and_taken_back_is_withdrawn(
    first: str, then: str, withdrawn: str
) -> None:
    turns = _turns(("u", first), ("a", "好的，正在为您取消。"), ("u", then))
    text = summarise("u", "s", turns).summary_text
    assert withdrawn in text
    assert "申请取消" not in text


def test_a_narrative_is_no_instruction() -> None:
    assert _instructions("上周你们放门口那件羽绒服被人顺走了") == []


def test_an_answer_takes_the_topic_of_the_question() -> None:
    turns = _turns(("a", "好的，那您方便的时间是？"), ("u", "下午2点到5点之间"))
    got = RuleExtractor().extract(turns, summarise("u", "s", turns)).instructions
    assert [i.key for i in got] == ["contact_time"]


@pytest.mark.parametrize(
    "said",
    [
        "我上夜班的 白天在家睡觉 快递别上午敲门",
        "快递别太早送 我中午才起",
        "包裹别放门卫室了 我上早班",
    ],
)
def test_a_parcel_handled_otherwise_withdraws_no_carrier(said: str) -> None:
    """The parcel (快递) is no carrier: how it is not to be handled takes no carrier back."""
    turns = _turns(("u", said))
    assert "carrier" not in summarise("u", "s", turns).dialogue.withdrawn_topics


def test_a_fact_beside_a_negated_delivery_wish_is_kept() -> None:
    turns = _turns(("u", "我上夜班的 白天在家睡觉 快递别上午敲门"), ("a", "好的，已备注。"))
    got = RuleExtractor().extract(turns, summarise("u", "s", turns)).observations
    assert [o.value for o in got if o.key == "occupation"] != [], got


@pytest.mark.parametrize(
    ("said", "fact"),
    [
        ("我上夜班 白天在家补觉 快递别上午敲门 下午四点以后再送", "夜班"),
        ("I work nights, so please deliver after 2pm", "nights"),
        ("我在工厂上夜班 白天睡觉 电话别太早打", "夜班"),
    ],
)
def test_an_instruction_leaves_the_fact_beside_it_to_the_facts_slot(said: str, fact: str) -> None:
    """A fact said as the reason of an instruction is the fact's slot's: the instruction
    quoting it would go on stating it once the fact changes."""
    got = _instructions(said)
    assert got
    assert all(fact not in text for _, text in got), got


@pytest.mark.parametrize(
    ("said", "key", "words"),
    [
        ("有没有小一点的电锅 宿舍楼不让快递员进 东西只能放园区北门门卫室", "dropoff", "门卫室"),
        ("这款榨汁机有现货吗 以后快递都走顺丰 别的太慢", "carrier", "顺丰"),
    ],
)
def test_a_standing_wish_after_a_question_in_one_run_is_kept(
    said: str, key: str, words: str
) -> None:
    """A turn with no punctuation asks, then says how parcels are to be handled: the run
    stating it is no part of the question."""
    got = _instructions(said)
    assert any(k == key and words in text for k, text in got), got


def test_a_question_about_a_place_is_no_drop_off() -> None:
    assert _instructions("有没有放门口也不怕晒的收纳箱 要大号的") == []


def test_a_withdrawn_topic_is_taken_back() -> None:
    turns = _turns(("u", "之前说的周末送货不用了，工作日家里也有人"))
    summary = summarise("u", "s", turns)
    assert "delivery_time" in summary.dialogue.withdrawn_topics
    assert RuleExtractor().extract(turns, summary).withdrawn == ("delivery_time",)


# --------------------------------------------------------------------------- final choice


@pytest.mark.parametrize(
    ("turns", "chosen", "price"),
    [
        (
            _turns(
                ("a", "A 款是轻享版 299 元，4 档力度；B 款是专业版 459 元"),
                ("u", "A 款 299 便宜是便宜……那还是要 B 吧"),
            ),
            "B",
            "459",
        ),
        (
            _turns(("a", "原装刷头有 2 支装 129 元、4 支装 229 元两种"), ("u", "那拿 4 支装吧")),
            "4 支装",
            "229",
        ),
        (
            _turns(
                ("a", "The 4-pack is $16.49 and the 8-pack is $27.99."),
                ("u", "8-pack, it's cheaper"),
            ),
            "8-pack",
            "27.99",
        ),
    ],
)
def test_the_final_choice_is_recorded_with_its_own_price(
    turns: list[Turn], chosen: str, price: str
) -> None:
    summary = summarise("u", "s", turns)
    assert chosen in summary.summary_text
    assert price in summary.summary_text


def _transcript(*turns: str) -> tuple[str, list[tuple[int, int]]]:
    spans, at = [], 0
    for t in turns:
        spans.append((at, at + len(t)))
        at += len(t) + 1
    return "\n".join(turns), spans


def test_an_enumerated_list_names_each_option_by_its_item() -> None:
    """Each item's first piece names it, not the piece before its price (6.2kg)."""
    text, spans = _transcript(
        "推荐三款：1）好孩子 小情书 GB-Q9，一键收车，6.2kg，1299 元；2）宝宝好 V3，可登机，"
        "5.8kg，899 元；3）虎贝尔 X1，带避震，7kg，1599 元，但需要托运。"
    )
    offered = options(text, spans, "zh")
    assert [(o.label, o.price) for o in offered] == [
        ("好孩子 小情书 GB-Q9", "1299 元"),
        ("宝宝好 V3", "899 元"),
        ("虎贝尔 X1", "1599 元"),
    ]


def test_an_option_turned_down_is_not_chosen_and_its_own_price_still_chooses() -> None:
    text, spans = _transcript(
        "1）好孩子 小情书，1299 元；2）宝宝好 V3，899 元；3）虎贝尔 X1，1599 元",
        "虎贝尔那个不能登机就算了",
        "那就宝宝好吧 899那个 轻一点",
    )
    offered = options(text, spans[:1], "zh")
    only_refused = final_choice(text, spans[1:2], offered, [], "zh")
    assert only_refused is None, "turning an option down chooses nothing"
    chosen = final_choice(text, spans[1:], offered, [], "zh")
    assert chosen is not None
    assert (chosen.option.label, chosen.option.price) == ("宝宝好 V3", "899 元")


def test_asking_about_the_options_is_no_choice() -> None:
    text = "A 款 299 元，B 款 459 元\nA 和 B 哪个好？"
    offered = options(text, [(0, 17)], "zh")
    assert [o.key for o in offered] == ["a款", "b款"]
    assert final_choice(text, [(18, len(text))], offered, [], "zh") is None


# --------------------------------------------------------------------------- robustness


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["user", "assistant"]), st.text(max_size=60)), max_size=6)
)
def test_any_text_reads_into_acts_inside_its_clauses(said: list[tuple[str, str]]) -> None:
    utterances = [Utterance(role, text, tuple(_entities(text))) for role, text in said]
    d = read_dialogue(utterances, "zh")
    for act in d.acts:
        assert 0 <= act.start < act.end <= len(utterances[act.turn].text)
    for c in d.corrections:
        assert c.right[1] <= len(utterances[c.turn].text)


def _entities(text: str) -> list[Entity]:
    return extract_entities(text) if text.strip() and "\x00" not in text else []


_LEADS = (
    "",
    "以后",
    "每次",
    "这次",
    "这周先",
    "下周出差，",
    "之前说的",
    "from now on, ",
    "for now, ",
)
_BODIES = (
    *("都走顺丰", "别再发邮件了", "有事打电话", "发货前跟我确认一下", "放门卫", "帮我换个颜色"),
    *("我家英短两岁了", "我是油皮", "订单 6353712 退货", "预算两三千", "周末送货", "电子发票"),
    *("不是 5530217，是 5530271", "说错了，是 5530271", "I meant olive", "call me after 6pm"),
    *("my wife has a bad knee", "never mind the refund", "leave it with the concierge"),
)
_TAILS = ("", "，晚上也行", "，电子的就行", "，记一下", "，算了", "，不用了吧", "吗？", ", right?")
_JOINS = ("", "，", "。", ". ", "\n")


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["user", "user", "assistant"]),
            st.lists(
                st.tuples(
                    st.sampled_from(_LEADS),
                    st.sampled_from(_BODIES),
                    st.sampled_from(_TAILS),
                    st.sampled_from(_JOINS),
                ),
                min_size=1,
                max_size=3,
            ),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_any_mix_of_cues_summarises_and_extracts(
    said: list[tuple[Role, list[tuple[str, str, str, str]]]],
) -> None:
    """Cue words of every act in any order and mix: the record, the acts and the profile
    rules never fail, and offsets stay inside their turns."""
    turns = [Turn(role, "".join("".join(p) for p in pieces), T0) for role, pieces in said]
    if not any(t.role == "user" for t in turns):
        turns.append(Turn("user", "好的", T0))
    summary = summarise("u", "s", turns)
    extraction = RuleExtractor().extract(turns, summary)
    assert summary.summary_text
    for act in summary.dialogue.acts:
        assert 0 <= act.start < act.end
    assert all(o.value for o in extraction.observations)


# --------------------------------------------------------------------------- restated

_BY_KEY = {t.key: t for t in TOPICS}


@pytest.mark.parametrize(
    ("record", "key", "said", "gone", "kept"),
    [
        (
            "The user contacted customer service: Same as usual for this one, under the doormat.",
            "dropoff",
            (
                "You can leave parcels outside my door, under the doormat is fine",
                "hand it to the security guard at the main gate",
            ),
            "doormat",
            "Same as usual",
        ),
        (
            "用户咨询订单 6353001 的相关事宜：鱼线轮也一样，顺丰到付，运费我出",
            "payment",
            ("", "以后别给我发到付了"),
            "运费我出",
            "6353001",
        ),
        (
            "用户查询订单 6352203 的沙发的物流进度，预计周末送达",
            "delivery_time",
            ("以后大件都周末给我送吧", ""),
            "周末",
            "沙发",
        ),
    ],
)
def test_a_changed_instruction_is_no_longer_stated_by_an_older_record(
    record: str, key: str, said: tuple[str, str], gone: str, kept: str
) -> None:
    """``said``: the instruction before and after (empty: none)."""
    old, new = said
    lang = "en" if record.isascii() else "zh"
    text = restate(record, [_BY_KEY[key]], [old] if old else [], [new] if new else [], lang=lang)
    assert text is not None
    assert gone not in text
    assert kept in text
    assert (_BY_KEY[key].zh if lang == "zh" else _BY_KEY[key].en) in text


def test_a_record_agreeing_with_the_new_instruction_or_of_another_topic_stays() -> None:
    carrier = [_BY_KEY["carrier"]]
    assert (
        restate("用户咨询订单 6353001 的相关事宜：这单走中通", carrier, [], ["以后都走中通"])
        is None
    )
    assert restate("用户查询订单 6353001 的物流进度", carrier, ["大件都走德邦"], []) is None


@pytest.mark.parametrize(
    ("said", "right", "refused"),
    [
        ("I had her measured again, she's a 5.5 not a 6", "5.5", "not a 6"),
        ("it's the X280, not the X230", "X280", "X230"),
    ],
)
def test_the_value_refused_in_its_own_correction_is_not_quoted(
    said: str, right: str, refused: str
) -> None:
    turns = _turns(("u", "looking for a ring for my girlfriend, she's a size 6"), ("u", said))
    text = summarise("u", "s", turns).summary_text
    assert right in text
    assert refused not in text


def test_a_gift_box_of_a_product_is_no_packaging_instruction() -> None:
    assert [k for k, _ in _instructions("坚果礼盒里有花生的都不要，孩子吃不了")] != ["packaging"]
    assert [k for k, _ in _instructions("以后都不要礼盒包装")] == ["packaging"]


@pytest.mark.parametrize("said", ["扫地机不回充了，要退款", "机器人老是不自动回座，退了吧"])
def test_a_robot_that_does_not_go_back_to_charge_is_the_reason_recorded(said: str) -> None:
    text = summarise("u", "s", _turns(("u", said))).summary_text
    assert "回" in text
    assert "因" in text


# --------------------------------------------------------------------------- habits


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        ("镁粉球哪个好用啊，我一周去三次岩馆抱石，手汗巨多", "岩馆抱石"),
        ("我每天早上跑5公里，想换双跑鞋", "跑5公里"),
        ("I bake sourdough every weekend and preheat it empty", "sourdough"),
        ("I go fly fishing on weekends, mostly small rivers", "fly fishing"),
    ],
)
def test_a_pastime_said_by_its_shape_is_a_hobby(said: str, kept: str) -> None:
    """I, how often, what: a hobby outside the lexicon (抱石, sourdough) reaches the profile."""
    hobbies = [v for kind, slot, v in _observed(said) if (kind, slot) == ("fact", "hobby")]
    assert len(hobbies) == 1, _observed(said)
    assert kept in hobbies[0]


@pytest.mark.parametrize(
    "said",
    [
        "我周末收不了快递，放门卫吧",
        "我每天都要用这个，质量要好",
        "我每天都在等你们发货",
        "他天天量血压",
        "I check my email every day",
        "I always mix it up",
    ],
)
def test_what_is_not_a_pastime_is_no_hobby(said: str) -> None:
    """A refusal, a thing used, a wait for the shop, someone else's habit: no hobby."""
    assert not [o for o in _observed(said) if o[1] == "hobby"]


# --------------------------------------------------------------------------- variants


@pytest.mark.parametrize(
    ("turns", "variant"),
    [
        (
            _turns(
                ("u", "那就宝宝好 V3 吧"),
                ("a", "好的，宝宝好 V3 899 元，颜色有星空灰和燕麦白，您要哪个？"),
                ("u", "灰的 耐脏"),
                ("a", "好的，星空灰。目前这个颜色显示预售，预计 7 天内到货"),
            ),
            "星空灰",
        ),
        (
            _turns(
                ("u", "订单 6350118 的卫衣退货算了，帮我换个颜色，换墨绿色"),
                ("a", "好的，已为您提交换货，换成墨绿色 L 码，换货单 EX6350118C"),
            ),
            "墨绿色",
        ),
        (
            _turns(
                ("u", "I'd like the Stanley Quencher 40 oz in Rose Quartz"),
                ("a", "Rose Quartz is back-ordered. Azure and Charcoal ship today, $45."),
                ("u", "I'll take the blue one instead."),
                ("a", "Sure. Azure, $45, order 6440021."),
            ),
            "Azure",
        ),
    ],
)
def test_the_variant_the_agent_confirmed_is_recorded(turns: list[Turn], variant: str) -> None:
    """The colour settled on reaches the record, not a colour only offered or turned down."""
    text = summarise("u", "s", turns).summary_text
    assert variant in text
    assert "燕麦白" not in text
    assert "Charcoal" not in text


def test_a_turn_listing_several_variants_settles_none() -> None:
    assert confirmed_variant(["白色和黑色都有货，256G 4799 元"], "zh") == ("256G",)
    assert confirmed_variant(["明白了，蓝牙耳机已发货，红包已发"], "zh") == ()
    assert confirmed_variant(["Azure and Charcoal ship today. Which one?"], "en") == ()


# --------------------------------------------------------------------------- what the agent sent


@pytest.mark.parametrize(
    ("turns", "named"),
    [
        (
            _turns(
                ("u", "换货那个我不弄了哈，你们单卖盖子不"),
                ("a", "有的，原装壶盖 35 元。换货单我帮您取消。"),
                ("u", "行 就买个盖子"),
                ("a", "已下单壶盖 35 元，订单 6566290；换货单 EX6566017 已取消。"),
            ),
            "已下单壶盖",
        ),
        (
            _turns(
                ("u", "I'll keep the headphones. Just send me the replacement ear pads."),
                ("a", "Ear pads ordered, $24.99. The receipt goes to your email."),
            ),
            "ordered Ear pads",
        ),
    ],
)
def test_what_the_agent_ordered_or_sent_is_named_in_the_record(
    turns: list[Turn], named: str
) -> None:
    assert named in summarise("u", "s", turns).summary_text


@pytest.mark.parametrize(
    "said",
    [
        "您的订单已发货，补发工单 BJ-60214-77 已建",
        "Your order is on its way.",
        "We have ordered it.",
    ],
)
def test_an_order_or_a_ticket_is_no_thing_sent(said: str) -> None:
    assert committed_items([said], "zh" if not said.isascii() else "en") == ()


@pytest.mark.parametrize(
    ("said", "items"),
    [
        ("这款空气炸锅现在下单送一套硅胶烤盘哦", (("承诺赠送", "硅胶烤盘"),)),
        ("购买即赠送一个收纳包。", (("承诺赠送", "收纳包"),)),
        ("It comes with a free travel pouch.", (("promised a free", "travel pouch"),)),
        ("我们会尽快送货上门", ()),
    ],
)
def test_a_gift_the_agent_promises_with_the_purchase_is_named(
    said: str, items: tuple[tuple[str, str], ...]
) -> None:
    assert committed_items([said], "en" if said.isascii() else "zh") == items


@pytest.mark.parametrize(
    ("said", "items"),
    [
        ("好的，HEPA 滤网 89 元已下单。", (("下单", "HEPA 滤网"),)),
        ("抱歉，杯盖已为您补发，明天到。", (("补发", "杯盖"),)),
        ("您的包裹已寄出", ()),
        ("好的，订单已为您下单。", ()),
    ],
)
def test_a_thing_named_before_it_was_ordered_is_the_thing_sent(
    said: str, items: tuple[tuple[str, str], ...]
) -> None:
    assert committed_items([said], "zh") == items


# ------------------------------------------------------------------ the agent's general statements


@pytest.mark.parametrize(
    ("turns", "said", "unsaid"),
    [
        (
            (
                ("u", "手工皂碎了，订单 91177302640"),
                ("a", "仅退款一般24小时内审核。您这单我直接给您通过了，退款单 20261127RF0451"),
            ),
            "20261127RF0451",
            "24 小时",
        ),
        (
            (
                ("u", "这个窗帘能七天无理由吗，订单 SH20261119K3"),
                ("a", "这款支持七天无理由，签收7天内不影响二次销售都能退。"),
            ),
            "SH20261119K3",
            "7 天内",
        ),
        (
            (("u", "剃须刀刀头多久换一次"), ("a", "刀头一般12到18个月需要更换一次。")),
            "刀头",
            "个月",
        ),
        (
            (
                ("u", "Where is my refund for order 55120387?"),
                (
                    "a",
                    "Refunds usually take 3-5 business days on most cards. Yours went out today.",
                ),
            ),
            "55120387",
            "business days",
        ),
    ],
)
def test_how_things_usually_go_is_no_date_for_this_case(
    turns: tuple[tuple[str, str], ...], said: str, unsaid: str
) -> None:
    text = summarise("u", "s", _turns(*turns)).summary_text
    assert said in text
    assert unsaid not in text


def test_a_date_promised_for_this_case_stays_beside_a_general_one() -> None:
    turns = _turns(
        ("u", "退款咋还没到，RF88120463"),
        ("a", "退款一般是3到5个工作日原路退回。您这笔预计明天到账。"),
    )
    text = summarise("u", "s", turns).summary_text
    assert "明天到账" in text
    assert "工作日" not in text


@pytest.mark.parametrize(
    "said",
    [
        "Orders 6405521 and 6405538 both had the wrong yoga mat colour, and refund RF6405540 "
        "for the first one is still pending",
        "You sent the wrong size for order 7712034, refund RF7712040 please",
    ],
)
def test_a_wrong_item_is_a_problem_not_a_correction(said: str) -> None:
    summary = summarise("u", "s", _turns(("u", said)))
    assert summary.dialogue.corrections == ()
    ids = {e.text for e in summary.entities if e.type in ("ORDER_ID", "REFUND_ID")}
    assert ids == {w for w in said.replace(",", " ").split() if w[-1].isdigit()}


def test_a_wrong_number_said_by_the_user_is_still_put_right() -> None:
    turns = _turns(("u", "Where is order 5530217?"), ("u", "Sorry, wrong number, it's 5530271"))
    summary = summarise("u", "s", turns)
    assert [e.text for e in summary.entities if e.type == "ORDER_ID"] == ["5530271"]
    again = _turns(
        ("u", "I ordered W32 L30 like always"),
        ("u", "I've been buying the wrong length for years, I'm a 32 inseam, not 30"),
    )
    assert summarise("u", "s", again).dialogue.corrections, "the user's own error"


@pytest.mark.parametrize(
    ("turns", "kept", "gone"),
    [
        (
            (
                ("u", "The latch on the tackle box snapped. I want to return it."),
                ("a", "Sorry! Return RMA-48820-T is set up."),
                ("u", "Oh and is the SPRING20 code still valid for a fishing rod?"),
                ("a", "It expired last week, sorry."),
                ("u", "Ok, forget it then."),
            ),
            "return",
            "SPRING20",
        ),
        (
            (
                ("u", "破壁机漏水，我要退货"),
                ("a", "已为您提交退货申请。"),
                ("u", "还有个事，我有张满300减40的券咋用不了"),
                ("a", "这张券限家电品类。"),
                ("u", "哦那算了"),
            ),
            "退货",
            "满300",
        ),
    ],
)
def test_a_bare_retraction_takes_back_the_latest_ask(
    turns: tuple[tuple[str, str], ...], kept: str, gone: str
) -> None:
    summary = summarise("u", "s", _turns(*turns))
    assert summary.dialogue.retracted == ()
    assert kept in summary.summary_text
    assert gone not in summary.summary_text.replace(" ", "")


def test_a_bare_retraction_with_no_request_before_keeps_the_question() -> None:
    turns = _turns(
        ("u", "帮同事问一下 她对坚果过敏 这款黄油曲奇里头有没有坚果啊"),
        ("a", "这款含有杏仁粉，不建议坚果过敏的人食用。"),
        ("u", "那算了不给她了，我自己吃，给我来两盒"),
    )
    assert "曲奇" in summarise("u", "s", turns).summary_text


@pytest.mark.parametrize(
    ("agent", "unsaid"),
    [
        ("It expired last week, sorry. Return RMA-48820-T is set up.", "last week"),
        ("您是 25 号下的单，订单 6623019 已发货。", "25 号"),
        ("退款昨天已经退回，RF6623020。", "昨天"),
    ],
)
def test_a_date_in_the_past_is_no_expectation(agent: str, unsaid: str) -> None:
    turns = _turns(
        ("u", "我的订单到哪了" if "单" in agent else "Where is my return?"), ("a", agent)
    )
    text = summarise("u", "s", turns).summary_text
    assert unsaid not in text


def _user_acts(*said: tuple[str, str]) -> list[tuple[str, bool, str]]:
    """The user's acts of a session: kind, live, the clause."""
    turns = _turns(*said)
    s = summarise("u", "s", turns)
    index = s.turn_index or tuple(range(len(turns)))
    return [
        (a.kind.value, a.live, turns[index[a.turn]].text[a.start : a.end])
        for a in s.dialogue.acts
        if a.role == "user"
    ]


@pytest.mark.parametrize(
    ("said", "clauses"),
    [
        (
            _turns(
                ("u", "退货帮我安排上门取件"),
                ("a", "好的，已为您预约明天上门取件"),
                ("u", "算了 以后退货我都自己拿楼下驿站寄"),
            ),
            ["算了", "以后退货我都自己拿楼下驿站寄"],
        ),
        (_turns(("u", "不用了 我平时都自己去驿站取")), ["不用了", "我平时都自己去驿站取"]),
        (_turns(("u", "算了算了 不换了 下次记得发顺丰")), ["算了算了 不换了", "下次记得发顺丰"]),
        (_turns(("u", "以后别打电话了 退款就算了")), ["以后别打电话了", "退款就算了"]),
    ],
)
def test_chinese_clauses_said_apart_by_a_space_are_clauses_of_their_own(
    said: list[Turn], clauses: list[str]
) -> None:
    got = [text for _, _, text in _user_acts(*((t.role[0], t.text) for t in said))]
    for clause in clauses:
        assert clause in got


def test_a_change_of_mind_said_before_a_space_leaves_the_instruction_after_it() -> None:
    turns = _turns(
        ("u", "退货帮我安排上门取件"),
        ("a", "好的，已为您预约明天上门取件"),
        ("u", "算了 以后退货我都自己拿楼下驿站寄"),
    )
    kept = [t for _, t in _instructions(*(t.text for t in turns if t.role == "user"))]
    assert any("驿站" in t for t in kept), kept
    acts = _user_acts(*((t.role[0], t.text) for t in turns))
    assert ("instruction", True, "以后退货我都自己拿楼下驿站寄") in acts


@pytest.mark.parametrize(
    ("said", "clause"),
    [
        (
            "这款安全座椅能用到几岁 我们家小的才3岁 大的7岁了 想看看俩能不能都用上",
            "我们家小的才3岁 大的7岁了",
        ),
        (
            "这件衬衫要退 详情页也没写是涤纶的啊 我这人只穿纯棉的 化纤的一穿身上就痒",
            "我这人只穿纯棉的 化纤的一穿身上就痒",
        ),
        ("裤子小了穿不上 想换大一码 我腰围二尺四 你们这个码表我看不太懂 换哪个码", "我腰围二尺四"),
        ("这个智能插座能连家里wifi不 家里是华为的路由器", "家里是华为的路由器"),
        ("这双跑鞋有42码的吗 我平时都穿42", "我平时都穿42"),
        ("这个月饼礼盒 我是糖尿病人 有无糖的吗", "我是糖尿病人"),  # after a product's name
    ],
)
def test_what_the_user_says_of_themselves_between_spaces_is_a_clause_of_its_own(
    said: str, clause: str
) -> None:
    """A statement opening on the user or their home, said beside a question, a request or
    words about the goods with only spaces between, is read on its own (not as part of the
    question, nor limited to the request at hand)."""
    acts = _user_acts(("u", said))
    assert any(text == clause and kind != "question" for kind, _, text in acts), acts


def test_a_move_said_before_an_order_request_is_a_clause_of_its_own() -> None:
    said = "我刚搬到成都 订单CD2611-30958的收货地址帮我改下 改到双流区 之前填的还是西安的老地址"
    values = [v for _, slot, v in _observed(said) if slot == "city"]
    assert values == ["我刚搬到成都"], values


@pytest.mark.parametrize(
    "said",
    [
        "我想问下 这个能退吗",  # what the user wants now opens no statement of their own
        "我刚收到 屏幕就是碎的",
        "小的才3岁 大的7岁了",  # no subject opens the second part: one clause
    ],
)
def test_a_want_or_a_continuation_after_a_space_cuts_no_statement_of_the_user(said: str) -> None:
    acts = _user_acts(("u", said))
    assert len(acts) == 1, acts


@pytest.mark.parametrize(
    "said",
    [
        "开学要住宿舍了 买个台灯 床帘 还有个小冰箱",  # a list of things is one clause
        "给我爸买的 欧姆龙血压计 助听器 折叠拐杖",
        "想买荣耀 畅玩 50 的手机壳",  # a product name said with spaces
        "小米 14 的屏幕碎了",
        "iPhone 15 Pro 的电池不耐用",
    ],
)
def test_a_space_inside_a_list_or_a_product_name_cuts_no_clause(said: str) -> None:
    got = [text for _, _, text in _user_acts(("u", said))]
    assert not any(text in ("床帘", "助听器", "畅玩 50 的手机壳", "14 的屏幕碎了") for text in got)
    assert not any(text.startswith(("床帘", "助听器", "畅玩", "14", "15")) for text in got), got


@pytest.mark.parametrize(
    "said", ["算了，留着以后补，装修真是个无底洞", "这个先放着以后再用", "存着以后送人"]
)
def test_a_thing_kept_for_later_is_no_instruction(said: str) -> None:
    """以后 after a verb of keeping (留着以后, 放着以后) is "later" for the thing, not "from now
    on" for the user."""
    assert not [t for k, t in _instructions(said) if k.startswith("note:")]


@pytest.mark.parametrize(
    "said",
    [
        "Have the courier ring me first",
        "Have them call before delivery",
        "Please have the driver text me when he's outside",
        "Just have the driver call my wife, she's home",
        "Get the courier to leave it with the concierge",
        "Have the delivery guy knock, the bell is broken",
    ],
)
def test_having_someone_do_something_is_told_not_asked(said: str) -> None:
    """ "Have X do Y" is an instruction about how to treat the user ("Have you…", "Have the
    parcels arrived" ask: their verb is a participle)."""
    kinds = [kind for kind, _, _ in _user_acts(("u", said))]
    assert kinds[0] == "instruction", kinds


@pytest.mark.parametrize(
    "said",
    [
        "Have you shipped it yet",
        "Have the parcels arrived",
        "Have the shoes been sent out",
        "Has the courier left yet",
        "Have the courier ring me first?",
    ],
)
def test_a_question_opening_with_have_is_still_asked(said: str) -> None:
    kinds = [kind for kind, _, _ in _user_acts(("u", said))]
    assert kinds[0] == "question", kinds


@pytest.mark.parametrize(
    "said",
    [
        "Please have the courier pick up the air purifier return on Tuesday morning",
        "Have the courier deliver it tomorrow",
        "Have the technician come and repair the dryer",
    ],
)
def test_having_someone_do_a_request_now_is_a_request(said: str) -> None:
    kinds = [kind for kind, _, _ in _user_acts(("u", said))]
    assert kinds[0] == "request", kinds


@pytest.mark.parametrize(
    ("said", "trait"),
    [
        ("My son needs running shoes, he's a size 10", "size 10"),
        ("Looking for a dress for my wife, she's a 38", "38"),
        ("Snacks for my daughter, she's a picky eater", "picky eater"),
        ("给老婆买条裙子，她穿M码", "M码"),
    ],
)
def test_a_trait_said_of_him_or_her_lasts(said: str, trait: str) -> None:
    """What a person the user buys for is (a size, a habit) lasts like what the user is."""
    turns = _turns(("u", said))
    s = summarise("u", "s", turns)
    (act,) = [a for a in s.dialogue.acts if trait in said[a.start : a.end]]
    assert not act.one_off
    assert any(trait in value for _, _, value in _observed(said))


def test_a_size_said_of_someone_bought_for_this_time_only_is_one_off() -> None:
    said = "Buying a pair for my brother this time, he's a size 12"
    acts = summarise("u", "s", _turns(("u", said))).dialogue.acts
    assert [(a.one_off, a.topics) for a in acts] == [(True, ()), (True, ())]


# --------------------------------------------------------------------------- offers declined


@pytest.mark.parametrize(
    ("said", "price"),
    [
        (
            _turns(
                ("u", "I'm getting the Fujifilm X-T5 body, order 6925347."),
                ("a", "Would you like shipping insurance for $18? It covers loss in transit."),
                ("u", "I'll pass on the insurance, thanks."),
                ("a", "No worries, it ships by courier today."),
            ),
            "$18",
        ),
        (
            _turns(
                ("u", "Checking out the Sony headphones now."),
                ("a", "Would you like gift wrap for $5?"),
                ("u", "No gift wrap, they're for me."),
                ("a", "Okay, plain packaging, order 6930582."),
            ),
            "$5",
        ),
        (
            _turns(
                ("u", "Add assembly to the oak bookcase on order 6923862."),
                ("a", "Assembly is $45 extra. Shall I add it?"),
                ("u", "On second thought, my brother-in-law can put it together. No assembly."),
                ("a", "Okay, order 6923862 ships flat-packed."),
            ),
            "$45",
        ),
        (
            _turns(
                ("u", "I'm ordering the Kindle Paperwhite."),
                ("a", "Do you want a cover with it? It's $25."),
                ("u", "No thanks."),
                ("a", "Alright, order 6940017 is placed."),
            ),
            "$25",
        ),
        (
            _turns(
                ("u", "订单 6940233 的扫地机帮我发货"),
                ("a", "需要加购延保吗？两年延保 199 元。"),
                ("u", "不用了，谢谢"),
                ("a", "好的，今天发出。"),
            ),
            "199",
        ),
    ],
)
def test_an_offer_the_user_turns_down_keeps_no_price(said: list[Turn], price: str) -> None:
    """An add-on the agent offers and the user declines ("I'll pass on the insurance", "No
    gift wrap", "不用了") is no part of the record: its price is not the session's amount."""
    s = summarise("u", "s", said)
    assert price not in s.summary_text, s.summary_text


def test_an_offer_the_user_takes_keeps_its_price() -> None:
    said = _turns(
        ("u", "I'm getting the Fujifilm X-T5 body, order 6925347."),
        ("a", "Would you like shipping insurance for $18?"),
        ("u", "Yes please, add the insurance."),
        ("a", "Added, it ships insured today."),
    )
    assert "$18" in summarise("u", "s", said).summary_text


@pytest.mark.parametrize(
    ("said", "first", "then"),
    [
        (
            _turns(
                ("u", "I'll take the 27-inch Dell monitor at $329."),
                ("a", "Sure. Just so you know, the 32-inch is on offer today at $449."),
                ("u", "Oh, then on second thought give me the 32-inch instead."),
                ("a", "Switched to the 32-inch Dell, order 6919377."),
            ),
            "27-inch",
            "32-inch",
        ),
        (
            _turns(
                ("u", "我要 128G 的那款，2999 元"),
                ("a", "256G 今天活动价 3299 元，只贵 300。"),
                ("u", "那还是要 256G 吧"),
                ("a", "好的，已改为 256G，订单 6940561。"),
            ),
            "128G",
            "256G",
        ),
    ],
)
def test_a_pick_replaced_by_a_later_option_is_no_part_of_the_record(
    said: list[Turn], first: str, then: str
) -> None:
    """The user picks one thing, the agent offers another with its price, and the user takes
    that instead: the first pick and its price are no longer what the user wants."""
    text = summarise("u", "s", said).summary_text
    assert then in text, text
    assert first not in text, text


@pytest.mark.parametrize(
    ("said", "gone", "kept"),
    [
        (
            (
                ("u", "Could the fridge on order 6924093 come Monday instead of Friday?"),
                ("a", "Monday has an 8 to 12 slot. Should I switch you from Friday?"),
                ("u", "Hmm, let's not. My partner can let them in on Friday, so keep it."),
                ("a", "Okay, it stays on Friday, 1 to 5 pm."),
            ),
            "Monday",
            "Friday",
        ),
        (
            (
                ("u", "Can the washer for order 6940815 be moved to another day?"),
                ("a", "Sure, Thursday or Friday are open."),
                ("u", "On second thought, let's leave it. Tuesday is fine."),
                ("a", "Okay, it stays on Tuesday."),
            ),
            "Thursday",
            "Tuesday",
        ),
        (
            (
                ("u", "订单 6940782 的冰箱能不能改到周一送？"),
                ("a", "周一上午有档期，要帮您改吗？"),
                ("u", "算了，还是周五吧，周五家里有人"),
                ("a", "好的，维持周五下午送达。"),
            ),
            "周一",
            "周五",
        ),
    ],
)
def test_a_date_move_taken_back_leaves_the_date_kept(
    said: tuple[tuple[str, str], ...], gone: str, kept: str
) -> None:
    """Moving a delivery to another day is a request of its own ("come Monday instead of
    Friday", "改到周一送"): taking it back ("let's not", "算了") drops the day asked for."""
    text = summarise("u", "s", _turns(*said)).summary_text
    assert gone not in text, text
    assert kept in text, text


@pytest.mark.parametrize(
    ("said", "carrier"),
    [
        ("For order 6929417, not FedEx please, they lose things. UPS is fine.", "UPS"),
        ("No DHL please, they were late twice. SF Express would be better.", "SF Express"),
        ("别发中通，顺丰就行", "顺丰"),
    ],
)
def test_the_carrier_said_fine_after_a_refused_one_is_kept(said: str, carrier: str) -> None:
    """Not FedEx … UPS is fine: the instruction keeps the carrier the user accepts, not only
    the one refused."""
    assert any(carrier in text for _, text in _instructions(said)), _instructions(said)


@pytest.mark.parametrize(
    ("said", "to"),
    [
        (
            _turns(
                (
                    "u",
                    "The black hoodie on order 6932845 shows hair. Swap the black for the navy?",
                ),
                ("a", "Sure, the navy one ships tomorrow; the courier collects the black one."),
            ),
            "navy",
        ),
        (
            _turns(
                (
                    "u",
                    "The rain jacket from order 6922714 is tight, please exchange it for a large.",
                ),
                ("a", "Done, a large ships tomorrow."),
            ),
            "large",
        ),
        (
            _turns(
                ("u", "订单 6940911 的卫衣黑色太显毛了，能把黑色换成藏青色吗"),
                ("a", "可以，藏青色明天发出，快递员会上门取回黑色那件。"),
            ),
            "藏青色",
        ),
    ],
)
def test_an_exchange_states_what_it_is_for(said: list[Turn], to: str) -> None:
    """An exchange's record names what the user asked to get ("swap the black for the navy",
    "exchange it for a large", "换成藏青色"), not only that an exchange was asked."""
    text = summarise("u", "s", said).summary_text
    assert to in text, text


def test_an_exchange_for_a_value_corrected_states_the_right_one() -> None:
    said = _turns(
        ("u", "I'd like to exchange the rug from order 6940977 for the grey one"),
        ("a", "Sure, grey in the same 2x3 m size?"),
        ("u", "Sorry, I meant beige, not grey."),
        ("a", "Done: exchange for the beige rug, same size."),
    )
    text = summarise("u", "s", said).summary_text
    assert "beige" in text, text
    assert "grey" not in text, text


def test_a_word_holding_rush_asks_no_hurry() -> None:
    """The words crushed and brushed hold "rush" but ask nobody to hurry."""
    from unstructured_memory.summariser.acts import families

    assert "urge" not in families("The box came in crushed")
    assert "urge" not in families("The brushed steel is scratched")
    assert "urge" in families("Can you rush it?")


@pytest.mark.parametrize(
    "pulled",
    [
        "I opened it and the glasses are all fine. Please pull the claim.",
        "Everything inside is fine, you can drop the claim.",
        "All good inside, withdraw the claim please.",
    ],
)
def test_a_claim_pulled_is_withdrawn(pulled: str) -> None:
    said = _turns(
        ("u", "The box for order 6927604 came in crushed, I want to file a damage claim."),
        ("a", "I've opened claim CLM-69-27604. Please send photos of the contents."),
        ("u", pulled),
        ("a", "Done, claim CLM-69-27604 is withdrawn."),
    )
    s = summarise("u", "s", said)
    assert "claim" in s.dialogue.retracted
    assert "file a damage claim" not in s.summary_text, s.summary_text
    assert "hurry" not in s.summary_text, s.summary_text


def test_a_claim_withdrawn_in_chinese_is_withdrawn() -> None:
    said = _turns(
        ("u", "订单 6940990 的箱子压坏了，我要申请理赔"),
        ("a", "已为您提交理赔，编号 CLM-69-40990。"),
        ("u", "拆开看了东西没坏，理赔撤了吧"),
        ("a", "好的，理赔已撤销。"),
    )
    assert "claim" in summarise("u", "s", said).dialogue.retracted


@pytest.mark.parametrize(
    ("said", "claim"),
    [
        ("It's covered by the warranty; claim CLM-2026-4418 is open.", "CLM-2026-4418"),
        ("I've opened claim CLM-69-27604 for you.", "CLM-69-27604"),
        ("已为您提交理赔，理赔单号 LP-6940990-01。", "LP-6940990-01"),
    ],
)
def test_a_claim_number_is_a_ticket(said: str, claim: str) -> None:
    """A claim's number, named by its cue ("claim CLM-…", "理赔单号 …"), is a ticket id."""
    assert ("TICKET_ID", claim) in [(e.type, e.text) for e in extract_entities(said)]


@pytest.mark.parametrize(
    ("said", "change"),
    [
        (
            _turns(
                (
                    "u",
                    "Order 6933106: I can't get to the store this weekend. Ship it home instead.",
                ),
                ("a", "Done, order 6933106 will be shipped to your home, arriving Tuesday."),
            ),
            "home instead",
        ),
        (
            _turns(
                (
                    "u",
                    "We drink more coffee now. Make the beans every two weeks instead of monthly.",
                ),
                ("a", "Updated subscription 6934279."),
            ),
            "every two weeks instead of monthly",
        ),
        (
            _turns(
                ("u", "订单 6940123 的猫粮家里吃得慢。每月一次改成两个月一次吧"),
                ("a", "好的，已修改，下次两个月后发出。"),
            ),
            "改成两个月一次",
        ),
    ],
)
def test_a_change_of_plan_is_what_the_record_says_was_asked(said: list[Turn], change: str) -> None:
    """A clause saying what replaces the plan ("ship it to my home instead", "改成两个月一次")
    is what the session asked, before the reason for it."""
    text = summarise("u", "s", said).summary_text
    assert change in text, text


@pytest.mark.parametrize(
    "said",
    [
        "I'll take the 27-inch Dell monitor at $329.",
        "I'll take the 65 inch TV.",
        "I'll take the 12-cup coffee maker.",
        "I'll take the 20 oz tumbler.",
        "我要 55 寸的电视",
    ],
)
def test_a_products_measure_is_no_size_of_the_user(said: str) -> None:
    """A number that measures the product ("the 27-inch monitor", "20 oz", "55 寸") is not a
    size the user wears."""
    assert not [o for o in _observed(said) if o[1] == "size"], _observed(said)


@pytest.mark.parametrize(
    ("said", "size"),
    [
        ("I'll take the 32 waist", "32 waist"),
        ("I take a size 10, please", "size 10"),
        ("She wears a 6, in the red", "size 6"),
    ],
)
def test_a_size_worn_is_still_a_size(said: str, size: str) -> None:
    assert any(size in o[2] for o in _observed(said) if o[1] == "size"), _observed(said)


@pytest.mark.parametrize(
    ("said", "gone", "kept"),
    [
        (
            (
                ("u", "小米手环7的表带有吗"),
                ("a", "有的，手环7 专用硅胶表带 39 元。"),
                ("u", "哦不对 不是手环7 是手环8"),
                ("a", "好的，手环8 的表带是另一款，49 元。"),
            ),
            "39",
            "49",
        ),
        (
            (
                ("u", "Do you have a case for the Kindle Paperwhite 11?"),
                ("a", "Yes, the Paperwhite 11 fabric case is $29.99."),
                ("u", "sorry, not the Paperwhite 11, it's the Oasis 3"),
                ("a", "The Oasis 3 leather cover is $44.99."),
            ),
            "29.99",
            "Oasis 3",
        ),
    ],
)
def test_the_agents_answer_about_a_value_put_right_gives_the_record_nothing(
    said: tuple[tuple[str, str], ...], gone: str, kept: str
) -> None:
    """What the agent said of the value the user then put right (its product, its price) is
    about the wrong thing: the record takes nothing from it, and an apology is no value."""
    text = summarise("u", "s", _turns(*said)).summary_text
    assert gone not in text, text
    assert kept in text, text
    assert "sorry" not in text, text


@pytest.mark.parametrize(
    ("said", "lang", "clause"),
    [
        ("那个投诉撤回吧，已经解决了，快递员上门道歉了，还帮我搬上楼了", "zh", "快递员上门道歉了"),
        ("不用修了，师傅昨天上门把滚刷换好了", "zh", "师傅昨天上门把滚刷换好了"),
        ("卖家已经给我退款了，谢谢", "zh", "卖家已经给我退款了"),
        (
            "never mind the repair, the technician came by and fixed it",
            "en",
            "the technician came by and fixed it",
        ),
        ("the seller already refunded me, thanks", "en", "the seller already refunded me"),
    ],
)
def test_what_someone_else_already_did_is_no_request(said: str, lang: Lang, clause: str) -> None:
    utterances = [Utterance("user", said, tuple(_entities(said)))]
    acts = read_dialogue(utterances, lang).acts
    told = [a for a in acts if said[a.start : a.end].strip() == clause]
    assert told, acts
    assert told[0].kind is not ActKind.REQUEST, acts
    assert not told[0].families, acts


def test_a_complaint_withdrawn_as_settled_is_recorded_as_withdrawn_not_as_a_repair() -> None:
    turns = _turns(
        ("u", "那个投诉撤回吧，已经解决了，快递员上门道歉了，还帮我搬上楼了"),
        ("a", "好的，已为您撤销投诉 TK-63-50772，感谢您的理解。"),
    )
    text = summarise("buyer-da-01", "s-2", turns).summary_text
    assert "维修" not in text, text
    assert "撤回" in text, text


@pytest.mark.parametrize(
    ("said", "lang", "family"),
    [
        ("扫地机不用修了 拆开一看是滚刷上缠了一大团头发", "zh", "repair"),
        ("那台空调别修了，我们换新的", "zh", "repair"),
        ("nvm on the blender repair, the blade wasn't seated right", "en", "repair"),
        ("价保不弄了 还得把送的保温杯寄回去 太麻烦", "zh", "price"),
        ("退款不搞了 东西我留着", "zh", "refund"),
        ("每个月那个猫粮也给我停掉", "zh", "subscription"),
        ("please cancel my cat litter subscription, we're moving", "en", "subscription"),
    ],
)
def test_a_request_taken_back_in_few_words_names_its_family(
    said: str, lang: Lang, family: str
) -> None:
    utterances = [Utterance("user", said, tuple(_entities(said)))]
    acts = read_dialogue(utterances, lang).acts
    assert any(a.kind is ActKind.RETRACTION and family in a.families for a in acts), acts


@pytest.mark.parametrize(
    ("user", "agent", "kept", "not_kept"),
    [
        (
            "那个价保算了吧 说要先把送的卷发棒寄回去 来回折腾不值当",
            "明白，价保申请已撤销，赠品您留着就行。",
            "卷发棒",
            "退货",
        ),
        (
            "hold on, the doorbell's fine, my router was on 5GHz only. don't need the replacement",
            "Good catch. I've cancelled REP-30417, nothing will ship.",
            "withdrew",
            "requested an exchange",
        ),
    ],
)
def test_what_the_user_was_told_to_do_is_no_request_and_a_need_dropped_is_withdrawn(
    user: str, agent: str, kept: str, not_kept: str
) -> None:
    text = summarise("buyer-da-02", "s-2", _turns(("u", user), ("a", agent))).summary_text
    assert kept in text, text
    assert not_kept not in text, text


@pytest.mark.parametrize(
    ("turns", "undone"),
    [
        # the agent undid an arrangement of an earlier session
        (["热水器不用师傅来了 我自己装好了", "好的，已为您取消上门安装。"], True),
        (["skip the install for the washer, my neighbour did it", "Done, visit cancelled."], True),
        (["found it, sorry", "No problem, I've withdrawn RS-88120."], True),
        (
            ["电饭煲那单不退了 是插座的问题 取件的别来了", "好的，退货申请 TH-55102 已帮您撤销。"],
            True,
        ),
        (["打印机自己弄好了 师傅就别跑了", "好的，维修工单 WX-4417 已给您取消。"], True),
        # the user took back what no request of this session names
        (["牙刷那单算了 留着用吧", "好的"], True),
        (["never mind, I'll keep it", "Sure."], True),
        # the problem went away by itself, or the agent undid it though a topic was read
        (["found it!! the box was behind the planter, cancel the second one", "ok"], True),
        (["吹风机找到了 在我妈那 补发那个别发了", "好的，已为您拦截并取消补发。"], True),
        (["it started working again after a reset, all good", "Great!"], True),
        # controls: an add-on swapped; a request of this session taken back; an offer declined
        (["乐高那单帮我加个礼品包装", "好的，已取消普通包装，改成礼品包装。"], False),
        (
            ["帮我申请退货", "好的，需要上门取件吗？", "算了不退了", "好的，已为您撤销退货申请。"],
            False,
        ),
        (["这个耳机怎么连蓝牙", "长按 3 秒。需要我帮您登记延保吗？", "不用了，谢谢"], False),
        (["之前说的周末送货不用了", "好的"], False),
        (["found it in the manual, how do I reset the timer?", "Hold the button."], False),
    ],
)
def test_what_an_earlier_session_arranged_is_undone(turns: list[str], undone: bool) -> None:
    """:attr:`Dialogue.undone`: the agent undid an arrangement (已为您取消上门安装, visit
    cancelled) or the user took back what nothing of this session asked (那单算了)."""
    said = [Turn("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(turns)]
    assert summarise("buyer-undone", "s-1", said).dialogue.undone is undone


@pytest.mark.parametrize(
    "user",
    [
        "return number RMA-72-1046 but nothing shows up?? oh hang on its RMA-72-1064 sorry, "
        "4 and 6 the other way round lol",
        "退货单 TH-3391-0582 查不到物流 哦是 TH-3391-0528 不好意思 看错了",
    ],
)
def test_an_id_put_right_before_its_word_of_error_replaces_the_slip(user: str) -> None:
    """ "its RMA-72-1064 sorry": the word of error may follow the id that puts the slip right."""
    record = summarise("buyer-slip-01", "s-1", [Turn("user", user), Turn("assistant", "OK.")])
    assert "1046" not in record.summary_text, record.summary_text
    assert "0582" not in record.summary_text, record.summary_text


def test_a_trade_in_asks_for_no_exchange() -> None:
    assert "exchange" not in families("以旧换新我那台小米13能抵多少 512G的")
    assert "exchange" in families("鞋子小了 换大一码")


@pytest.mark.parametrize(
    ("said", "payment"),
    [
        ("我家6楼 老小区没电梯 得扛上去 搬运费我出", False),  # carrying upstairs, not postage
        ("以后运费我出 都用到付", True),
    ],
)
def test_who_pays_the_carrying_upstairs_is_no_payment_instruction(said: str, payment: bool) -> None:
    assert ("payment" in {k for k, _ in _instructions(said)}) is payment


@pytest.mark.parametrize(
    ("said", "diet"),
    [
        ("I'm strict keto, under 20 net carbs a day", True),
        ("my cardiologist put me on a high-fiber plan after my bloodwork", True),
        ("we're plant-based at home now", True),
        ("they put me on a payment plan for the sofa", False),
        ("I'm going to the gym after work", False),
    ],
)
def test_a_diet_one_is_on_is_a_fact_of_the_diet(said: str, diet: bool) -> None:
    assert any(slot == "diet" for _, slot, _ in _observed(said)) is diet


@pytest.mark.parametrize(
    "said",
    [
        "cancel my order please, I found it cheaper",
        "空调自己停掉了 开不了机",
        "the refund by the end of the week",
    ],
)
def test_a_request_or_a_symptom_in_words_of_stopping_is_no_retraction(said: str) -> None:
    utterances = [Utterance("user", said, tuple(_entities(said)))]
    acts = read_dialogue(utterances, "en" if said.isascii() else "zh").acts
    assert not [a for a in acts if a.kind is ActKind.RETRACTION], acts


@pytest.mark.parametrize(
    ("said", "standing"),
    [
        ("小米14 256g 黑色的要一台 走顺丰送货上门", False),  # this order's delivery
        (
            "I'll take the grey cashmere scarf. No gift wrap, it's for me, plain box is fine",
            False,
        ),
        ("这款扫地机下单 以后快递都放门卫", True),  # a standing word: for every order
        ("I'll take the kettle, and from now on always use plain boxes for me", True),
    ],
)
def test_an_arrangement_said_with_a_purchase_is_that_orders(said: str, standing: bool) -> None:
    """How to ship or wrap what is being bought, said as it is bought, is that order's;
    a word of from now on makes it stand for every order."""
    keys = {k for k, _ in _instructions(said)}
    assert bool(keys & {"dropoff", "carrier", "packaging", "delivery_time"}) is standing, keys


@pytest.mark.parametrize(
    ("said", "diet"),
    [
        ("猫粮给我推荐下 我家猫挑嘴 别的都不吃", False),  # the cat's, not the user's
        ("我家狗狗对鸡肉过敏 有没有不含鸡肉的狗粮", False),
        ("我对花生过敏 家里还养了只猫", True),
        ("我不吃香菜", True),
    ],
)
def test_what_a_pet_will_not_eat_is_no_diet_of_the_user(said: str, diet: bool) -> None:
    assert any(slot == "diet" for _, slot, _ in _observed(said)) is diet
