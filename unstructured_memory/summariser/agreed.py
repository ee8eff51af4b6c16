"""What the agent confirmed last: the state the session settled on, in the agent's words.

A user who changes their mind, corrects a value or chooses among options leaves the
record's slots guessing which value holds (the first product named, the first price said).
An agent confirming the outcome restates it whole: ``好的，已开通周期购：每月 15 号发货原味豆腐砂
6L×6 包``, ``The 75-inch at 7,899 it is``, ``we'll ship the 100 ft only``. The record keeps
that confirmation after its sentence: ``（客服确认：…）`` / ``(the agent confirmed: …)``.

Kept: the clauses of the agent's last confirming turn (one opening with 好的, 已, 明白,
Done, Sure, Updated…, or reporting a change done: 已经帮您改成…, I've changed it to…) that

* come after the user's last change of mind and after the last of the user's turns naming
  something specific (else the agent may confirm what the user changed afterwards);
* name something specific (a number, a product, a model, an amount) or the change done;
* ask nothing and state no general rule (usually, 一般);
* restate no standing instruction (以后都发德邦, noted: the profile keeps those, and a
  record repeating one turns stale when the user changes it);
* are not in the record word for word already;

up to :data:`BUDGET` characters, masked, the agent's "you" made the user's. A confirming
turn with nothing to keep (好的。) leaves the one before it to speak.

Pure functions of the view: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Final

from policies.linear_re import LinearPattern
from policies.pii import mask_pii
from unstructured_memory.summariser.acts import undoes_arrangement
from unstructured_memory.summariser.amended import Amended, words_in
from unstructured_memory.summariser.choice import flat
from unstructured_memory.summariser.own_words import after_sentence
from unstructured_memory.summariser.topics import topics_of
from values.sessions import Lang

__all__ = ["BUDGET", "agreed", "confirmed_in", "made_theirs", "with_agreed"]

BUDGET: Final = {"zh": 50, "en": 120}
"""Characters of the agent's confirmation a record keeps at most."""

_CONFIRMS: Final = LinearPattern(
    r"^\s*(?:好的|好嘞|好滴|好|可以的?|没问题|明白|收到|了解|已经?|为您|帮您|给您|这边已)"
    r"|(?i:^\s*(?:done|sure|great|got it|understood|updated|all set|ok(?:ay)?|yes|perfect|"
    r"no problem|certainly|of course|noted|confirmed|started|placed|added|booked|scheduled|"
    r"ordered|switched|changed|upgraded|downgraded|submitted|processed|reserved|set up)"
    r"(?:$|[^a-z]))"
)
"""The opening of a turn confirming what was agreed, or reporting it done (Started the
200GB plan, Placed your order)."""

_CHANGED_TO: Final = LinearPattern(
    r"已(?:经)?(?:为您|帮您|给您|为你|帮你)?(?:修改|更改|改|换|调)(?:成|为|到)"
    r"|(?i:(?:i'?ve|we'?ve|i have|we have|has been|have been|it'?s been|is|are)\s+"
    r"(?:now\s+|just\s+)?"
    r"(?:changed|switched|swapped|updated|moved|rescheduled)\s[^.;!?]{0,30}?to\s)"
)
"""A change the agent reports done (已经帮您改成冰川白了, so I've changed it to charcoal): it
confirms what holds wherever the turn opens, and its clause names the new value."""

_CLAUSE: Final = {
    "zh": LinearPattern(r"[^，。！？!?；;,\n]+"),
    "en": LinearPattern(r"(?:[^.,!?;\n]|[.,]\d)+"),
}
_ASKS: Final = LinearPattern(
    r"吗\s*$|呢\s*$|请问|是否|要不要|(?i:^\s*(?:shall|should|would|do|does|can|could|will|is|"
    r"are|any)\s)"
)
"""A clause asking the user something (the turn's question mark ends the clause)."""
_STANDING: Final = LinearPattern(
    r"以后|今后|往后|每次|下次|都|已?备注|记下|(?i:from now on|always|every time|in future|"
    r"going forward|noted|note)"
)
"""A clause restating a standing instruction the user gave (the profile keeps it)."""
_GENERAL: Final = LinearPattern(
    r"一般|通常|正常情况|正常来说|平时|大概率|多数|(?i:usually|typically|normally|generally|"
    r"in general|as a rule|most orders|tend to|on average)"
)
"""What holds in general ("Cross-state orders usually take 5-7 days"), not the agreement."""
_SPECIFIC: Final = LinearPattern(r"[0-9０-９]|[A-Z][A-Za-z0-9]*[0-9]")
"""A number, a model."""
_LEAD: Final = LinearPattern(
    r"^\s*(?:(?:好的|好嘞|好滴|好|可以的?|没问题|明白|收到|了解|亲)\s*[，,！!。]?\s*)+"
    r"|(?i:^\s*(?:(?:done|sure|great|got it|understood|all set|ok(?:ay)?|yes|perfect|"
    r"no problem|certainly|of course|noted)\s*[,!.]?\s*)+)"
)
_YOU_ZH: Final = re.compile(r"您|你(?!们)")
_YOU_EN: Final = (
    (re.compile(r"(?i)\byour\b"), "their"),
    (re.compile(r"(?i)\byou're\b"), "they're"),
    (re.compile(r"(?i)\byou\b"), "them"),
)


