"""What the user says was wrong in what they told an earlier session about themselves.

"上回说我家是地暖 我搞错了 那是我姐家 我家是暖气片", "之前跟你们说我乳糖不耐受 其实不是",
"上回说的过敏那个是我搞混了 过敏的是我闺女", "ignore the latex thing, I was mixing it up",
"that dishwasher thing I told you last time — wrong, that's my parents' place", "correction
from last time, the dog isn't mine": the user points back at something they said of
themselves (a time before, a verb of saying, the thing said opening on the user or their
home) and denies it. What they disowned (its words, the subject aside: 地暖, 乳糖不耐受,
dishwasher, dog) must stop being asserted anywhere: the profile slot holding it takes what
they say instead, and remembers the disowned words as its former value, so that earlier
records and notes show them as replaced (:mod:`policies.superseded`).

A denial with no pointer back ("我不是素食者") is the act reader's negation, and a value put
right in the same breath ("我对虾过敏…哦不对 是螃蟹") its correction; neither is read here.

Pure functions: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from policies.linear_re import LinearPattern
from policies.pii import find_pii, mask_pii
from unstructured_memory.summariser import cues
from values.sessions import Lang

__all__ = ["MAX_NOW_CHARS", "Disowned", "disowned"]

MAX_NOW_CHARS: Final = 120
"""Longest account of what holds instead that is kept (characters)."""


@dataclass(frozen=True, slots=True)
class Disowned:
    """Words the user disowned (``words``: 地暖, dishwasher) and their masked account of what
    holds instead (``now``, empty when they gave none)."""

    words: str
    now: str


_FAMILY_ZH: Final = (
    r"(?:闺女|女儿|儿子|孩子|小孩|宝宝|娃|老公|老婆|媳妇|爸妈|父母|老人|爷爷|奶奶|外公|外婆|姥姥|"
    r"姥爷|爸|妈)"
)
_FAMILY_EN: Final = r"(?:son|daughter|kids?|wife|husband|partner|mum|mom|dad|baby)"
_BACK_ZH: Final = r"(?:之前|上回|上次|以前|那天|前几天|前面|刚才|昨天|上周|那次)"
_DENY_ZH: Final = r"(?:不是|不对|搞错了|说错了|弄错了|记错了|有误|是错的|不准确|没有的事)"
_SAID_ZH: Final = LinearPattern(
    _BACK_ZH + r"[^，,。！？!?；;\n]{0,8}?(?:说|讲|提|告诉[你您]们?)(?:过|的)?\s*"
    r"(?P<what>(?:我|咱|家里|"
    + _FAMILY_ZH
    + r")[^，,。！？!?；;\n]{1,16}?)(?:那个|那事|这事|的事|那句)?"
    r"(?:[，,、\s]|$)+(?:其实|实际上|但是?|可)?\s*(?:我)?" + _DENY_ZH
)
"""A time before, a verb of saying, what was said of the user, a denial."""

_MIXED_ZH: Final = r"(?:搞混了|弄混了|记混了|说混了|搞错了|弄错了|记错了|说错了)"
_NAMED_ZH: Final = LinearPattern(
    _BACK_ZH + r"[^，,。！？!?；;\n]{0,6}?(?:说|讲|提)(?:过|的)?的?\s*"
    r"(?P<what>[^，,。！？!?；;\n\s]{2,10}?)(?:那个|那事|这事|的事)[，,\s]*(?:其实)?(?:是我)?"
    + _MIXED_ZH
)
"""A time before, a verb of saying, the thing said named without its subject and pointed at
(那个, 那事), a mix-up the user owns (上回说的过敏那个是我搞混了)."""
_NOT_OF_SELF_ZH: Final = LinearPattern(r"地址|电话|手机号|单号|订单|时间|日期|尺码|颜色|型号")
"""What a mix-up names that is an order's or the vault's, not a fact of the user's."""

_DENY_EN: Final = (
    r"(?:wrong|not true|not right|not correct|incorrect|a mistake|my mistake|my bad|"
    r"scratch that|not the case|i'?m not|i am not|i don'?t|we don'?t|i'?m actually not)"
)
_SAID_EN: Final = LinearPattern(
    r"(?i:(?:that|the)\s+(?P<what>[a-z][a-z' -]{1,30}?)\s+(?:thing|bit|part|stuff)\s+i\s+"
    r"(?:told you|said|mentioned)[^.!?;]{0,24}?[\s,:;—–-]+(?:(?:it\s+)?(?:was|is|'s)\s+)?"
    + _DENY_EN
    + r"|i\s+(?:told you|said|mentioned)\s+(?:that\s+)?"
    r"(?P<what2>(?:(?:i|we)(?:'m|'ve| am| have| had| was| were| own| use)|my\s+"
    + _FAMILY_EN
    + r"\s+(?:is|was|has|had))\s[^.!?;,:—–]{1,30}?)"
    r"[\s,:;—–-]+(?:(?:but|actually|well|that'?s|that was|it was)\s+)*" + _DENY_EN + r")"
)
"""A thing the user told or said before, and a denial of it."""

