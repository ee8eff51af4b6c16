"""Sizes a person wears or buys, by shape: a clothing letter (``L码``, ``youth medium``), a
number with its system or unit (``42码``, ``US 10``, ``W34``, ``size 6.5``).

A letter alone is a size only where sizes are said: followed by 码/号, or right after a
verb of wearing or buying (``一般都穿L``, ``换L吧``) in Chinese; after ``size``, a
range word (``youth``, ``women's``) or ``a``/``an`` before ``in``/``for`` in English.
Each value gets one spelling (:func:`size_values`): the profile keeps ``L码`` for
``穿L`` and ``换成 L 码`` alike, ``size M`` for ``a medium``. Which of several values
the user settled on is the caller's choice (negation and time are read there).

Patterns run under RE2 in linear time (:class:`~policies.linear_re.LinearPattern`).
"""

from __future__ import annotations

from typing import Final

from policies.linear_re import LinearMatch, LinearPattern
from values.sessions import Lang

__all__ = ["SIZE_WORN_EN", "SIZE_WORN_ZH", "measures_only", "size_values"]

_LETTER_ZH: Final = r"(?:[2-6]XL|XXXL|XXL|XL|XS|S|M|L)"
_WEARS_ZH: Final = r"(?:穿|买|换成?|改成?|要|拿|选|来|都是|一般是|尺码|码数|号码)"

_NOT_A_SIZE_AFTER: Final = r"(?:$|[^0-9A-Za-z元块个件份包斤克天年月日点分秒%.岁])"
SIZE_WORN_ZH: Final = (
    rf"(?:{_WEARS_ZH}\s*(?:个|件|条)?\s*(?:{_LETTER_ZH}|\d{{2}}[A-G])(?:\s*(?:码|号))?"
    r"(?:$|[^A-Za-z0-9])"
    r"|(?:腰围|裤腰|鞋码|尺码|码数)\s*\d{2}(?:\.5)?"
    r"|(?:穿|戴|换成?|改成?)\s*\d{2,3}(?:\.5)?\s*(?:码|号)?"
    + _NOT_A_SIZE_AFTER
    + r"|(?:买|要|拿|选|来)\s*\d{2,3}(?:\.5)?\s*(?:码|号)"
    r"|(?:圈口|圈号|戒圈|手寸)(?:是|为)?\s*\d{1,2}(?:\.5)?\s*(?:号|码)?"
    rf"|(?:现在|如今|目前)\s*(?:是|都是)?\s*(?:{_LETTER_ZH}|\d{{2,3}}(?:\.5)?)\s*(?:码|号)"
    r"\s*(?:就行|就好|就可以|就够|了|正好|刚好|合适)"
    # the user's feet (我43码的脚), a size said to fit now (40码现在刚好)
    r"|我的?\s*\d{2}(?:\.5)?\s*码的?(?:脚|鞋)|脚(?:是|穿)?\s*\d{2}(?:\.5)?\s*码"
    r"|\d{2,3}(?:\.5)?\s*(?:码|号)的?\s*(?:现在|穿着|穿上)?\s*(?:正好|刚好|合脚|不挤了?))"
)
"""A size the user says they wear or buy, in Chinese (the size topic's Chinese branch)."""

_WORD_EN: Final = r"(?:xx?-?small|small|medium|xx?-?large|large|xs|s|m|l|xl|xxl|xxxl)"
_RANGE_EN: Final = r"(?:youth|kids'?|boys'?|girls'?|toddler|women'?s|men'?s|ladies'?|petite|junior)"
SIZE_WORN_EN: Final = (
    rf"(?i:(?:(?:wears?|wearing|take|takes|fits?)\s+(?:(?:an?|size|the)\s+)*"
    rf"|(?:is|she'?s|he'?s|i'?m|i am)\s+(?:(?:an?|size)\s+)+)(?:{_RANGE_EN}\s+)?"
    rf"(?:w\d{{2}}(?:\s*l\d{{2}})?|\d{{1,2}}(?:\.5)?(?:-\d{{1,2}})?|{_WORD_EN})"
    r"(?:\s+(?:inseam|collar|neck|waist))?(?:$|[^a-z0-9])"
    rf"|{_RANGE_EN}\s+(?:size\s+)?{_WORD_EN}(?:$|[^a-z0-9]))"
)
"""A size the user says they (or the person they buy for) wear, in English (the size
topic's English branch)."""

