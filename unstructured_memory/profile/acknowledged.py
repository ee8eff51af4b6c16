"""What the agent acknowledged as a standing arrangement: kept when the user's words were not.

A user gives an instruction in words no rule reads (可以给我转京东物流吗, 上次说的 算了 改发短信吧,
Use this for all my work purchases going forward); the agent acknowledges it as standing:
``好的，已记下：您退货自行送驿站寄回，不安排上门取件``, ``Noted: JD Logistics for your orders
from now on, no ZTO``, ``saved as your default for work purchases``. The acknowledgement is the
instruction restated whole, and would be lost with the session. It is kept as an explicit
fact in the agent's words, the user as 用户 / they, masked:

* under the topic it states (a carrier, a drop-off, an invoice…), joined to the user's
  instruction of it; else joined to the instruction the user's turn gave (大件以后都走德邦吧；
  大件优先德邦物流), under its key; so a later instruction replacing those replaces both;
  else as a note; never when the user's own words kept say it already (half its words);
* only from a turn acknowledging something standing (已备注, 已记下, 以后, 默认, noted, from
  now on, going forward, as your default…) right after a user turn that spoke of no single
  order or time (这单, this time, a booking), with no change of mind of the user's after it; never a
  question,
  an order's arrangement (an id) or how to reach the user (a channel: the profile's field,
  read from the user's words only).

Pure functions: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Final

from policies.linear_re import LinearPattern
from unstructured_memory.profile.base import Instruction, note_key
from unstructured_memory.summariser.agreed import made_theirs
from unstructured_memory.summariser.own_words import CHANGED_MIND
from unstructured_memory.summariser.topics import (
    CHANNEL,
    CHANNEL_CODES,
    CODED_TOPICS,
    mentions,
    topics_of,
)
from values.sessions import Lang, Turn

__all__ = ["acknowledged"]

_STANDING: Final = LinearPattern(
    r"已经?备注|备注好了|已经?记下|记下了|记好了|已经?记录|记住了|已经?登记|已经?更新|设为默认|默认|以后|今后|"
    r"往后|之后都|之后改|下次|"
    r"(?i:noted|from now on|going forward|in future|in the future|for future|next time|"
    r"as (?:your|the) default|saved (?:it |this |that )?(?:as|to|on)|on your account|on file|"
    r"updated your (?:preferences|profile|settings)|will always|we'll always|won't .{0,30}again)"
)
"""An agent's words acknowledging a standing arrangement."""
_ONCE: Final = LinearPattern(
    r"这次|本次|这单|本单|这一单|这个订单|今天|预约|预订"
    r"|(?i:this (?:time|order|one|parcel|delivery)|just (?:this|once)|today|booked|scheduled|"
    r"reserved)"
)
"""An arrangement for this order or this time only, a booking among them (已为您预约周六上门,
I've booked a two-person crew)."""
_ID: Final = LinearPattern(r"[0-9]{5,}|[A-Za-z]+-?[0-9]{3,}")
"""An order's or a ticket's id: the arrangement is that order's."""
_ASKS: Final = LinearPattern(r"[？?]|吗\s*$|(?i:^\s*(?:shall|should|would|do|can|could)\s)")
_LEAD: Final = LinearPattern(
    r"^\s*(?:(?:好的|好嘞|好|可以的?|没问题|明白了?|收到|了解|亲|已备注|已记下|记下了|已记录)\s*[，,：:！!。]?\s*)+"
    r"|(?i:^\s*(?:(?:done|sure|great|got it|understood|ok(?:ay)?|perfect|no problem|certainly|"
    r"noted|of course)\s*[,:!.]?\s*)+)"
)
_SENTENCE: Final = LinearPattern(r"[^。！？!?\n]+|(?:[^.!?\n。！？]|\.\d)+")
_MAX_CHARS: Final = 160
_SAID: Final = 0.5
"""The share of its words the user's kept words hold at which an acknowledgement adds
nothing."""


def acknowledged(
    turns: Sequence[Turn], taken: Sequence[Instruction], lang: Lang
) -> list[Instruction]:
    """``taken`` (the instructions read from the user's words) with the standing
    arrangements the agent acknowledged in ``turns`` that they do not hold (see the module
    docstring). An acknowledgement stating a topic is that topic's; one stating none, of a
    user turn that gave an instruction, is that instruction's: it joins the user's words
    under their key (so a later instruction replacing them replaces both); the latest
    acknowledgement of a key wins."""
    out = {i.key: i.text for i in taken}
    amended_at = max(
        (k for k, t in enumerate(turns) if t.role == "user" and CHANGED_MIND.search(t.text)),
        default=-1,
    )
    for k, (before, turn) in enumerate(pairwise(turns), start=1):
        if turn.role == "user" or before.role != "user" or _ONCE.search(before.text):
            continue
        if k < amended_at:
            continue  # the user changed their mind, corrected or took back after it
        said = _said(turn.text, lang)
        units = _units(said)
        if not units or any(_holds(v, units) for v in out.values()):
            continue  # nothing acknowledged, or the user's own words say it
        if _ID.search(said) or mentions(said, CHANNEL, CHANNEL_CODES):
            continue  # an order's arrangement; how to reach the user is the profile's field
        given = [i.key for i in taken if _holds(before.text, _units(i.text))]
        topics = [t.key for t in topics_of(said) if not t.fact and t.key not in CODED_TOPICS]
        key = (topics or given[-1:] or [note_key(said)])[0]
        own = next((i.text for i in taken if i.key == key), None)
        joined = f"{own}{'；' if lang == 'zh' else '; '}{said}" if own else said
        out[key] = joined[:_MAX_CHARS]
    return [Instruction(k, v) for k, v in out.items()]


def _holds(text: str, units: Sequence[str]) -> bool:
    """Whether ``text`` holds at least half of ``units``."""
    mine = set(_units(text))
    return sum(u in mine for u in units) >= _SAID * len(units)


def _said(text: str, lang: Lang) -> str:
    """The sentences of an agent's turn that acknowledge a standing arrangement, lead words
    off, made the record's (用户, they), masked; ``""`` when none does."""
    kept = []
    for a, b in _SENTENCE.spans(text):
        sentence = text[a:b].strip()
        end = text[b : b + 1]
        if end in ("?", "？") or _ASKS.search(sentence) is not None:
            continue
        if _STANDING.search(sentence) is None or _ONCE.search(sentence) is not None:
            continue
        kept.append(made_theirs(_LEAD.sub("", sentence), lang))
    joined = ("，" if lang == "zh" else "; ").join(k for k in kept if k)
    return joined[:_MAX_CHARS]


def _units(text: str) -> list[str]:
    """Latin words and digit runs of ``text`` (case-folded) and the bigrams of its Chinese
    characters: what two wordings of one arrangement share."""
    out: list[str] = []
    run = ""
    word = ""
    for ch in text.casefold() + " ":
        if "\u4e00" <= ch <= "\u9fff":
            if run:
                out.append(run[-1] + ch)
            run += ch
            word = _flush(out, word)
        elif ch.isalnum():
            run = ""
            word += ch
        else:
            run = ""
            word = _flush(out, word)
    return out


def _flush(out: list[str], word: str) -> str:
    if len(word) > 1:
        out.append(word)
    return ""
