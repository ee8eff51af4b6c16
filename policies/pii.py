"""PII detection and masking: pure functions of a string, no I/O, no NLP models.

Kinds (:class:`PiiKind`): mainland-China mobile numbers (optional ``+86`` and
space/dash separators) and landlines written with an area code (``010-12345678``);
e-mail addresses; 18-digit PRC resident ID numbers whose GB 11643 checksum and
birth date are valid; bank cards of 16-19 digits starting 3-6 that pass the
Luhn check; Chinese postal addresses (an optional 省/市/区/县 chain followed by a
road and house number, or a residential compound with a building/unit/room) and
English street addresses (``221B Baker Street``).

Numbers written right after an order, tracking, refund or reference cue
(``订单号``, ``运单号``, ``order #``, ``tracking no.``) are ids, not PII, and are
never reported; neither are amounts and dates.

Masking format (Chinese industry convention, partial masks that keep no
recoverable value)::

    phone      13812345678          -> 138****5678      (landline: 010-****5678)
    email      zhangsan@qq.com      -> z***@qq.com
    id_card    11010519491231002X   -> 110***********002X
    bank_card  6222 0212 3456 7890  -> **** **** **** 7890
    address    北京市朝阳区建国路88号  -> 北京市朝阳区[地址]    (district kept)
               221B Baker Street    -> [address]

No masked form is detected again, so :func:`mask_pii` is idempotent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from enum import StrEnum

__all__ = ["PiiKind", "PiiMatch", "find_pii", "mask_pii", "mask_value"]


class PiiKind(StrEnum):
    """The kinds of personal data detected and masked."""

    PHONE = "phone"
    EMAIL = "email"
    ID_CARD = "id_card"
    BANK_CARD = "bank_card"
    ADDRESS = "address"


@dataclass(frozen=True, slots=True)
class PiiMatch:
    """One detected value: ``text[start:end] == value``."""

    kind: PiiKind
    start: int
    end: int
    value: str


_NOT_ALNUM_BEFORE = r"(?<![0-9A-Za-z])"
_NOT_ALNUM_AFTER = r"(?![0-9A-Za-z])"

_MOBILE_RE = re.compile(
    _NOT_ALNUM_BEFORE + r"(?:(?:\+|00)?86[\s-]?)?1[3-9]\d(?:\d{8}|[\s-]\d{4}[\s-]\d{4})"
    r"(?!\d)"
)
_LANDLINE_RE = re.compile(
    _NOT_ALNUM_BEFORE + r"(?:\(0\d{2,3}\)\s?|0\d{2,3}[\s-])\d{7,8}(?:-\d{1,5})?(?!\d)"
)
_EMAIL_RE = re.compile(
    r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9][A-Za-z0-9._%+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*"
    r"\.[A-Za-z]{2,24}(?![A-Za-z0-9-])"
)
_ID_CARD_RE = re.compile(
    _NOT_ALNUM_BEFORE
    + r"[1-68]\d{5}(?:18|19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx]"
    + _NOT_ALNUM_AFTER
)
_BANK_CARD_RE = re.compile(
    _NOT_ALNUM_BEFORE + r"(?:[3-6]\d{15,18}|[3-6]\d{3}(?:[\s-]\d{4}){3}(?:[\s-]?\d{1,3})?)"
    r"(?![0-9A-Za-z])"
)

# Chinese address: name characters exclude common function words and verbs so a
# match cannot start inside "我的地址是" or "寄到".
_STOP_CHARS = (
    "的是在我你他她址到寄送收货住家为和与从往请帮改成换填写了吗呢吧啊呀哦嗯就还也都把给被让"
)
_HAN = rf"(?:(?![{_STOP_CHARS}])[\u4e00-\u9fff])"
_NUM = r"[0-9一二三四五六七八九十百零〇]"
_ADMIN = rf"(?:{_HAN}{{1,8}}?(?:省|自治区|特别行政区|市|区|县|旗|镇|乡|街道))"
_STREET = (
    rf"(?:{_HAN}(?:{_HAN}|[0-9A-Za-z]){{0,11}}?(?:大道|路|街|巷|胡同|道)"
    rf"\s?{_NUM}{{1,5}}\s?(?:号|弄))"
)
_ESTATE = rf"(?:{_HAN}{{2,10}}?(?:小区|花园|公寓|大厦|家园|新村|苑|社区|广场))"
_UNIT = r"(?:\s?[0-9A-Za-z一二三四五六七八九十]{1,5}\s?(?:号楼|栋|幢|座|单元|层|楼|室|号|户))"
_ROOM = r"(?:[-\s]?\d{3,4}(?![\d元块.,]))?"
_ZH_ADDRESS_RE = re.compile(
    rf"(?P<admin>{_ADMIN}{{0,4}})"
    rf"(?:{_STREET}院?(?:{_ESTATE})?(?:{_UNIT}+{_ROOM})?|{_ESTATE}{_UNIT}+{_ROOM})"
)
_ADMIN_UNIT_RE = re.compile(_ADMIN)
_EN_ADDRESS_RE = re.compile(
    r"(?<![0-9A-Za-z])\d{1,5}[A-Za-z]?\s+(?:[A-Z][A-Za-z'.-]+\s+){1,3}"
    r"(?i:street|st\.|road|rd\.|avenue|ave\.|boulevard|blvd\.|lane|ln\.|drive|dr\.|court|"
    r"ct\.|way|place|pl\.|terrace|crescent|close)(?![A-Za-z])"
    r"(?:,?\s*(?i:apt\.?|apartment|suite|unit|flat|#)\s*[0-9A-Za-z-]+)?"
)

# An id cue right before a number: then the number is an order/tracking id.
_ID_CUE_RE = re.compile(
    r"(?i:订单|单号|运单|快递|物流|工单|退款|发票|order|tracking|parcel|shipment|refund|"
    r"invoice|ticket|ref)\s*(?i:号|编号|id|no\.?|number|num|#)?\s*(?:是|为|:|：|#)?\s*$"
)

_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10X98765432"


def _id_card_valid(value: str) -> bool:
    digits = value[:17]
    total = sum(int(d) * w for d, w in zip(digits, _ID_WEIGHTS, strict=True))
    if _ID_CHECK[total % 11] != value[17].upper():
        return False
    try:
        date(int(value[6:10]), int(value[10:12]), int(value[12:14]))
    except ValueError:
        return False
    return True


def _luhn_valid(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _after_id_cue(text: str, start: int) -> bool:
    return _ID_CUE_RE.search(text[max(0, start - 20) : start]) is not None


def _candidates(text: str) -> list[PiiMatch]:
    found: list[PiiMatch] = []

    def add(kind: PiiKind, m: re.Match[str]) -> None:
        found.append(PiiMatch(kind, m.start(), m.end(), m.group()))

    for m in _EMAIL_RE.finditer(text):
        add(PiiKind.EMAIL, m)
    for m in _ID_CARD_RE.finditer(text):
        if _id_card_valid(m.group()) and not _after_id_cue(text, m.start()):
            add(PiiKind.ID_CARD, m)
    for m in _BANK_CARD_RE.finditer(text):
        digits = re.sub(r"\D", "", m.group())
        if 16 <= len(digits) <= 19 and _luhn_valid(digits) and not _after_id_cue(text, m.start()):
            add(PiiKind.BANK_CARD, m)
    for rx in (_MOBILE_RE, _LANDLINE_RE):
        for m in rx.finditer(text):
            if not _after_id_cue(text, m.start()):
                add(PiiKind.PHONE, m)
    for m in _ZH_ADDRESS_RE.finditer(text):
        add(PiiKind.ADDRESS, m)
    for m in _EN_ADDRESS_RE.finditer(text):
        add(PiiKind.ADDRESS, m)
    return found


_PRIORITY = {
    PiiKind.EMAIL: 0,
    PiiKind.ID_CARD: 1,
    PiiKind.BANK_CARD: 2,
    PiiKind.PHONE: 3,
    PiiKind.ADDRESS: 4,
}


def find_pii(text: str) -> list[PiiMatch]:
    """Every PII value in ``text``: non-overlapping, sorted by position.

    Where candidates overlap, the more specific kind wins (email, ID card, bank
    card, phone, then address), and a longer match beats a shorter one.
    """
    chosen: list[PiiMatch] = []
    for cand in sorted(_candidates(text), key=lambda c: (_PRIORITY[c.kind], c.start - c.end)):
        if all(cand.end <= c.start or cand.start >= c.end for c in chosen):
            chosen.append(cand)
    return sorted(chosen, key=lambda c: c.start)


def _mask_digits(value: str, keep_head: int, keep_tail: int) -> str:
    total = sum(ch.isdigit() or ch in "Xx" for ch in value)
    out: list[str] = []
    seen = 0
    for ch in value:
        if ch.isdigit() or ch in "Xx":
            out.append(ch if seen < keep_head or seen >= total - keep_tail else "*")
            seen += 1
        else:
            out.append(ch)
    return "".join(out)


def _mask_phone(value: str) -> str:
    digits = re.sub(r"\D", "", value)
    if digits.startswith("0") or value.lstrip().startswith("("):
        area = re.match(r"\(?0\d{2,3}\)?[\s-]?", value)
        return (area.group() if area else "") + "****" + digits[-4:]
    return digits[-11:-8] + "****" + digits[-4:]


def _mask_address(value: str) -> str:
    m = _ZH_ADDRESS_RE.fullmatch(value)
    if m is None:
        return "[address]"
    # Keep the province/city/district units; drop the town and everything below.
    prefix = ""
    for unit in _ADMIN_UNIT_RE.finditer(m.group("admin")):
        if unit.group().endswith(("镇", "乡", "街道")):
            break
        prefix += unit.group()
    return prefix + "[地址]"


def mask_value(kind: PiiKind, value: str) -> str:
    """The masked form of one detected ``value`` of ``kind`` (see the module docstring)."""
    if kind is PiiKind.PHONE:
        return _mask_phone(value)
    if kind is PiiKind.EMAIL:
        return value[0] + "***@" + value.partition("@")[2]
    if kind is PiiKind.ID_CARD:
        return _mask_digits(value, 3, 4)
    if kind is PiiKind.BANK_CARD:
        return "**** **** **** " + re.sub(r"\D", "", value)[-4:]
    return _mask_address(value)


def mask_pii(text: str) -> tuple[str, list[PiiMatch]]:
    """``text`` with every PII value replaced by its masked form, and the matches found.

    The matches hold the clear values and offsets into the *original* text, so
    the caller can store them encrypted; the returned text holds none of them.
    """
    matches = find_pii(text)
    if not matches:
        return text, matches
    parts: list[str] = []
    pos = 0
    for m in matches:
        parts.append(text[pos : m.start])
        parts.append(mask_value(m.kind, m.value))
        pos = m.end
    parts.append(text[pos:])
    return "".join(parts), matches
