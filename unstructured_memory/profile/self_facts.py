"""What the user says of themselves that no topic names, kept as a note in their words.

The profile's topics read the facts and likings they name (a diet, a family member, a home,
a channel); the rest would be lost, and a later session would ask again. These clauses are
kept as an explicit note in the user's own (masked) words:

* a fact about the user as the act reader marks it (:data:`ActKind.FACT`: 我在医院上班,
  我是左撇子, I'm left-handed);
* a liking (:data:`ActKind.PREFERENCE`: 我喜欢简约风的, I prefer matte finishes);
* a statement whose subject is the user, their household or family (我睡眠浅, 娃肠胃敏感,
  I commute two hours a day, we're a family of five).

Not kept, being no lasting fact about the user, or the profile's topics' to keep:

* a clause holding an id or PII (the order at hand; the vault holds PII), a problem of the
  goods, a place, a building, a size or a channel named even in passing (I miss emails);
* a clause about the goods or the event at hand (这个, 这次, it, this one), a feeling or an
  opinion (我对这个很失望, 我觉得还行, I'm not happy with it), an activity going on now
  (我在等快递, I'm calling about the refund), a matter brought (我有个问题, I have a question
  about my order), a purchase told as past (我是上周买的);
* a liking or a statement of what happened or is wanted now (我刚收到, 想要, I'd like, I
  ordered), or said in a session the user amended (a correction, a change of mind: the
  liking may be what they changed);
* a clause put right or taken back later (no longer live), one for this request only or
  bound to a time, or one under four characters.

A note is keyed by its *frame*: its words without numbers and words of change
(现在, 已经, 了, now, already), so a fact said again with another value (I commute two hours
a day, then I commute three hours a day now) replaces the older note instead of standing
beside it. News of a family member said in passing (闺女都会走路了, 儿子现在都上幼儿园了: a
change of state, whose 了 tells no past event) is that member's: the rules put it in their
family slot, where it replaces what an earlier session said of them.

Pure functions: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Final, NamedTuple

from policies.linear_re import LinearPattern
from policies.pii import find_pii
from unstructured_memory.summariser import symptoms
from unstructured_memory.summariser.entities import ID_LABELS, extract_entities
from unstructured_memory.summariser.own_words import PLACE, SIZE
from unstructured_memory.summariser.topics import CHANNEL, CHANNEL_CODES, mentions, topics_of
from values.dialogue import Act, ActKind

__all__ = ["MIN_CHARS", "Kept", "frame", "kept_facts"]

MIN_CHARS: Final = 4
"""Characters a fact needs to be kept (fewer say too little on their own)."""

_AT_HAND: Final = LinearPattern(
    r"这个|那个|这些|那些|这次|这单|这件|这台|这款|这家|这边|那边|这里|那里|它"
    r"|(?i:(?:^|[^a-z'])(?:it|this|that|these|those|them|here)(?:$|[^a-z']))"
)
"""The goods, the order or the event at hand."""

_FEELING: Final = LinearPattern(
    r"失望|生气|着急|无语|郁闷|开心|满意|不满|难受|崩溃|烦|气死|担心|害怕|纠结|犹豫|确定|放心"
    r"|觉得|感觉|认为|估计|好像|可能|(?i:i (?:think|feel|guess|suppose|believe|mean|hope|wonder))"
    r"|(?i:(?:^|[^a-z])(?:happy|unhappy|upset|disappointed|frustrated|annoyed|angry|sure|"
    r"unsure|worried|confused|glad|sorry|pleased|satisfied|fine|ok|okay|afraid|excited|"
    r"tired|fed up)(?:$|[^a-z]))"
)
"""A feeling, an opinion or a guess: of the moment, not of the user."""

_NOW: Final = LinearPattern(
    r"我(?:正|现在)?在(?:等|看|问|找|想|试|弄|排|跟|和|联系|咨询|申请|处理|考虑|挑|选|查|催|打|写|填|路上)"
    r"|我(?:有|还有)(?:个|一个|点|几个|些)?(?:问题|疑问|事|情况|快递|包裹|订单)"
    r"|我是[^，,。；;]{0,8}(?:买|下单|下的单|付款|付的款|收到|拍)的"
    r"|(?i:(?:^|[^a-z])(?:i'?m|i am)\s+(?:just\s+|still\s+|now\s+|currently\s+)?"
    r"[a-z]+ing(?:$|[^a-z]))"
    r"|(?i:(?:^|[^a-z])while\s+(?:i\s+have|i'?ve\s+got|i'?m\s+here)\s+you(?:$|[^a-z]))"
    r"|(?i:(?:^|[^a-z])i\s+(?:have|'ve got|'ve)\s+(?:a|an|one|some|two|a few|another)?\s*"
    r"(?:question|problem|issue|query|complaint|concern|order|return|parcel|package|refund))"
)
"""An activity going on now, a matter brought to the agent (while I have you), a purchase
told as past."""

_CHANGE: Final = LinearPattern(
    r"现在|目前|已经|如今|了|都|也|还"
    r"|(?i:(?:^|[^a-z])(?:now|already|currently|still|also|too|anymore|these days)(?:$|[^a-z]))"
)
"""Words of change a fact said again carries: no part of its frame."""

_NUMBER: Final = LinearPattern(
    r"[0-9０-９]+(?:[.,][0-9]+)?|[一二两三四五六七八九十百千万半几]+"
    r"|(?i:(?:^|[^a-z])(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"a couple of|a few)(?:$|[^a-z]))"
)
"""A number in digits or words: a value a fact said again may change."""

_CHANNEL_WORD: Final = LinearPattern(
    r"(?i:(?:^|[^a-z])(?:"
    + "|".join(re.escape(w).replace("\\ ", r"\s+") for w in sorted(CHANNEL_CODES, key=len)[::-1])
    + r")(?:$|[^a-z]))"
)
"""A channel named even in passing (I miss emails): how to reach the user is a topic's."""