def agreed(
    view: Amended,
    turns: Sequence[tuple[str, int, int]],
    settled_from: int,
    said: str,
    *,
    lang: Lang,
    specific: Callable[[int, int], bool],
) -> list[str]:
    """The clauses of the agent's last confirmation the record keeps (see the module
    docstring). ``turns``: ``(role, start, end)`` of each turn in the view, in order;
    ``settled_from``: where the user's last change of mind ends; ``said``: the record so far;
    ``specific(a, b)``: whether the view names a thing (an entity) in ``[a, b)``.

    The confirmation comes after the user's last change of mind and after the last of their
    turns naming something specific: it confirms what they said last."""
    told = [
        end
        for role, start, end in turns
        if role == "user"
        and (_SPECIFIC.search(view.view[start:end]) is not None or specific(start, end))
    ]
    after = max([settled_from, *told])
    for role, start, end in reversed(turns):
        if start < after:
            break
        if role == "user":
            continue
        turn = view.view[start:end]
        confirms = _CONFIRMS.search(turn) is not None or _CHANGED_TO.search(turn) is not None
        if confirms and words_in(turn):
            kept = _kept(turn, start, said, lang, specific)
            if kept:
                return kept
    return []


def _kept(
    turn: str, at: int, said: str, lang: Lang, specific: Callable[[int, int], bool]
) -> list[str]:
    out: list[str] = []
    used = 0
    known = flat(said)
    for a, b in _CLAUSE[lang].spans(turn):
        raw = turn[a:b]
        if b < len(turn) and turn[b] in "？?":
            continue
        if not words_in(raw) or _ASKS.search(raw) is not None:
            continue
        if _GENERAL.search(raw) is not None:
            continue  # what holds in general, not what was agreed
        if topics_of(raw) and _STANDING.search(raw) is not None:
            continue  # the user's standing instruction: the profile's
        if (
            _SPECIFIC.search(raw) is None
            and not specific(at + a, at + b)
            and not undoes_arrangement(raw)  # 已为您取消上门安装: what was settled
            and _CHANGED_TO.search(raw) is None  # 已经帮您改成冰川白了: the new value
        ):
            continue
        clause = made_theirs(_LEAD.sub("", " ".join(raw.split())), lang)
        if not clause or flat(clause) in known:
            continue  # the record says it already
        if used + len(clause) > BUDGET[lang]:
            break
        out.append(clause)
        used += len(clause)
        known += flat(clause)
    return out


def made_theirs(clause: str, lang: Lang) -> str:
    """The agent's words of the user (您, you) as the record's (用户, they), masked."""
    if lang == "zh":
        clause = _YOU_ZH.sub("用户", clause)
    else:
        for rx, repl in _YOU_EN:
            clause = rx.sub(repl, clause)
    return mask_pii(clause)[0].strip()


def with_agreed(sentence: str, clauses: Sequence[str], lang: Lang) -> str:
    """``sentence`` with the agent's confirmed ``clauses`` after it."""
    return after_sentence(
        sentence, clauses, lang, ("客服确认", "，"), ("the agent confirmed", ", ")
    )


_CONFIRMED_IN: Final = LinearPattern(r"（客服确认：([^）]*)）|\(the agent confirmed: ([^)]*)\)")


def without_agreed(record: str) -> str:
    """``record`` without the agent's confirmation it keeps (:func:`with_agreed`)."""
    return _CONFIRMED_IN.sub("", record)


def confirmed_in(record: str) -> str:
    """The agent's confirmation a record keeps (:func:`with_agreed`), else ``""``."""
    m = _CONFIRMED_IN.search(record)
    return "" if m is None else (m.group(1) or m.group(2) or "")
