"""PII detection and masking: pure functions of a string, no I/O, no NLP models.

Kinds (:class:`PiiKind`): mainland-China mobile numbers (optional ``+86`` and
space, dash or dot separators) and landlines written with an area code (``010-12345678``);
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

Each distinct value found is vaulted by the caller (a few statements, and a decryption
in every export of the user): :func:`check_pii_values` caps them at
:data:`MAX_PII_VALUES` per text (or JSON field, or a call's turns).

Detection runs on :func:`normalise_text` of the text (NFKC, format characters
such as zero-width spaces removed), so ``１３８１２３４５６７８`` and
``138\\u200b1234\\u200b5678`` are found; offsets refer to the text as given and
masking replaces the value there, leaving the rest of the text as written.
Every pattern runs under RE2 (:mod:`policies.linear_re`), so detection takes
time linear in the length of the text, whatever the text.
"""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from enum import StrEnum
from functools import lru_cache
from typing import Final

from policies.errors import InvalidText
from policies.linear_re import LinearPattern, PatternSet, Subject

__all__ = [
    "MAX_PII_VALUES",
    "STREET_WORD_EN",
    "PiiKind",
    "PiiMatch",
    "check_pii_values",
    "find_pii",
    "mask_pii",
    "mask_value",
    "normalise_text",
    "recent_pii",
]


class PiiKind(StrEnum):
    """The kinds of personal data detected and masked."""

    PHONE = "phone"
    EMAIL = "email"
    ID_CARD = "id_card"
    BANK_CARD = "bank_card"
    ADDRESS = "address"


@dataclass(frozen=True, slots=True)
class PiiMatch:
    """One detected value: ``text[start:end]`` holds it, ``value`` is its normalised form.

    ``value`` is the matched part of :func:`normalise_text` of the text, so
    ``value == text[start:end]`` whenever the text is already normal.
    """

    kind: PiiKind
    start: int
    end: int
    value: str


# Patterns run under RE2 in linear time (policies.linear_re): a "pre" group
# stands for a one-character lookbehind, a "post" group for a lookahead.
_B = r"(?P<pre>[^0-9A-Za-z])"
"""Not right after a letter or digit: ``(?<![0-9A-Za-z])``."""
_E = r"(?P<post>$|[^0-9A-Za-z])"
"""Not right before a letter or digit: ``(?![0-9A-Za-z])``."""
_NO_DIGIT_AFTER = r"(?P<post>$|\D)"
"""Not right before a digit: ``(?!\\d)``."""

_MOBILE_RE = LinearPattern(
    _B + r"(?:(?:\+|00)?86[\s-]?)?1[3-9]\d(?:\d{8}|[\s.-]\d{4}[\s.-]\d{4})" + _NO_DIGIT_AFTER
)
_LANDLINE_RE = LinearPattern(
    _B + r"(?:\(0\d{2,3}\)\s?|0\d{2,3}[\s-])\d{7,8}(?:-\d{1,5})?" + _NO_DIGIT_AFTER
)
_EMAIL_RE = LinearPattern(
    r"(?P<pre>[^A-Za-z0-9._%+-])[A-Za-z0-9][A-Za-z0-9._%+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*"
    r"\.[A-Za-z]{2,24}(?P<post>$|[^A-Za-z0-9-])"
)
_ID_CARD_RE = LinearPattern(
    _B + r"[1-68]\d{5}(?:18|19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx]" + _E
)
_BANK_CARD_RE = LinearPattern(
    _B + r"(?:[3-6]\d{15,18}|[3-6]\d{3}(?:[\s-]\d{4}){3}(?:[\s-]?\d{1,3})?)" + _E
)


