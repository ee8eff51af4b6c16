"""The record keeps the user's own words that its sentence does not say, and never words
the user put right, took back or that the profile keeps
(``unstructured_memory/summariser/own_words.py``). Pure: no database."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unstructured_memory.summariser import own_words
from unstructured_memory.summariser.own_words import BUDGET, with_own_words
from unstructured_memory.summariser.summary import summarise
from values.sessions import Role, Turn

QUOTE = {"zh": "（用户原话：", "en": " (in the user's words: "}


def _record(*turns: tuple[Role, str]) -> str:
    return summarise("buyer-ow-01", "s-1", [Turn(role, text) for role, text in turns]).summary_text


def _quoted(text: str) -> str:
    """The part of a record in the user's words ("" when it has none)."""
    for mark in QUOTE.values():
        if mark in text:
            return text.split(mark, 1)[1]
    return ""


@pytest.mark.parametrize(
    ("turns", "kept"),
    [
        (
            [
                ("user", "上周买的电陶炉用着挺好，就是一开大火就跳闸"),
                ("assistant", "建议检查插座功率"),
                ("user", "厨房插座是新装的，别的电器都正常"),
            ],
            ["别的电器都正常", "插座是新装"],
        ),
        (
            [
                ("user", "My espresso machine from order 6620031 leaks from the bottom"),
                ("assistant", "Sorry! Is it the drip tray or the boiler?"),
                ("user", "Only when I steam milk, it started after I descaled it"),
            ],
            ["steam milk", "after they descaled it"],
        ),
        (
            [
                ("user", "Does the bread proofing basket come with a liner?"),
                ("assistant", "Yes, a linen liner is included."),
                ("user", "Mine grew mould last time because the kitchen is humid"),
            ],
            ["grew mould", "kitchen is humid"],
        ),
    ],
)
def test_what_no_slot_reads_is_kept_in_the_users_words(
    turns: list[tuple[Role, str]], kept: list[str]
) -> None:
    quoted = _quoted(_record(*turns))
    for words in kept:
        assert words in quoted


@pytest.mark.parametrize(
    "turns",
    [
        # a corrected value: the amended sentence alone speaks for the session
        [
            ("user", "订单 5530217 的耳机左边没声音，家里的狗咬过线"),
            ("assistant", "好的"),
            ("user", "不对，订单号是 5530271"),
        ],
        # a change of mind
        [
            ("user", "空气炸锅要 5L 的那款，放得下整鸡"),
            ("assistant", "好的"),
            ("user", "算了还是 3L 的吧，家里就两个人"),
        ],
        [
            ("user", "I'd like the express upgrade for the hiking boots, my trip starts Friday"),
            ("assistant", "Done, express is $12."),
            ("user", "Actually the trip got pushed back, never mind the upgrade"),
        ],
    ],
)
def test_a_session_the_user_amended_quotes_nothing(turns: list[tuple[Role, str]]) -> None:
    assert _quoted(_record(*turns)) == ""


@pytest.mark.parametrize(
    ("turns", "kept"),
    [
        # 还是 as "still", a fault that "doesn't work": no change of mind
        (
            [
                ("user", "鱼缸的过滤桶一直咕噜咕噜响，缸里的灯科鱼都吓得躲起来了"),
                ("assistant", "建议先给过滤桶排气"),
                ("user", "排了气还是响，晚上吵得睡不着"),
            ],
            ["睡不着"],
        ),
        (
            [
                ("user", "The remote of my soundbar doesn't work since the update"),
                ("assistant", "Have you tried new batteries?"),
                ("user", "Yes, new batteries, still nothing wrong with the buttons themselves"),
            ],
            ["buttons themselves"],
        ),
    ],
)
def test_still_and_a_fault_are_no_change_of_mind(
    turns: list[tuple[Role, str]], kept: list[str]
) -> None:
    quoted = _quoted(_record(*turns))
    for words in kept:
        assert words in quoted, quoted


def test_a_clause_blanked_in_the_view_is_skipped_not_classified(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A question whose words the view blanked (an option the user turned down) reached the
    intent classifier as an empty text, which raised InvalidText, once the session did not
    count as amended."""
    monkeypatch.setattr(own_words, "amended", lambda *_: False)
    turns: list[tuple[Role, str]] = [
        ("user", "好孩子 GB 这款婴儿推车有樱花粉吗"),
        ("assistant", "有的，樱花粉和雾霾蓝都有货，价格一样 1699 元。"),
        ("user", "先拿樱花粉吧……等下，我老公说是男宝宝，粉色有点扎眼，还是要雾霾蓝吧"),
        ("assistant", "好的，雾霾蓝 1699 元，订单 6431129。"),
    ]
    assert "雾霾蓝" in _record(*turns)


@pytest.mark.parametrize(
    ("turns", "never"),
    [
        ([("user", "这款沙发能送到杭州西湖区吗，家里老人腿脚不方便")], "西湖区"),
        (
            [("user", "Do you deliver to Austin TX on weekends? Nobody is home on weekdays")],
            "Austin",
        ),
        ([("user", "羽绒服买的 120 码，儿子穿袖子短一截，想问问怎么处理")], "120"),
        ([("user", "退款多久能到账，钱是从信用卡扣的")], "多久"),
        ([("user", "退款单 RF-2409-00731 什么时候到账")], "什么时候"),  # its id alone: the head's
        ([("user", "Where is my parcel, order 5521907?")], "Where"),
        ([("user", "电热毯用了两天就不热了，有事打我手机 13812345678")], "138"),
    ],
)
def test_places_sizes_status_questions_and_pii_are_never_quoted(
    turns: list[tuple[Role, str]], never: str
) -> None:
    assert never not in _quoted(_record(*turns))


def test_quoted_words_stay_within_the_budget() -> None:
    long = "，".join(
        ["包装盒压扁了", "丝带也松了", "贺卡没放进去", "保温袋破了个口", "冰袋全化了", "小勺不见了"]
    )
    record = _record(("user", f"礼盒收到了有点失望：{long}"), ("user", f"还有：{long}"))
    quoted = _quoted(record).rstrip("）")
    assert quoted
    assert sum(len(piece) for piece in quoted.split("；")) <= BUDGET["zh"]


@settings(max_examples=60, deadline=None)
@given(
    sentence=st.text(min_size=1, max_size=40),
    words=st.lists(st.text(min_size=1, max_size=20), max_size=4),
    lang=st.sampled_from(["zh", "en"]),
)
def test_the_sentence_is_kept_whole_before_the_words(
    sentence: str, words: list[str], lang: str
) -> None:
    out = with_own_words(sentence, words, lang)  # type: ignore[arg-type]
    if not words:
        assert out == sentence
    else:
        assert out.startswith(sentence.rstrip(".") if lang == "en" else sentence)
        assert all(w in out for w in words)
