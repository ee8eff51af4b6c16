"""A transcript as its amendments leave it: what the record may quote and name.

:func:`amend` reads a session's :class:`~unstructured_memory.summariser.acts.Dialogue`
against its transcript and gives the record builder an :class:`Amended` view:

* ``view``: the transcript with every clause that stopped counting blanked out
  (same length, so entity offsets still hold): retracted requests and the
  agent's steps on them, the retractions themselves (the record says what was
  taken back in its own words), the clause that only said a corrected-away
  value, and the user's lasting statements that the profile keeps (an
  instruction, a preference, a fact about them: the profile is their authority,
  and a record repeating one would turn stale when the user changes it);
* ``entities``: the entities without the corrected-away values (wherever said);
* :meth:`Amended.fix`: a quoted piece with each wrong value replaced by the
  right one;
* ``kept_topics``: the topics of the lasting statements blanked, for the record
  to say that they were updated;
* ``withdrawn``: the families of requests the user took back, when no other
  request is left (``那个投诉撤回吧``), for the record to say so; when the user
  asked for something else instead, the record names only that.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from policies.linear_re import LinearPattern
from policies.pii import PiiKind, find_pii
from unstructured_memory.summariser.acts import Act, ActKind, Dialogue, undoes_arrangement
from unstructured_memory.summariser.entities import ID_LABELS, Entity, Lang
from unstructured_memory.summariser.topics import NOTE, TOPICS, Topic

__all__ = ["Amended", "amend", "substitute", "words_in"]

_LABELS: Final = {t.key: t for t in (*TOPICS, NOTE)}
"""Every topic by its key."""

_WORDISH: Final = LinearPattern(r"[0-9A-Za-z]")
_NOTED: Final = LinearPattern(r"已?备注|已记下|记下了|已记录|(?i:noted|i'?ve noted|will remember)")
"""The agent restating what the user told it: no step of its own (no date, no outcome)."""
_REFUSED_BEFORE: Final = LinearPattern(
    r"(?:[，,;；]?\s*(?:而)?不是\s*|[,;]?\s*(?i:not)\s+(?i:(?:a|an|the)\s+)?)$"
)
"""The words refusing a value right before it, in the turn that corrects it ("not a 7")."""
_TOKEN: Final = LinearPattern(r"[0-9A-Za-z][0-9A-Za-z._\-]*")


@dataclass(frozen=True)
class Amended:
    """The transcript as the record may read it (see the module docstring)."""

    view: str
    entities: list[Entity]
    wrong: frozenset[str] = field(repr=False)
    """Corrected-away values, case-folded (clear: never shown)."""
    substitutions: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    kept_topics: tuple[Topic, ...] = ()
    withdrawn: tuple[str, ...] = ()
    withdrawn_beside: tuple[str, ...] = ()
    """Request families taken back beside another request (猫抓板退了吧 … 猫粮周期购停掉);
    never a remedy another replaced (退货就算了 换个颜色: the exchange is what holds)."""
    asked: frozenset[str] = frozenset()
    """The request families of the user's live acts (what they finally asked for)."""
    requested: frozenset[str] = frozenset()
    """The families of the user's live requests (asked for, not asked about)."""
    settling: tuple[tuple[int, int], ...] = ()
    """Spans of what the user said beside a retraction, in its turn ("是底座插头松了，插紧
    就好了。退款不退了"): why the request was taken back, which the record quotes instead
    of the reason first given."""

    def without(self, spans: Sequence[tuple[int, int]]) -> Amended:
        """The view with ``spans`` blanked too (the user's words on a rejected option)."""
        chars = list(self.view)
        for a, b in spans:
            _blank(chars, a, b)
        kept = [  # what only a rejected clause named goes with it; ids stay
            e
            for e in self.entities
            if e.type in ID_LABELS or not any(a <= e.start and e.end <= b for a, b in spans)
        ]
        return replace(self, view="".join(chars), entities=kept)

    def fix(self, piece: str) -> str:
        """``piece`` with each corrected-away value replaced by the right one
        (:func:`substitute`)."""
        return substitute(piece, self.substitutions)