def _han_without(excluded: str) -> str:
    """A character class of the CJK unified ideographs U+4E00-U+9FFF less ``excluded``."""
    parts: list[str] = []
    lo = 0x4E00
    for cp in [*sorted({ord(c) for c in excluded}), 0xA000]:
        if cp > lo:
            parts.append(f"\\u{lo:04x}" + (f"-\\u{cp - 1:04x}" if cp - 1 > lo else ""))
        lo = cp + 1
    return "[" + "".join(parts) + "]"


# Chinese address: name characters exclude common function words and verbs so a
# match cannot start inside "我的地址是" or "寄到".
_STOP_CHARS = (
    "的是在我你他她址到寄送收货住家为和与从往请帮改成换填写了吗呢吧啊呀哦嗯就还也都把给被让"
)
_HAN = _han_without(_STOP_CHARS)
_NUM = r"[0-9一二三四五六七八九十百零〇]"
_ADMIN = rf"(?:{_HAN}{{1,8}}?(?:省|自治区|特别行政区|市|区|县|旗|镇|乡|街道))"
_STREET = (
    rf"(?:{_HAN}(?:{_HAN}|[0-9A-Za-z]){{0,11}}?(?:大道|路|街|巷|胡同|道)"
    rf"\s?{_NUM}{{1,5}}\s?(?:号|弄))"
)
_ESTATE = rf"(?:{_HAN}{{2,10}}?(?:小区|花园|公寓|大厦|家园|新村|苑|社区|广场))"
_UNIT = r"(?:\s?[0-9A-Za-z一二三四五六七八九十]{1,5}\s?(?:号楼|栋|幢|座|单元|层|楼|室|号|户))"


def _room(post: str) -> str:
    """An optional room number: 3-4 digits not followed by a digit, 元, 块, "." or ","."""
    return rf"(?:[-\s]?\d{{3,4}}(?P<{post}>$|[^\d元块.,]))?"


_ZH_ADDRESS_RE = LinearPattern(
    rf"(?P<admin>{_ADMIN}{{0,4}})"
    rf"(?:{_STREET}院?(?:{_ESTATE})?(?:{_UNIT}+{_room('post')})?"
    rf"|{_ESTATE}{_UNIT}+{_room('post2')})"
)
_ADMIN_UNIT_RE = LinearPattern(_ADMIN)
STREET_WORD_EN: Final = (
    r"(?i:(?:street|st|road|rd|avenue|ave|boulevard|blvd|lane|ln|drive|dr|court|ct|way|place|pl"
    r"|terrace|ter|crescent|cres|close|parkway|pkwy|highway|hwy|circle|square|sq)\.?)"
)
"""An English street word, in full or abbreviated with or without its stop (Ave, Ave.)."""
# The unit suffix ("apt 5") must not start with a letter: the street word ends a word.
_EN_ADDRESS_RE = LinearPattern(
    r"(?P<pre>[^0-9A-Za-z])\d{1,5}[A-Za-z]?\s+(?:[A-Z][A-Za-z'.-]+\s+){1,3}"
    + STREET_WORD_EN
    + r"(?:(?:,\s*|\s+)(?i:apt\.?|apartment|suite|unit|flat|#)\s*[0-9A-Za-z-]+"
    r"|#\s*[0-9A-Za-z-]+|(?P<post>$|[^A-Za-z]))"
)

# An id cue right before a number: then the number is an order/tracking id.
_ID_CUE_RE = LinearPattern(
    r"(?i:订单|单号|运单|快递|物流|工单|退款|发票|order|tracking|parcel|shipment|refund|"
    r"invoice|ticket|ref)\s*(?i:号|编号|id|no\.?|number|num|#)?\s*(?:是|为|:|：|#)?\s*$"
)
_AREA_RE = LinearPattern(r"\(?0\d{2,3}\)?[\s-]?")

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


def _digits(value: str) -> str:
    return "".join(ch for ch in value if ch.isdecimal())


