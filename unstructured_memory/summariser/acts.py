"""Dialogue acts: what each clause of a session does, and what the user finally wants.

Every turn is cut into clauses (at commas and sentence ends) and each clause
becomes an :class:`Act`: a request, an instruction about how to treat the user
from now on, a preference said in passing, a fact about the user, a correction,
a retraction, a temporary intent, a question, small talk, or another statement
(and, for the agent's turns, what it committed to). Cue words live in
:mod:`~unstructured_memory.summariser.cues`.

Later acts amend earlier ones before anything is written (:func:`read_dialogue`):

* a **correction** replaces the value it names: ``不是 5530217，是 5530271`` or
  ``订单号说错了，是 5530271`` (the last value of the same kind said before is
  the wrong one); the wrong value is dropped from the whole session, and the
  clause that only said it stops counting;
* a **retraction** takes back the requests it names (``退货就算了`` takes back
  the return, ``never mind the refund`` the refund) or, naming none, the user's
  last request; those requests, and the agent's steps on them said before the
  retraction, stop counting. A retraction naming a request this session never
  made speaks about an earlier session's (:attr:`Dialogue.unmatched`);
* :func:`negated` tells whether a negation governs a word (``别再发邮件了``), for
  the profile rules, which never make a negated value the preferred one.

An act stops counting by being marked ``live=False``: the record, the links and
the profile read the live acts only. Pure functions of the turns: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Final

from policies.linear_re import LinearMatch, LinearPattern
from unstructured_memory.summariser import cues
from unstructured_memory.summariser.entities import ID_LABELS, Entity, Lang

__all__ = [
    "Act",
    "ActKind",
    "Correction",
    "Dialogue",
    "Utterance",
    "clauses",
    "families",
    "negated",
    "read_dialogue",
]


class ActKind(StrEnum):
    """What a clause does."""

    REQUEST = "request"
    INSTRUCTION = "instruction"
    PREFERENCE = "preference"
    FACT = "fact"
    CORRECTION = "correction"
    RETRACTION = "retraction"
    TEMPORARY = "temporary"
    QUESTION = "question"
    SMALL_TALK = "small_talk"
    STATEMENT = "statement"
    COMMITMENT = "commitment"
    """The agent's: a step it took or promised (``已为您提交退款``)."""


@dataclass(frozen=True, slots=True)
class Utterance:
    """One turn as the act reader sees it: the speaker, the text, its entities (offsets
    into ``text``)."""

    role: str
    text: str
    entities: tuple[Entity, ...] = ()


@dataclass(frozen=True, slots=True)
class Act:
    """One clause of turn ``turn``: ``text[start:end]`` of that turn.

    ``families`` are the kinds of request the clause names (``refund``, ``return``…,
    :data:`~unstructured_memory.summariser.cues.REQUEST_FAMILIES`); ``one_off`` that it
    is limited to the present request (``这次``); ``live`` that no later act amended it.
    """

    kind: ActKind
    role: str
    turn: int
    start: int
    end: int
    families: tuple[str, ...] = ()
    one_off: bool = False
    live: bool = True


@dataclass(frozen=True, slots=True)
class Correction:
    """A correction in turn ``turn``: the value at ``right`` replaces the one at
    ``wrong`` (a ``(turn, start, end)`` span; ``None`` when nothing said matches)."""

    turn: int
    right: tuple[int, int]
    wrong: tuple[int, int, int] | None
    label: str | None
    """The entity label of the right value, when it is an entity."""


@dataclass(frozen=True)
class Dialogue:
    """A session's acts after amendment, and the amendments themselves. Holds offsets and
    labels only, never text, so it carries no clear PII."""

    acts: tuple[Act, ...]
    corrections: tuple[Correction, ...] = ()
    retracted: tuple[str, ...] = ()
    """Request families the user took back, in order."""
    unmatched: tuple[str, ...] = ()
    """Retracted families no earlier request of this session names (an earlier one's)."""

    def live(self, role: str | None = None) -> list[Act]:
        """The live acts, of ``role`` when given."""
        return [a for a in self.acts if a.live and (role is None or a.role == role)]

    def wrong_spans(self) -> list[tuple[int, int, int]]:
        """``(turn, start, end)`` of every value corrected away."""
        return [c.wrong for c in self.corrections if c.wrong is not None]


_CLAUSE: Final = {"zh": cues.CLAUSE_ZH, "en": cues.CLAUSE_EN}


def clauses(text: str, lang: Lang) -> list[tuple[int, int]]:
    """The clauses of ``text`` as spans, white space trimmed, empty ones left out."""
    out = []
    for a, b in _CLAUSE[lang].spans(text):
        piece = text[a:b]
        start = a + len(piece) - len(piece.lstrip())
        end = b - (len(piece) - len(piece.rstrip()))
        if end > start:
            out.append((start, end))
    return out


def families(text: str) -> tuple[str, ...]:
    """The request families ``text`` names, in :data:`cues.REQUEST_FAMILIES` order."""
    return tuple(name for name, rx in cues.REQUEST_FAMILIES if rx.search(text) is not None)


