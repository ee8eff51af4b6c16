"""The user's own words a record keeps: what the rules' sentence does not say.

A record's sentence says what its slots read: the request, the order, the product, the
reason, the outcome, the date. What the user said that no slot reads (``别的电器都正常``,
``the puddle smells burnt``, ``the kitchen is humid``) would be lost, and a later session
would ask again. The record quotes it after the sentence, masked:
``（用户原话：…）`` / ``(in the user's words: …)``.

Quoted: the user's live statements, requests the sentence's head does not state (no
refund, return… of their own) and questions, in order, that add words the sentence lacks,
up to :data:`BUDGET` characters. A question where a refund or a parcel is that names no
thing (a product, a model, an amount; an id is the head's) asks what the record's head and
business lines answer (``多久能到账``, ``where is my package``) and is not quoted. Lasting
statements (instructions, preferences, facts about the user) are the profile's and are
blanked in the view already.

Never quoted, so a record never says again what the user put right, took back or keeps in
the profile, where it would turn stale when they change it:

* anything of a session in which the user corrected a value, took back or refused a
  request or a topic, or changed their mind (:data:`CHANGED_MIND`: 不行, 算了, 改成, 还是…吧,
  再想想, instead, never mind, cancel…): the amended sentence alone speaks for it;
* a clause naming a place or a size, or stating a topic the profile keeps (where they live,
  a carrier, a drop-off…);
* a clause holding PII (the vault has it);
* a clause of under four characters (three words), or one whose words the sentence
  mostly says already.

Pure functions of the view and the acts: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Final

from policies.linear_re import LinearPattern
from policies.pii import find_pii
from unstructured_memory.summariser.amended import Amended, words_in
from unstructured_memory.summariser.choice import flat
from unstructured_memory.summariser.intent import classify_intent
from unstructured_memory.summariser.topics import CITY_ZH, topics_of
from values.dialogue import ActKind, Dialogue
from values.sessions import Intent, Lang

__all__ = [
    "BUDGET",
    "CHANGED_MIND",
    "PLACE",
    "SIZE",
    "after_sentence",
    "amended",
    "names_a_thing",
    "quote",
    "settled_from",
    "with_own_words",
]

BUDGET: Final = {"zh": 60, "en": 160}
"""Characters of quoted words a record keeps at most."""

_QUOTED: Final = frozenset({ActKind.REQUEST, ActKind.QUESTION, ActKind.STATEMENT})
"""The acts whose words may be quoted (never small talk, a correction or a retraction)."""

_THINGS: Final = frozenset({"PRODUCT", "BRAND", "MODEL", "AMOUNT"})
"""What a status question must name to be quoted (an id it names is the head's and the
business lines')."""
_STATUS: Final = frozenset({Intent.REFUND_STATUS, Intent.TRACKING_INQUIRY})

CHANGED_MIND: Final = LinearPattern(
    r"不行|不对|算了|改成|改到|换成|说错|打错|记错|看错|写错|取消|再想想|再看看|考虑一下|不用了|"
    r"还是(?:[^，,。！？!?；;]{0,12}吧|要|选|拿|买|换|用|算|先|等)|"
    r"(?i:instead|won't work|rather|(?:^|[,.;!?—–-]\s*|(?:no|oh|wait|hmm|um|well)[,\s]+)actually"
    r"|meant|typo|mistake|cancel|"
    r"think about it|hold off|never ?mind)"
)
"""Words of a user changing their mind, putting something right or putting it off; 还是 as
a choice (还是 256 吧, 还是要蓝色), not as "still" (排了气还是响), nor a fault (doesn't work,
something's wrong); "actually" opening a clause, not inside one ("will it actually fit")."""

PLACE: Final = LinearPattern(
    r"[\u4e00-\u9fff]{1,4}(?:省|市|区|县|镇)|"
    + CITY_ZH
    + r"|[a-z,;:]\s+[A-Z][a-z]+(?:\s+[A-Z]{2})?(?:$|[^A-Za-z])"
)
"""A place: a Chinese name with its administrative tail or a city by name, an English
capitalised word inside a clause (``deliver to Austin TX``)."""

SIZE: Final = LinearPattern(
    r"\d+(?:\.\d+)?\s*(?:码|号|cm|厘米|公斤|斤|kg)|"
    r"(?i:size\s*\d|\d+(?:\.\d)?\s*(?:inch|in(?:$|[^a-z])))"
)
"""A size or a measure (the profile keeps the user's sizes; a later one replaces them)."""

_MIN_CHARS: Final = 4
_MIN_WORDS: Final = 3
_SAID: Final = 0.5
"""The share of a clause's words the sentence holds at which the clause adds nothing."""

_WORD: Final = LinearPattern(r"[0-9A-Za-z]+|[\u4e00-\u9fff]")


def _runs(text: str) -> list[str]:
    """The Latin and digit runs of ``text``, case-folded, and its Chinese characters."""
    return [text[a:b].casefold() for a, b in (m.span() for m in _WORD.finditer(text))]


def _adds_words(clause: str, said: str, lang: Lang) -> bool:
    """Whether ``clause`` is long enough and says what ``said`` (the sentence and the
    words quoted so far, :func:`flat`) mostly does not: its Latin and digit runs and the
    bigrams of its Chinese characters are compared."""
    runs = _runs(clause)
    if lang == "zh" and sum(len(r) for r in runs) < _MIN_CHARS:
        return False
    if lang == "en" and len(clause.split()) < _MIN_WORDS:
        return False
    units = [r for r in runs if len(r) > 1]
    units += [a + b for a, b in pairwise(runs) if len(a) == len(b) == 1]
    return bool(units) and sum(u in said for u in units) < _SAID * len(units)


def names_a_thing(view: Amended, a: int, b: int) -> bool:
    """Whether the view names a product, a brand, a model or an amount in ``[a, b)``."""
    return any(e.type in _THINGS and a <= e.start < b for e in view.entities)


def _asks_status(raw: str, view: Amended, a: int, b: int) -> bool:
    """Whether a question asks where a refund or a parcel is and names no thing: the
    record's head and its business lines answer it (``多久能到账``, ``where is my package``)."""
    if names_a_thing(view, a, b):
        return False
    return classify_intent(raw).label in _STATUS


def amended(dialogue: Dialogue, said: Sequence[str]) -> bool:
    """Whether the user amended the session: corrected a value, took back or refused a
    request or a topic, or changed their mind in any of their turns ``said``
    (:data:`CHANGED_MIND`)."""
    if dialogue.corrections or dialogue.retracted or dialogue.withdrawn_topics:
        return True
    if any(
        a.kind in (ActKind.CORRECTION, ActKind.RETRACTION) or a.refusal
        for a in dialogue.acts
        if a.role == "user"
    ):
        return True
    return any(CHANGED_MIND.search(text) for text in said)


def settled_from(dialogue: Dialogue, view: Amended, turns: dict[int, tuple[int, int]]) -> int:
    """Where the user's words are settled in the view: after the end of the last clause
    amending the session (a correction, a retraction, a refusal, a change of mind), else
    its start."""
    out = 0
    for act in dialogue.acts:
        if act.role != "user" or act.turn not in turns:
            continue
        start = turns[act.turn][0]
        a, b = start + act.start, start + act.end
        if (
            act.kind in (ActKind.CORRECTION, ActKind.RETRACTION)
            or act.refusal
            or CHANGED_MIND.search(view.view[a:b]) is not None
        ):
            out = max(out, b)
    if dialogue.corrections or dialogue.retracted or dialogue.withdrawn_topics:
        out = max([out, *(turns[c.turn][1] for c in dialogue.corrections if c.turn in turns)])
    return out


def quote(
    sentence: str,
    view: Amended,
    turns: dict[int, tuple[int, int]],
    dialogue: Dialogue,
    *,
    after: int,
    lang: Lang,
    tidy: Callable[[str], str],
) -> list[str]:
    """The user's clauses the record quotes after ``sentence`` (see the module docstring).

    ``turns`` maps the index of each of the user's turns to its ``(start, end)`` in the
    view; ``after``: where the user's words are settled (:func:`settled_from`): nothing said
    before it is quoted; ``tidy`` makes a raw clause the record's words (lead words off,
    masked, cut)."""
    said = flat(sentence)
    out: list[str] = []
    used = 0
    for act in dialogue.live("user"):
        if act.kind not in _QUOTED or act.turn not in turns:
            continue
        start = turns[act.turn][0]
        a, b = start + act.start, start + act.end
        if a < after:
            continue  # said before the user's last change of mind
        if act.kind is ActKind.REQUEST and act.families:
            continue  # the sentence's head states the request
        raw = view.view[a:b]
        if not words_in(raw) or find_pii(raw) or topics_of(raw):
            continue  # blanked in the view (a value rejected or put right), PII, a topic
        if act.kind is ActKind.QUESTION and _asks_status(raw, view, a, b):
            continue
        if PLACE.search(raw) or SIZE.search(raw):
            continue
        clause = tidy(raw)
        if not _adds_words(clause, said, lang):
            continue
        if used + len(clause) > BUDGET[lang]:
            break
        out.append(clause)
        used += len(clause)
        said += flat(clause)
    return out


def with_own_words(sentence: str, words: Sequence[str], lang: Lang) -> str:
    """``sentence`` with the quoted ``words`` after it."""
    return after_sentence(sentence, words, lang, ("用户原话", "；"), ("in the user's words", "; "))


def after_sentence(
    sentence: str,
    parts: Sequence[str],
    lang: Lang,
    zh: tuple[str, str],
    en: tuple[str, str],
) -> str:
    """``sentence`` with ``parts`` after it in brackets, under a label: ``zh`` / ``en`` give
    the label and the separator (``（用户原话：…；…）``, ``(in the user's words: …; …).``)."""
    if not parts:
        return sentence
    if lang == "zh":
        return f"{sentence}（{zh[0]}：{zh[1].join(parts)}）"
    return f"{sentence.rstrip('.')} ({en[0]}: {en[1].join(parts)})."