_SCANNED = (
    _EMAIL_RE,
    _ID_CARD_RE,
    _BANK_CARD_RE,
    _MOBILE_RE,
    _LANDLINE_RE,
    _ZH_ADDRESS_RE,
    _EN_ADDRESS_RE,
)
_SCANNED_SET = PatternSet(_SCANNED)
"""One pass telling which of the detection patterns can match: only those are scanned."""


def _candidates(text: str) -> list[PiiMatch]:
    subject = Subject(text)
    wanted = [_SCANNED[i] for i in _SCANNED_SET.candidates(subject)]

    def scan(rx: LinearPattern) -> list[tuple[int, int, str]]:
        if rx not in wanted:
            return []
        return [(a, b, text[a:b]) for a, b in rx.scan(subject)]

    found = [PiiMatch(PiiKind.EMAIL, a, b, v) for a, b, v in scan(_EMAIL_RE)]
    for a, b, v in scan(_ID_CARD_RE):
        if _id_card_valid(v) and not _after_id_cue(text, a):
            found.append(PiiMatch(PiiKind.ID_CARD, a, b, v))
    for a, b, v in scan(_BANK_CARD_RE):
        digits = _digits(v)
        if 16 <= len(digits) <= 19 and _luhn_valid(digits) and not _after_id_cue(text, a):
            found.append(PiiMatch(PiiKind.BANK_CARD, a, b, v))
    for rx in (_MOBILE_RE, _LANDLINE_RE):
        for a, b, v in scan(rx):
            if not _after_id_cue(text, a):
                found.append(PiiMatch(PiiKind.PHONE, a, b, v))
    for rx in (_ZH_ADDRESS_RE, _EN_ADDRESS_RE):
        found += [PiiMatch(PiiKind.ADDRESS, a, b, v) for a, b, v in scan(rx)]
    return found


_PRIORITY = {
    PiiKind.EMAIL: 0,
    PiiKind.ID_CARD: 1,
    PiiKind.BANK_CARD: 2,
    PiiKind.PHONE: 3,
    PiiKind.ADDRESS: 4,
}


@lru_cache(maxsize=8192)
def _form(ch: str) -> str:
    """What character ``ch`` becomes in :func:`normalise_text`."""
    if unicodedata.category(ch) == "Cf":
        return ""
    form = unicodedata.normalize("NFKC", ch)
    digit = unicodedata.decimal(form, None) if len(form) == 1 else None
    return str(digit) if digit is not None else form


def _normalise(text: str) -> tuple[str, list[int] | None]:
    """:func:`normalise_text` of ``text`` and, where offsets differ, the index in ``text``
    of the character each normalised character comes from."""
    if text.isascii():
        return text, None
    changed = {ord(ch): form for ch in set(text) if (form := _form(ch)) != ch}
    if not changed:
        return text, None
    view = text.translate(changed)
    if all(len(form) == 1 for form in changed.values()):
        return view, None  # one character for one: offsets are unchanged
    source: list[int] = []
    for i, ch in enumerate(text):
        new = changed.get(ord(ch))
        if new is None:
            source.append(i)
        else:
            source.extend([i] * len(new))
    return view, source


def normalise_text(text: str) -> str:
    """``text`` as PII is detected in it: NFKC character by character, format
    characters (Unicode category Cf: zero-width spaces and joiners, BOMs,
    direction marks, soft hyphens) removed.

    Full-width digits and letters become ASCII (``１３８`` -> ``138``), so do
    full-width punctuation and ideographic spaces, and a decimal digit of any
    script becomes its ASCII digit (``١٣٨`` -> ``138``).
    """
    return _normalise(text)[0]


def find_pii(text: str) -> list[PiiMatch]:
    """Every PII value in ``text``: non-overlapping, sorted by position.

    Detection runs on :func:`normalise_text` of ``text``; the offsets refer to
    ``text`` itself (a span covers any format characters inside the value),
    ``value`` is the normalised form. Where candidates overlap, the more
    specific kind wins (email, ID card, bank card, phone, then address), and a
    longer match beats a shorter one. Linear in the length of ``text``.
    """
    found = _find_pii(text)
    with _recent_lock:
        _recent[text] = found
        if len(_recent) > _RECENT_TEXTS:
            del _recent[next(iter(_recent))]
    return list(found)