def substitute(text: str, pairs: Sequence[tuple[str, str]]) -> str:
    """``text`` with each ``(wrong, right)`` value replaced; a wrong value said as part of a
    longer code ("L2370" of "HL-L2370DW") replaces the code when the right one is as long
    as it (a bare number only its part: L30 to L32), else only its own part; never a part
    of a longer number or word ("30" of order 7730418825)."""
    for wrong, right in pairs:
        out: list[str] = []
        at = 0
        held = False  # a token holds the wrong value, alone or not
        for a, b in _TOKEN.spans(text):
            token = text[a:b]
            if wrong not in token:
                continue
            held = True
            alone = [i for i in _at(token, wrong) if _alone(token, i, i + len(wrong))]
            if not alone:
                continue
            out.append(text[at:a])
            whole = token == wrong or (len(right) >= len(token) - 1 and not right.isdigit())
            out.append(right if whole else _put(token, alone, len(wrong), right))
            at = b
        if out:
            text = "".join(out) + text[at:]
        elif not held:
            text = text.replace(wrong, right)
    return text


def _at(token: str, word: str) -> list[int]:
    found, i = [], token.find(word)
    while i >= 0:
        found.append(i)
        i = token.find(word, i + len(word))
    return found


def _alone(token: str, a: int, b: int) -> bool:
    """Whether ``token[a:b]`` does not run on into a digit from a digit or a letter from a
    letter (L2370 of HL-L2370DW stands alone, 30 of 7730418825 does not)."""

    def same(x: str, y: str) -> bool:
        return (x.isdigit() and y.isdigit()) or (x.isalpha() and y.isalpha())

    return not (a > 0 and same(token[a - 1], token[a])) and not (
        b < len(token) and same(token[b - 1], token[b])
    )


def _put(token: str, at: Sequence[int], length: int, right: str) -> str:
    out, last = [], 0
    for i in at:
        out += [token[last:i], right]
        last = i + length
    return "".join([*out, token[last:]])


def _blank_act(
    chars: list[str], at: int, act: Act, entities: Sequence[Entity], dialogue: Dialogue
) -> None:
    """Blank ``act`` (its turn starting at ``at``) when the record says nothing of it: not
    live, a retraction, a standing statement, noted back by the agent, small talk. The
    agent's undoing of what an earlier session arranged (已为您取消上门安装), which the record
    states no other way (no request withdrawn by name), stays without its dates and amounts."""
    said_back = "".join(chars[at + act.start : at + act.end])
    noted = act.role != "user" and _NOTED.search(said_back) is not None
    idle = act.kind is ActKind.SMALL_TALK  # 好的, hmm, no: nothing the record says
    undid = (
        dialogue.undone
        and not dialogue.unmatched
        and act.role != "user"
        and undoes_arrangement(said_back)
    )
    if undid:
        for e in entities:
            if e.type in _UNDONE_VALUES and at + act.start <= e.start < at + act.end:
                _blank(chars, e.start, e.end)
    elif not act.live or act.kind is ActKind.RETRACTION or _stated(act) or noted or idle:
        _blank(chars, at + act.start, at + act.end)


_UNDONE_VALUES: Final = frozenset({"DATE", "AMOUNT"})
"""What an undone arrangement named that no longer holds (周五下午, $149)."""


def _blank(chars: list[str], start: int, end: int) -> None:
    for i in range(start, end):
        if chars[i] != "\n":
            chars[i] = " "


_PLACE_TAIL: Final = LinearPattern(
    r"^\s*(?:[A-Z][a-z]+(?:\s+[A-Z][a-z]+){0,2}(?:\s+[A-Z]{2})?|[A-Z0-9]{2,4}\s?[0-9][A-Z]{2}|"
    r"[\x{4e00}-\x{9fff}]{1,6}(?:省|市|区|县|镇))\s*$"
)
"""A clause that only goes on with an address: a town (Leeds, Austin TX), a postcode, 海淀区."""


