"""Entity extraction (unstructured_memory/summariser/entities.py)."""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor

import pytest

from policies.errors import InvalidText
from unstructured_memory.summariser import detect_language, extract_entities
from unstructured_memory.summariser.entities import ENTITY_LABELS, PII_LABELS
from values.entities import Entity


def _pairs(text: str) -> list[tuple[str, str]]:
    return [(e.type, e.text) for e in extract_entities(text)]


def test_chinese_refund_message() -> None:
    text = (
        "我的订单88231的比特S10 Pro扫地机（1999元）无法回充，"
        "退款编号RF20260629001，预计1-3个工作日到账"
    )
    assert _pairs(text) == [
        ("ORDER_ID", "88231"),
        ("BRAND", "比特"),
        ("MODEL", "S10 Pro"),
        ("PRODUCT", "扫地机"),
        ("AMOUNT", "1999元"),
        ("REFUND_ID", "RF20260629001"),
        ("DATE", "1-3个工作日"),
    ]


@pytest.mark.parametrize(
    ("text", "label", "value"),
    [
        ("订单号：2024061800123 还没发货", "ORDER_ID", "2024061800123"),
        ("order #88231 is late", "ORDER_ID", "88231"),
        ("运单号 YT1234567890123 不更新", "TRACKING_NO", "YT1234567890123"),
        ("顺丰SF123456789到哪了", "TRACKING_NO", "SF123456789"),
        ("买了个空气净化器", "PRODUCT", "空气净化器"),
        ("the robot vacuum stopped", "PRODUCT", "robot vacuum"),
        ("Mate 60 有货吗", "MODEL", "Mate 60"),
        ("X20 多少钱", "MODEL", "X20"),
        ("价格¥2,999太贵", "AMOUNT", "¥2,999"),
        ("花了2999块", "AMOUNT", "2999块"),
        ("it was $49.99", "AMOUNT", "$49.99"),
        ("退了 RMB 100", "AMOUNT", "RMB 100"),
        ("6月29日能到吗", "DATE", "6月29日"),
        ("2026-06-29 下的单", "DATE", "2026-06-29"),
        ("下周能发货吗", "DATE", "下周"),
        ("arrives next week", "DATE", "next week"),
        ("due June 29", "DATE", "June 29"),
    ],
)
def test_labels(text: str, label: str, value: str) -> None:
    found = extract_entities(text)
    assert (label, value) in [(e.type, e.text) for e in found]
    entity = next(e for e in found if e.type == label)
    assert text[entity.start : entity.end] == value


def test_mixed_language_model_and_date() -> None:
    assert _pairs("我的 iPhone 15 Pro 还没发货，下周能到吗？😀") == [
        ("MODEL", "iPhone 15 Pro"),
        ("DATE", "下周"),
    ]


def test_pii_entities_are_masked_but_offsets_are_original() -> None:
    text = "手机号13812345678，邮箱bob@example.com，寄到北京市朝阳区建国路88号"
    found = extract_entities(text)
    assert [(e.type, e.text) for e in found] == [
        ("PHONE", "138****5678"),
        ("EMAIL", "b***@example.com"),
        ("ADDRESS", "北京市朝阳区[地址]"),
    ]
    assert text[found[0].start : found[0].end] == "13812345678"
    for secret in ("13812345678", "bob@example.com", "建国路88号"):
        assert all(secret not in e.text for e in found)


def test_phone_in_full_width_digits_is_a_masked_entity() -> None:
    text = "我的手机号是１３８１２３４０００２，麻烦改一下收货电话"
    found = extract_entities(text)
    phones = [e for e in found if e.type == "PHONE"]
    assert [e.text for e in phones] == ["138****0002"]
    assert text[phones[0].start : phones[0].end] == "１３８１２３４０００２"
    assert ("PHONE", "138****0004") in _pairs("电话138\u200b1234\u200b0004")


def test_phone_word_before_number_is_not_a_product() -> None:
    assert "PRODUCT" not in {e.type for e in extract_entities("我的手机13812345678")}
    assert ("PRODUCT", "手机") in _pairs("手机屏幕碎了")


def test_sql_metacharacters_and_emoji_are_plain_text() -> None:
    text = "订单88231'; DROP TABLE orders; -- 😡 退款 ¥99"
    assert _pairs(text) == [("ORDER_ID", "88231"), ("AMOUNT", "¥99")]


def test_entities_are_sorted_disjoint_and_known() -> None:
    text = "订单88231 iPhone 15 Pro ¥7,999 SF123456789 13812345678 明天"
    found = extract_entities(text)
    assert {e.type for e in found} <= ENTITY_LABELS
    for a, b in itertools.pairwise(found):
        assert a.end <= b.start
    for e in found:
        if e.type not in PII_LABELS:
            assert text[e.start : e.end] == e.text


def test_english_text_uses_the_english_pipeline() -> None:
    text = "My order #88231 (a Dyson V15 vacuum, $499.99) won't charge, email bob@example.com"
    assert _pairs(text) == [
        ("ORDER_ID", "88231"),
        ("BRAND", "Dyson"),
        ("MODEL", "V15"),
        ("PRODUCT", "vacuum"),
        ("AMOUNT", "$499.99"),
        ("EMAIL", "b***@example.com"),
    ]


def test_threads_get_the_same_answer() -> None:
    texts = [f"订单{88000 + i}的扫地机坏了，电话1381234{i:04d}" for i in range(40)]
    serial = [extract_entities(t) for t in texts]
    with ThreadPoolExecutor(max_workers=8) as pool:
        parallel = list(pool.map(extract_entities, texts))
    assert parallel == serial
    assert all(isinstance(e, Entity) for es in parallel for e in es)


@pytest.mark.parametrize("bad", ["", "   \n", "a\x00b", "x" * (64 * 1024 + 1)])
def test_invalid_text_is_refused(bad: str) -> None:
    with pytest.raises(InvalidText):
        extract_entities(bad)


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("我的扫地机坏了", "zh"),
        ("我的 iPhone 15 Pro 还没发货", "zh"),
        ("Where is my 扫地机 right now?", "en"),
        ("where is my order", "en"),
        ("88231", "zh"),
    ],
)
def test_detect_language(text: str, lang: str) -> None:
    assert detect_language(text) == lang
