"""Dialogue acts: what each clause of a session does, and what the user finally wants.

Every turn is cut into clauses (at commas and sentence ends) and each clause
becomes an :class:`Act`: a request, an instruction about how to treat the user
from now on, a preference said in passing, a fact about the user, a correction,
a retraction, a temporary intent, a question, small talk, or another statement
(and, for the agent's turns, what it committed to). Cue words live in
:mod:`~unstructured_memory.summariser.cues`, topics in
:mod:`~unstructured_memory.summariser.topics`.

Later acts amend earlier ones before anything is written (:func:`read_dialogue`):

* a **correction** replaces the value it names: ``不是 5530217，是 5530271``,
  ``订单号说错了，是 5530271`` or a value said right after a word of error
  (``抄错了，是 SF…``): the last value of the same kind said before is the wrong
  one. The wrong value is dropped from the whole session, and the clause that
  only said it stops counting;
* a **retraction** takes back the requests it names (``退货就算了`` takes back
  the return, ``never mind the refund`` the refund) or, naming none, the user's
  last request; those requests, the clauses that went on with them, and the
  agent's steps on them said before stop counting. A retraction naming a request
  this session never made speaks about an earlier session's
  (:attr:`Dialogue.unmatched`). A **refusal** (``不是要退款``, ``I don't want to
  cancel``) takes back the same way, but a refused request nobody made is no
  withdrawal;
* a **lasting statement** (an instruction, a preference, a fact about the user)
  gets the topics it speaks of (:attr:`Act.topics`), read over its whole
  sentence, and an answer to the agent's question inherits the question's
  topic; an instruction of no topic is a ``note``. A withdrawal naming a topic
  (``之前说的周末送货不用了``) takes the topic back (:attr:`Dialogue.withdrawn_topics`);
* :func:`negated` tells whether a negation governs a word (``别再发邮件了``), for
  the profile rules, which never make a negated value the preferred one.

An act stops counting by being marked ``live=False``: the record, the links and
the profile read the live acts only. Pure functions of the turns: no I/O.

The act values (:class:`Act`, :class:`ActKind`, :class:`Correction`,
:class:`Dialogue`, :class:`Utterance`) are ``values.dialogue``'s, re-exported here
for one release.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Final

import rjieba

from policies.linear_re import LinearMatch, LinearPattern, PatternSet
from unstructured_memory.summariser import cues, symptoms
from unstructured_memory.summariser.entities import ID_LABELS
from unstructured_memory.summariser.topics import (
    CHANNEL,
    CHANNEL_CODES,
    FORMAT,
    FORMAT_CODES,
    NOTE,
    TOPICS,
    Topic,
    mentions,
    stated_in,
    topics_of,
)
from values.dialogue import Act, ActKind, Correction, Dialogue, Utterance
from values.entities import Entity
from values.sessions import Lang

__all__ = [
    "Act",
    "ActKind",
    "Correction",
    "Dialogue",
    "Utterance",
    "around",
    "clauses",
    "families",
    "ids_after_error",
    "instructs",
    "mistyped",
    "negated",
    "read_dialogue",
    "topic_named",
    "undoes_arrangement",
]

_CLAUSE: Final = {"zh": cues.CLAUSE_ZH, "en": cues.CLAUSE_EN}


_CUE_ONLY: Final = LinearPattern(
    r"^(?:以后|今后|往后|以后的话|今后的话)$"
    r"|(?i:^(?:(?:and|also|so|oh)\s+)?(?:going forward|moving forward|from now on|"
    r"in (?:the )?future|henceforth)$)"
)
"""A clause that is only the word of an instruction ("going forward, please hold my
orders …"): it governs the clause after it."""
_COMMA: Final = LinearPattern(r"^[,，\s]+$")


def clauses(text: str, lang: Lang, entities: Sequence[Entity] = ()) -> list[tuple[int, int]]:
    """The clauses of ``text`` as spans, white space trimmed, empty ones left out; a Chinese
    clause is cut again at white space between two clauses (:func:`_spaced`); a clause of an
    instruction's word alone (going forward, 以后) is one with the clause after its comma."""
    out: list[tuple[int, int]] = []
    for a, b in _CLAUSE[lang].spans(text):
        piece = text[a:b]
        start = a + len(piece) - len(piece.lstrip())
        end = b - (len(piece) - len(piece.rstrip()))
        if end > start:
            found = _spaced(text, start, end, entities) if lang == "zh" else [(start, end)]
            if (
                out
                and _CUE_ONLY.search(text[out[-1][0] : out[-1][1]]) is not None
                and _COMMA.search(text[out[-1][1] : found[0][0]]) is not None
            ):
                found[0] = (out.pop()[0], found[0][1])
            out += found
    return out


_SPACE: Final = LinearPattern(r"\s+")
_HAN: Final = LinearPattern(r"^[\x{3400}-\x{9fff}\x{f900}-\x{faff}]$")
_PREDICATE_TAGS: Final = ("v", "a", "y", "e", "o", "l", "i", "z", "ul", "uz", "ug")
"""Part-of-speech tags (jieba's) of a word that says something: a verb, an adjective, a
sentence particle, an interjection, an idiom, 了/着/过."""


_NAMES: Final = frozenset({"BRAND", "PRODUCT", "MODEL"})
"""Entities a name may go on after, over a space ("荣耀 畅玩 50")."""


def _predicates(segment: str) -> bool:
    """Whether ``segment`` says something (a word of :data:`_PREDICATE_TAGS`) rather than
    only naming things ("床帘", "欧姆龙血压计", "荣耀"): whether it may be a clause."""
    if families(segment):  # "买个台灯": a request, whatever the tagger says of 买个
        return True
    return any(tag.startswith(_PREDICATE_TAGS) for _, tag in rjieba.tag(segment))


_DONE_BY_OTHER: Final = LinearPattern(
    r"^\s*(?:而且|并且|还有|不过|但是?|后来|其实|现在|人家)?[，,\s]*"
    r"(?:快递员|快递小哥|小哥|师傅|维修师傅|安装师傅|客服|商家|卖家|店家|物流|平台|他们|他|她|对方|骑手|配送员)"
    r"[^，,。！？!?；;吗呢]{0,20}了\s*$"
    r"|^\s*(?:你们|客服|他们|商家|卖家|店家|对方|师傅)?(?:说|说是|讲)(?:要|得|必须|需要|先)"
    r"|(?i:^\s*(?:you|they|the (?:seller|shop|store|agent))\s+said\s+(?:i|we)\s+"
    r"(?:have|had|need|needed|must)\s+to)"
    r"|(?i:^\s*(?:(?:and|but|so|then|also|plus)\s+)?(?:the\s+|a\s+|your\s+|their\s+)?"
    r"(?:courier|driver|technician|tech|engineer|seller|shop|store|delivery (?:guy|man|driver)|"
    r"installer|repairman|he|she|they|someone)\s+(?:already\s+|just\s+|finally\s+|actually\s+)?"
    r"(?:came|fixed|sorted|refunded|replaced|returned|swapped|delivered|apologi[sz]ed|showed up|"
    r"dropped|brought|took|picked|has (?:already )?(?:fixed|refunded|replaced|sorted|come)|had)"
    r"(?:$|[^a-z]))"
)
"""What someone else already did (快递员上门道歉了, 师傅上门把滚刷换好了, the technician came by
and fixed it) or said must be done (说要先把赠品寄回去, they said I have to send it back): a
report, no request of the user's."""


def _turns_back(left: str, right: str) -> bool:
    """Whether a space between ``left`` and ``right`` parts a change of mind from what lasts:
    both say something (:func:`_predicates`), just one takes back (a
    :data:`~unstructured_memory.summariser.cues.RETRACTION` cue) and the other states what
    lasts (:func:`_lasting`: "算了 以后退货我都自己拿驿站寄", "不用了 我平时都自己去驿站取") or
    reports what another did or said must be done (:data:`_DONE_BY_OTHER`: "那个价保算了吧 说要
    先把送的卷发棒寄回去": why it was taken back).
    Other spaces are left to the clause they are in: clauses cut apart there lose the scope
    a time, a topic or a subject gives the clauses after it."""
    back = (cues.RETRACTION.search(left) is not None, cues.RETRACTION.search(right) is not None)
    if back[0] == back[1]:
        return False
    kept = right if back[0] else left
    told = _lasting(kept) or _DONE_BY_OTHER.search(kept) is not None
    return told and _predicates(left) and _predicates(right)


_SELF_LEAD: Final = r"^(?:(?:平时|平常|一般|其实|毕竟|主要是|反正)\s*)?"
_SELF_OPENS: Final = LinearPattern(_SELF_LEAD + r"(?:我|咱|俺|家里|家中)")
_SELF_WANTS: Final = LinearPattern(
    _SELF_LEAD + r"(?:我|咱|俺)(?:们)?"
    r"(?:想|要|需要|打算|准备|问|看|找|试|说|查|催|等|能|可以|该|去|来|再|先|已经|这边)"
)
"""A segment opening on the user or their home as its subject (我这人只穿纯棉的, 家里是华为
的路由器); one of :data:`_SELF_WANTS` says what they want or do now (我想, 我要), not what
they are, have or do."""

_SAYS: Final = 4
"""Characters a segment needs to be a clause of its own beside a statement about the user
(我腰围二尺四 says something without a verb; 我 alone does not)."""

_OTHER_OPENS: Final = LinearPattern(
    r"^(?:你|您|这|那|请|帮|麻烦|能|可以|有没有|是不是)|帮我|帮忙|订单|单号|运单"
)
"""A segment opening on the agent, the goods at hand or a request, or asking for help with
an order."""


def _of_self(segment: str) -> bool:
    """Whether ``segment`` opens on the user or their home as the subject of what they are,
    have or do (:data:`_SELF_OPENS`, not :data:`_SELF_WANTS`)."""
    return _SELF_OPENS.search(segment) is not None and _SELF_WANTS.search(segment) is None


_SELF_EN: Final = LinearPattern(r"(?i:^\s*(?:i|i'm|i am|i've|my|we|we're|we've|our)\s)")
_WANTS_EN: Final = LinearPattern(
    r"(?i:^\s*(?:i|we)(?:'d| would| will|'ll)?\s+(?:just\s+)?(?:want|need|like|love|wanted|"
    r"needed|ordered|bought|got|am going|was)(?:$|[^a-z]))"
)


def _about_user(piece: str) -> bool:
    """Whether a clause states something of the user themselves (我对虾过敏, I wear a
    medium), not what they want or did now."""
    if _SELF_EN.search(piece) is not None:
        return _WANTS_EN.search(piece) is None
    return _of_self(piece.strip())


def _tells_fact(segment: str) -> bool:
    """Whether ``segment`` tells where the user lives now (搬到成都了) and asks nothing: a
    clause of its own beside a question or a request. (Other topics' facts are not cut out:
    a family member named as a recipient or a supposition's child stay in their clause.)"""
    return cues.QUESTION.search(segment) is None and any(
        t.key == "city" for t in topics_of(segment)
    )


def _subject_turns(left: str, right: str) -> bool:
    """Whether a space between ``left`` and ``right`` parts a statement about the user from
    what else is said: one side opens on the user as its subject (:data:`_SELF_OPENS`) and
    the other is a question, a request or opens on someone or something else ("这款安全座椅
    能用到几岁 我们家小的才3岁 大的7岁了 想看看俩能不能都用上": the ages are a clause of
    their own; "小的才3岁 大的7岁了" stays one, no subject opening the second)."""

    def elsewhere(seg: str) -> bool:
        return (
            _OTHER_OPENS.search(seg) is not None
            or cues.QUESTION.search(seg) is not None
            or bool(families(seg))
            or cues.FUTURE.search(seg) is not None
        )

    mine = (_of_self(left) or _tells_fact(left), _of_self(right) or _tells_fact(right))
    if mine[0] == mine[1] or len(left) < _SAYS or len(right) < _SAYS:
        return False
    other = right if mine[0] else left
    told = mine[1] and cues.QUESTION.search(right) is None
    return elsewhere(other) or (_predicates(other) and told)


def _lasting(said: str) -> bool:
    """Whether ``said`` states what lasts beyond the request (an instruction, a fact about
    the user, a liking), which a change of mind beside it must not take back with it."""
    has = _searching(said)
    return _instructs(has) or has(cues.FACT) or has(cues.PREFERENCE)


def _spaced(text: str, start: int, end: int, entities: Sequence[Entity]) -> list[tuple[int, int]]:
    """The clause ``text[start:end]`` cut at each run of white space that stands between two
    Chinese characters and parts a change of mind from what else is said (:func:`_turns_back`
    of the words on each side up to the next space), when no entity spans it and no name
    ends at it: "算了 以后退货我都自己拿驿站寄" is two clauses; "算了 买个台灯 床帘" cuts after
    算了 only (a list is one clause), "荣耀 畅玩 50" (a name), "小米 14" and "iPhone 15 Pro"
    (no Chinese on both sides) are never cut."""
    gaps = [(start + a, start + b) for a, b in _SPACE.spans(text[start:end])]
    if not gaps:
        return [(start, end)]
    bounds = [start, *(x for gap in gaps for x in gap), end]
    segments = [(bounds[i], bounds[i + 1]) for i in range(0, len(bounds), 2)]
    out: list[tuple[int, int]] = []
    at = start
    for k, (a, b) in enumerate(gaps):
        left, right = segments[k], segments[k + 1]
        if (
            _HAN.match(text[a - 1]) is None
            or _HAN.match(text[b]) is None
            or any(e.start < a and b < e.end for e in entities)
            or (  # 荣耀 畅玩 50; not 这个月饼礼盒 我是糖尿病人
                any(e.end == a and e.type in _NAMES for e in entities)
                and not _of_self(text[right[0] : right[1]])
            )
            or not (
                _turns_back(text[left[0] : left[1]], text[right[0] : right[1]])
                or _subject_turns(text[at:a], text[right[0] : right[1]])
            )
        ):
            continue
        out.append((at, a))
        at = b
    out.append((at, end))
    return out


_FAMILIES: Final = PatternSet([rx for _, rx in cues.REQUEST_FAMILIES])


_NOT_ASKED: Final = LinearPattern(
    r"(?:退货|换货)(?:的)?(?:运单|单号|快递单|物流|地址|标签|面单|取件码|运费)"
    r"|(?i:(?:return|exchange)\s+(?:label|shipping label|tracking|address|parcel|package|"
    r"shipment|courier|postage|fee))|以旧换新"
)
"""A return's paperwork (退货运单号, return label): spoken of, no return asked for; a trade-in
(以旧换新), which exchanges nothing bought."""


def families(text: str) -> tuple[str, ...]:
    """The request families ``text`` names, in :data:`cues.REQUEST_FAMILIES` order (the
    words of a return's paperwork or a trade-in, :data:`_NOT_ASKED`, name none)."""
    named = _FAMILIES.present(_NOT_ASKED.sub(" ", text))
    return tuple(name for i, (name, _) in enumerate(cues.REQUEST_FAMILIES) if i in named)


def _cue_span(m: LinearMatch) -> tuple[int, int]:
    for group in ("cue", "cue_en"):
        if m.group(group) is not None:
            return m.span(cues.NEGATION.groupindex[group])
    return m.span()


_NEGATION_REACH: Final = {"zh": 6, "en": 24}
"""How far before a word a negation cue may end and still govern it (characters)."""

_BREAK: Final = LinearPattern(r"[，,。！？!?；;\n]|但是|不过|而是|(?i: but )")


def negated(text: str, at: int, lang: Lang, end: int | None = None) -> bool:
    """Whether a negation cue governs the word starting at ``text[at]``: a cue ends at
    most a few characters before it, in the same clause (``别再发邮件``, ``不要视频``,
    ``no more texts``, ``don't call me``); given the word's ``end``, also a refusal right
    after it (:data:`~unstructured_memory.summariser.cues.REFUSED_AFTER`: ``短信我基本不看``,
    ``邮件就别发了``)."""
    if end is not None and cues.REFUSED_AFTER.search(text[end:]) is not None:
        return True
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


_REFUSED: Final = LinearPattern(
    r"(?:不是要|不是想|并不是要|不是|不要|不想|不用|不需要|没必要|别)(?:给我|帮我|要|想|去|申请|再|办)*\s*$"
    r"|(?i:(?:^|[^a-z])(?:don'?t|do not|not|never|no|without)\s+(?:(?:want|need|asking|ask|"
    r"looking|trying|planning|going|wanting|for|to|a|an|the|my|it|any)\s+){0,4}$)"
)
"""A refusal right before a request word: 不是要(退款), don't want to (cancel)."""


_REFUSABLE: Final = frozenset(
    {"refund", "return", "exchange", "complaint", "cancel", "repair", "urge", "price", "merge"}
)
"""Requests a user refuses as acts ("不是要退款"); an object said with a no ("不要发票纸质版")
is an instruction on it instead."""


def _refused(piece: str) -> tuple[str, ...]:
    """The request families ``piece`` refuses (each named right after a refusal)."""
    out = []
    for name, rx in cues.REQUEST_FAMILIES:
        if name not in _REFUSABLE:
            continue
        m = rx.search(piece)
        if m is not None and _REFUSED.search(piece[max(0, m.start() - 24) : m.start()]):
            out.append(name)
    return tuple(out)


_Has = Callable[[LinearPattern], bool]
"""Whether a pattern matches in the text at hand."""


def _searching(text: str) -> _Has:
    return lambda rx: rx.search(text) is not None


def instructs(text: str) -> bool:
    """Whether ``text`` says how to treat the user from now on: a word of the future
    (:data:`~unstructured_memory.summariser.cues.FUTURE`), else a word of instruction
    (:data:`~unstructured_memory.summariser.cues.INSTRUCTION`) or of frequency with a
    directive, when no problem is described ("每次发货前先打电话给我", "never call before 9";
    not "每次都给我发错", "the hinge squeaks every time I open it", "the parcel never
    arrived")."""
    return _instructs(_searching(text))


def _instructs(has: _Has) -> bool:
    if has(cues.FUTURE):
        return True
    cued = has(cues.INSTRUCTION) or (has(cues.HABIT) and has(cues.DIRECTIVE))
    return cued and not has(symptoms.PROBLEM_ZH) and not has(symptoms.PROBLEM_EN)


_BY_CUE: Final = (
    (cues.FACT, ActKind.FACT),
    (cues.PREFERENCE, ActKind.PREFERENCE),
)
"""Kinds read from a cue after an instruction, in order of precedence (after small talk,
time and questions)."""


_ASKING: Final = LinearPattern(r"帮我|帮忙|给我|麻烦|(?i:please|can you|could you)")
"""Words asking the agent to act."""


_TOLD: Final = LinearPattern(
    r"(?i:^\s*(?:(?:ok(?:ay)?|oh nice|fine|great|alright|then|just)[\s,]+)*"
    r"do\s+(?:the|that|this|it)[^?？]*?\s(?:then|please|now|instead|for me)\s*$)"
)
"""An imperative that opens like a question ("do the price adjustment then"): told, not
asked."""


_DELEGATED: Final = LinearPattern(
    r"(?i:^\s*(?:(?:ok(?:ay)?|oh|and|so|also|just|please|then|but|pls)[\s,]+)*"
    r"(?P<verb>have|get|ask|tell|let)\s+(?P<who>them|him|her|someone|somebody|"
    r"(?:the|your|a|an|my|our|whoever|whoever's)\s+[a-z-]+)\s*(?P<rest>[a-z' ]*))"
)
"""The user having a third party do something ("Have the courier ring me first", "Get the
driver to leave it outside", "Tell them to call before delivery"); ``rest``: what follows
the party's first word."""
_PARTICIPLE: Final = LinearPattern(
    r"(?i:^(?:[a-z]*[^e\s]ed|been|gone|left|sent|got|gotten|done|made|taken|given|brought|"
    r"bought|paid|found|seen|heard|lost|kept|told|said|held|sold|spent|built|[a-z]+en)$)"
)
"""An English past participle ("arrived", "been", "taken"): "Have the parcels arrived" asks
(not a verb of :data:`_BASE_EN` that only looks like one)."""
_BASE_EN: Final = frozenset({"open", "listen", "happen", "then", "when", "even", "often"})


def _delegates(text: str) -> bool:
    """Whether ``text`` has a third party do something for the user (:data:`_DELEGATED`),
    not asks whether they did ("Have the parcels arrived", "Have you…": a participle after
    the party, or the party is the agent)."""
    m = _DELEGATED.match(text)
    if m is None:
        return False
    verb = (m.group("verb") or "").casefold()
    after = (m.group("rest") or "").split()[:2]
    if verb in ("ask", "tell", "get"):  # ask the courier to…, get the driver to…
        return "to" in after
    return not any(_PARTICIPLE.fullmatch(w) is not None and w not in _BASE_EN for w in after)


def _delegated_kind(fams: tuple[str, ...], entities: Sequence[Entity]) -> ActKind:
    """What having a third party do something is: a request when it names a request other
    than a delivery or a day ("Have the courier pick up the return on Tuesday"), else an
    instruction on how to treat the user ("Have them call before delivery")."""
    if set(fams) - {"delivery"} or any(e.type == "DATE" for e in entities):
        return ActKind.REQUEST
    return ActKind.INSTRUCTION


_ASKED_OF: Final = LinearPattern(
    r"能不能|能否|可不可以|(?i:(?:^|[^a-z])(?:can|could|would|will) you(?:$|[^a-z]))"
)
"""A request put as a question (能不能, could you)."""


def _asked_for_good(has: _Has) -> bool:
    """Whether a question asks the agent to act so from now on: asked of the agent, with a
    word of the future, or of frequency and a directive ("Can you always double-box fragile
    stuff for me?", "以后能不能都放快递柜？"; a question naming a request, "以后能不能退货？",
    asks what is allowed and is no such question)."""
    lasting = has(cues.FUTURE) or (has(cues.HABIT) and has(cues.DIRECTIVE))
    return has(_ASKED_OF) and lasting


def _kind(
    text: str, role: str, fams: tuple[str, ...], has: _Has, *, delegated: ActKind | None = None
) -> ActKind:
    if role != "user":
        return ActKind.COMMITMENT if fams else ActKind.STATEMENT
    if cues.SMALL_TALK.fullmatch(text) is not None:
        return ActKind.SMALL_TALK
    question = has(cues.QUESTION) and _TOLD.search(text) is None and delegated is None
    if has(cues.TEMPORARY) and not question:
        return ActKind.TEMPORARY
    if question:  # "Can you always double-box…?", "以后能不能都放快递柜？": told
        told = not fams and _asked_for_good(has)
        return ActKind.INSTRUCTION if told else ActKind.QUESTION
    if delegated is not None or _instructs(has):
        return ActKind.INSTRUCTION if delegated is None else delegated
    found = next((kind for rx, kind in _BY_CUE if has(rx)), None)
    if found is ActKind.PREFERENCE and fams and has(_ASKING):
        found = ActKind.REQUEST  # "帮我修一下就行": asked of the agent, not a liking
    return found or (ActKind.REQUEST if fams else ActKind.STATEMENT)


# --------------------------------------------------------------------------- corrections

_VALUE_WORD: Final = LinearPattern(
    r"\d|[红黑白蓝灰绿粉紫黄金银棕橙]色?|^(?:[SMLX]{1,3}L?|[SMLX]{1,3}码)$|周[一二三四五六日天]|星期|礼拜"
    rf"|(?i:(?:^|\s)(?:{cues.COLOUR_EN})(?:$|\s))"
    r"|(?i:black|white|blue|red|green|grey|gray|pink|silver|gold|small|medium|large|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
)
"""What a correction may replace without an entity: a value with a digit, a colour, a size,
a day."""

_GENERATION: Final = LinearPattern(
    r"(\s?\d{1,3}(?:\s?(?i:pro|max|ultra|plus|mini|lite))?)(?:$|[^0-9A-Za-z])"
)
"""A model's number after its brand ("小米 14", "iPhone 15 Pro")."""

_CORRECTED_LABELS: Final = ID_LABELS | {"MODEL", "PRODUCT", "BRAND", "DATE"}
"""Labels whose value a word of error replaces with the next one of the same label."""


def _entity_at(u: Utterance, a: int, b: int) -> Entity | None:
    """The first entity starting inside ``[a, b)`` (the value a correction names)."""
    return next((e for e in u.entities if a <= e.start < b), None)


_WHO_ERRED: Final = LinearPattern(
    r"^\s*(?:哦+|噢|啊|呃|额|诶|嗯|哎|唉|我|我们|刚才|刚刚|之前|前面|上面)?\s*$"
)
"""What stands before 说错了 when no value does: an interjection, the user, a time."""


_EDITION: Final = LinearPattern(
    r"^\s*(?i:pro|max|ultra|plus|mini|lite|se|air|\+)(?:\s*(?i:max|plus))?\s*$"
)
"""What names an edition of a model after it (X100 Pro, 15 Pro Max)."""


def _edition_of(model: str, right: str) -> bool:
    """Whether ``right`` is an edition of ``model`` (X100 -> X100 Pro): a model put right."""
    folded = right.casefold()
    return folded.startswith(model.casefold()) and (
        _EDITION.fullmatch(right[len(model) :]) is not None
    )


def _no_value(u: Utterance, a: int, b: int) -> bool:
    """Whether a correction's wrong group names no value (哦 of 哦说错了, 我 of 我说错了)."""
    return _entity_at(u, a, b) is None and _WHO_ERRED.fullmatch(u.text[a:b]) is not None


def _value_span(u: Utterance, a: int, b: int) -> tuple[tuple[int, int], str | None] | None:
    """The value a correction group names: the entity in it, else the group itself when it
    looks like a value; ``None`` otherwise."""
    found = _entity_at(u, a, b)
    if found is not None:
        generation = _GENERATION.match(u.text[found.end : b]) if found.type == "BRAND" else None
        if generation is not None:  # "小米 14": a brand and its number name a model
            return (found.start, found.end + generation.end(1)), "MODEL"
        return (found.start, found.end), found.type
    piece = u.text[a:b].strip()
    if piece and len(piece) <= 16 and _VALUE_WORD.search(piece) is not None:
        start = a + len(u.text[a:b]) - len(u.text[a:b].lstrip())
        return (start, start + len(piece)), None
    return None


def _last_of(
    utterances: Sequence[Utterance], turn: int, before: int, label: str | None, right: str
) -> tuple[int, int, int] | None:
    """The value a correction that names only the right one replaces: the last value
    labelled ``label`` said before ``utterances[turn].text[before]``, other than the right
    one; for a number that is no entity, the last number alike said by the user."""
    colour = label is None and cues.COLOUR.fullmatch(right) is not None
    for i in range(turn, -1, -1):
        u = utterances[i]
        limit = before if i == turn else len(u.text)
        if colour:  # "the sage green one … I meant olive"
            if u.role == "user":
                said = [
                    (a, b)
                    for a, b in cues.COLOUR.spans(u.text[:limit])
                    if u.text[a:b].casefold() != right.casefold() and _whole_word(u.text, a, b)
                ]
                if said:
                    return i, *said[-1]
        elif label is not None or cues.NUMBER.fullmatch(right) is None:
            wanted = {label} if label is not None and label not in ID_LABELS else ID_LABELS
            found = [
                e
                for e in u.entities
                if e.type in wanted
                and e.end <= limit
                and (
                    u.text[e.start : e.end].casefold() not in right.casefold()  # W34 of W34 L32
                    or _edition_of(u.text[e.start : e.end], right)  # X100 put right as X100 Pro
                )
            ]
            if found:
                return i, found[-1].start, found[-1].end
        elif u.role == "user":
            numbers = [
                (a, b)
                for a, b in cues.NUMBER.spans(u.text[:limit])
                if _alike(u.text[a:b], right) and u.text[a:b] != right
            ]
            if numbers:
                return i, *numbers[-1]
    return None


def _whole_word(text: str, a: int, b: int) -> bool:
    """Whether ``text[a:b]`` is not part of a longer Latin word ("red" in "bored")."""
    return (a == 0 or not text[a - 1].isalpha()) and (b == len(text) or not text[b].isalpha())


def _alike(a: str, b: str) -> bool:
    """Whether two numbers could be one value said wrong and right: within a factor of two
    (a size 9.5 and 10, a price 299 and 259), not a year against a count."""
    x, y = float(a), float(b)
    return x > 0 and y > 0 and max(x, y) <= 2 * min(x, y)


_SHORT: Final = {"zh": 6, "en": 24}
_DEICTIC: Final = LinearPattern(
    r"(?:我|你|您|他|她|它|这|那|哪|谁|什么|怎么|因为|所以|就|也|都|还|要|想|(?i:i|you|it|this|that|"
    r"these|those|the|a|an|my|your|he|she|they|we)(?:$|[^A-Za-z]))"
)
"""Words that point rather than name: what they begin is no value."""


_NO_VALUE: Final = LinearPattern(
    r"(?i:sorry|no|nope|nah|oh|oops|wait|ok|okay|yes|yeah|yep|um+|hmm+|well|actually|so|and|but|"
    r"please|thanks|thank you)|哦|噢|嗯|啊|呃|额|好|对|行|嗯嗯"
)
"""An interjection, an apology or a courtesy: never a value put right or replaced."""

_Valued = tuple[tuple[int, int], str | None]


def _said_word(
    utterances: Sequence[Utterance], turn: int, m: LinearMatch, rx: LinearPattern
) -> tuple[_Valued, _Valued] | None:
    """The wrong and right values of "不是 X，是 Y" when they are plain words: accepted when
    both are short and X was said before the correction ("我家英短……啊不是英短，是布偶")."""
    u = utterances[turn]
    wa, wb = m.span(rx.groupindex["wrong"])
    ra, rb = m.span(rx.groupindex["right"])
    wrong, right = u.text[wa:wb].strip(), u.text[ra:rb].strip()
    limit = _SHORT["en" if wrong.isascii() else "zh"]
    if not wrong or not right or len(wrong) > limit or len(right) > limit:
        return None
    if _DEICTIC.match(wrong) is not None or _DEICTIC.match(right) is not None:
        return None  # "这个不是我的": no value replaced
    if _NO_VALUE.fullmatch(wrong) is not None or _NO_VALUE.fullmatch(right) is not None:
        return None  # "sorry, not the Paperwhite 11": an apology is no value
    if cues.NUMBER.fullmatch(wrong) is not None and cues.NUMBER.search(right) is None:
        return None  # "I'm a 32 inseam, not 30": a number is put right by a number
    earlier = [t.text for t in utterances[:turn]] + [u.text[: m.start()]]
    marked = cues.CORRECTION_MARK.search(u.text) is not None  # said in an earlier session
    if not marked and not any(wrong.casefold() in t.casefold() for t in earlier):
        return None
    start = ra + len(u.text[ra:rb]) - len(u.text[ra:rb].lstrip())
    return ((wa, wa + len(u.text[wa:wb].rstrip())), None), ((start, start + len(right)), None)


def _label_at(utterances: Sequence[Utterance], at: tuple[int, int, int] | None) -> str | None:
    """The label of the wrong value at ``at``: of the entity there, else of an entity of the
    same text said elsewhere in the session ("订单 5530217" before "不是 5530217")."""
    if at is None:
        return None
    i, a, b = at
    said = utterances[i].text[a:b].casefold()
    here = [e for e in utterances[i].entities if e.start == a and e.end == b]
    anywhere = [
        e for u in utterances for e in u.entities if u.text[e.start : e.end].casefold() == said
    ]
    found = here or anywhere
    return found[0].type if found else None


def _same_value(
    utterances: Sequence[Utterance], wrong: tuple[int, int, int], turn: int, right: tuple[int, int]
) -> bool:
    i, a, b = wrong
    said = utterances[turn].text[right[0] : right[1]]
    return utterances[i].text[a:b].casefold() == said.casefold()


def _own_part(text: str, right: tuple[int, int], wrong: str) -> tuple[int, int]:
    """The part of the right value that the wrong one stands for: its last number when the
    wrong value is a bare number ("小米 14，不是 13", "nova 12 不是 11": the name before it
    is kept as said, only the generation changes)."""
    a, b = right
    said = text[a:b]
    if cues.NUMBER.fullmatch(wrong.strip()) is None or cues.NUMBER.fullmatch(said) is not None:
        return right
    tail = [(x, y) for x, y in cues.NUMBER.spans(said)]
    if not tail or tail[-1][1] != len(said) or not said[: tail[-1][0]].strip():
        return right
    return a + tail[-1][0], b


_CORRECTIONS: Final = PatternSet(cues.CORRECTION)


def _corrections(utterances: Sequence[Utterance], turn: int) -> list[Correction]:
    u = utterances[turn]
    mark = cues.CORRECTION_MARK.search(u.text)
    out: list[Correction] = []
    taken: list[tuple[int, int]] = []
    present = _CORRECTIONS.present(u.text)
    for rx in [rx for i, rx in enumerate(cues.CORRECTION) if i in present]:
        for m in rx.finditer(u.text):
            span = m.span()
            if any(a < span[1] and span[0] < b for a, b in taken):
                continue
            right = _value_span(u, *m.span(rx.groupindex["right"]))
            wrong: tuple[int, int, int] | None = None
            named = "wrong" in rx.groupindex and m.group("wrong") is not None
            if named and _no_value(u, *m.span(rx.groupindex["wrong"])):
                named = False  # 哦说错了 / 我说错了: the one who erred, not the wrong value
            if named:
                w = _value_span(u, *m.span(rx.groupindex["wrong"]))
                if w is None or right is None:
                    said = _said_word(utterances, turn, m, rx)
                    if said is None:
                        continue
                    w, right = said
                (ra, rb), label = right
                wrong = (turn, *w[0])
                label = label or w[1] or _label_at(utterances, wrong)
            elif right is None:
                continue
            elif mark is not None or right[1] in ID_LABELS:
                (ra, rb), label = right
                wrong = _last_of(utterances, turn, m.start(), label, u.text[ra:rb])
                if wrong is not None and _same_value(utterances, wrong, turn, (ra, rb)):
                    wrong = None
                label = label or _label_at(utterances, wrong)
            else:
                continue
            taken.append(span)
            if wrong is not None:
                ra, rb = _own_part(u.text, (ra, rb), utterances[wrong[0]].text[wrong[1] : wrong[2]])
            out.append(Correction(turn, (ra, rb), wrong, label))
    # when nothing the shapes found names what it replaces ("sorry, 3 and 1 the other way
    # round"), an id put right may still be a slip of one said before
    named = any(c.wrong is not None for c in out)
    return out if named else (_unnamed(utterances, turn, mark) or out)


def _unnamed(
    utterances: Sequence[Utterance], turn: int, mark: LinearMatch | None
) -> list[Correction]:
    """A correction no pattern names: an identifier given again after a word of error or
    the agent's doubt (:func:`_id_again`), else a value after a word of error
    (:func:`_marked`)."""
    if mark is None:
        return _id_again(utterances, turn, 0) if _doubted(utterances, turn) else []
    return (
        _id_again(utterances, turn, mark.end())
        # the word of error after the id it puts right: "its RMA-72-1064 sorry", "哦是 … 看错了"
        or _id_again(utterances, turn, _clause_start(utterances[turn].text, mark.start()))
        or _marked(utterances, turn, mark.end())
        or _bare(utterances, turn, mark.start(), mark.end())
    )


def _clause_start(text: str, at: int) -> int:
    """Where the words leading to ``text[at]`` start: after the last stop or comma before
    it, :data:`_LEADING` characters back at most."""
    return max([at - _LEADING, *(b for _, b in _BREAKS.spans(text[:at]))], default=0)


_BREAKS: Final = LinearPattern(r"[。！？!?；;，\n]+|[,.](?:\s|$)")
_LEADING: Final = 30
"""Characters before a word of error an id putting a slip right may stand ("哦是 TH-3391-0528
不好意思 看错了")."""


def _doubted(utterances: Sequence[Utterance], turn: int) -> bool:
    """Whether the agent's turn right before ``turn`` doubted a number the user gave."""
    before = utterances[turn - 1] if turn > 0 else None
    return (
        before is not None
        and before.role != "user"
        and cues.DOUBTED.search(before.text) is not None
    )


_ID_TOKEN: Final = LinearPattern(r"[0-9A-Za-z]+(?:[-_./][0-9A-Za-z]+)*")
_DIGITS: Final = LinearPattern(r"[0-9]+")


def _skeleton(value: str) -> str:
    """An id's shape: its letters case-folded, each run of digits one ``9`` (``bx9-9-9``)."""
    return _DIGITS.sub("9", value.casefold())


def mistyped(a: str, b: str) -> bool:
    """Whether ``b`` is ``a`` mistyped: at most two slips (a character more, less or
    changed, two next to each other swapped), of one shape, one character longer at most."""
    if abs(len(a) - len(b)) > 1 or _skeleton(a) != _skeleton(b):
        return False
    x, y = a.casefold(), b.casefold()
    d = [[i + j if not i * j else 0 for j in range(len(y) + 1)] for i in range(len(x) + 1)]
    for i in range(1, len(x) + 1):
        for j in range(1, len(y) + 1):
            cost = x[i - 1] != y[j - 1]
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and x[i - 1] == y[j - 2] and x[i - 2] == y[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(x)][len(y)] <= 2


def ids_after_error(utterances: Sequence[Utterance], dialogue: Dialogue) -> list[tuple[str, str]]:
    """``(label, id)`` of the identifiers the user gave after a word of error in a turn
    that puts nothing of the session right ("昨天那个单号我看串了，应该是 7719534"; a long
    number of no label, ``""``: "I misread it, it's 5528417"): each may put right an
    earlier session's id it is a slip of."""
    corrected = {c.turn for c in dialogue.corrections if c.wrong is not None}
    out: list[tuple[str, str]] = []
    for turn, u in enumerate(utterances):
        mark = cues.CORRECTION_MARK.search(u.text) if u.role == "user" else None
        if mark is None or turn in corrected:
            continue
        out += [
            (e.type, e.text) for e in u.entities if e.type in ID_LABELS and e.start >= mark.start()
        ]
        at = mark.start()
        out += [  # a long number of no label
            ("", u.text[at + x : at + y])
            for x, y in _ID_TOKEN.spans(u.text[at:])
            if u.text[at + x : at + y].isdigit()
            and y - x >= _LONG_NUMBER
            and not any(e.start < at + y and at + x < e.end for e in u.entities)
        ]
    return out


_LONG_NUMBER: Final = 6
"""Fewest digits of a number the user may give as an id with no word naming it."""


def _id_again(utterances: Sequence[Utterance], turn: int, after: int) -> list[Correction]:
    """An identifier said after ``after`` that is a slip away from one said before, of its
    shape (``TK-63-00418`` … ``是 TK-63-00481``, ``BX26-0718-8442`` … ``BX26-0718-442``),
    puts that one right: said after a word of error or the agent's doubt."""
    u = utterances[turn]
    for x, y in _ID_TOKEN.spans(u.text[after:]):
        a, b = x + after, y + after
        right = u.text[a:b]
        if len(right) < 5 or _DIGITS.search(right) is None:
            continue
        for i in range(turn, -1, -1):
            limit = a if i == turn else len(utterances[i].text)
            said = [
                e
                for e in utterances[i].entities
                if e.type in ID_LABELS and e.end <= limit and e.text != right
            ]
            wrong = next((e for e in reversed(said) if mistyped(e.text, right)), None)
            if wrong is not None:
                return [Correction(turn, (a, b), (i, wrong.start, wrong.end), wrong.type)]
    return []


def _marked(utterances: Sequence[Utterance], turn: int, after: int) -> list[Correction]:
    """A value said after a word of error ("抄错了，最后两位反了，是 SF…", "说错了，我穿 43.5
    的") replaces the last value of its kind said before."""
    u = utterances[turn]
    for e in u.entities:
        if e.start >= after and e.type in _CORRECTED_LABELS:
            wrong = _last_of(utterances, turn, e.start, e.type, u.text[e.start : e.end])
            if wrong is not None and not _same_value(utterances, wrong, turn, (e.start, e.end)):
                return [Correction(turn, (e.start, e.end), wrong, e.type)]
    for x, y in cues.NUMBER.spans(u.text[after:]):
        a, b = x + after, y + after
        if any(e.start <= a < e.end for e in u.entities):
            continue
        wrong = _last_of(utterances, turn, a, None, u.text[a:b])
        if wrong is not None:
            return [Correction(turn, (a, b), wrong, _label_at(utterances, wrong))]
    return _restated(utterances, turn, after)


def _restated(utterances: Sequence[Utterance], turn: int, after: int) -> list[Correction]:
    """A fact about the user stated again after a word of error ("哦说反了，我是干皮" after
    "我是油皮") replaces the last statement of that topic the user made before."""
    u = utterances[turn]
    for topic in TOPICS:
        if not topic.fact:
            continue
        right = next((m for m in topic.pattern.finditer(u.text) if m.start() >= after), None)
        if right is None:
            continue
        for i in range(turn, -1, -1):
            if utterances[i].role != "user":
                continue
            said = utterances[i].text[: right.start()] if i == turn else utterances[i].text
            before = [m for m in topic.pattern.finditer(said) if m.group(0) != right.group(0)]
            if before:
                wrong = (i, before[-1].start(), before[-1].end())
                return [Correction(turn, right.span(), wrong, None)]
    return []


_BARE_LEAD: Final = LinearPattern(
    r"^[\s，,、:：—–…~～-]*(?:(?:应该|其实|我是说)?是\s*"
    r"|(?i:(?:i mean|i meant|it'?s|make (?:it|that))\s+|no,?\s+|sorry,?\s+)*)"
)
"""What may stand between a word of error and the bare word put right (是, I mean)."""

_BARE_ZH: Final = LinearPattern(r"^[\x{4e00}-\x{9fff}]{1,6}")
_BARE_EN: Final = LinearPattern(r"^[A-Za-z][A-Za-z-]{1,20}")
_BEFORE_BREAK: Final = LinearPattern(r"[，,。！？!?；;\n…~～]")
_BEFORE_BREAK_ZH: Final = LinearPattern(r"[，,。！？!?；;\n…~～\s]")
_NAME: Final = "nr"
"""A person's name as jieba tags it (and, often, a word it does not know: 过敏)."""
_NOUN: Final = ("n",)
"""jieba's tags of a noun (n, nr, ns, nz…): a bare word put right replaces one alike."""


def _said_before(
    utterances: Sequence[Utterance], turn: int, mark: int, breaks: LinearPattern
) -> tuple[int, int, str] | None:
    """The user's clause right before a word of error at ``utterances[turn].text[mark]``:
    ``(turn, start, text up to the mark)``; when the mark opens the turn ("哦不对 五岁了"),
    the last clause of the user's previous turn."""
    where, before = turn, utterances[turn].text[:mark]
    if not before.strip(_INTERJECTIONS):
        earlier = [i for i in range(turn) if utterances[i].role == "user"]
        if not earlier:
            return None
        where, before = earlier[-1], utterances[earlier[-1]].text
    start = 0
    for m in breaks.finditer(before.rstrip(_INTERJECTIONS)):
        start = m.end()
    return where, start, before


_INTERJECTIONS: Final = "…~～ ，,。.!！哦噢啊呃额诶"

_CN_NUMBER: Final = r"(?:[0-9]+|[一二两三四五六七八九十]+)"
_MEASURE_ZH: Final = LinearPattern(
    rf"^(?P<number>{_CN_NUMBER})\s*(?P<unit>岁|个月|周岁|斤|公斤|码|楼|层|口人|个人|只|位)"
)
"""A number and its unit said alone after a word of error (五岁了, 17楼)."""


_Spans = tuple[tuple[int, int], tuple[int, int]]
"""Where the right value is in the correcting turn, and the wrong one in the clause before."""


def _bare(utterances: Sequence[Utterance], turn: int, mark: int, after: int) -> list[Correction]:
    """A bare word after a word of error replaces the last word alike in the user's clause
    right before it (or, when the mark opens the turn, in their previous turn): in Chinese
    a noun by a noun ("我对虾过敏…哦不对 是螃蟹": 虾) and a number by one of its unit ("孩子4岁
    … 哦不对 五岁了": 4岁), in English a value word by one of its class ("I wear a medium —
    sorry, large": medium)."""
    text = utterances[turn].text
    lead = _BARE_LEAD.match(text[after:])
    at = after + (lead.end() if lead is not None else 0)
    zh = _BARE_ZH.match(text[at:]) is not None
    said = _said_before(utterances, turn, mark, _BEFORE_BREAK_ZH if zh else _BEFORE_BREAK)
    if said is None:
        return []
    where, start, before = said
    found = (
        (_measure_alike(text, at, before, start) or _noun_alike(text, at, before, start))
        if zh
        else _class_alike(text, at, before, start)
    )
    if found is None:
        return []
    right, (a, b) = found
    return [Correction(turn, right, (where, a, b), None)]


def _measure_alike(text: str, at: int, before: str, start: int) -> _Spans | None:
    """A number and unit at ``text[at]`` and the last other one of that unit in ``before``
    from ``start``."""
    measure = _MEASURE_ZH.match(text[at:])
    if measure is None:
        return None
    right = measure.group(0) or ""
    said = LinearPattern(rf"{_CN_NUMBER}\s*{measure.group('unit') or ''}")
    alike = [
        (start + a, start + b)
        for a, b in said.spans(before[start:])
        if before[start + a : start + b] != right
    ]
    return ((at, at + len(right)), alike[-1]) if alike else None


def _noun_alike(text: str, at: int, before: str, start: int) -> _Spans | None:
    """A noun at ``text[at]`` and the last other noun (no name) in ``before`` from
    ``start``, as jieba tags them; but the last noun of the turn sharing a character with it
    (北门 for 南门, 红色 for 蓝色) when one does."""
    bare = _BARE_ZH.match(text[at:])
    words = rjieba.tag(bare.group(0) or "") if bare is not None else []
    if not words or not words[0][1].startswith(_NOUN):
        return None
    right = words[0][0]
    offset, found, sharing = 0, None, None
    for word, tag in rjieba.tag(before):
        alike = tag.startswith(_NOUN) and tag != _NAME and word != right
        if alike and _DEICTIC.match(word) is None:
            if offset >= start:
                found = (offset, offset + len(word))
            if set(word) & set(right):
                sharing = (offset, offset + len(word))
        offset += len(word)
    found = sharing or found
    return ((at, at + len(right)), found) if found is not None else None


def _class_alike(text: str, at: int, before: str, start: int) -> _Spans | None:
    """An English value word at ``text[at]`` and the last other one of its class in
    ``before`` from ``start``."""
    en = _BARE_EN.match(text[at:])
    right = (en.group(0) or "") if en is not None else ""
    kind = _value_class(right)
    if kind is None:
        return None
    alike = [
        (start + a, start + b)
        for a, b in _BARE_EN_WORD.spans(before[start:])
        if _value_class(before[start + a : start + b]) == kind
        and before[start + a : start + b].casefold() != right.casefold()
    ]
    return ((at, at + len(right)), alike[-1]) if alike else None


_BARE_EN_WORD: Final = LinearPattern(r"[A-Za-z][A-Za-z-]*")
_VALUE_CLASSES: Final = (
    LinearPattern(rf"(?i:{cues.COLOUR_EN})"),
    LinearPattern(r"(?i:(?:x{1,3}-?)?(?:small|large)|medium|petite|regular)"),
    LinearPattern(r"(?i:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"),
)
"""English value words a bare correction puts right by one of their class: a colour, a
size, a day."""


def _value_class(word: str) -> int | None:
    return next((k for k, rx in enumerate(_VALUE_CLASSES) if rx.fullmatch(word)), None)


def _mark_corrections(
    utterances: Sequence[Utterance], acts: list[Act], corrections: Sequence[Correction]
) -> None:
    """The clause of a correction's turn holding the corrected-away value and nothing else
    of the correction stops counting, unless it states a fact about the user (我儿子 8 岁，哦不，
    刚满 9 岁: the son stays, aged 9); the clauses stating the right value become
    corrections. (A wrong value said in an earlier turn leaves its clause counting: the
    summary drops the value and quotes the right one in its place.)"""
    for c in corrections:
        bare = _bare_right(utterances, acts, c)
        for k, act in enumerate(acts):
            right_here = act.turn == c.turn and act.start <= c.right[0] < act.end
            if right_here:
                acts[k] = replace(act, kind=ActKind.CORRECTION)
            elif (
                not bare
                and c.wrong is not None
                and act.turn == c.wrong[0] == c.turn
                and act.start <= c.wrong[1] < act.end
                and act.kind is not ActKind.FACT
                and not _about_user(utterances[act.turn].text[act.start : act.end])
            ):
                acts[k] = replace(act, live=False)


def _bare_right(utterances: Sequence[Utterance], acts: Sequence[Act], c: Correction) -> bool:
    """Whether the clause stating the right value says nothing else ("size 10 please. sorry,
    9.5"): the clause of the wrong value then keeps counting, the right value in its place."""
    text = utterances[c.turn].text
    right = text[c.right[0] : c.right[1]].strip()
    return any(
        act.turn == c.turn
        and act.start <= c.right[0] < act.end
        and text[act.start : act.end].strip(" ,.;!?，。；！？") == right
        for act in acts
    )


def _mark_asides(
    utterances: Sequence[Utterance], acts: list[Act], corrections: Sequence[Correction]
) -> None:
    """A clause of the user's correcting turn that speaks of the corrected-away value again
    ("I meant olive. Sage is the pale one, right?") stops counting: it is about the value
    left behind. The value's first word counts too ("sage" of "sage green")."""
    for c in corrections:
        if c.wrong is None:
            continue
        t, a, b = c.wrong
        bare = _bare_right(utterances, acts, c)  # its clause is put right, no aside
        said = utterances[t].text[a:b].strip().casefold()
        words = {said, said.split()[0]} if " " in said else {said}
        words = {w for w in words if len(w) >= 2}
        text = utterances[c.turn].text
        for k, act in enumerate(acts):
            if act.turn != c.turn or act.role != "user" or not act.live:
                continue
            if act.start <= c.right[0] < act.end or (
                bare and t == c.turn and act.start <= a < act.end
            ):
                continue
            said_of_user = act.kind is ActKind.FACT or _about_user(text[act.start : act.end])
            if said_of_user and act.end <= c.right[0]:
                continue  # the user's fact said before the correction: put right, it stands
            piece = text[act.start : act.end].casefold()
            if any(_holds_word(piece, w) for w in words):
                acts[k] = replace(act, live=False)


def _holds_word(piece: str, word: str) -> bool:
    """Whether ``piece`` says ``word`` (as a word of its own when it is Latin)."""
    at = piece.find(word)
    while at >= 0:
        if not word.isascii() or _whole_word(piece, at, at + len(word)):
            return True
        at = piece.find(word, at + 1)
    return False


# --------------------------------------------------------------------------- retractions

_OFFER: Final = LinearPattern(
    r"还有.{0,6}(?:吗|呢|需要)|其他.{0,4}(?:问题|需要)|别的|(?i:anything else|something else|"
    r"else i can|anything more)"
)
"""The agent offering more help: a bare "不用了" after it closes the talk, retracts nothing."""

_UNDONE: Final = LinearPattern(
    r"(?:已|并|也|同时|一并)(?:为您|帮您|给您|为你|帮你|给你)?(?:取消|撤销|撤回|删除|作废)"
    r"|(?:取消|撤销|撤回)了|"
    r"不再(?:为您)?(?:安排|处理)"
    r"|(?i:cancel+ed|withdrawn|removed|dropped|called off|no longer)"
)
"""The agent confirming that something was undone: it states no step of its own."""

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
_GOES_ON: Final = frozenset({ActKind.STATEMENT, ActKind.REQUEST, ActKind.TEMPORARY})
"""Clauses that may go on with the request before them ("帮我改个地址，寄到…")."""


def _object_of(
    acts: list[Act], k: int, offered: Callable[[Act], bool] | None
) -> tuple[str, ...] | int | None:
    """What the retraction ``acts[k]`` takes back: the request families it names, else
    those of an earlier clause of its turn ("那个退货，算了吧"), else the user's last
    request's; unless the agent offered more help since (then ``None``: "不用了，谢谢") or
    the user asked a question in a later turn than that request (then the question's index:
    "is the SPRING20 code still valid?" … "forget it then")."""
    act = acts[k]
    named = tuple(f for f in act.families if f != "cancel") or act.families
    if named:  # "取消退货单", "cancel return RT…": the cancel is the taking back
        return named
    for prev in reversed(acts[:k]):
        if prev.turn != act.turn or prev.role != "user":
            break
        if prev.families:
            return prev.families
    asked: int | None = None  # the user's latest question
    for j in range(k - 1, -1, -1):
        prev = acts[j]
        if prev.role != "user":
            if offered is not None and not prev.families and offered(prev):
                return None
            continue
        if not prev.live:
            continue
        if prev.families:
            later = asked is not None and acts[asked].turn > prev.turn
            return asked if later else prev.families
        if asked is None and prev.kind is ActKind.QUESTION:
            asked = j
    return None


def _take_back(acts: list[Act], j: int, hedged: Callable[[Act], bool] | None = None) -> None:
    """``acts[j]`` stops counting, and so do the clauses of its turn that go on with it: a
    fact among them only when ``hedged`` (a belief given as the reason: "I think my wife
    already bought one", "我老婆好像已经买了")."""
    acts[j] = replace(acts[j], live=False)
    for n in range(j + 1, len(acts)):
        nxt = acts[n]
        believed = nxt.kind is ActKind.FACT and hedged is not None and hedged(nxt)
        if nxt.turn != acts[j].turn or nxt.families or (nxt.kind not in _GOES_ON and not believed):
            break
        acts[n] = replace(nxt, live=False)


def _retract(
    acts: list[Act],
    k: int,
    offered: Callable[[Act], bool] | None = None,
    hedged: Callable[[Act], bool] | None = None,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Apply the retraction ``acts[k]``; the families it took back and those it found no
    earlier request for (a belief given as a request's reason goes with it: ``hedged``)."""
    fams = _object_of(acts, k, offered)
    if isinstance(fams, int):  # a question asked since the request goes, not the request
        _take_back(acts, fams)
        return (), ()
    if fams is None:  # "不用了，谢谢", or a topic withdrawn ("饮食要求作废"): no request
        return (), ()
    found: set[str] = set()
    for j in range(k):
        prev = acts[j]
        hit = set(prev.families) & set(fams)
        if hit and prev.live and prev.kind in _TAKEN_BACK:
            _take_back(acts, j, hedged)
            if prev.role == "user":
                found |= hit
    if acts[k].refusal:  # refusing what nobody asked for withdraws nothing
        return tuple(f for f in fams if f in found), ()
    return fams, tuple(f for f in fams if f not in found)


_BESIDES: Final = LinearPattern(
    r"也|还要|还想|顺便|另外|同时|一起|再(?:帮|给)"
    r"|(?i:(?:^|\s)(?:also|as well|too|and then|plus)(?:$|[\s,.!?]))"
)
"""Words that add a request to another instead of choosing between them."""


def _pick_offered(utterances: Sequence[Utterance], acts: list[Act]) -> list[int]:
    """The user answering an offer of two ways ("寄回换新…也可以上门维修") with a clause on
    each ("寄回去一周我上班咋办，约上门维修吧") chose the last: the clauses of that turn naming
    only the other offered ways stop counting, unless they add to it ("也", "also").
    Returns the indices of the choosing clauses."""
    picked: list[int] = []
    for turn, u in enumerate(utterances):
        if u.role != "user" or turn == 0 or utterances[turn - 1].role == "user":
            continue
        offer = {f for a in acts if a.turn == turn - 1 for f in a.families}
        asked = [
            j
            for j, a in enumerate(acts)
            if a.turn == turn and a.live and a.kind is ActKind.REQUEST and a.families
        ]
        if len(offer) < 2 or len(asked) < 2:
            continue
        chosen = set(acts[asked[-1]].families)
        if not chosen <= offer:
            continue
        if _BESIDES.search(u.text[acts[asked[0]].start : acts[asked[-1]].end]) is not None:
            continue
        rejected = [
            j
            for j in asked[:-1]
            if set(acts[j].families) <= offer and not set(acts[j].families) & chosen
        ]
        for j in rejected:
            acts[j] = replace(acts[j], live=False)
        if rejected:
            picked.append(asked[-1])
    return picked


_NO_OBJECT: Final = frozenset(
    {"thanks", "thank", "you", "it", "that", "this", "one", "them", "please", "keep", "way"}
)
"""Words of a declining clause that name nothing declined ("no thanks", "no, keep it")."""


def _declined_words(piece: str) -> list[str] | None:
    """What the clause ``piece`` turns down: its words (``[]``: a bare "no thanks", "不用了"),
    or ``None`` when it declines nothing."""
    m = cues.DECLINED.search(piece)
    if m is None:
        return None
    zh = m.group("what_zh")
    if zh:
        return [zh]
    words = (m.group("what") or "").casefold().split()
    return [w for w in words if len(w) > 2 and w not in _NO_OBJECT]


def _turn_down(utterances: Sequence[Utterance], acts: list[Act]) -> None:
    """An offer the user turns down in the next turn stops counting, with its price: a bare
    decline opening the turn ("no thanks", "不用了") drops the offer's clauses from its first
    ("Would you like a cover? It's $25"); one naming the thing ("I'll pass on the insurance",
    "no gift wrap", "不用延保") drops the clauses of the offering turn that name it, and the
    user's own earlier asks for it ("add assembly" … "Assembly is $45" … "no assembly")."""
    for turn, u in enumerate(utterances):
        if u.role != "user" or turn == 0 or utterances[turn - 1].role == "user":
            continue
        said = utterances[turn - 1].text
        offering = [j for j, a in enumerate(acts) if a.turn == turn - 1]
        offers = [j for j in offering if cues.OFFERED.search(said[acts[j].start : acts[j].end])]
        if not offers:
            continue
        mine = [j for j, a in enumerate(acts) if a.turn == turn]
        for n, j in enumerate(mine):
            if u.text[acts[j].end : acts[j].end + 1] in ("?", "？"):
                continue
            words = _declined_words(u.text[acts[j].start : acts[j].end])
            if words is None or (not words and n != 0):
                continue
            if not words:
                dropped = [k for k in offering if k >= offers[0]]
            else:
                naming = [
                    k
                    for k in offering
                    if any(
                        _holds_word(said[acts[k].start : acts[k].end].casefold(), w) for w in words
                    )
                ]
                if not naming:
                    continue
                dropped = sorted({*naming, *offers})
                for k in range(offering[0]):
                    prev = acts[k]
                    piece = utterances[prev.turn].text[prev.start : prev.end].casefold()
                    if (
                        prev.role == "user"
                        and prev.kind in _GOES_ON
                        and any(_holds_word(piece, w) for w in words)
                    ):
                        acts[k] = replace(prev, live=False)
            for k in dropped:
                acts[k] = replace(acts[k], live=False)


# --------------------------------------------------------------------------- topics

_LASTING: Final = frozenset(
    {ActKind.INSTRUCTION, ActKind.PREFERENCE, ActKind.FACT, ActKind.STATEMENT, ActKind.REQUEST}
)
"""Acts whose topic, unless said for this request only, the profile keeps."""

_CODED: Final = {"notification_channel": CHANNEL_CODES, "content_format": FORMAT_CODES}
_BY_KEY: Final = {t.key: t for t in TOPICS}
_CODED_PATTERNS: Final = {"notification_channel": CHANNEL, "content_format": FORMAT}

_FILLER: Final = LinearPattern(
    r"以后|今后|从今天起|从现在起|统一|一律|都|请|麻烦|用|通过|走|通知|联系|告诉|提醒|找|我|一声|就行|就好|"
    r"就可以|吧|了|的|有事|有什么事|有情况|的话|别再|不要再|不要|别|不用|再|给|发|打|个|就|只|"
    r"(?i:please|always|from now on|only|just|me|by|via|on|through|notify|contact|reach|"
    r"use|don'?t|do not|never|no|more|send|any|updates?|in future|going forward)"
)
"""Words that only frame a channel or a format: what is left beside them is a procedure."""


def _procedure(piece: str, spans: Sequence[tuple[int, int]]) -> bool:
    """Whether a clause naming a channel or a format says more than that ("以后发货前先打电话跟
    我确认一下"): a few words are left once the values and the framing words are taken out."""
    chars = list(piece)
    for a, b in spans:
        chars[a:b] = " " * (b - a)
    rest = _FILLER.sub(" ", "".join(chars))
    cjk = sum("\u4e00" <= ch <= "\u9fff" for ch in rest)
    return cjk >= 3 or len([w for w in rest.split() if w.isalpha()]) >= 2


_TOPIC_NAMES: Final = PatternSet([t.names for t in TOPICS if t.names is not None])
_NAMED_AT: Final = {k: i for i, k in enumerate(k for k, t in enumerate(TOPICS) if t.names)}
"""The index in :data:`_TOPIC_NAMES` of each topic that has names, by its index in TOPICS."""


def _named(text: str) -> frozenset[int]:
    """Indices (into :data:`TOPICS`) of the topics whose ``names`` occur in ``text``."""
    hits = _TOPIC_NAMES.present(text)
    return frozenset(k for k, i in _NAMED_AT.items() if i in hits)


def topic_named(text: str) -> tuple[Topic, ...]:
    """The topics ``text`` names by a word of the topic itself or states a value of."""
    named = stated_in(text) | _named(text)
    return tuple(t for k, t in enumerate(TOPICS) if k in named)


_SentenceCues = tuple[bool, frozenset[str], frozenset[int]]


class _Sentence:
    """A sentence of a user turn and what every clause of it reads of it, found once:
    whether it instructs, the coded topics a refused value makes instructed (refusing
    one value instructs on the others said there), the topics stated in it."""

    __slots__ = ("_cues", "lang", "span", "start", "stop")

    def __init__(self, text: str, start: int, stop: int, lang: Lang) -> None:
        self.span, self.start, self.stop, self.lang = text[start:stop], start, stop, lang
        self._cues: _SentenceCues | None = None

    def cues(self) -> _SentenceCues:
        if self._cues is None:
            span, lang = self.span, self.lang
            refusing = frozenset(
                key
                for key, codes in _CODED.items()
                if any(
                    negated(span, m.start, lang, m.end)
                    for m in mentions(span, _CODED_PATTERNS[key], codes)
                )
            )
            self._cues = (instructs(span), refusing, stated_in(span))
        return self._cues


def _topics_of_clause(
    act: Act, text: str, sentence: _Sentence, inherited: Topic | None
) -> tuple[str, ...]:
    """The keys of the lasting topics the clause ``act`` states (see the module docstring)."""
    if act.role != "user" or not act.live:
        return ()
    if act.one_off and act.kind is not ActKind.CORRECTION:  # a value put right still stands
        return ()
    piece = text[act.start : act.end]
    if act.kind not in _LASTING:
        return _passing_topics(act, piece, sentence.lang)
    past = cues.PAST.search(piece) if act.kind is not ActKind.INSTRUCTION else None
    # what happened is no instruction; a fact said before it still stands (我圈口是14号 上次量的)
    told_until = act.end if past is None else act.start + past.start()
    a, span, lang = sentence.start, sentence.span, sentence.lang
    instructing, refusing, stated_in_span = sentence.cues()
    instructed = act.kind is ActKind.INSTRUCTION or instructing
    found: list[str] = []
    values: list[tuple[int, int]] = []
    for k, topic in enumerate(TOPICS):
        if past is not None and not topic.fact:
            continue
        if topic.key in _CODED:
            said = mentions(piece, _CODED_PATTERNS[topic.key], _CODED[topic.key])
            wanted = instructed or topic.key in refusing
            if not said or not (wanted or any(negated(piece, m.start, lang, m.end) for m in said)):
                continue
            values += [(m.start, m.end) for m in said]
            found.append(topic.key)
            continue
        if k not in stated_in_span:
            continue
        for m in topic.pattern.finditer(span):
            told = m.start() + a < told_until or (
                topic.fact and cues.PRESENT.search(text[m.start() + a : act.end]) is not None
            )  # a fact told after the narrative, of now: "… last month and I'm teaching … now"
            if told and act.start < m.end() + a:  # the match overlaps it
                found.append(topic.key)
                values.append((0, len(piece)))
                break
    if not found and inherited is not None and past is None:
        found.append(inherited.key)
    found = _not_the_pets(found, piece)
    procedure = not found or _procedure(piece, values)
    stated = [k for k in found if not _BY_KEY[k].context]
    if act.kind is ActKind.INSTRUCTION and procedure and all(k in _CODED for k in stated):
        found.append(NOTE.key)
    return tuple(found)


def _passing_topics(act: Act, piece: str, lang: Lang) -> tuple[str, ...]:
    """The topics a clause that is no lasting act still states: who the user buys for (a
    question still tells it), and in Chinese what the runs after a question state."""
    in_piece = stated_in(piece)
    told = [t.key for k, t in enumerate(TOPICS) if t.context and k in in_piece]
    if act.kind is ActKind.QUESTION and lang == "zh":
        told += [k for k in _told_after(piece) if k not in told]
    return tuple(told)


_WISHED: Final = LinearPattern(
    r"只能|只要|就行|就好|即可|直接|一律|统一|都(?:走|用|放|送|发|寄)|别|不要|不用"
)
"""Words of a wish of how to be served, in a run of words (东西只能放门卫室, 放驿站就行)."""


def _told_after(piece: str) -> list[str]:
    """The topics the runs of words after a question state (有没有小一点的电锅 宿舍楼不让快递员进
    东西只能放园区北门门卫室: the drop-off), each run a wish (:data:`_WISHED`, or an
    instruction), asking nothing, telling nothing past and bound to no time; never a coded
    topic (a channel is named in questions too)."""
    found: list[str] = []
    for a, b in cues.RUN.spans(piece)[1:]:
        run = piece[a:b]
        if any(c.search(run) is not None for c in (cues.QUESTION, cues.PAST, cues.TEMPORARY)):
            continue
        if _WISHED.search(run) is None and not instructs(run):
            continue  # 早上得送他: no wish of how to be served
        stated = stated_in(run)
        found += [
            t.key
            for k, t in enumerate(TOPICS)
            if k in stated and not t.context and t.key not in _CODED and t.key not in found
        ]
    return found


_OWN_DIET: Final = LinearPattern(
    r"我[^，,。！？\s]{0,3}(?:不吃|不能吃|吃不了|过敏|吃素|素食|忌口)"
    r"|(?i:(?:^|[^a-z])i(?:'m| am)? (?:allergic|vegetarian|vegan)|"
    r"(?:^|[^a-z])i (?:don'?t|can'?t) eat)"
)
"""The user's own diet in a clause naming a pet too (我对花生过敏 家里还养了只猫)."""


def _not_the_pets(found: list[str], piece: str) -> list[str]:
    """``found`` without the diet when the clause names a pet and no diet of the user's own
    (我家猫挑嘴 别的都不吃: the cat's, not the user's)."""
    if "pet" in found and "diet" in found and _OWN_DIET.search(piece) is None:
        return [k for k in found if k != "diet"]
    return found


def _question_topic(utterances: Sequence[Utterance], turn: int) -> Topic | None:
    """The topic the agent's question right before user turn ``turn`` names ("那您方便的时间
    是？"), when it asks one."""
    if turn == 0 or utterances[turn - 1].role == "user":
        return None
    return asked_topic(utterances[turn - 1].text)


def asked_topic(asked: str) -> Topic | None:
    """The one topic a question names by its words ("那您方便的时间是？", "How would you
    prefer to be notified?"), if it names exactly one."""
    if cues.QUESTION.search(asked) is None:
        return None
    hits = _named(asked)
    named = [t for k, t in enumerate(TOPICS) if not t.context and k in hits]
    return named[0] if len(named) == 1 else None


def _assign_topics(utterances: Sequence[Utterance], acts: list[Act], lang: Lang) -> tuple[str, ...]:
    """Give each lasting clause its topics; the keys of the topics the user withdrew."""
    withdrawn: list[str] = []
    for turn, u in enumerate(utterances):
        if u.role != "user":
            continue
        asked = _question_topic(utterances, turn)
        for a, b in cues.SENTENCE.spans(u.text):
            sentence = _Sentence(u.text, a, b, lang)
            before: tuple[str, ...] = ()  # the topics of the sentence's previous clause
            for k, act in enumerate(acts):
                if act.turn != turn or not a <= act.start < b:
                    continue
                piece = u.text[act.start : act.end]
                if act.kind is ActKind.RETRACTION:
                    gone = [t.key for t in topic_named(piece) if not t.context]
                elif cues.NEGATION.search(piece) is not None and not _states_value(piece):
                    gone = [t.key for t in _named_only(piece)]  # "那个时间段别打了"
                else:
                    gone = []
                if gone:
                    withdrawn += [key for key in gone if key not in withdrawn]
                    continue
                inherited = asked if act.start == 0 and _VALUE_WORD.search(piece) else None
                keys = _topics_of_clause(act, u.text, sentence, inherited)
                if not keys and _ELLIPSIS.fullmatch(piece) and act.live and not act.one_off:
                    keys = tuple(k for k in before if k not in _CODED and not _is_context(k))
                if keys:
                    acts[k] = replace(act, topics=keys)
                    withdrawn = [w for w in withdrawn if w not in keys]
                before = keys
    return tuple(withdrawn)


def _is_context(key: str) -> bool:
    """Whether topic ``key`` is one said as the context of a request (``note`` is not)."""
    topic = _BY_KEY.get(key)
    return topic is not None and topic.context


_ELLIPSIS: Final = LinearPattern(
    r"[^，,。！？!?；;]{1,6}(?:的)?(?:就行|就好|就可以|也行|吧|即可)"
    r"|(?i:[a-z ]{1,20} (?:is|are) fine)"
)
"""A short clause going on with the one before it ("不要发票纸质版，电子的就行")."""


def _named_only(piece: str) -> list[Topic]:
    """The topics a clause names by a word of the topic itself (not by a value of it)."""
    hits = _named(piece)
    return [t for k, t in enumerate(TOPICS) if not t.context and t.key not in _CODED and k in hits]


def _states_value(piece: str) -> bool:
    """Whether a negated clause still states a value of a topic ("别放门口，放丰巢")."""
    said = stated_in(piece)
    return any(k in said for k, t in enumerate(TOPICS) if t.key not in _CODED and not t.context)


# --------------------------------------------------------------------------- reading


_CLAUSE_CUES: Final = (
    cues.QUESTION,
    cues.TEMPORARY,
    cues.FUTURE,
    cues.INSTRUCTION,
    cues.HABIT,
    cues.DIRECTIVE,
    symptoms.PROBLEM_ZH,
    symptoms.PROBLEM_EN,
    cues.FACT,
    cues.PREFERENCE,
    _ASKING,
    _ASKED_OF,
    cues.RETRACTION,
    _UNDONE,
    cues.ONE_OFF,
)
"""The cues :func:`_acts_of` tries on every clause, found together in one pass."""

_IN_CLAUSE: Final = PatternSet(_CLAUSE_CUES)
_CLAUSE_CUE_AT: Final = {rx: i for i, rx in enumerate(_CLAUSE_CUES)}


def _cues_in(piece: str) -> _Has:
    """:func:`_searching` of ``piece`` for the clause cues, answered from one pass."""
    hits = _IN_CLAUSE.present(piece)
    return lambda rx: _CLAUSE_CUE_AT[rx] in hits


def _retracted_families(piece: str, cue: LinearPattern = cues.RETRACTION) -> tuple[str, ...]:
    """The families of the space-separated segment of ``piece`` holding its word of taking
    back (那个价保算了吧 | 说要先把送的卷发棒寄回去: the price protection, not a return), or
    ``()`` where that segment names none."""
    m = cue.search(piece)
    if m is None:
        return ()
    a, b = around(piece, m.start(), m.end(), _SPACES)
    return families(piece[a:b])


def around(piece: str, start: int, end: int, ends: LinearPattern) -> tuple[int, int]:
    """The span of the part of ``piece`` holding ``piece[start:end]`` between the matches
    of ``ends`` on either side (the whole ``piece`` where none is)."""
    a = max((y for _, y in ends.spans(piece[:start])), default=0)
    b = min((x for x, _ in ends.spans(piece[end:])), default=len(piece) - end)
    return a, end + b


_SPACES: Final = LinearPattern(r"(?P<pre>[^\x00-\x09\x0b-\x7f])\s+(?P<post>[^\x00-\x7f])")
"""A space between two Chinese characters: where a spoken clause ends."""


def _acts_of(u: Utterance, turn: int, lang: Lang) -> list[Act]:
    out = []
    scoped = False  # "For today only, …": what follows in the turn is for now too
    for a, b in clauses(u.text, lang, u.entities):
        piece = u.text[a:b]
        has = _cues_in(piece)
        fams = families(piece)
        if u.role == "user" and fams and _DONE_BY_OTHER.search(piece) is not None:
            fams = ()  # a report of what another did, no request
        delegated = None
        if u.role == "user" and u.text[b : b + 1] not in ("?", "？") and _delegates(piece):
            delegated = _delegated_kind(fams, [e for e in u.entities if a <= e.start < b])
        kind = _kind(piece, u.role, fams, has, delegated=delegated)
        refusal = False
        dropped = _retracted_families(piece, cues.DROPPED) if u.role == "user" else ()
        if u.role == "user" and (has(cues.RETRACTION) or dropped):
            kind = ActKind.RETRACTION
            fams = dropped or _retracted_families(piece) or fams
        elif u.role == "user" and fams and kind is not ActKind.QUESTION:
            refused = _refused(piece)
            if refused:
                kind, fams, refusal = ActKind.RETRACTION, refused, True
        elif u.role != "user" and has(_UNDONE):
            kind = ActKind.RETRACTION
        if kind is ActKind.INSTRUCTION:
            scoped = False
        # a fact about the user outlasts the request it is said with ("for now, my wife has
        # a bad knee", "这件衬衫要退 … 我这人只穿纯棉的"): only its own cue limits it
        about_user = kind is ActKind.FACT or (lang == "zh" and _of_self(piece))
        one_off = (scoped and not about_user) or has(cues.ONE_OFF)
        scoped = scoped or one_off
        out.append(Act(kind, u.role, turn, a, b, fams, one_off, refusal=refusal))
    return out


def read_dialogue(utterances: Sequence[Utterance], lang: Lang) -> Dialogue:
    """The acts of ``utterances`` (a session's turns in order), amended as the module
    docstring says."""
    acts: list[Act] = []
    corrections: list[Correction] = []
    for turn, u in enumerate(utterances):
        if u.role == "user":
            corrections += _corrections(utterances, turn)
        acts += _acts_of(u, turn, lang)
    _mark_corrections(utterances, acts, corrections)
    _mark_asides(utterances, acts, corrections)
    retracted: list[str] = []
    unmatched: list[str] = []

    def offered(act: Act) -> bool:
        text = utterances[act.turn].text[act.start : act.end]
        return _OFFER.search(text) is not None

    def hedged(act: Act) -> bool:
        return cues.HEDGE.search(utterances[act.turn].text[act.start : act.end]) is not None

    by_agent = by_user = False  # what an earlier session arranged, undone
    for k in range(len(acts)):
        if acts[k].role == "user" and _resolves(utterances[acts[k].turn], acts, k):
            by_user = by_user or _of_no_request(acts, k, offered)  # 耳机找到了, found it
        if acts[k].kind is not ActKind.RETRACTION:
            continue
        if acts[k].role != "user":  # the agent confirming an undoing: no step of its own
            acts[k] = replace(acts[k], live=False)
            by_agent = by_agent or _undoes_arrangement(utterances[acts[k].turn], acts[k])
            continue
        by_user = by_user or _of_no_request(acts, k, offered)
        taken, missing = _retract(acts, k, offered, hedged)
        retracted += [f for f in taken if f not in retracted]
        unmatched += [f for f in missing if f not in unmatched]
    _turn_down(utterances, acts)
    picked = _pick_offered(utterances, acts)
    withdrawn = _assign_topics(utterances, acts, lang)
    return Dialogue(
        tuple(acts),
        tuple(corrections),
        tuple(retracted),
        tuple(unmatched),
        withdrawn,
        tuple(acts[j] for j in picked),
        # of an earlier session: nothing of this one taken back; the user's words no topic's
        undone=(by_agent or (by_user and not withdrawn)) and set(retracted) <= set(unmatched),
    )


_RESOLVED: Final = LinearPattern(
    r"(?:^|[\s，,])(?:[\x{4e00}-\x{9fff}]{0,6})(?:找到了|找着了|自己好了|又好了|能用了|不响了)"
    r"|(?i:(?:^|[^a-z])(?:found it|found them|it turned up|they turned up|turned up after all|"
    r"false alarm|showed up after all|it came after all|started working again|works again|"
    r"working fine now)(?:$|[^a-z]))"
)
"""The user's problem gone by itself (耳机找到了, 扫地机自己好了, found it, false alarm): what an
earlier session arranged for it is moot."""


def _resolves(u: Utterance, acts: Sequence[Act], k: int) -> bool:
    """Whether the user's ``acts[k]`` says their problem went away by itself
    (:data:`_RESOLVED`) in a turn asking nothing ("I found it in the manual, how do I reset
    it?" is a question)."""
    act = acts[k]
    asks = any(a.turn == act.turn and a.kind is ActKind.QUESTION for a in acts)
    return not asks and _RESOLVED.search(u.text[act.start : act.end]) is not None


_ARRANGEMENT: Final = LinearPattern(
    r"申请|预约|上门|安装|维修|补发|换货|退货|退款|价保|保价|分期|工单|取件|理赔|"
    r"(?i:request|appointment|visit|install|repair|reship|replacement|return|refund|exchange|"
    r"claim|adjustment|pick-?up|plan|instal+ment|booking|technician)"
)
"""What an agent's undoing names when it undoes an arrangement, not an add-on (已取消普通包装)."""


def undoes_arrangement(clause: str) -> bool:
    """Whether an agent's ``clause`` says it undid an arrangement (已为您取消上门安装, visit
    cancelled), not an add-on (已取消普通包装)."""
    return _UNDONE.search(clause) is not None and _ARRANGEMENT.search(clause) is not None


def _undoes_arrangement(u: Utterance, act: Act) -> bool:
    """Whether the agent's undoing ``act`` names an arrangement or an id (已为您取消上门安装,
    visit cancelled, I've withdrawn PA-73019)."""
    clause = u.text[act.start : act.end]
    named = any(e.type in ID_LABELS and act.start <= e.start < act.end for e in u.entities)
    return named or _ARRANGEMENT.search(clause) is not None


def _of_no_request(acts: Sequence[Act], k: int, offered: Callable[[Act], bool]) -> bool:
    """Whether the user's retraction ``acts[k]`` names no request and follows no request,
    question or offer of this session (那单算了 留着用吧, skip the install): it takes back
    what an earlier session arranged."""
    if acts[k].families or acts[k].refusal:
        return False
    return not any(
        (a.role == "user" and (a.families or a.kind is ActKind.QUESTION))
        or (a.role != "user" and offered(a))
        for a in acts[:k]
    )
