"""PII detection and masking (policies/pii.py): examples first, then properties."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policies.pii import PiiKind, find_pii, mask_pii, mask_value, normalise_text

_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)


def _id_card(body17: str) -> str:
    total = sum(int(d) * w for d, w in zip(body17, _ID_WEIGHTS, strict=True))
    return body17 + "10X98765432"[total % 11]


def _luhn_complete(prefix: str) -> str:
    for check in "0123456789":
        digits = prefix + check
        total = 0
        for i, ch in enumerate(reversed(digits)):
            d = int(ch) * (2 if i % 2 else 1)
            total += d - 9 if d > 9 else d
        if total % 10 == 0:
            return digits
    raise AssertionError("unreachable")


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        ("我的手机是13812345678，麻烦回电", PiiKind.PHONE, "13812345678"),
        ("电话 +86 138-1234-5678", PiiKind.PHONE, "+86 138-1234-5678"),
        ("call me at 159 0000 1111 please", PiiKind.PHONE, "159 0000 1111"),
        ("座机010-12345678转人工", PiiKind.PHONE, "010-12345678"),
        ("邮箱zhangsan@qq.com谢谢", PiiKind.EMAIL, "zhangsan@qq.com"),
        ("email: bob.smith+shop@example.co.uk.", PiiKind.EMAIL, "bob.smith+shop@example.co.uk"),
        ("身份证号11010519491231002X", PiiKind.ID_CARD, "11010519491231002X"),
        ("卡号 6222 0212 3456 7890 128 退这张", PiiKind.BANK_CARD, "6222 0212 3456 7890 128"),
        (
            "寄到北京市朝阳区建国路88号院3号楼2单元501室，谢谢",
            PiiKind.ADDRESS,
            "北京市朝阳区建国路88号院3号楼2单元501室",
        ),
        (
            "地址：上海市浦东新区张江镇阳光花园5栋1201",
            PiiKind.ADDRESS,
            "上海市浦东新区张江镇阳光花园5栋1201",
        ),
        ("ship it to 221B Baker Street, London", PiiKind.ADDRESS, "221B Baker Street"),
        # a street word abbreviated without its stop
        (
            "mail paper invoices to the studio, 418 Larkspur Ave Suite 3.",
            PiiKind.ADDRESS,
            "418 Larkspur Ave Suite 3",
        ),
        ("the old place was 77 Quarry Ln, Boise", PiiKind.ADDRESS, "77 Quarry Ln"),
    ],
)
def test_detects_each_kind(text: str, kind: PiiKind, value: str) -> None:
    matches = find_pii(text)
    assert [(m.kind, m.value) for m in matches] == [(kind, value)]
    m = matches[0]
    assert text[m.start : m.end] == value


@pytest.mark.parametrize(
    "text",
    [
        "订单 88231 的退款编号 RF20260629001，运单号 SF123456789",
        "订单号：2024061800123，金额 ¥2,999，6月29日下单",
        "订单号 13812345678 是系统生成的",  # an order id shaped like a mobile number
        "order no. 6222021234567890128 was cancelled",  # Luhn-valid, but an order id
        "tracking number 11010519491231002X",  # checksum-valid, but after a tracking cue
        "2026-06-29 付了1999元，预计1-3个工作日到账",
        "身份证11010519491231002Y",  # wrong check character
        "卡号 6222021234567890123",  # fails the Luhn check
        "my 2 days on the way were fine; iPhone 15 Pro costs $999",
        "SELECT * FROM users WHERE id = '1'; DROP TABLE orders; -- 😀",
    ],
)
def test_ignores_ids_amounts_dates_and_invalid_numbers(text: str) -> None:
    assert find_pii(text) == []
    assert mask_pii(text) == (text, [])


def test_mask_formats_keep_no_full_value() -> None:
    text = "手机13812345678 邮箱zhangsan@qq.com 身份证11010519491231002X 卡6222021234567890128"
    masked, matches = mask_pii(text)
    assert masked == (
        "手机138****5678 邮箱z***@qq.com 身份证110***********002X 卡**** **** **** 0128"
    )
    assert {m.kind for m in matches} == {
        PiiKind.PHONE,
        PiiKind.EMAIL,
        PiiKind.ID_CARD,
        PiiKind.BANK_CARD,
    }


def test_address_mask_keeps_only_the_district() -> None:
    assert (
        mask_value(PiiKind.ADDRESS, "上海市浦东新区张江镇阳光花园5栋1201") == "上海市浦东新区[地址]"
    )
    assert mask_value(PiiKind.ADDRESS, "221B Baker Street") == "[address]"
    assert mask_value(PiiKind.PHONE, "010-12345678") == "010-****5678"


def test_matches_are_sorted_and_disjoint() -> None:
    text = "13812345678@qq.com 和 13912345678，地址北京市海淀区中关村大街1号"
    matches = find_pii(text)
    assert [m.kind for m in matches] == [PiiKind.EMAIL, PiiKind.PHONE, PiiKind.ADDRESS]
    for a, b in itertools.pairwise(matches):
        assert a.end <= b.start


# --------------------------------------------------------------------------- normalisation


@pytest.mark.parametrize(
    ("text", "masked", "value"),
    [
        (  # full-width digits, as Chinese input methods type them
            "我的手机号是１３８１２３４０００２，麻烦改一下收货电话",
            "我的手机号是138****0002，麻烦改一下收货电话",
            "13812340002",
        ),
        (
            "新号码138.1234.0003，以后打这个",
            "新号码138****0003，以后打这个",
            "138.1234.0003",
        ),
        (  # zero-width spaces pasted between the groups
            "收货电话138\u200b1234\u200b0004别打错了",
            "收货电话138****0004别打错了",
            "13812340004",
        ),
        (
            "call me on 138\u200d1234\ufeff0005 after 6pm",
            "call me on 138****0005 after 6pm",
            "13812340005",
        ),
        (
            "邮箱ｚｈａｎｇｓａｎ＠ｑｑ．ｃｏｍ，发票寄这里",
            "邮箱z***@qq.com，发票寄这里",
            "zhangsan@qq.com",
        ),
    ],
)
def test_pii_is_found_in_normalised_form(text: str, masked: str, value: str) -> None:
    assert mask_pii(text)[0] == masked
    [match] = find_pii(text)
    assert match.value == value
    assert normalise_text(text[match.start : match.end]) == value
    assert mask_pii(masked) == (masked, [])


def test_normalise_text_is_nfkc_without_format_characters() -> None:
    assert normalise_text("１３８\u200b１２３４\u2060５６７８，ＯＫ") == "13812345678,OK"
    assert normalise_text("订单 88231 的退款") == "订单 88231 的退款"
    assert normalise_text("\u200e\u200f\u00ad\u2066a\u2069") == "a"
    assert normalise_text("") == ""


def test_masking_keeps_the_rest_of_the_text_as_written() -> None:
    text = "（急）订单８８２３１，手机１３９１２３４５６７８！"
    assert mask_pii(text)[0] == "（急）订单８８２３１，手机139****5678！"


def test_ids_in_full_width_digits_are_still_ids() -> None:
    assert find_pii("订单号：１３８１２３４５６７８") == []


# --------------------------------------------------------------------------- properties

_FILLER = st.text(
    alphabet="你好请帮我查一下这个商品谢谢很快满意问题，。！ ,!?'\";--😀",
    max_size=20,
)
_phones = st.builds(
    lambda second, rest: f"1{second}{rest}",
    st.sampled_from("3456789"),
    st.text(alphabet="0123456789", min_size=9, max_size=9),
)
_emails = st.builds(
    lambda user, host: f"{user}@{host}.com",
    st.from_regex(r"[a-z][a-z0-9._]{0,10}", fullmatch=True),
    st.from_regex(r"[a-z]{2,10}", fullmatch=True),
)
_ids = st.builds(
    lambda region, year, month, day, seq: _id_card(f"{region}{year}{month:02d}{day:02d}{seq}"),
    st.from_regex(r"[1-6]\d{5}", fullmatch=True),
    st.integers(1950, 2010),
    st.integers(1, 12),
    st.integers(1, 28),
    st.from_regex(r"\d{3}", fullmatch=True),
)
_cards = st.builds(
    lambda body: _luhn_complete("62" + body),
    st.text(alphabet="0123456789", min_size=14, max_size=16),
)
_pii_values = st.one_of(_phones, _emails, _ids, _cards)


@settings(max_examples=200, deadline=None)
@given(pre=_FILLER, value=_pii_values, post=_FILLER)
def test_masking_removes_values_and_is_idempotent(pre: str, value: str, post: str) -> None:
    text = f"{pre} {value} {post}"
    masked, matches = mask_pii(text)
    assert [m.value for m in matches] == [normalise_text(value)]
    assert [text[m.start : m.end] for m in matches] == [value]
    assert value not in masked
    assert mask_pii(masked) == (masked, [])


@settings(max_examples=200, deadline=None)
@given(
    pre=_FILLER,
    order=st.from_regex(r"\d{5,20}", fullmatch=True),
    cents=st.integers(0, 10_000_000),
    refund=st.from_regex(r"RF\d{10,14}", fullmatch=True),
    post=_FILLER,
)
def test_text_without_pii_is_unchanged(
    pre: str, order: str, cents: int, refund: str, post: str
) -> None:
    text = f"{pre}订单号：{order}，金额 ¥{cents / 100:.2f}，退款编号 {refund}，2026-06-29 {post}"
    assert mask_pii(text) == (text, [])


def test_digits_of_any_script_count_as_digits() -> None:
    """A refund id with an Arabic-Indic zero is an id, not a phone after a letter; a phone
    typed in Arabic-Indic digits is still a phone (regression found by the property test)."""
    text = "退款编号 RF٠13000000000 已受理"
    assert mask_pii(text) == (text, [])
    masked, found = mask_pii("手机 ١٣٩١٢٣٤٥٦٧٨ 请回电")
    assert [m.value for m in found] == ["13912345678"]
    assert "١٣٩١٢٣٤٥٦٧٨" not in masked