_FIND: Final = {
    "zh": LinearPattern(
        SIZE_WORN_ZH
        + rf"|(?:^|[^A-Za-z0-9])(?:{_LETTER_ZH})\s*(?:码|号)|\d{{2}}(?:\.5)?\s*(?:码|号)"
    ),
    "en": LinearPattern(
        SIZE_WORN_EN
        + rf"|(?i:size\s+(?:us\s+|uk\s+|eu\s+)?(?:\d{{1,2}}(?:\.5)?(?:-\d{{1,2}})?|{_WORD_EN})"
        r"(?:$|[^a-z0-9])|(?:^|[^a-z0-9])w\d{2}(?:\s*l\d{2})?(?:$|[^a-z0-9])"
        r"|\d{2}\s*(?:inch\s+|\"\s*)?waist"
        r"|(?:^|[^a-z0-9])(?:us|uk|eu)\s+(?:men'?s\s+|women'?s\s+)?\d{1,2}(?:\.5)?(?:$|[^a-z0-9]))"
    ),
}
"""Every size said, worn or only named (``M 码勒得慌``): the values a clause holds."""
_VALUE: Final = LinearPattern(
    r"(?i:(?:^|[^a-z0-9'])(?P<youth>youth|kids'?|boys'?|girls'?|toddler|women'?s|men'?s|ladies'?|petite|junior)?"
    r"\s*(?:size\s+)?(?P<sys>us|uk|eu)?\s*(?:men'?s\s+|women'?s\s+)?"
    r"(?P<v>w\d{2}(?:\s*l\d{2})?|\d{2}[a-g]|\d{1,3}(?:\.5)?(?:-\d{1,2})?|[2-6]xl|xxxl|xxl|xl|"
    r"xs|xx?-?small|small|medium|xx?-?large|large|s|m|l)"
    r"\s*(?P<unit>码|号|inch|\"|waist|inseam|collar|neck)?"
    r"(?P<post>$|[^A-Za-z0-9]))"
)
_SPOKEN: Final = {
    "small": "S",
    "medium": "M",
    "large": "L",
    "x-small": "XS",
    "xsmall": "XS",
    "x-large": "XL",
    "xlarge": "XL",
    "xx-large": "XXL",
    "xxlarge": "XXL",
    "xx-small": "XXS",
    "xxsmall": "XXS",
}


def _spelt(lang: Lang, found: str) -> str | None:
    """One spelling of the size ``found`` (a match of the size grammar)."""
    best: LinearMatch | None = None
    for m in _VALUE.finditer(found):
        if m.group("v") is not None and (best is None or len(m[0] or "") > len(best[0] or "")):
            best = m
    if best is None:
        return None
    value = (best.group("v") or "").lower()
    unit = best.group("unit") or ""
    if value[:2].isdigit() and value[-1:].isalpha():  # 80C: a cup size, said as it is
        return value.upper()
    if lang == "zh":
        if not value[0].isdigit():
            return f"{value.upper()}码"
        return f"{value}{'号' if unit == '号' else '码'}"
    return _spelt_en(value, best.group("youth"), best.group("sys"), unit)


def _spelt_en(value: str, youth: str | None, system: str | None, unit: str) -> str:
    if value.startswith("w"):
        return value.upper().replace(" ", "")
    if unit in ("waist", "inch", '"'):
        return f"{value} waist"
    if unit in ("inseam", "collar", "neck"):
        return f"{value} {unit}"
    letter = _SPOKEN.get(value, value.upper())
    if youth is not None:
        return f"{youth.lower()} {value if value in _SPOKEN else letter}"
    prefix = f"{system.upper()} " if system else "size "
    return prefix + (value if value[0].isdigit() else letter)


_MEASURE_AFTER: Final = LinearPattern(
    r"^[-\s]?(?i:inch(?:es)?|in\.|\"|cm|mm|ft|foot|feet|gb|tb|oz|ounces?|quarts?|qt|litres?|"
    r"liters?|watts?|mah|hz|lbs?|kg|pounds?|cups?|pieces?|pack|count|seater|person|tier|"
    r"drawers?|slices?|burners?|speed)(?:$|[^a-z])"
)
"""A unit right after a number: the number measures a product (the 27-inch monitor, the
20 oz tumbler, the 12-cup coffee maker), it is no size worn."""


def _measures_product(text: str, a: int, b: int) -> bool:
    """Whether the number of the size match ``text[a:b]`` has a product's unit after it."""
    end = max((i + 1 for i in range(a, b) if text[i].isdigit()), default=b)
    return _MEASURE_AFTER.search(text[end : end + 12]) is not None


def measures_only(text: str, lang: Lang) -> bool:
    """Whether every size ``text`` seems to say measures a product instead ("I'll take the
    27-inch monitor"): a clause of no size worn."""
    spans = _FIND[lang].spans(text)
    return bool(spans) and all(_measures_product(text, a, b) for a, b in spans)


def size_values(text: str, lang: Lang) -> list[tuple[int, int, str]]:
    """Each size said in ``text``: its span and its one spelling, in order."""
    out = []
    for a, b in _FIND[lang].spans(text):
        if lang == "en" and _measures_product(text, a, b):
            continue
        spelt = _spelt(lang, text[a:b])
        if spelt is not None:
            out.append((a, b, spelt))
    return out
