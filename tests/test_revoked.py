"""A standing instruction of an earlier session the user calls void leaves the profile and
the records quoting it (``unstructured_memory/profile/revoked.py``; the store's part in
``tests/test_session_amendments.py``)."""

from __future__ import annotations

import pytest

from unstructured_memory.profile.revoked import revoked, voided
from values.sessions import Lang


@pytest.mark.parametrize(
    ("text", "lang", "names"),
    [
        (
            "上回一箱车厘子晒蔫了 之前说不用打电话那个作废 以后送到了必须打电话",
            "zh",
            ["不用打电话"],
        ),
        ("玻璃杯碎了俩 我之前那个环保的要求不作数了 以后还是正常装箱", "zh", ["环保"]),
        (
            "cool, ordering 4. oh and nvm the phone updates thing, the app is enough",
            "en",
            ["phone updates"],
        ),
        (
            "the wait-for-everything rule was a mistake, just ship stuff whenever",
            "en",
            ["wait-for-everything"],
        ),
        ("别打电话 放门口就行", "zh", []),
        ("don't call me, just leave it at the door", "en", []),
        ("这单不要了 帮我取消", "zh", []),
        ("之前那个订单取消了吗", "zh", []),  # an order, no instruction
        ("cancel the return thing, I'll keep it", "en", []),  # a request, no instruction
    ],
)
def test_an_instruction_voided_is_named_by_its_words(
    text: str, lang: Lang, names: list[str]
) -> None:
    assert revoked(text, lang) == names


def test_the_instruction_voided_is_the_one_holding_most_of_its_words() -> None:
    held = [
        ("收货方式", "以后送货别给我打电话 我在医院上班 接不了 直接放门口就行"),
        ("note:1", "周末别送货"),
        ("note:2", "Send all my shipping updates as text messages from now on"),
        ("note:3", "hold my orders until everything's in stock and ship it all in one box"),
        ("note:4", "call my phone before the courier comes"),
    ]
    assert voided(["不用打电话"], held) == ["收货方式"]
    assert voided(["wait-for-everything"], held) == ["note:3"]
    assert voided(["shipping updates"], held) == ["note:2"]
    assert voided(["环保"], held) == [], "no instruction holds half its words: none voided"


def test_words_holding_pii_are_never_kept_as_a_name() -> None:
    assert revoked("之前说打13912345678那个作废 打另一个", "zh") == []
    assert revoked("nvm the 13912345678 thing, call the other one", "en") == []
