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
- :func:`refused_words`: the words of a record naming a value the user's instruction now
  in force refuses (``以后别再往星河大厦送了`` against ``默认送公司 星河大厦``);
- :func:`unsay`: a text with those words, standing alone, replaced by a marker
  (:data:`MARKER_ZH`, :data:`MARKER_EN`: :func:`marker_for` picks by the text's language).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Final

from policies.linear_re import LinearPattern

__all__ = ["MARKER_EN", "MARKER_ZH", "marker_for", "refused_words", "superseded_words", "unsay"]

MARKER_ZH: Final = "[已更新]"
MARKER_EN: Final = "[updated]"
"""What a record shows in place of a value since replaced, in each language."""


def marker_for(text: str) -> str:
    """The marker for ``text``, in its language: Chinese when it holds a CJK character."""
    return MARKER_ZH if any("\u4e00" <= ch <= "\u9fff" for ch in text) else MARKER_EN


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


_MEASURE_DIGITS: Final = (3, 7)
"""Characters of a number with no unit that may be a measure (120, 12999, 1788.96); a longer
one is an id (an order number said beside the value), never a measure replaced."""


def _measures(value: str) -> list[str]:
    """The measures of ``value`` that tell it apart: a number of three to seven characters,
    a shorter one with its unit; never a number inside a model or an id (iPhone13, A7Q3),
    nor a longer one (订单 681924037715)."""
    out = []
    for m in _MEASURE.finditer(value):
        number = m.group("number") or ""
        unit = m.group("unit") or m.group("unit_en") or ""
        if m.start() > 0 and _alnum(value[m.start() - 1]):
            continue
        if _MEASURE_DIGITS[0] <= len(number) <= _MEASURE_DIGITS[1]:
            out.append(number)
        elif unit:
            out.append(number + unit)
    return out


def superseded_words(former: str, now: str, *, names: bool = False) -> tuple[str, ...]:
    """The words that name ``former`` and that ``now`` (the value that replaced it) does not
    hold, spaces aside: the whole of a short value, then its measures; with ``names`` (a slot
    whose value is a place or a thing, not a person's traits), the Latin names the value
    holds ("It's going to my flat in Manchester, Ancoats": Manchester, Ancoats)."""
    found: list[str] = []
    whole = " ".join(former.split())
    if whole and len(whole) <= _SHORT and _CLAUSE_MARK.search(whole) is None:
        found.append(whole)
    if names:  # a clause ("It's going to my flat in Manchester"): the names it holds
        found += [
            whole[a:b]
            for a, b in _NAME_EN.spans(whole)
            if _whole(whole, a, b)
            and not _opens(whole, a, whole[a:b])
            and any(ch.isalpha() for ch in whole[a:b])
        ]
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


_RUN: Final = LinearPattern(r"[0-9A-Za-z\u3400-\u9fff]+(?: [0-9A-Z][0-9A-Za-z]*)*")
"""A run of words with no punctuation between (Latin words go on while capitalised)."""
_NAME_EN: Final = LinearPattern(
    r"(?:[0-9A-Za-z]*(?:[0-9][A-Za-z]|[A-Za-z][0-9]|[a-z0-9][A-Z])[0-9A-Za-z]*"
    r"|[A-Z][A-Za-z]+|[0-9]{1,4})(?: (?:[0-9A-Za-z]*[0-9][0-9A-Za-z]*|[A-Z][A-Za-z]*))*"
)
"""A Latin name: a token mixing letters and digits or cases (4B, ZTO, XPS13, 7C) or a
capitalised word, and the capitalised or numbered words after it (Unit 7C)."""
_CJK: Final = LinearPattern(r"[\u3400-\u9fff]")
_LONG_DIGITS: Final = LinearPattern(r"[0-9]{5}")
_CJK_NAME: Final = 4
"""Fewest Chinese characters of a value a refusal names (星河大厦; not 打电话)."""
_LONGEST_NAME: Final = 16
"""Longest stretch of Chinese taken as one name (characters)."""


def refused_words(
    said: str, record: str, governed: Callable[[str, int, int | None], bool]
) -> tuple[str, ...]:
    """The words of ``record`` naming a value ``said`` (the user's instruction now in force)
    refuses: a name a negation governs in ``said`` (``governed(text, start, end)``) that
    ``record`` states and does not refuse itself: four Chinese characters or more, or with
    letters and digits (``别再往星河大厦送了``, ``金融港B座``), or a Latin name (``with 4B
    anymore``, ``to Unit 7C``); never an id (five digits in a row)."""
    found: list[str] = []
    folded = record.casefold()
    for word, at in _names(said, folded, governed):
        if _LONG_DIGITS.search(word) is not None or not governed(said, at, at + len(word)):
            continue
        spot = folded.find(word.casefold())
        while spot >= 0 and (
            governed(record, spot, spot + len(word)) or not _whole(record, spot, spot + len(word))
        ):
            spot = folded.find(word.casefold(), spot + 1)
        if spot >= 0 and word not in found:
            found.append(word)
    return tuple(found)


def _names(
    said: str, record: str, governed: Callable[[str, int, int | None], bool]
) -> list[tuple[str, int]]:
    """The names of ``said`` that ``record`` (case-folded) holds and a negation may govern,
    longest first: its Latin names, and the longest stretch of a run from each governed
    start holding four Chinese characters or more (or two with letters or digits)."""
    latin, starts = _governed_starts(said, governed)
    out = [(word, at) for word, at in latin if word.casefold() in record]
    taken = 0  # where the last stretch taken ends: no part of it is taken again
    for i, b in starts:
        if i < taken:
            continue
        for j in range(min(b, i + _LONGEST_NAME), i + 1, -1):
            piece = said[i:j]
            cjk = sum(1 for ch in piece if "\u3400" <= ch <= "\u9fff")
            if cjk < 2 or not _whole(said, i, j) or piece.casefold() not in record:
                continue
            if cjk >= _CJK_NAME or (cjk < len(piece) and piece.strip() == piece):
                out.append((piece, i))
                taken = j
                break
    return sorted(out, key=lambda w: -len(w[0]))


@lru_cache(maxsize=256)
def _governed_starts(
    said: str, governed: Callable[[str, int, int | None], bool]
) -> tuple[tuple[tuple[str, int], ...], tuple[tuple[int, int], ...]]:
    """The Latin names of ``said``, and the Chinese characters a negation governs with the
    end of their run (read once per instruction, not once per record)."""
    latin = tuple(
        (said[a:b], a)
        for a, b in _NAME_EN.spans(said)
        if _whole(said, a, b) and not _first_word(said, a, said[a:b])
    )
    starts = tuple(
        (i, b)
        for a, b in _RUN.spans(said)
        for i in range(a, b)
        if _CJK.match(said[i]) and governed(said, i, None)
    )
    return latin, starts


def _first_word(text: str, at: int, word: str) -> bool:
    """Whether a capitalised word opens its sentence (capitalised as any first word is)."""
    head = text[:at].rstrip()
    return (not head or head[-1] in ".!?;:,\n") and word.isalpha() and word[1:].islower()


def _opens(text: str, at: int, word: str) -> bool:
    """Whether a capitalised word opens its sentence (It's, My) or is a word every
    sentence may capitalise (I)."""
    head = text[:at].rstrip()
    return (not head or head[-1] in ".!?\n") and word.isalpha() and word[1:].islower()


def _whole(text: str, a: int, b: int) -> bool:
    """Whether ``text[a:b]`` does not cut a Latin word or a number."""
    return not (a > 0 and _alnum(text[a - 1]) and _alnum(text[a])) and not (
        b < len(text) and _alnum(text[b - 1]) and _alnum(text[b])
    )