def _addresses_given(text: str, starts: Sequence[int], dialogue: Dialogue) -> list[tuple[int, int]]:
    """The user's live clauses giving an address (one holding an address, and a town or
    postcode clause right after it) in a session that took an address change back, as
    spans of ``text``."""
    out: list[tuple[int, int]] = []
    if "address" not in dialogue.retracted:
        return out
    after = False
    for act in dialogue.live("user"):
        a, b = starts[act.turn] + act.start, starts[act.turn] + act.end
        clause = text[a:b]
        holds = any(m.kind is PiiKind.ADDRESS for m in find_pii(clause))
        if holds or (after and _PLACE_TAIL.search(clause) is not None):
            out.append((a, b))
        after = holds or (after and _PLACE_TAIL.search(clause) is not None)
    return out


def _answered_wrong(text: str, starts: Sequence[int], dialogue: Dialogue) -> list[tuple[int, int]]:
    """The agent's clauses before a correction that name the value it put right ("V12
    Detect Slim 专用后置滤网 199 元" before "哦不是V12 是V15"): they answered about the wrong
    thing, and the record must not take a product, a price or a step from them."""
    out = []
    for c in dialogue.corrections:
        if c.wrong is None:
            continue
        t, a, b = c.wrong
        wrong = text[starts[t] + a : starts[t] + b].casefold()
        if len(wrong.strip()) < 2:
            continue
        for act in dialogue.acts:
            if act.role == "user" or act.turn >= c.turn:
                continue
            at = starts[act.turn]
            if wrong in text[at + act.start : at + act.end].casefold():
                out.append((at + act.start, at + act.end))
    return out


def amend(
    text: str,
    starts: Sequence[int],
    entities: Sequence[Entity],
    dialogue: Dialogue,
    lang: Lang,
) -> Amended:
    """The amended view of ``text`` (turns joined by newlines, turn ``i`` starting at
    ``starts[i]``) with its ``entities`` and the session's ``dialogue``."""
    del lang  # the acts already read the language
    chars = list(text)
    kept: list[Topic] = []
    for act in dialogue.acts:
        at = starts[act.turn]
        said = [_LABELS[k] for k in act.topics if k in _LABELS and not _LABELS[k].context]
        _blank_act(chars, at, act, entities, dialogue)
        kept += [t for t in said if t not in kept]
    # an address given for a change taken back; the agent's answers on a value put right
    for a, b in [
        *_addresses_given(text, starts, dialogue),
        *_answered_wrong(text, starts, dialogue),
    ]:
        _blank(chars, a, b)
    for c in dialogue.corrections:  # "she's a 6.5 not a 7": the refused value goes as said
        if c.wrong is not None and c.wrong[0] == c.turn:
            t, a, b = c.wrong
            at = starts[t] + a
            before = _REFUSED_BEFORE.search(text[max(starts[t], at - 12) : at])
            if before is not None:
                _blank(chars, at - len(before.group(0) or ""), starts[t] + b)
    wrong_spans = [(starts[t] + a, starts[t] + b) for t, a, b in dialogue.wrong_spans()]
    wrong = frozenset(text[a:b].casefold() for a, b in wrong_spans)
    substitutions = []
    for c in dialogue.corrections:
        if c.wrong is None:
            continue
        t, a, b = c.wrong
        w = text[starts[t] + a : starts[t] + b]
        r = text[starts[c.turn] + c.right[0] : starts[c.turn] + c.right[1]]
        if w and r and w != r:
            substitutions.append((w, r))
    # what a question taken back named ("is SPRING20 still valid?" … "forget it"), ids aside
    asked_back = [
        (starts[a.turn] + a.start, starts[a.turn] + a.end)
        for a in dialogue.acts
        if a.role == "user" and not a.live and a.kind is ActKind.QUESTION
    ]
    kept_entities = [
        e
        for e in entities
        if not any(a < e.end and e.start < b for a, b in wrong_spans)
        and not _holds_wrong(text[e.start : e.end].casefold(), wrong)
        and not (
            e.type not in ID_LABELS and any(a <= e.start and e.end <= b for a, b in asked_back)
        )
    ]
    for c in dialogue.corrections:  # a right value of no entity takes the wrong one's label
        a, b = starts[c.turn] + c.right[0], starts[c.turn] + c.right[1]
        if c.label in ID_LABELS:  # an id is whole: no model of its first part (BX26 of BX26-…)
            kept_entities = [
                e
                for e in kept_entities
                if not (a <= e.start and e.end <= b and e.end - e.start < b - a)
            ]
        if c.label is not None and not any(e.start < b and a < e.end for e in kept_entities):
            kept_entities.append(Entity(c.label, text[a:b], a, b))
    kept_entities.sort(key=lambda e: e.start)
    live = [a for a in dialogue.live("user") if not _stated(a)]
    retracting = {a.turn for a in live if a.kind is ActKind.RETRACTION and dialogue.retracted}
    settling = tuple(
        (starts[a.turn] + a.start, starts[a.turn] + a.end)
        for a in live
        if a.turn in retracting
        and a.kind in _SETTLING
        and not a.families
        and _may_say_why(text[starts[a.turn] + a.start : starts[a.turn] + a.end])
    )
    asks = any(a.kind is ActKind.REQUEST for a in live)
    withdrawn = () if asks else dialogue.retracted
    asked = frozenset(f for a in live if a.kind is not ActKind.RETRACTION for f in a.families)
    return Amended(
        view="".join(chars),
        entities=kept_entities,
        wrong=wrong,
        substitutions=tuple(substitutions),
        kept_topics=tuple(kept),
        withdrawn=withdrawn,
        withdrawn_beside=tuple(f for f in dialogue.retracted if f not in asked | _REMEDIES)
        if asks
        else (),
        asked=asked,
        requested=frozenset(f for a in live if a.kind is ActKind.REQUEST for f in a.families),
        settling=settling,
    )