_RECENT_TEXTS = 8
_recent: dict[str, tuple[PiiMatch, ...]] = {}
"""The matches of the last texts :func:`find_pii` was given, oldest first."""
_recent_lock = threading.Lock()


def recent_pii(text: str) -> list[PiiMatch]:
    """:func:`find_pii` of ``text``, taken from the last few texts searched when it is
    one of them (a write masks its text, then tags its entities, PII included)."""
    with _recent_lock:
        found = _recent.get(text)
    return list(found) if found is not None else find_pii(text)


def _find_pii(text: str) -> tuple[PiiMatch, ...]:
    view, source = _normalise(text)
    taken = bytearray(len(view))
    chosen: list[PiiMatch] = []
    for cand in sorted(_candidates(view), key=lambda c: (_PRIORITY[c.kind], c.start - c.end)):
        if taken.find(1, cand.start, cand.end) == -1:
            taken[cand.start : cand.end] = b"\x01" * (cand.end - cand.start)
            chosen.append(cand)
    chosen.sort(key=lambda c: c.start)
    if source is None:
        return tuple(chosen)
    return tuple(PiiMatch(c.kind, source[c.start], source[c.end - 1] + 1, c.value) for c in chosen)


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
    digits = _digits(value)
    if digits.startswith("0") or value.lstrip().startswith("("):
        area = _AREA_RE.match(value)
        return (area.group() or "" if area else "") + "****" + digits[-4:]
    return digits[-11:-8] + "****" + digits[-4:]


def _mask_address(value: str) -> str:
    m = _ZH_ADDRESS_RE.fullmatch(value)
    if m is None:
        return "[address]"
    # Keep the province/city/district units; drop the town and everything below.
    admin = m.group("admin") or ""
    prefix = ""
    for a, b in _ADMIN_UNIT_RE.spans(admin):
        if admin[a:b].endswith(("镇", "乡", "街道")):
            break
        prefix += admin[a:b]
    return prefix + "[地址]"


def mask_value(kind: PiiKind, value: str) -> str:
    """The masked form of one detected ``value`` of ``kind`` (see the module docstring).

    ``value`` is normalised first (:func:`normalise_text`), so ``１３８…`` masks as ``138****…``.
    """
    value = normalise_text(value)
    if kind is PiiKind.PHONE:
        return _mask_phone(value)
    if kind is PiiKind.EMAIL:
        return value[0] + "***@" + value.partition("@")[2]
    if kind is PiiKind.ID_CARD:
        return _mask_digits(value, 3, 4)
    if kind is PiiKind.BANK_CARD:
        return "**** **** **** " + _digits(value)[-4:]
    return _mask_address(value)


def mask_pii(text: str) -> tuple[str, list[PiiMatch]]:
    """``text`` with every PII value replaced by its masked form, and the matches found.

    The matches hold the clear values (normalised) and offsets into the
    *original* text, so the caller can store them encrypted; the returned text
    holds none of them and is otherwise ``text`` as given (not normalised).
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


MAX_PII_VALUES = 128
"""Most distinct personal values one text, JSON field or call's turns may name (one per
512 bytes of the largest text)."""


def check_pii_values(matches: Iterable[PiiMatch], field: str) -> None:
    """Raise :class:`InvalidText` if ``matches`` hold more than :data:`MAX_PII_VALUES`
    distinct (kind, value) pairs; the message names ``field``, never a value."""
    if len({(m.kind, m.value) for m in matches}) > MAX_PII_VALUES:
        raise InvalidText(
            f"{field} names more than {MAX_PII_VALUES} distinct personal values; "
            "split it into smaller ones",
            field=field,
        )
