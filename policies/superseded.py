"""What an earlier record still names of a value the user has since replaced: pure rules.

A profile slot remembers the values it held before its current one
(:attr:`~policies.profile_merge.Stable.formerly`). An interaction record written back then
names the old value ("用户咨询 iPhone 13 的充电头", "he's 10-12 years"). The ledger keeps the
record as it was (it is history, and search still finds it by the old words); the context an
agent reads now shows that value as replaced, so no agent takes the old phone, size or weight
for the user's current one.

- :func:`superseded_words`: the words that name a former value and not the current one, the
  whole value when it is a short phrase (a model, a size code, a member level), and the
  measures of it (a number of three or more characters, or a number with its unit: ``10-12``,
  ``120``, ``12 kg``, ``11公斤``);
- :func:`unsay`: a text with those words, standing alone, replaced by a marker.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from policies.linear_re import LinearPattern

__all__ = ["superseded_words", "unsay"]

_SHORT: Final = 24
"""Longest value taken whole (characters): a model or a code, not a clause."""

_CLAUSE_MARK: Final = LinearPattern(r"[，,。；;！!？?（）()：:\n]")

_MEASURE: Final = LinearPattern(
    r"(?P<number>\d+(?:\.\d+)?(?:\s?[-~–到至]\s?\d+(?:\.\d+)?)?)"
    r"(?:(?P<unit>\s?(?:公斤|千克|斤|厘米|毫米|英寸|寸|码|岁|个月))"
    r"|(?P<unit_en>\s?(?i:kgs?|cm|mm|lbs?|pounds?|inch(?:es)?|years? old|years?|months?))"
    r"(?:$|[^A-Za-z]))?"
)
"""A number, a range of two, and the unit right after it."""


def _alnum(ch: str) -> bool:
    return ch.isascii() and ch.isalnum()


def _measures(value: str) -> list[str]:
    """The measures of ``value`` that tell it apart: a number of three or more characters,
    a shorter one with its unit; never a number inside a model or an id (iPhone13, A7Q3)."""
    out = []
    for m in _MEASURE.finditer(value):
        number = m.group("number") or ""
        unit = m.group("unit") or m.group("unit_en") or ""
        if m.start() > 0 and _alnum(value[m.start() - 1]):
            continue
        if len(number) >= 3:
            out.append(number)
        elif unit:
            out.append(number + unit)
    return out


def superseded_words(former: str, now: str) -> tuple[str, ...]:
    """The words that name ``former`` and that ``now`` (the value that replaced it) does not
    hold, spaces aside: the whole of a short value, then its measures."""
    found: list[str] = []
    whole = " ".join(former.split())
    if whole and len(whole) <= _SHORT and _CLAUSE_MARK.search(whole) is None:
        found.append(whole)
    found += _measures(former)
    held = _flat(now).casefold()
    return tuple(dict.fromkeys(w for w in found if _flat(w).casefold() not in held))


def _flat(text: str) -> str:
    return "".join(text.split())


def unsay(text: str, words: Iterable[str], marker: str) -> str:
    """``text`` with each of ``words`` replaced by ``marker`` where it stands alone (case and
    spaces aside: records space a number from its unit, ``11 公斤``): not inside a longer Latin
    word or number (``120`` in ``1200`` or ``A120`` stays); the longest word first."""
    kept = [i for i, ch in enumerate(text) if not ch.isspace()]
    flat = "".join(text[i] for i in kept)
    folds = len(flat.lower()) == len(flat)  # else a letter's lower case is longer: as written
    fold = flat.lower() if folds else flat
    spans: list[tuple[int, int]] = []
    wanted = {_flat(w).lower() if folds else _flat(w) for w in words}
    for word in sorted(wanted - {""}, key=len, reverse=True):
        at = fold.find(word)
        while at >= 0:
            a, b = kept[at], kept[at + len(word) - 1] + 1  # the span in ``text``
            alone = not (a > 0 and _alnum(text[a]) and _alnum(text[a - 1])) and not (
                b < len(text) and _alnum(text[b - 1]) and _alnum(text[b])
            )
            if alone and not any(x < b and a < y for x, y in spans):
                spans.append((a, b))
            at = fold.find(word, at + 1)
    out, last = [], 0
    for a, b in sorted(spans):
        out += [text[last:a], marker]
        last = b
    return "".join([*out, text[last:]])