def _cue_span(m: LinearMatch) -> tuple[int, int]:
    for group in ("cue", "cue_en"):
        if m.group(group) is not None:
            return m.span(cues.NEGATION.groupindex[group])
    return m.span()


_NEGATION_REACH: Final = {"zh": 6, "en": 24}
"""How far before a word a negation cue may end and still govern it (characters)."""

_BREAK: Final = LinearPattern(r"[，,。！？!?；;\n]|但是|不过|而是|(?i: but )")


def negated(text: str, at: int, lang: Lang) -> bool:
    """Whether a negation cue governs the word starting at ``text[at]``: a cue ends at
    most a few characters before it, in the same clause (``别再发邮件``, ``不要视频``,
    ``no more texts``, ``don't call me``)."""
    reach = _NEGATION_REACH[lang]
    window_start = max(0, at - reach - 8)
    window = text[window_start:at]
    last_break = -1
    for m in _BREAK.finditer(window):
        last_break = m.end()
    end = -1
    for m in cues.NEGATION.finditer(window):
        a, b = _cue_span(m)
        if a >= last_break:
            end = max(end, b)
    return end >= 0 and len(window) - end <= reach


_BY_CUE: Final = (
    (cues.INSTRUCTION, ActKind.INSTRUCTION),
    (cues.FACT, ActKind.FACT),
    (cues.PREFERENCE, ActKind.PREFERENCE),
)
"""Kinds read from a cue, in order of precedence (after small talk, time and questions)."""


def _kind(text: str, role: str, fams: tuple[str, ...]) -> ActKind:
    if role != "user":
        return ActKind.COMMITMENT if fams else ActKind.STATEMENT
    if cues.SMALL_TALK.fullmatch(text) is not None:
        return ActKind.SMALL_TALK
    question = cues.QUESTION.search(text) is not None
    if cues.TEMPORARY.search(text) is not None and not question:
        return ActKind.TEMPORARY
    if question:
        return ActKind.QUESTION
    found = next((kind for rx, kind in _BY_CUE if rx.search(text) is not None), None)
    return found or (ActKind.REQUEST if fams else ActKind.STATEMENT)


_VALUE_WORD: Final = LinearPattern(
    r"\d|[红黑白蓝灰绿粉紫黄金银棕橙]色?|^(?:[SMLX]{1,3}L?|[SMLX]{1,3}码)$|周[一二三四五六日天]|星期|礼拜"
    r"|(?i:black|white|blue|red|green|grey|gray|pink|silver|gold|small|medium|large|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
)
"""What a correction may replace without an entity: a value with a digit, a colour, a size,
a day."""


def _entity_at(u: Utterance, a: int, b: int) -> Entity | None:
    """The first entity starting inside ``[a, b)`` (the value a correction names)."""
    return next((e for e in u.entities if a <= e.start < b), None)


def _value_span(u: Utterance, a: int, b: int) -> tuple[tuple[int, int], str | None] | None:
    """The value a correction group names: the entity in it, else the group itself when it
    looks like a value; ``None`` otherwise."""
    found = _entity_at(u, a, b)
    if found is not None:
        return (found.start, found.end), found.type
    piece = u.text[a:b].strip()
    if piece and len(piece) <= 16 and _VALUE_WORD.search(piece) is not None:
        return (a, a + len(u.text[a:b].rstrip())), None
    return None


_DIGITS: Final = LinearPattern(r"\d")


def _last_of(
    utterances: Sequence[Utterance], turn: int, before: int, label: str | None, right: str
) -> tuple[int, int, int] | None:
    """The value a correction that names only the right one replaces: the last value
    labelled ``label`` said before ``utterances[turn].text[before]`` (for a right value
    that is no entity, the last identifier when it holds digits)."""
    if label is None and _DIGITS.search(right) is None:
        return None
    wanted = {label} if label is not None else ID_LABELS
    for i in range(turn, -1, -1):
        limit = before if i == turn else len(utterances[i].text)
        found = [e for e in utterances[i].entities if e.type in wanted and e.end <= limit]
        if found:
            return i, found[-1].start, found[-1].end
    return None


def _corrections(utterances: Sequence[Utterance], turn: int) -> list[Correction]:
    u = utterances[turn]
    marked = cues.CORRECTION_MARK.search(u.text) is not None
    out: list[Correction] = []
    taken: list[tuple[int, int]] = []
    for rx in cues.CORRECTION:
        for m in rx.finditer(u.text):
            span = m.span()
            if any(a < span[1] and span[0] < b for a, b in taken):
                continue
            right = _value_span(u, *m.span(rx.groupindex["right"]))
            if right is None:
                continue
            (ra, rb), label = right
            wrong: tuple[int, int, int] | None = None
            if "wrong" in rx.groupindex and m.group("wrong") is not None:
                w = _value_span(u, *m.span(rx.groupindex["wrong"]))
                if w is None:
                    continue
                wrong = (turn, *w[0])
            elif marked or label in ID_LABELS:
                wrong = _last_of(utterances, turn, m.start(), label, u.text[ra:rb])
                if wrong is not None and _same_value(utterances, wrong, turn, (ra, rb)):
                    wrong = None
            else:
                continue
            taken.append(span)
            out.append(Correction(turn, (ra, rb), wrong, label))
    return out