_BUILDING: Final = LinearPattern(
    r"大厦|大楼|写字楼|小区|花园|公寓|广场|园区|号楼|[0-9]+栋|单元|宿舍"
)
"""A building of an address or a drop-off: the profile's topics keep those."""

_PROBLEM: Final = (symptoms.PROBLEM_ZH, symptoms.PROBLEM_EN)
"""A problem of the goods: the record's, not the profile's."""

_KEPT: Final = frozenset({ActKind.FACT, ActKind.PREFERENCE})
"""The acts whose words may be kept; a statement too when the user or theirs is its
subject (:data:`_SELF`)."""

_FAMILY_ZH: Final = (
    r"娃|孩子|宝宝|儿子|女儿|闺女|老人|老公|老婆|媳妇|爸妈|父母"
    r"|爷爷|奶奶|外公|外婆|姥姥|姥爷|老爷子|老太太"
)
"""The user's family as the subject of a clause."""
_PEOPLE_ZH: Final = r"我|咱|俺|" + _FAMILY_ZH
"""The user and their family as the subject of a clause."""

_SELF: Final = LinearPattern(
    r"^\s*(?:(?:所以|因为|而且|但是|不过|反正|平时|一般|毕竟|其实|再说|主要是|就是)\s*)?"
    r"(?:(?:作为|身为)(?:一[个名位])?[\x{4e00}-\x{9fff}]{2}"
    rf"|{_PEOPLE_ZH}|家里|家中)"
    r"|^\s*(?:就是)?(?:平时|平常|每天|天天|经常|常年|一直)[^吗呢？?]*$"
    r"|(?i:^\s*(?:(?:so|and|but|because|also|plus|oh|btw|fyi|fwiw|tbh|since|as|cause)[\s,]+)*"
    r"(?:(?:i|i'm|i've|we|we're|we've|my|our)\s"
    r"|as\s+(?:someone|somebody|a\s+[a-z-]+(?:\s+[a-z-]+)?)\s+who(?:'s|\s+is|\s+has|\s)"
    r"|being\s+(?:a\s+)?[a-z-]+))"
)
"""A clause opening on the user, their household or their family as its subject, or on a
habit said of no one else (平时每周都去爬山)."""

_PARTS: Final = LinearPattern(r"(?P<pre>[^\s])\s+(?P<post>[^\x00-\x7f])")
_PARTS_EN: Final = LinearPattern(
    r"(?i:\s+(?:so|and|but|because|since|cause|'cause|as|though|although|while|plus)\s+)"
)
"""Where a clause holding a statement said in passing is cut to find it: a space before a
Chinese word, a conjunction in English."""

