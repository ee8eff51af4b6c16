"""A standing instruction of an earlier session the user calls void.

"之前说不用打电话那个作废 以后送到了必须打电话", "我之前那个环保的要求不作数了", "nvm the phone
updates thing", "the wait-for-everything rule was a mistake": the user points back at an
instruction they gave (a pointer back: 之前, 上回, 那个, the … thing / rule) and voids it
(作废, 不作数, 不算数, 取消, nvm, forget, ignore, was a mistake). The words they name it by
(不用打电话, 环保, phone updates, wait-for-everything) find the note or instruction the
profile holds: the one sharing the most of their words, at least half of them. It is
deleted with the session's other instructions, and the records quoting it are restated
(the session path). A negation with no pointer back (别打电话) is the act reader's, and a
topic withdrawn by its name (地址那个不用了) is :attr:`Extraction.withdrawn`'s.

Pure functions: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from policies.linear_re import LinearPattern
from policies.pii import find_pii
from values.sessions import Lang

__all__ = ["revoked", "voided"]

_VOID_ZH: Final = (
    r"(?:作废|不作数|不算数|不算了|取消(?:掉|了)?|撤销|撤回|不要了|不用了|算了|无效|别管了)"
)
_REVOKED_ZH: Final = LinearPattern(
    r"(?:之前|上回|上次|以前|原来|先前|早先)[^，,。！？!?；;\s]{0,4}?"
    r"(?:(?:说|提|要求|讲|定|备注)(?:的|过的?)?(?:那个|那条|这个)?(?P<said>[^，,。！？!?；;\s]{2,14}?)"
    r"(?:那个|那条|这个|那项)?(?:的?要求|的?事|的?规矩|的?备注)?"
    r"|(?:的|过的?)?(?:那个|那条|这个)?(?P<asked>[^，,。！？!?；;\s]{2,14}?)"
    r"(?:的?要求|的?规矩|的?备注))"
    r"(?:也|就|都)?" + _VOID_ZH
)
"""A pointer back, the words naming the instruction after a verb of saying or before a word
for an instruction (要求, 规矩, 备注), a word voiding it; never a thing alone (之前那个订单取消了
is an order's)."""
_REVOKED_EN: Final = LinearPattern(
    r"(?i:(?:nvm|never\s*mind|forget(?:\s+about)?|ignore|scratch|disregard)\s+"
    r"(?:the|that|my)\s+(?P<what>[a-z][a-z' -]{1,30}?)\s+(?:thing|rule|instruction|"
    r"bit|stuff|preference|setting|arrangement)"
    r"|(?:the|that|my)\s+(?P<what2>[a-z][a-z' -]{1,30}?)\s+(?:thing|rule|instruction|"
    r"preference|setting|arrangement)\s+(?:was|is)\s+(?:a mistake|off|cancell?ed|void|"
    r"no longer (?:needed|valid)|not needed))"
)
"""Voiding words before the instruction named as a thing or rule, or after it."""
_UNIT_ZH: Final = LinearPattern(r"[\x{4e00}-\x{9fff}]+")
_UNIT_EN: Final = LinearPattern(r"[a-z0-9]+")
_STOP: Final = frozenset(
    {"the", "a", "an", "my", "to", "for", "of", "and", "all", "it", "s", "in", "on", "by"}
)
_SHARED: Final = 0.5
"""The share of the voided words an instruction must hold to be the one voided."""


def revoked(text: str, lang: Lang) -> list[str]:
    """The words each instruction the user's turn ``text`` voids is named by, in order;
    never words holding PII (the profile keeps those masked: no name of them finds one)."""
    if lang == "zh":
        found = [
            _trimmed(m.group("said") or m.group("asked") or "") for m in _REVOKED_ZH.finditer(text)
        ]
    else:
        found = [
            (m.group("what") or m.group("what2") or "").strip() for m in _REVOKED_EN.finditer(text)
        ]
    return [w for w in found if w and not find_pii(w)]


def _trimmed(what: str) -> str:
    """``what`` without the particles that end a name (环保的: 环保)."""
    return what.rstrip("的了").strip()


def _units(text: str) -> frozenset[str]:
    """Chinese character pairs and English words (no stop words) of ``text``."""
    folded = text.casefold().replace("'s", "")
    out = {w for a, b in _UNIT_EN.spans(folded) if (w := folded[a:b]) not in _STOP}
    for a, b in _UNIT_ZH.spans(folded):
        run = folded[a:b]
        out.update(run[i : i + 2] for i in range(len(run) - 1))
        if len(run) == 1:
            out.add(run)
    return frozenset(out)


def voided(names: Iterable[str], held: Sequence[tuple[str, str]]) -> list[str]:
    """The keys of ``held`` (``(key, text)`` of the instructions and notes the profile holds)
    that ``names`` (:func:`revoked`) void: for each name, the one holding the most of its
    words, at least half of them."""
    out: list[str] = []
    for name in names:
        wanted = _units(name)
        if not wanted:
            continue
        scored = [(len(wanted & _units(text)), key) for key, text in held]
        best = max((n for n, _ in scored), default=0)
        if best >= _SHARED * len(wanted):
            out += [key for n, key in scored if n == best and key not in out]
    return out
