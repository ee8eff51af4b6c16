"""Scoring a context against its scenario: pure functions of the context's text and items.

- **continuity**: the context holds at least one must item (the user is recognised);
- **completion**: it holds every must item (nothing to ask the user again);
- **accuracy**: the context asserts nothing false: it asserts none of the scenario's
  ``stale`` items (what the user corrected, retracted or negated, or what stopped being
  true; an occurrence right after a negation or a withdrawal, "别再发邮件", "撤回了投诉",
  "no calls", asserts nothing), and each business item shown (a line of the business
  section) matches the system of record at that moment: a state shown as verified must
  be the true state; a state flagged as not verified now ("此刻无法核实", "状态未核实")
  is accurate, being presented as a lead; "业务系统中查不到" is accurate when the system
  does not know it;
- **profile correct**: the profile's stable values and explicit facts hold every
  ``profile.holds`` item and assert none of the ``profile.lacks`` ones (a value kept in
  the user's own negating words, "别用中通", does not assert 中通);
- **leakage**: a must-not item (another user's ids or texts, forgotten or another
  agent's private content), or any clear PII value of the suite, or any PII the
  masker would still find, in the text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from benchmarks.scenarios.model import MustItem, alternatives, normalise
from policies.pii import find_pii
from values.context import MemoryContext, Section

__all__ = [
    "BusinessFact",
    "ContextScore",
    "ProfileScore",
    "asserts",
    "business_facts",
    "holds",
    "leaks",
    "score_context",
    "score_profile",
]

_VERIFIED = ("（已核实", "（verified")
_FLAGGED = ("此刻无法核实", "状态未核实", "could not be checked now", "not verified:")
_UNKNOWN = ("业务系统中查不到", "does not know it")
_STATE = re.compile(r"：(?P<state>.+?)（")
_SEPARATORS = re.compile(r"(?<=\d)[\s.\-]+(?=\d)|\s+")


@dataclass(frozen=True)
class BusinessFact:
    """One business item of a context and whether it matched the system of record."""

    ref: str
    shown: str | None
    truth: str | None
    verdict: str
    """``verified``, ``flagged`` (shown as unverified), ``unknown`` or ``unflagged``."""
    accurate: bool


@dataclass(frozen=True)
class ContextScore:
    """How one later-session context scored."""

    found: list[MustItem]
    missing: list[MustItem]
    leaked: list[str]
    facts: list[BusinessFact]
    stale: list[str]
    """The stale items the context holds."""

    @property
    def continuity(self) -> bool:
        """At least one must item is in the context."""
        return bool(self.found)

    @property
    def complete(self) -> bool:
        """Every must item is in the context."""
        return not self.missing

    @property
    def accurate(self) -> bool:
        """The context asserts nothing stale and every business item it shows is right."""
        return not self.stale and all(f.accurate for f in self.facts)


@dataclass(frozen=True)
class ProfileScore:
    """How the profile matched its expectation."""

    missing: list[MustItem]
    wrong: list[str]
    """``lacks`` items the profile holds."""

    @property
    def correct(self) -> bool:
        """Every expected value is held and no forbidden one."""
        return not self.missing and not self.wrong


def score_profile(
    values: Sequence[str], holds_items: Sequence[MustItem], lacks: Sequence[str]
) -> ProfileScore:
    """Score the profile's values (each stable value and explicit fact, one string each)."""
    return ProfileScore(
        missing=[i for i in holds_items if not any(holds(v, i) for v in values)],
        wrong=[i for i in lacks if any(asserts(v, i) for v in values)],
    )


def holds(text: str, item: MustItem) -> bool:
    """Whether ``text`` holds the must item (any of its alternatives), ignoring case and
    white space."""
    flat = normalise(text)
    return any(normalise(alt) in flat for alt in alternatives(item))


_DENIED = re.compile(
    r"(?:不要|不用|不需要|别|不再|不是|没有?|无需|勿|而非|取消了?|撤回了?|撤销了?|拒绝|免|"
    r"not|no|don'?t|dont|never|insteadof|ratherthan|without|cancel(?:l?ed)?|withdrew|"
    r"withdrawn|stop(?:ped)?|refused?)"
    r"(?:再|了|的|a|an|the|any|more|to|being|by|via|with|sending|calling|using|getting|"
    r"receiving){0,3}[\u4e00-\u9fff]{0,2}$"
)
"""A negation or withdrawal right before an occurrence, in normalised text; a Chinese verb
of one or two characters may stand between ("别放门口", "不用卡3000")."""


def asserts(text: str, item: str) -> bool:
    """Whether ``text`` states ``item`` (case and white space ignored): it holds it
    somewhere not right after a negation or a withdrawal (see :data:`_DENIED`)."""
    flat, needle = normalise(text), normalise(item)
    at = flat.find(needle)
    while at >= 0:
        if _DENIED.search(flat[max(0, at - 24) : at]) is None:
            return True
        at = flat.find(needle, at + 1)
    return False


def _squash(text: str) -> str:
    """``text`` without white space and without separators between digits, case-folded."""
    return _SEPARATORS.sub("", text).casefold()


def leaks(text: str, must_not: Sequence[str], pii_values: Sequence[str]) -> list[str]:
    """What leaked into ``text``: ``must_not:<item>`` for each must-not item it holds,
    ``pii:<n>`` for each clear PII value of the suite (by position, never the value),
    ``pii-unmasked:<kind>`` for PII the masker still finds in it."""
    out = [f"must_not:{item}" for item in must_not if holds(text, item)]
    flat = _squash(text)
    out += [f"pii:{n}" for n, value in enumerate(pii_values) if _squash(value) in flat]
    out += [f"pii-unmasked:{m.kind.value}" for m in find_pii(text)]
    return out


def business_facts(
    ctx: MemoryContext, truth: Callable[[str, str], str | None]
) -> list[BusinessFact]:
    """The business items of ``ctx`` judged against ``truth(entity_type, entity_id)``,
    the system of record's state at the moment the context was built."""
    out = []
    for item in ctx.items:
        if item.section is not Section.BUSINESS or item.ref is None:
            continue
        entity_type, _, entity_id = item.ref.partition(":")
        true_state = truth(entity_type, entity_id)
        found = _STATE.search(item.text)
        shown = found.group("state") if found else None
        if any(flag in item.text for flag in _FLAGGED):
            verdict, accurate = "flagged", True
        elif any(flag in item.text for flag in _UNKNOWN):
            verdict, accurate = "unknown", true_state is None
        elif any(flag in item.text for flag in _VERIFIED):
            verdict, accurate = "verified", shown is not None and shown == true_state
        else:
            verdict, accurate = "unflagged", False
        out.append(BusinessFact(item.ref, shown, true_state, verdict, accurate))
    return out


def score_context(
    ctx: MemoryContext,
    must: Sequence[MustItem],
    must_not: Sequence[str],
    pii_values: Sequence[str],
    truth: Callable[[str, str], str | None],
    *,
    stale: Sequence[str] = (),
) -> ContextScore:
    """Score one later-session context."""
    found = [item for item in must if holds(ctx.text, item)]
    missing = [item for item in must if not holds(ctx.text, item)]
    return ContextScore(
        found=found,
        missing=missing,
        leaked=leaks(ctx.text, must_not, pii_values),
        facts=business_facts(ctx, truth),
        stale=[item for item in stale if asserts(ctx.text, item)],
    )