_PERSON: Final = LinearPattern(
    rf"^\s*(?:毕竟|其实|因为|反正|而且|平时|主要是|就是)?\s*(?:家里|家中)?\s*(?:{_PEOPLE_ZH})"
    r"|(?i:^\s*(?:(?:fwiw|tbh|since|as|so|and|but|because)[\s,]+)*(?:i|i'm|i've|we|my|our)\s)"
)
"""A part said of a person (the user or theirs), not of their home or their things."""

_HERE: Final = LinearPattern(r"(?:我们|咱们|我|咱)(?:这边|这里|这儿)")
"""Where the user lives (我们这边冬天没暖气), which is not the matter at hand (这边)."""

_DENIED: Final = LinearPattern(
    r"不是|并不|(?i:(?:^|[^a-z])(?:i'?m not|i am not|we'?re not|not a)\s)"
)
"""A statement of what the user is not: its words would read as what they are."""

_PAST_OR_WANT: Final = LinearPattern(
    r"了|过(?:$|[^敏滤])|刚|昨天|前天|上周|上个月|之前|那天|当时|想|"
    r"(?:^|[^主重])要|需要|打算|准备|希望|(?:选|拍|买|订|点|挑)的"
    r"|(?i:(?:^|[^a-z'])(?:i|we)\s+(?:just\s+)?(?:[a-z]+ed|got|bought|paid|sent|went|did|"
    r"didn'?t|was|were|had|tried|received|want|wanted|need|needed|would|'d|will|'ll|"
    r"can'?t find|am going|was going)(?:$|[^a-z]))"
    r"|(?i:(?:^|[^a-z])(?:yesterday|ago|last (?:week|month|time|night)|earlier|"
    r"this (?:morning|week))(?:$|[^a-z]))"
)
"""What happened or is wanted now: no standing fact (a statement's or a liking's words)."""

_NEWS_ZH: Final = LinearPattern(r"(?:都|已经|现在|如今|早就|终于)[^，,。；;\s了]{0,12}了")
"""A change of state told as news (闺女都会走路了, 儿子现在都上幼儿园了): its 了 is no past
event."""

_MEMBER: Final = LinearPattern(
    r"^\s*(?:毕竟|其实|因为|反正|而且|就是)?\s*(?:家里|我家|我们家)?\s*(?:的)?"
    rf"(?P<who>{_FAMILY_ZH})"
)
"""A part opening on a family member (not the user) as its subject."""

_TODAY: Final = LinearPattern(
    r"今天|今早|今晚|今儿|刚才|这会儿|(?i:(?:^|[^a-z])(?:today|tonight|right now)(?:$|[^a-z]))"
)
"""What holds today only (我今天一天都在家, I'm home all day today): no lasting fact."""


def frame(words: str) -> str:
    """``words`` without numbers and words of change, case-folded: what stays the same when
    the fact is said again with another value."""
    return " ".join(_NUMBER.sub(" ", _CHANGE.sub(" ", words.casefold())).split())


_OWN_LIMIT: Final = LinearPattern(
    r"^\s*我(?:从来)?(?:不能|吃不了|喝不了|受不了|碰不了|闻不了|用不了)"
    r"|(?i:^\s*(?:(?:oh|and|also|but|plus|btw)[\s,]+)*(?:i|we)\s+(?:really\s+)?"
    r"(?:can'?t|cannot|don'?t)\s+(?:stand|eat|have|drink|tolerate|handle|digest|wear|use|do)\s)"
)
"""What the user cannot take or do (我吃不了辣, I can't stand coriander): a trait of theirs,
not a problem of the goods."""

_NO_PLACE: Final = LinearPattern(
    r"(?i:^[^a-z]*(?:[a-z,;:]\s+)?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|"
    r"march|april|may|june|july|august|september|october|november|december)s?[^a-z]*$)"
)
"""A capitalised day or month, which the shape of a place name also finds (on Fridays)."""


def _places(piece: str) -> bool:
    """Whether ``piece`` names a place (:data:`PLACE`), a day or a month aside."""
    return any(_NO_PLACE.search(piece[a:b]) is None for a, b in PLACE.spans(piece))