def _same_value(
    utterances: Sequence[Utterance], wrong: tuple[int, int, int], turn: int, right: tuple[int, int]
) -> bool:
    i, a, b = wrong
    return (
        utterances[i].text[a:b].casefold() == utterances[turn].text[right[0] : right[1]].casefold()
    )


def _acts_of(u: Utterance, turn: int, lang: Lang) -> list[Act]:
    out = []
    for a, b in clauses(u.text, lang):
        piece = u.text[a:b]
        fams = families(piece)
        kind = _kind(piece, u.role, fams)
        if u.role == "user" and cues.RETRACTION.search(piece) is not None:
            kind = ActKind.RETRACTION
        one_off = cues.ONE_OFF.search(piece) is not None
        out.append(Act(kind, u.role, turn, a, b, fams, one_off))
    return out


def _mark_corrections(acts: list[Act], corrections: Sequence[Correction]) -> None:
    """The clause holding a corrected-away value and nothing else of the correction stops
    counting; the clauses stating the right value become corrections."""
    for c in corrections:
        for k, act in enumerate(acts):
            if act.turn == c.turn and act.start <= c.right[0] < act.end:
                acts[k] = replace(act, kind=ActKind.CORRECTION)
            elif (
                c.wrong is not None
                and act.turn == c.wrong[0]
                and act.start <= c.wrong[1] < act.end
                and not (act.turn == c.turn and act.start <= c.right[0] < act.end)
            ):
                acts[k] = replace(act, live=False)


_OFFER: Final = LinearPattern(
    r"还有.{0,6}(?:吗|呢|需要)|其他.{0,4}(?:问题|需要)|别的|(?i:anything else|something else|"
    r"else i can|anything more)"
)
"""The agent offering more help: a bare "不用了" after it closes the talk, retracts nothing."""

_TAKEN_BACK: Final = frozenset(
    {
        ActKind.REQUEST,
        ActKind.INSTRUCTION,
        ActKind.PREFERENCE,
        ActKind.TEMPORARY,
        ActKind.STATEMENT,
        ActKind.COMMITMENT,
        ActKind.QUESTION,
    }
)


def _object_of(
    acts: list[Act], k: int, offered: Callable[[Act], bool] | None
) -> tuple[str, ...] | None:
    """The request families the retraction ``acts[k]`` takes back: those it names, else
    those of an earlier clause of its turn ("那个退货，算了吧"), else the user's last
    request's, unless the agent offered more help since (then ``None``: "不用了，谢谢")."""
    act = acts[k]
    if act.families:
        return act.families
    for prev in reversed(acts[:k]):
        if prev.turn != act.turn or prev.role != "user":
            break
        if prev.families:
            return prev.families
    for prev in reversed(acts[:k]):
        if prev.role != "user":
            if offered is not None and not prev.families and offered(prev):
                return None
            continue
        if prev.live and prev.families:
            return prev.families
    return None


def _retract(
    acts: list[Act], k: int, offered: Callable[[Act], bool] | None = None
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Apply the retraction ``acts[k]``; the families it took back and those it found no
    earlier request for."""
    fams = _object_of(acts, k, offered)
    if fams is None:
        acts[k] = replace(acts[k], kind=ActKind.SMALL_TALK)
        return (), ()
    found: set[str] = set()
    for j in range(k):
        prev = acts[j]
        hit = set(prev.families) & set(fams)
        if hit and prev.live and prev.kind in _TAKEN_BACK:
            acts[j] = replace(prev, live=False)
            if prev.role == "user":
                found |= hit
    return fams, tuple(f for f in fams if f not in found)


def read_dialogue(utterances: Sequence[Utterance], lang: Lang) -> Dialogue:
    """The acts of ``utterances`` (a session's turns in order), amended as the module
    docstring says."""
    acts: list[Act] = []
    corrections: list[Correction] = []
    for turn, u in enumerate(utterances):
        if u.role == "user":
            corrections += _corrections(utterances, turn)
        acts += _acts_of(u, turn, lang)
    _mark_corrections(acts, corrections)
    retracted: list[str] = []
    unmatched: list[str] = []

    def offered(act: Act) -> bool:
        text = utterances[act.turn].text[act.start : act.end]
        return _OFFER.search(text) is not None

    for k in range(len(acts)):
        if acts[k].kind is ActKind.RETRACTION:
            taken, missing = _retract(acts, k, offered)
            retracted += [f for f in taken if f not in retracted]
            unmatched += [f for f in missing if f not in unmatched]
    return Dialogue(tuple(acts), tuple(corrections), tuple(retracted), tuple(unmatched))
