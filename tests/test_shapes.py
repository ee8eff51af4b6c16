"""Products, models and brands by shape and part of speech (summariser/shapes.py, through
extract_entities): examples outside the lexicon."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unstructured_memory.summariser import extract_entities
from unstructured_memory.summariser.entities import ID_LABELS


def _named(text: str) -> list[tuple[str, str]]:
    return [
        (e.type, e.text) for e in extract_entities(text) if e.type in ("BRAND", "MODEL", "PRODUCT")
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Latin models: letters and digits, a word and a number, series words
        (
            "我这台雷蛇 BlackShark V2 Pro 右耳没声音",
            [("BRAND", "雷蛇"), ("MODEL", "BlackShark V2 Pro")],
        ),
        ("买的极米 H6 投影有亮点", [("BRAND", "极米"), ("MODEL", "H6")]),
        ("显卡上 RX 7800 XT 够不够", [("MODEL", "RX 7800 XT")]),
        (
            "Is the Garmin Forerunner 265 waterproof?",
            [("BRAND", "Garmin"), ("MODEL", "Forerunner 265")],
        ),
        ("my Nespresso Vertuo Pop leaks", [("BRAND", "Nespresso"), ("MODEL", "Vertuo Pop")]),
        ("Does the Canon EOS R50 take SD cards?", [("BRAND", "Canon"), ("MODEL", "EOS R50")]),
        # a number after a proper noun is a model
        ("想买万代 5063，送侄子", [("BRAND", "万代"), ("MODEL", "5063")]),
        # a known brand, a product and a model of two lettered parts (品牌 品类 型号)
        (
            "九阳豆浆机 DJ13-B5 一直漏水",
            [("BRAND", "九阳"), ("PRODUCT", "豆浆机"), ("MODEL", "DJ13-B5")],
        ),
        (
            "格力电风扇 KS04-X61 不转了",
            [("BRAND", "格力"), ("PRODUCT", "电风扇"), ("MODEL", "KS04-X61")],
        ),
        ("工单 BX26-0718 还没处理", []),  # a numbered part with no letter: an id
        # Chinese noun phrases after a purchase, ownership or pointing cue
        ("上周买的折叠婴儿床，螺丝少了两颗", [("PRODUCT", "折叠婴儿床")]),
        ("订单 7730215 的不锈钢保温杯漏水", [("PRODUCT", "不锈钢保温杯")]),
        ("那个 24 寸拉杆箱轮子掉了", [("PRODUCT", "24 寸拉杆箱")]),
        ("给我爸买个按摩椅", [("PRODUCT", "按摩椅")]),
        # the last character of a name jieba glues to the word after it (暖手|宝坏|了)
        ("订单里那个暖手宝坏了", [("PRODUCT", "暖手宝")]),
        ("上次买的筋膜枪帮我换个新的", [("PRODUCT", "筋膜枪")]),
        ("那个电热毯帮我退了", [("PRODUCT", "电热毯")]),
        # a thing named after what it is for: 要穿的, 要送的 (a relative clause of use)
        ("女儿周末比赛要穿的泳衣还没到", [("PRODUCT", "泳衣")]),
        ("过年要送的茶叶礼盒能加急吗", [("PRODUCT", "茶叶礼盒")]),
        ("这是要吃的", []),
        # English: the thing a clause opens on that a problem follows; of a part, its whole
        ("The hinge on the jewelry box snapped off yesterday.", [("PRODUCT", "jewelry box")]),
        ("my camping lantern is broken, can I return it", [("PRODUCT", "camping lantern")]),
        ("Hi, the salad spinner keeps leaking from the bottom", [("PRODUCT", "salad spinner")]),
        ("the package arrived late", []),
        ("the order never arrived", []),
        # what a problem is perceived in, a liquid, a mess or a place, is no product
        ("the puddle smells burnt", []),
        ("the kitchen smells like gas now", []),
        ("the noise sounds like grinding", []),
        ("the milk tastes sour", []),
        ("the water keeps leaking", []),
        ("the puddle under it keeps spreading", []),
        ("the floor is damaged where it dripped", []),
        ("the toaster smells burnt", [("PRODUCT", "toaster")]),  # a thing of one's own
        ("the water bottle keeps leaking", [("PRODUCT", "water bottle")]),
        # English measured phrases
        ("the 65-inch OLED panel has a dead pixel", [("PRODUCT", "65-inch OLED panel")]),
        ("I want a 2-person tent for hiking", [("PRODUCT", "2-person tent")]),
        # what is no model: measures, abbreviations, ids, people, things in general
        ("要 4K 120Hz 的屏，接 PS5", [("MODEL", "PS5")]),
        ("买点 USB 线", []),
        ("工单 TK-73-30091 一直没人管", []),
        ("给我妈买点东西", []),
    ],
)
def test_names_by_shape(text: str, expected: list[tuple[str, str]]) -> None:
    assert _named(text) == expected


def test_a_corrected_model_is_a_model_too() -> None:
    """Both values of a model correction are entities, so the correction can replace one."""
    assert _named("不是 Stratus，是 Vanguard 3") == [("MODEL", "Stratus"), ("MODEL", "Vanguard 3")]
    assert _named("万代 5063 买错了，是 5066") == [
        ("BRAND", "万代"),
        ("MODEL", "5063"),
        ("MODEL", "5066"),
    ]


CURRENCY_CODES = ("RMB", "CNY", "USD")
"""A code of these before a number says an amount (CNY0, USD 9), never a model."""


@pytest.mark.parametrize("text", ["我的Aaa CNY0坏了", "退了 USD9 给我", "差价 RMB 200 呢"])
def test_a_currency_code_before_a_number_is_an_amount(text: str) -> None:
    assert [e.type for e in extract_entities(text) if e.type in ("AMOUNT", "MODEL")] == ["AMOUNT"]


@given(
    st.from_regex(r"[A-Z][a-z]{2,8}", fullmatch=True),
    st.from_regex(r"[A-Z]{1,3}[0-9]{1,4}[A-Z]{0,2}", fullmatch=True).filter(
        lambda m: not m.startswith(CURRENCY_CODES)
    ),
    st.sampled_from(["我的", "买了个", "订单里的", "The ", "my "]),
    st.sampled_from(["坏了", "，还在保修吗", " stopped working", "?"]),
)
@settings(max_examples=200, deadline=None)
def test_a_model_after_a_word_is_never_cut(word: str, model: str, before: str, after: str) -> None:
    text = f"{before}{word} {model}{after}"
    models = [e.text for e in extract_entities(text) if e.type == "MODEL"]
    assert any(m.endswith(model) for m in models), (text, models)
    assert not [e for e in extract_entities(text) if e.type in ID_LABELS]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("scratch the Affirm plan, just put the whole sofa on my Amex", [("PRODUCT", "sofa")]),
        ("can I split it with the Klarna payments?", []),
        ("charge the rest to my Discover", []),
        ("I'd rather pay with my Venmo balance", []),
        # money back to a card: the way it was paid
        ("$150 will go back to your Mastercard in 3 to 5 business days", []),
        ("the refund is credited to their Visa", []),
        # a thing of one's own stays one
        (
            "the case doesn't fit my Kindle Scribe",
            [("PRODUCT", "case"), ("BRAND", "Kindle"), ("MODEL", "Scribe")],
        ),
        ("is the Dyson Airwrap worth it", [("BRAND", "Dyson"), ("MODEL", "Airwrap")]),
    ],
)
def test_a_way_of_paying_is_no_product(text: str, expected: list[tuple[str, str]]) -> None:
    """A name a payment noun follows (the Affirm plan) or money is put on (on my Amex,
    charge … to my Discover, pay with my Venmo) is a way of paying, not a device."""
    assert _named(text) == expected