def _lasting(piece: str, *, in_passing: bool = False) -> bool:
    """Whether a fact clause may be a lasting fact about the user (see the module
    docstring); ``in_passing``: a part of a clause said of a person (家里老太太牙口不好):
    what ails them is theirs, not the goods', and a topic it names (平时每周都去爬山) is kept
    in their words unless the topic's value holds them already."""
    if len(piece.strip()) < MIN_CHARS or find_pii(piece):
        return False
    if any(e.type in ID_LABELS for e in extract_entities(piece)):
        return False
    if (topics_of(piece) and not in_passing) or mentions(piece, CHANNEL, CHANNEL_CODES):
        return False
    if _places(piece):
        return False
    own = in_passing and _PERSON.search(piece) is not None
    problems = () if own or _OWN_LIMIT.search(piece) is not None else _PROBLEM
    refuses = (_AT_HAND, _FEELING, _NOW, _TODAY, _CHANNEL_WORD, _BUILDING, SIZE, *problems)
    return not any(rx.search(piece) is not None for rx in refuses)


class Kept(NamedTuple):
    """A fact kept in the user's words: its frame (the note's key), its words, and the family
    member it is news of (the member's word, 闺女; ``None``: a note of the user's)."""

    frame: str
    words: str
    news_of: str | None


def kept_facts(
    text: str,
    acts: Sequence[Act],
    taken: Sequence[str],
    words: Callable[[str], str],
    *,
    facts_only: bool = False,
) -> list[Kept]:
    """Each live fact clause of ``acts`` (offsets into ``text``) that names no topic, is
    lasting, and is not already held by ``taken`` (the values and instructions read from
    the turn); ``words`` makes a clause's kept words (tidied, put right, masked).
    ``facts_only`` (the user amended the session): no liking and no statement, which the
    change of mind may have been about."""
    held = [t.casefold() for t in taken if t]
    out = []
    for act in acts:
        if not act.live or act.topics or act.refusal:
            continue
        piece = text[act.start : act.end]
        said_of_self = act.kind is ActKind.STATEMENT and _SELF.search(piece) is not None
        whole = (act.kind in _KEPT or said_of_self) and not act.one_off
        if whole and (not facts_only or act.kind is ActKind.FACT) and _kept(piece, act.kind):
            found: list[tuple[str, str | None]] = [(piece, None)]
        elif facts_only and act.kind is not ActKind.FACT:
            continue  # a fact's parts are still facts (我是左撇子 普通剪刀在我手里剪不动)
        else:  # said in passing inside the clause (… 毕竟家里老爷子血糖高 …, … since I cycle)
            found = [(p, _news_of(p)) for p in _parts(piece) if _in_passing(p)]
        for part, news_of in found:
            said = words(part)
            folded = said.casefold()
            if not any(folded in h or h in folded for h in held):
                out.append(Kept(frame(said), said, news_of))
    return out


def _news_of(part: str) -> str | None:
    """The family member a part said in passing opens on, when it tells news of them."""
    member = _MEMBER.search(part)
    if member is None or _NEWS_ZH.search(part) is None:
        return None
    return member.group("who")


def _kept(piece: str, kind: ActKind) -> bool:
    """Whether a whole clause of ``kind`` is a lasting fact or liking of the user."""
    return _lasting(piece) and (kind is ActKind.FACT or _PAST_OR_WANT.search(piece) is None)


def _parts(piece: str) -> list[str]:
    """The parts of ``piece`` between the cuts of :data:`_PARTS`, when there are several."""
    cuts = sorted(_PARTS.spans(piece) + _PARTS_EN.spans(piece))
    if not cuts:
        return []
    bounds = [0, *(x for cut in cuts for x in cut), len(piece)]
    return [piece[bounds[i] : bounds[i + 1]] for i in range(0, len(bounds), 2)]


def _in_passing(part: str) -> bool:
    """Whether a part of a clause states something lasting of the user, said in passing:
    it opens on them as its subject, denies nothing, and tells nothing past or wanted."""
    if _SELF.search(part) is None or _DENIED.search(part) is not None:
        return False
    told = _NEWS_ZH.sub(lambda m: (m.group(0) or "")[:-1], part)
    return _lasting(_HERE.sub("我们", part), in_passing=True) and not _PAST_OR_WANT.search(told)