_IGNORED_EN: Final = LinearPattern(
    r"(?i:(?:ignore|forget|scratch|disregard|never\s*mind|nvm)\s+(?:the|that|my)\s+"
    r"(?P<what>[a-z][a-z' -]{1,30}?)\s+(?:thing|bit|part|stuff)[^.!?;]{0,40}?"
    r"(?:mix(?:ed|ing)\s+(?:it\s+|that\s+)?up|confus|wrong|a mistake|not true|kidding|joking))"
)
"""A thing the user said, named and set aside as a mix-up or an error ("ignore the latex
thing, I was mixing it up with my roommate")."""

_NOT_MINE: Final = LinearPattern(
    r"(?i:(?:the|that|my)\s+(?P<what>[a-z]+)\s+(?:isn'?t|is not|wasn'?t|was not)\s+"
    r"(?:actually\s+)?(?:mine|ours))"
)
"""A thing disowned as not the user's ("the dog isn't mine"), said with a pointer back."""

_BACK_EN: Final = LinearPattern(
    r"(?i:last time|before|earlier|told you|i said|i mentioned|correction|the other day)"
)

_SUBJECT: Final = LinearPattern(
    r"^(?:(?:我们家|我家|咱家|家里|我们|咱们|我|咱)" + _FAMILY_ZH + r"?|" + _FAMILY_ZH + r")"
    r"(?:是|有|对|得了|得过|有点|属于|都是)?"
    r"|(?i:^(?:(?:i|we)(?:'m| am| have| had| was| were| own| use|'ve)?\s+"
    r"|my\s+" + _FAMILY_EN + r"\s+(?:is|was|has|had)\s+)?"
    r"(?:(?:got|a|an|the|some|my|our|allergic to)\s+)*)"
)
"""The subject a disowned statement opens on, and the verb after it: not the words disowned."""

_TAIL: Final = LinearPattern(r"(?:的|了|啊|呀|嘛)+$|(?i:\s+(?:thing|stuff)$)")
_CLAUSE: Final = {"zh": cues.CLAUSE_ZH, "en": cues.CLAUSE_EN}
_MIN_WORDS: Final = 2
"""Characters the disowned words need (one says too little to find it again)."""


def _words(what: str) -> str:
    """The disowned words of ``what``: its subject and verb aside, trailing particles off."""
    m = _SUBJECT.match(what)
    rest = what[m.end() :] if m is not None else what
    return _TAIL.sub("", rest.strip()).strip()


def _now(text: str, at: int, lang: Lang) -> str:
    """The user's account after a denial ending at ``at``: the clauses after it that tell
    rather than ask or request, masked, at most :data:`MAX_NOW_CHARS`."""
    kept: list[str] = []
    for a, b in _CLAUSE[lang].spans(text[at:]):
        piece = text[at + a : at + b].strip(" \t，,、—–-")
        if not piece:
            continue
        if cues.QUESTION.search(piece) is not None:
            break
        kept.append(" ".join(piece.split()))
    joined = ("，" if lang == "zh" else ", ").join(kept)
    return mask_pii(joined)[0][:MAX_NOW_CHARS]


def disowned(text: str, lang: Lang) -> list[Disowned]:
    """What the user's turn ``text`` disowns of what they said of themselves before (see the
    module docstring), in order; nothing holding PII (the vault's values are not words to
    find again)."""
    found: list[tuple[str, int]] = []
    if lang == "zh":
        found += [(m.group("what") or "", m.end()) for m in _SAID_ZH.finditer(text)]
        found += [
            (what, m.end())
            for m in _NAMED_ZH.finditer(text)
            if not _NOT_OF_SELF_ZH.search(what := m.group("what") or "")
        ]
    else:
        for m in _SAID_EN.finditer(text):
            found.append((m.group("what") or m.group("what2") or "", m.end()))
        found += [(m.group("what") or "", m.end()) for m in _IGNORED_EN.finditer(text)]
        if _BACK_EN.search(text) is not None:
            found += [(m.group("what") or "", m.end()) for m in _NOT_MINE.finditer(text)]
    out: list[Disowned] = []
    for what, end in found:
        words = _words(what)
        if len(words) < _MIN_WORDS or find_pii(words) or any(d.words == words for d in out):
            continue
        out.append(Disowned(words, _now(text, end, lang)))
    return out
