"""Amounts said in words or hedged: ``两三千``, ``一万出头``, ``三百来块``, ``3000 左右``,
``under two hundred bucks``, ``a thousand-ish``.

:data:`SAID` is the pattern (RE2 source, see :mod:`policies.linear_re`) of such an
amount: a Chinese number word with a magnitude (十百千万, a range of two digits before it:
两三千), an ASCII number, or an English number word with ``hundred``/``thousand``/``grand``
(``a couple``, ``a few``); with what may follow it (来/多, a unit, 左右/以内/出头, ``-ish``,
dollars/bucks). Whether a match is an amount depends on its context (a unit, a hedge, or a
budget word before it: :func:`is_amount`); :func:`value` reads it as a range of numbers,
:func:`budget_text` as the profile writes a budget (``2000-3000元``, ``$200``).

Pure functions of strings; every pattern runs under RE2 in linear time.
"""

from __future__ import annotations

from typing import Final

from policies.linear_re import LinearPattern

__all__ = ["SAID", "budget_text", "is_amount", "value"]

_ZH_DIGITS: Final = {
    "零": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_ZH_MAGNITUDES: Final = {"十": 10, "百": 100, "千": 1000, "万": 10000}
_EN_NUMBERS: Final = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "fifteen": 15,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
}
_EN_MAGNITUDES: Final = {"hundred": 100, "thousand": 1000, "grand": 1000, "k": 1000}

_ZH_NUMBER = r"(?:[一二两三四五六七八九几零]{0,2}[十百千万]){1,3}[一二两三四五六七八九]?"
_ZH_UNIT = r"(?:块钱|块|元|大洋)"
_ZH_HEDGE = r"(?:左右|上下|以内|以下|之内|出头|不到|封顶)"
_EN_NUMBER = (
    r"(?:(?:a\s+)?(?:couple(?:\s+of)?|few)|a|an|one|two|three|four|five|six|seven|eight|nine|ten"
    r"|eleven|twelve|fifteen|twenty|thirty|forty|fifty|\d{1,3}(?:\.\d)?)"
)
_EN_UNIT = r"(?:dollars?|bucks|usd|yuan|rmb|quid|pounds?|euros?)"

SAID: Final = (
    rf"(?P<zh>{_ZH_NUMBER}(?:来|多)?{_ZH_UNIT}?{_ZH_HEDGE}?)"
    rf"|(?P<num>\d{{2,7}}(?:\.\d{{1,2}})?\s?(?:[kKwW万千])?\s?{_ZH_UNIT}?\s?{_ZH_HEDGE})"
    rf"|(?P<num_en>\d{{1,7}}(?:\.\d{{1,2}})?\s?(?i:k)?\s?(?i:{_EN_UNIT})(?P<post_num>$|[^A-Za-z]))"
    rf"|(?P<en>(?i:{_EN_NUMBER}[\s-](?:hundred|thousand|grand)(?:-?ish)?"
    rf"(?:\s+{_EN_UNIT}(?P<post_en>$|[^A-Za-z]))?))"
)
"""An amount said in words, hedged, or with an English unit (groups ``zh``, ``num``,
``num_en``, ``en``)."""

_BUDGET_BEFORE = LinearPattern(
    r"(?:预算|价位|价格|控制在|不超过|不超|最多|顶多|最高|整机|大概|差不多|花|(?i:budget(?:\s+(?:is|of))?"
    r"|under|below|less\s+than|at\s+most|up\s+to|around|about|roughly|max(?:imum)?|within"
    r"|no\s+more\s+than|spend(?:ing)?))\s{0,2}(?:是|在|为|就|个|(?i:is|of))?\s{0,2}$"
    # a budget changed to an amount (预算可以到八千, 预算提到一万, 预算只能压到两千)
    r"|预算(?:可以|能|只能|最多能|也就)?(?:放宽|提高|提|加|涨|降|砍|压|调|改|放)?(?:到|成|至)\s{0,2}$"
)
_BUDGET_AFTER = LinearPattern(
    r"^(?i:\s{0,2}(?:max|tops|at\s+most|or\s+(?:less|so)))(?P<post>$|[^A-Za-z])"
)
_UNIT = LinearPattern(rf"{_ZH_UNIT}|[kKwW万千]")
_CURRENCY_WORD = LinearPattern(rf"(?i:{_EN_UNIT})")
"""A currency said in English (50 dollars): an amount however small."""
_MARKED = LinearPattern(
    rf"(?:来|多)?{_ZH_UNIT}|{_ZH_HEDGE}|(?i:-?ish|{_EN_UNIT})\s*$|(?i:{_EN_UNIT})"
)


def is_amount(text: str, start: int, end: int) -> bool:
    """Whether the :data:`SAID` match ``text[start:end]`` is an amount: it carries a unit
    or a hedge (``三百来块``, ``一万出头``, ``a thousand-ish``), or a budget word comes
    right before or after it (``预算两三千``, ``under two hundred``, ``a couple hundred
    max``). ``三千米`` or ``two hundred people`` are not."""
    said = text[start:end]
    if said[:1].isdigit() and _UNIT.search(said) is None and _CURRENCY_WORD.search(said) is None:
        found = value(said)  # a hedged bare number: a budget from a hundred up (not 42 左右)
        return found is not None and found[1] >= 100
    if _MARKED.search(said) is not None:
        return True
    if said[:1].isascii() and said.lstrip()[:1].isdigit():
        return False  # a bare number with no hedge is no amount (the num group has one)
    return (
        _BUDGET_BEFORE.search(text[max(0, start - 16) : start]) is not None
        or _BUDGET_AFTER.match(text[end : end + 16]) is not None
    )


