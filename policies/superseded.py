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
    hold, each also without its spaces: the whole of a short value, then its measures."""
    found: list[str] = []
    whole = " ".join(former.split())
    if whole and len(whole) <= _SHORT and _CLAUSE_MARK.search(whole) is None:
        found.append(whole)
    found += _measures(former)
    held = "".join(now.split()).casefold()
    out: list[str] = []
    for word in found:
        for spelt in (word, "".join(word.split())):
            if spelt and "".join(spelt.split()).casefold() not in held and spelt not in out:
                out.append(spelt)
    return tuple(out)


def unsay(text: str, words: Iterable[str], marker: str) -> str:
    """``text`` with each of ``words`` (case-insensitive) replaced by ``marker`` where it
    stands alone: not inside a longer Latin word or number (``120`` in ``1200`` or ``A120``
    stays); the longest word first."""
    low = text.lower()
    if len(low) != len(text):  # a letter whose lower case is longer: match as written
        low = text
    spans: list[tuple[int, int]] = []
    for word in sorted({w.lower() if low is not text else w for w in words if w}, key=len)[::-1]:
        at = low.find(word)
        while at >= 0:
            end = at + len(word)
            alone = not (at > 0 and _alnum(word[0]) and _alnum(low[at - 1])) and not (
                end < len(low) and _alnum(word[-1]) and _alnum(low[end])
            )
            if alone and not any(a < end and at < b for a, b in spans):
                spans.append((at, end))
            at = low.find(word, at + 1)
    out, last = [], 0
    for a, b in sorted(spans):
        out += [text[last:a], marker]
        last = b
    return "".join([*out, text[last:]])
