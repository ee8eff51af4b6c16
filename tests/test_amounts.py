"""Amounts said in words or hedged (unstructured_memory/summariser/amounts.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policies.linear_re import LinearPattern
from unstructured_memory.summariser.amounts import SAID, budget_text, is_amount, value

_SAID = LinearPattern(SAID)


@pytest.mark.parametrize(
    ("said", "expected", "budget"),
    [
        ("七八百", (700, 800), "700-800元"),
        ("两万出头", (20000, 20000), "20000元"),
        ("五百来块", (500, 500), "500元"),
        ("一万二", (12000, 12000), "12000元"),
        ("一万零二百", (10200, 10200), "10200元"),
        ("三千五左右", (3500, 3500), "3500元"),
        ("几百块", (200, 900), "200-900元"),
        ("800 以内", (800, 800), "800元"),
        ("1.5w 左右", (15000, 15000), "15000元"),
        ("three hundred bucks", (300, 300), "$300"),
        ("a couple of hundred dollars", (200, 200), "$200"),
        ("a grand-ish", (1000, 1000), "$1000"),
        ("four thousand yuan", (4000, 4000), "4000元"),
        ("1500 rmb", (1500, 1500), "1500元"),
        ("300 quid", (300, 300), "£300"),  # a currency named is the currency kept
        ("300 pounds", (300, 300), "£300"),
        ("300 euros", (300, 300), "€300"),
    ],
)
def test_value_and_budget(said: str, expected: tuple[int, int], budget: str) -> None:
    assert value(said) == expected
    assert budget_text(said) == budget


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("预算七八百吧", ["七八百"]),
        ("价位控制在两千以内", ["两千以内"]),
        ("别超过五百来块", ["五百来块"]),
        ("keep it below three hundred please", ["three hundred"]),
        ("a couple hundred max", ["a couple hundred"]),
        ("about 2000 yuan is fine", ["2000 yuan"]),
        # numbers that are no amount: distances, counts, ages, steps, people
        ("跑了三千米", []),
        ("他四十多岁", []),
        ("一天走一万步", []),
        ("two hundred people came", []),
        ("鞋码 42 左右", []),
    ],
)
def test_is_amount_reads_the_context(text: str, found: list[str]) -> None:
    assert [text[a:b].strip() for a, b in _SAID.spans(text) if is_amount(text, a, b)] == found


_DIGITS = "零一二三四五六七八九"


def _chinese(n: int) -> str:
    """``n`` (1..99,999) in Chinese numerals, as people write it (一万零二百, 十五)."""

    def below(k: int, lead: bool) -> str:
        out, gap = "", False
        for mag, sign in ((1000, "千"), (100, "百"), (10, "十"), (1, "")):
            d, k = divmod(k, mag)
            if d:
                if gap and out:
                    out += "零"
                out += ("" if (mag == 10 and d == 1 and lead and not out) else _DIGITS[d]) + sign
                gap = False
            else:
                gap = True
        return out

    high, low = divmod(n, 10000)
    if not high:
        return below(low, True)
    text = below(high, True) + "万"
    if low:
        text += ("零" if low < 1000 else "") + below(low, False)
    return text


@given(st.integers(min_value=1, max_value=99_999))
@settings(max_examples=400, deadline=None)
def test_a_chinese_number_reads_as_its_value(n: int) -> None:
    assert value(_chinese(n)) == (n, n), _chinese(n)