_REMEDIES: Final = frozenset({"refund", "return", "exchange", "repair", "cancel"})
"""Remedies for one problem: one taken back beside another was replaced by it."""


_NO_REASON: Final = LinearPattern(
    r"改成|换成|改到|改为|换到|(?i:change (?:it )?to|make it|switch (?:it )?to)"
    r"|^[\s，,。.!！]*(?:哦|啊|嗯|呃|诶)?[\s，,]*不对[\s，,。.!！]*$"
)
"""A clause beside a retraction saying what was asked (改成浦东新区…) or only that it was
wrong (哦不对): no reason it was taken back."""

_SETTLING: Final = frozenset({ActKind.STATEMENT, ActKind.FACT, ActKind.PREFERENCE})


def _may_say_why(clause: str) -> bool:
    """Whether a clause beside a retraction may say why: not what was asked
    (:data:`_NO_REASON`, an address), not a word or two alone (Hmm, no, Leeds)."""
    if _NO_REASON.search(clause) or find_pii(clause):
        return False
    return len(clause.split()) >= 2 or sum("\u4e00" <= ch <= "\u9fff" for ch in clause) >= 3


"""Acts that may say why a request was taken back."""


def _stated(act: Act) -> bool:
    """Whether an act states something the profile keeps (so it is no request here)."""
    return any(k in _LABELS and not _LABELS[k].context for k in act.topics)


def _holds_wrong(value: str, wrong: frozenset[str]) -> bool:
    """Whether an entity's text is a corrected-away value, a name holding one as a word
    ("nova 11" holding "11"), a code holding one ("HL-L2370DW" holding "l2370"), or a
    Chinese phrase opening with one ("周二下午" after 周三不是周二)."""
    return (
        value in wrong
        or any(value[a:b] in wrong for a, b in _TOKEN.spans(value))
        or any(len(w) >= 4 and w in value and any(ch.isdigit() for ch in w) for w in wrong)
        or any(len(w) >= 2 and not w.isascii() and value.startswith(w) for w in wrong)
    )


def words_in(piece: str) -> bool:
    """Whether a piece of the view still holds anything but blanks and punctuation."""
    return any(ch.isalpha() for ch in piece) or _WORDISH.search(piece) is not None
