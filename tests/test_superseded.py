"""What a record still names of a value the user has since replaced (pure, no database)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from policies.superseded import refused_words, superseded_words, unsay
from sdk.context import replaced
from unstructured_memory.summariser.acts import negated


@pytest.mark.parametrize(
    ("former", "now", "words"),
    [
        ("iPhone 13", "华为 Mate 60 Pro", ("iPhone 13",)),
        ("75B", "80C", ("75B",)),
        ("soccer jersey for my son, he's 10-12 years", "he's a 13-14 now", ("10-12",)),
        ("120码（平时穿120的）", "130码（他现在穿130了）", ("120",)),
        ("Our beagle Pretzel is 12 kg", "Pretzel's down to 10 kg", ("12 kg",)),
        ("家里柯基11公斤", "它最近减到9公斤了", ("家里柯基11公斤", "11公斤")),
        ("银卡会员", "金卡会员", ("银卡会员",)),
        ("I put 15.5 collar for my husband's shirts", "his collar is 16.5 now", ("15.5",)),
        ("iPhone 15", "iPhone 15 Pro", ()),  # still named by the value that replaced it
        ("儿子今年上三年级，喜欢乐高", "儿子今年上四年级了", ()),  # no measure to tell apart
        ("家里有两只猫，12岁了", "一只猫12岁了", ()),
    ],
)
def test_the_words_that_name_a_former_value(former: str, now: str, words: tuple[str, ...]) -> None:
    assert superseded_words(former, now) == words


@pytest.mark.parametrize(
    ("text", "words", "shown"),
    [
        (
            "用户咨询 iPhone 13（39 元）的相关事宜",
            ("iPhone 13",),
            "用户咨询 [x]（39 元）的相关事宜",
        ),
        ("用户咨询 iphone13 的充电头", ("iPhone 13",), "用户咨询 [x] 的充电头"),
        ("用户购买建议：家里柯基 11 公斤", ("11公斤",), "用户购买建议：家里柯基 [x]"),
        ("iPhone 13 mini 的壳", ("iPhone 13",), "[x] mini 的壳"),
        ("用户咨询秋裤的相关事宜：有 120 吗", ("120",), "用户咨询秋裤的相关事宜：有 [x] 吗"),
        (
            "订单 1201209 的秋裤 120 码",
            ("120",),
            "订单 1201209 的秋裤 [x] 码",
        ),  # not inside a number
        ("he's 10-12 years, 10-12 fits", ("10-12",), "he's [x] years, [x] fits"),
        ("iPhone 13 mini", ("iPhone 13", "iPhone 13 mini"), "[x]"),  # the longest first
        ("A120 and 1200", ("120",), "A120 and 1200"),
    ],
)
def test_a_record_shows_a_former_value_as_replaced(
    text: str, words: tuple[str, ...], shown: str
) -> None:
    assert unsay(text, words, "[x]") == shown


@given(st.text(max_size=80), st.lists(st.text(min_size=1, max_size=8), max_size=4))
def test_unsay_keeps_everything_but_the_words(text: str, words: list[str]) -> None:
    shown = unsay(text, words, "\x00")
    if not any(w.lower() in text.lower() for w in words):
        assert shown == text
    for piece in shown.split("\x00"):
        assert piece in text


def _governed(text: str, at: int, end: int | None) -> bool:
    return negated(text, at, "en" if text.isascii() else "zh", end)


@pytest.mark.parametrize(
    ("said", "record", "words"),
    [
        ("以后别再往金融港B座送了 都送小区门口", "默认送到金融港B座 前台签收", ("金融港B座",)),
        (
            "跟你们说下 东湖花园那套卖了 不要再寄东湖花园了",
            "用户咨询：寄到东湖花园吧",
            ("东湖花园",),
        ),
        (
            "Please stop sending parcels to Unit 7C, the concierge takes them now",
            "The user contacted customer service: if I'm out leave it with Unit 7C next door",
            ("Unit 7C",),
        ),
        (
            "No more deliveries to the Harlow office please",
            "ship it to the Harlow office",
            ("Harlow",),
        ),
        ("以后都送金融港B座", "默认送到金融港B座 前台签收", ()),  # no refusal
        ("别再往金融港B座送了", "用户要求别送金融港B座了", ()),  # the record refuses it too
        ("don't cancel order 6532183", "asked to cancel order 6532183", ()),  # an id is no value
        ("不要再打电话了", "客服已打电话联系用户", ()),  # a common word is no value
    ],
)
def test_the_words_a_refusal_takes_from_a_record(
    said: str, record: str, words: tuple[str, ...]
) -> None:
    assert refused_words(said, record, _governed) == words


def test_an_order_number_said_beside_a_former_value_is_no_measure_of_it() -> None:
    """ "订单 681924037715 收件人写我爸" replaced: the order number still holds (an id), so no
    earlier record shows it as updated; a price beside it does not."""
    words = superseded_words("婴儿推车那单 订单 681924037715 收件人写我爸 1299元", "")
    assert "681924037715" not in words
    assert any("1299" in w for w in words), words


@pytest.mark.parametrize(
    ("slot", "former", "now", "word"),
    [
        ("budget", "3000元（三千以内）", "6000元（六千）", "三千以内"),
        ("budget@laptop", "$800 (under eight hundred)", "$1500", "under eight hundred"),
        ("vehicle", "大众朗逸 2019款", "比亚迪海豹", "朗逸"),
        ("vehicle", "2016 Honda Civic", "Tesla Model 3", "Civic"),
    ],
)
def test_a_replaced_slot_names_its_former_value_as_records_say_it(
    slot: str, former: str, now: str, word: str
) -> None:
    """A budget's words as said (三千以内) and a car's model without its maker (朗逸) are what
    records name the former value by."""
    words, _ = replaced([(slot, now, [former])])
    assert word in words, words