def _zh_value(said: str) -> tuple[float, float] | None:
    total = [0.0, 0.0]  # whole 万 sections, low and high
    section = [0.0, 0.0]  # below 万
    pending: tuple[int, int] | None = None  # digits said before a magnitude: 两三 is (2, 3)
    last = 1
    zero = False  # 一万零二: the digit after a 零 counts units, not a tenth of the magnitude
    for ch in said:
        if ch == "零":
            zero = True
            continue
        if ch in _ZH_DIGITS:
            d = _ZH_DIGITS[ch]
            pending = (d, d) if pending is None else (pending[0], d)
            continue
        if ch == "几":
            pending = (2, 9)
            continue
        magnitude = _ZH_MAGNITUDES.get(ch)
        if magnitude is None:
            break
        if magnitude == 10000:
            lo, hi = pending or ((0, 0) if section[1] else (1, 1))
            total = [total[0] + (section[0] + lo) * 10000, total[1] + (section[1] + hi) * 10000]
            section = [0.0, 0.0]
        else:
            lo, hi = pending or (1, 1)
            section = [section[0] + lo * magnitude, section[1] + hi * magnitude]
        pending, last, zero = None, magnitude, False
    if pending is not None:  # 一千五: a digit after a magnitude counts a tenth of it
        scale = last // 10 if last >= 10 and not zero else 1
        section = [section[0] + pending[0] * scale, section[1] + pending[1] * scale]
    low, high = total[0] + section[0], total[1] + section[1]
    return (low, high) if high else None


def _en_value(said: str) -> tuple[float, float] | None:
    words = said.lower().replace("-", " ").split()
    count: tuple[float, float] | None = None
    for word in words:
        if word in ("couple",):
            count = (2, 2)
        elif word == "few":
            count = (2, 5)
        elif word in _EN_NUMBERS and count is None:
            count = (_EN_NUMBERS[word], _EN_NUMBERS[word])
        elif word.replace(".", "", 1).isdigit() and count is None:
            count = (float(word), float(word))
        elif word in _EN_MAGNITUDES:
            lo, hi = count or (1, 1)
            return lo * _EN_MAGNITUDES[word], hi * _EN_MAGNITUDES[word]
    return None


def _num_value(said: str) -> tuple[float, float] | None:
    digits = ""
    for ch in said:
        if ch.isdigit() or ch == ".":
            digits += ch
        elif not ch.isspace():
            break
    if not digits:
        return None
    n = float(digits)
    rest = said[len(digits) :].strip()[:1]
    n *= {"k": 1000, "K": 1000, "千": 1000, "w": 10000, "W": 10000, "万": 10000}.get(rest, 1)
    return n, n


def value(said: str) -> tuple[float, float] | None:
    """The number range a :data:`SAID` amount names: ``两三千`` (2000, 3000), ``一千五``
    (1500, 1500), ``a couple hundred`` (200, 200), ``3000 左右`` (3000, 3000); ``None``
    when it names none."""
    said = said.strip()
    if not said:
        return None
    if said[0].isdigit():
        return _num_value(said)
    if said[0] in _ZH_DIGITS or said[0] in _ZH_MAGNITUDES or said[0] == "几":
        return _zh_value(said)
    return _en_value(said)


_DOLLAR = LinearPattern(r"(?i:dollars?|bucks|usd|\$)")
_CURRENCIES: Final = (
    ("元", LinearPattern(r"元|块|(?i:yuan|rmb|cny)|¥|￥")),
    ("£", LinearPattern(r"£|(?i:pounds?|quid|gbp)(?:$|[^a-z])")),
    ("€", LinearPattern(r"€|(?i:euros?|eur)(?:$|[^a-z])")),
    ("$", _DOLLAR),
)
"""Currencies a budget may name, in the sign the profile writes them with."""


def _number(n: float) -> str:
    return str(int(n)) if n == int(n) else f"{n:g}"


def budget_text(said: str) -> str:
    """A :data:`SAID` amount as the profile writes a budget: ``2000-3000元``, ``1500元``,
    ``$200``, ``£300`` (the currency named, else English amounts in dollars and Chinese in
    yuan); ``""`` when it names no number."""
    found = value(said)
    if found is None:
        return ""
    low, high = found
    span = _number(low) if low == high else f"{_number(low)}-{_number(high)}"
    for sign, named in _CURRENCIES:
        if named.search(said) is not None:
            return f"{span}元" if sign == "元" else f"{sign}{span}"
    english = said.strip()[:1].isascii() and not said.strip()[:1].isdigit()
    if english or _DOLLAR.search(said) is not None:
        return f"${span}"
    return f"{span}元"
