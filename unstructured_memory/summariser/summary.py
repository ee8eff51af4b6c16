"""Session summaries and single-text analysis, built by rules: no LLM.

:func:`summarise` turns a transcript into a :class:`SessionSummary`: the intent
of the user's turns, the entities of the whole transcript, and a one-sentence
interaction record filled from intent-specific templates (Chinese or English,
after the user's language), e.g.::

    用户因订单 88231 的比特 S10 Pro 扫地机（1999 元）无法回充申请退款，
    退款编号 RF20260629001，预计 1-3 个工作日到账

Slots: every identifier said (orders, refunds, returns, exchanges, work
orders, complaint tickets, coupons, invoices, tracking numbers and codes of an
identifier's shape), so nobody has to repeat one; brand, model and product (the
user's first mention); an amount (the user's, else any); the outcome the agent
gave (a ticket opened, an exchange approved, a refund issued:
:mod:`~unstructured_memory.summariser.outcome`); the expected date or duration
(the last one the assistant gave, with the verb it used: 明天发出, 1-3 个工作日到账);
and a short reason or question clause from the user's turns (for an enquiry
with neither, the user's first sentence naming a product, model, amount or
order, else their first sentence). Missing slots are left out.

PII: ``summary_text`` and every entity hold masked values only
(:mod:`policies.pii`); the clear PII of the *user's* turns is returned in
``pii`` for the caller's encrypted vault. Entity and PII offsets refer to the
transcript text: the kept non-empty turn texts joined by ``"\\n"``.

Bounds: each turn is checked with :func:`policies.validation.check_text`
(over 64 KiB raises :class:`~policies.errors.InvalidText`). A transcript over
:data:`MAX_TRANSCRIPT_BYTES` in total is cut, not refused: the earliest turns
within half the budget and the latest within the rest are kept, the middle
dropped, since openings state the problem and endings its resolution.

:class:`SessionSummary` is ``values.sessions``'s (what a caller receives),
re-exported here for one release.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from typing import Final

from policies.errors import InvalidText
from policies.linear_re import LinearMatch, LinearPattern, Subject
from policies.pii import PiiMatch, find_pii, mask_pii
from policies.superseded import MARKER_EN, MARKER_ZH, marker_for, unsay
from policies.validation import (
    MAX_ID_CHARS,
    MAX_TEXT_BYTES,
    check_field_length,
    check_text,
    check_user_id,
)
from unstructured_memory.summariser import symptoms
from unstructured_memory.summariser.acts import around, read_dialogue
from unstructured_memory.summariser.agreed import agreed, with_agreed, without_agreed
from unstructured_memory.summariser.amended import Amended, amend, substitute, words_in
from unstructured_memory.summariser.choice import Choice, final_choice, flat, options, stated_choice
from unstructured_memory.summariser.entities import (
    ID_LABELS,
    brand_of,
    cue_before,
    detect_language,
    extract_entities,
)
from unstructured_memory.summariser.intent import classify_intent, classify_turns
from unstructured_memory.summariser.outcome import committed_items, find_outcomes, phrase
from unstructured_memory.summariser.own_words import (
    names_a_thing,
    quote,
    settled_from,
    with_own_words,
)
from unstructured_memory.summariser.replanned import moved_on, schedule_words, settled_words
from unstructured_memory.summariser.variants import confirmed_variant
from values.dialogue import Act, ActKind, Dialogue, Utterance
from values.entities import Entity
from values.sessions import Intent, Lang, Outcome, SessionSummary, Turn

__all__ = [
    "MAX_TRANSCRIPT_BYTES",
    "SessionSummary",
    "TextAnalysis",
    "analyse_text",
    "summarise",
    "taken_back",
    "withdrawn_heads",
]

MAX_TRANSCRIPT_BYTES: Final = MAX_TEXT_BYTES
"""Largest transcript summarised in full (UTF-8 bytes of the joined turns); longer ones are cut."""


@dataclass(frozen=True, slots=True)
class TextAnalysis:
    """Analysis of one free text: ``masked_text`` and ``entities`` hold no clear PII."""

    masked_text: str
    entities: list[Entity]
    intent: Intent
    intent_confidence: float
    language: Lang
    pii: list[PiiMatch] = field(repr=False)  # clear values: never in a repr or a log


def analyse_text(text: str) -> TextAnalysis:
    """Mask, tag and classify one text (an ad-hoc memory write).

    Raises :class:`~policies.errors.InvalidText` for empty, oversized or invalid text.
    """
    text = check_text(text)
    masked, pii = mask_pii(text)
    result = classify_intent(text)
    return TextAnalysis(
        masked_text=masked,
        entities=extract_entities(text),
        intent=result.label,
        intent_confidence=result.confidence,
        language=detect_language(text),
        pii=pii,
    )


# --------------------------------------------------------------------------- transcript


@dataclass(frozen=True, slots=True)
class _Span:
    role: str
    start: int
    end: int
    index: int
    """Position of the turn in the turns given."""


def _keep_within_budget(turns: list[tuple[int, Turn]]) -> list[tuple[int, Turn]]:
    sizes = [len(t.text.encode("utf-8")) + 1 for _, t in turns]
    if sum(sizes) <= MAX_TRANSCRIPT_BYTES:
        return turns
    head: list[int] = []
    used = 0
    for i, size in enumerate(sizes):
        if used + size > MAX_TRANSCRIPT_BYTES // 2:
            break
        head.append(i)
        used += size
    tail: list[int] = []
    for i in range(len(turns) - 1, head[-1] if head else -1, -1):
        if used + sizes[i] > MAX_TRANSCRIPT_BYTES:
            break
        tail.append(i)
        used += sizes[i]
    return [turns[i] for i in head + tail[::-1]]


def _prepare(turns: Sequence[Turn]) -> tuple[str, list[_Span]]:
    if isinstance(turns, str | bytes) or not isinstance(turns, Sequence):
        raise InvalidText("turns must be a sequence of Turn", field="turns")
    kept: list[tuple[int, Turn]] = []
    for i, turn in enumerate(turns):
        if not isinstance(turn, Turn):
            raise InvalidText(f"turns[{i}] is not a Turn", field="turns")
        text = check_text(turn.text, field=f"turns[{i}].text", allow_empty=True)
        if text.strip():
            kept.append((i, turn))
    if not any(t.role == "user" for _, t in kept):
        raise InvalidText("transcript has no non-empty user turn", field="turns")
    kept = _keep_within_budget(kept)
    spans: list[_Span] = []
    pos = 0
    for i, turn in kept:
        spans.append(_Span(turn.role, pos, pos + len(turn.text), i))
        pos += len(turn.text) + 1
    return "\n".join(t.text for _, t in kept), spans


def _role_at(spans: list[_Span], offset: int) -> str:
    i = bisect.bisect_right(spans, offset, key=lambda s: s.start) - 1
    if i >= 0 and offset < spans[i].end:
        return spans[i].role
    return "system"


def _occurred_at(turns: Sequence[Turn]) -> datetime:
    for turn in reversed(turns):
        if turn.time is not None:
            t = turn.time
            return t.replace(tzinfo=UTC) if t.tzinfo is None else t
    return datetime.now(UTC)


# --------------------------------------------------------------------------- slots

# Patterns run under RE2 in linear time (policies.linear_re); those needing
# Python's Unicode \b stay on re, each shown linear by tests/test_regex_linear.py.
_PROBLEM_ZH = symptoms.PROBLEM_ZH
_PROBLEM_EN = symptoms.PROBLEM_EN
_PROBLEM_GENERIC = symptoms.GENERIC
_GOES_ON = LinearPattern(
    r"退|换|修|赔|补偿|投诉|麻烦|请|帮我|帮忙|给我|能不能|可不可以|怎么办|咋办|要求|希望|还是|行吧|好的|"
    r"谢谢|我想|想要|吗|呢|[?？]|(?i:refund|return|replace|exchange|repair|please|can you|"
    r"could you|would you|i want|i'd like|i need|thanks|help)"
)
"""What ends the description of a problem: a request, a question, thanks."""
_QUESTION_ZH = LinearPattern(
    r"吗|呢|怎么|如何|能否|是否|多少|多久|哪|什么|有没有|能不能|可不可以|[?？]"
)
_QUESTION_EN = LinearPattern(
    r"\?|(?i:^\s*(?:(?:hi|hello|hey|so|and|but|well|ok|okay|also|then|sorry)[\s,]+)*"
    r"(?:how|what|which|when|where|why|who|does|do|did|is|are|was|can|could|will|would"
    r"|should|any|has|have)(?P<post>$|[^A-Za-z']))"
)
"""A question: a question mark, or a clause opening with a question word or an inverted
auxiliary (``can you``, ``is it``); ``I will wait`` and ``she can build`` are not."""
_CLAUSE_ZH = LinearPattern(r"[^，。！？!?；;,\n]+")
_CLAUSE_EN = LinearPattern(r"(?:[^.,!?;\n]|[.,]\d)+")  # a decimal point does not end a clause
_SUBJECTLESS_EN = re.compile(
    r"(?i)^(?:doesn'?t|does not|won'?t|will not|can'?t|cannot|isn'?t|is|was|stopped|keeps|"
    r"never|arrived|came|broke|leaks?)\b(?!\s+(?:this|that|it|there|these|those|the|a|an|my|"
    r"your|he|she|they)\b)"
)
"""A clause that says what happened without its subject ("stopped working"); one that asks
("Is this rain cover compatible…") has its subject after the verb."""
_LEAD_ZH = LinearPattern(
    r"^(?:您好|你好|亲|请问|麻烦|就是|但是|可是|然后|而且|现在|已经|还|我们的|咱们的|我的|我|这个|那个|"
    r"这台|那台|它们|它|这款|这|那|你们的|你们|的|了|是|，|\s)"
)
"""One lead word of a clause the record drops (the record speaks of 用户 already)."""
_BOUND_ZH = LinearPattern(
    r"^(?:我们|咱们?|俺们|俺家|我俩|我家|[这那](?:[些里儿边么样]|会儿)|的确|了解|是否)"
)
"""Words a lead word opens without being one (我们, 这些, 那边, 是否): the lead stops there."""
_WE_ZH = LinearPattern(
    r"^(?:我们|咱们|咱|俺们|俺|我)(?:(?P<two>俩|两个|两人|两口子?)|(?P<home>家)|(?P<org>公司|单位|店|"
    r"团队|部门|学校|工厂|厂里?|办公室|宿舍|小区|楼[下上里道]|门口|附近|这[边里儿]|那[边里儿]|村|镇|"
    r"财务|老板|领导|经理|同事|老师)|(?P<we>))"
)
"""A clause opening with the user's household or company said in the first person plural
(我们家, 我俩, 咱家, 我们公司, 我们楼下): said as the user's (用户家, 用户两人, 用户公司,
用户楼下); a plural said alone is the user's household (我们 → 用户一家)."""


def _ours(piece: str) -> str:
    """``piece`` with the first person plural opening it said as the user's (:data:`_WE_ZH`);
    as it is when it opens with another word."""
    we = _WE_ZH.match(piece)
    if we is None:
        return piece
    if we.group("two") is not None:
        return "用户两人" + piece[we.end() :]
    if we.group("home") is not None:
        return "用户家" + piece[we.end() :]
    if we.group("org") is not None:
        return "用户" + piece[we.start(_WE_ZH.groupindex["org"]) :]
    return "用户一家" + piece[we.end() :]


def _lead_off(piece: str) -> str:
    """``piece`` without its lead words (:data:`_LEAD_ZH`), whole words only: a plural of the
    first person becomes the user's (:data:`_WE_ZH`), a word a lead word opens stays."""
    while piece:
        lead = _LEAD_ZH.match(piece)
        bound = _BOUND_ZH.match(piece)
        if bound is not None and (lead is None or lead.end() <= bound.end()):  # 我们的 is lead
            return _ours(piece)
        if lead is None or lead.end() == 0:
            return piece
        piece = piece[lead.end() :]
    return piece


_TRAIL_ZH = "了啊呀呢吧哦嘛的～~" + "".join(c for c in map(chr, range(0x3001)) if c.isspace())
"""Particles and white space stripped from the end of a clause (``str.rstrip``)."""
_LEAD_EN = LinearPattern(
    r"(?i)^(?:(?:hi|hello|hey|so|and|but|well|um|ok|okay|please)(?P<post>$|[^A-Za-z'])|,|\s)+"
)
"""Greetings and fillers opening a clause, as whole words (``so``, never ``so`` of
``something``)."""
_PRONOUNS_EN = (
    (re.compile(r"\bI'm\b"), "they're"),
    (re.compile(r"\bI am\b"), "they are"),
    (re.compile(r"\bI've\b"), "they've"),
    (re.compile(r"\bI\b"), "they"),
    (re.compile(r"(?i)\bmyself\b"), "themselves"),
    (re.compile(r"(?i)\bmy\b"), "their"),
    (re.compile(r"(?i)\bme\b"), "them"),
)
_PRODUCTISH: Final = frozenset({"PRODUCT", "BRAND", "MODEL", "ORDER_ID", "AMOUNT"})
_MAX_CLAUSE: Final = 40


class _AfterProducts:
    """Where a clause goes on after its last product entity before the cue.

    Asked for clauses in order of position; each entity is looked at for one
    clause at most, so all questions together take linear time.
    """

    def __init__(self, entities: list[Entity]) -> None:
        self._entities = entities  # sorted by start, not overlapping
        self._next = 0

    def __call__(self, clause_start: int, cue_at: int) -> int:
        ents = self._entities
        while self._next < len(ents) and ents[self._next].start < clause_start:
            self._next += 1
        start = clause_start
        i = self._next
        while i < len(ents) and ents[i].start < cue_at:
            if ents[i].type in _PRODUCTISH and ents[i].end <= cue_at:
                start = max(start, ents[i].end)
            i += 1
        return start


def _clause(
    text: str,
    spans: list[_Span],
    entities: list[Entity],
    cue: re.Pattern[str] | LinearPattern,
    lang: Lang,
    *,
    fix: Callable[[str], str],
    problem: bool = False,
) -> str:
    """The first user clause holding ``cue`` (a question: also a clause ending in ``?``),
    trimmed to what follows its last product entity.

    A ``problem`` clause that names no symptom (``椅子有问题``) gives way to a later one
    that does, and the description goes on over the clauses of its sentence that follow it
    until a request or a question (``一坐下去就吱吱响，转一下也响，感觉是底下气杆那里``).
    A question that is only a tag (``…, right?``) is quoted with the clause before it.
    """
    clause_re = _CLAUSE_ZH if lang == "zh" else _CLAUSE_EN
    after = _AfterProducts(entities)
    fallback = ""
    for span in spans:
        if span.role != "user":
            continue
        pieces = [
            (span.start + a, span.start + b)
            for a, b in clause_re.spans(text[span.start : span.end])
        ]
        hits = _hits(cue, text, span) if problem else None
        for k, (clause_start, clause_end) in enumerate(pieces):
            clause = text[clause_start:clause_end]
            if hits is None:
                found = cue.search(clause)
                hit = found.start() if found is not None else None
            else:
                at = bisect.bisect_left(hits, clause_start)
                hit = hits[at] - clause_start if at < len(hits) and hits[at] < clause_end else None
            asked = not problem and text[clause_end : clause_end + 1] in ("?", "？")
            if hit is None and not asked:
                continue
            start = _tagged(text, pieces, k) if asked else clause_start
            if start < 0:
                continue  # a tag on what stopped counting asks nothing
            if start == clause_start and lang == "zh" and hit is not None:  # "扫地机无法回充"
                start = after(clause_start, clause_start + hit)
                if not problem and clause_end - start < _SHORT_QUESTION:
                    start = clause_start  # "那个法拉利怎么样": the question needs its subject
            end = clause_end
            if problem:
                end = _description_end(text, pieces, k, lang)
            piece = _tidy(fix(text[start:end]), lang)
            if not piece:
                continue
            if problem and _PROBLEM_GENERIC.search(_tidy(clause, lang)) is not None:
                fallback = fallback or piece
                continue
            return piece
    return fallback


def _tagged(text: str, pieces: Sequence[tuple[int, int]], k: int) -> int:
    """Where the question ``pieces[k]`` is quoted from: its own start, or for a question
    that is only a tag (``…, right?``) the start of the clause it asks about (``-1`` when
    that clause stopped counting)."""
    a, b = pieces[k]
    if _TAG_QUESTION.fullmatch(text[a:b].strip()) is None:
        return a
    if not k or not words_in(text[pieces[k - 1][0] : pieces[k - 1][1]]):
        return -1
    return pieces[k - 1][0]


def _hits(cue: re.Pattern[str] | LinearPattern, text: str, span: _Span) -> list[int] | None:
    """Where ``cue`` matches in the turn at ``span`` (offsets into ``text``), found in one
    scan of the turn rather than a search per clause; ``None`` for a Python pattern."""
    if not isinstance(cue, LinearPattern):
        return None
    turn = " " + text[span.start : span.end]  # a character before the first word
    return [max(span.start, span.start + a - 1) for a, _ in cue.scan(Subject(turn))]


_SHORT_QUESTION: Final = 4
"""A question left shorter than this once its product is cut off keeps the product."""
_TAG_QUESTION = LinearPattern(
    r"(?i:right|ok|okay|correct|yes|no|yeah|是吧|对吧|对不对|是不是|行吗|好吗|可以吗)"
)
_SENTENCE_END = frozenset("。！？!?；;\n.")


def _description_end(text: str, pieces: list[tuple[int, int]], k: int, lang: Lang) -> int:
    """Where the description of a problem starting in clause ``k`` ends: the clauses of
    the same sentence that follow it, up to a request or a question, within the record's
    clause length."""
    limit = _MAX_CLAUSE if lang == "zh" else 2 * _MAX_CLAUSE
    start, end = pieces[k]
    for a, b in pieces[k + 1 :]:
        between = text[end:a]
        if any(c in _SENTENCE_END for c in between) or b - start > limit:
            break
        nxt = text[a:b]
        if not nxt.strip() or _GOES_ON.search(nxt) is not None:
            break
        end = b
    return end


def _tidy(piece: str, lang: Lang) -> str:
    """A piece of the user's text as the record quotes it: lead words and particles off,
    in the third person (English), masked, cut to the clause length."""
    piece = _EMPTY_CLAUSES.sub(lambda m: m.group(1) or "", " ".join(piece.split()))
    if lang == "zh":
        piece = _lead_off(piece).rstrip(_TRAIL_ZH)
    else:
        piece = _LEAD_EN.sub("", piece).strip()
        for rx, repl in _PRONOUNS_EN:
            piece = rx.sub(repl, piece)
        if _SUBJECTLESS_EN.match(piece):
            piece = "it " + piece
    piece = mask_pii(piece)[0].strip()
    return _cut(piece, _MAX_CLAUSE if lang == "zh" else 2 * _MAX_CLAUSE)


_EMPTY_CLAUSES: Final = LinearPattern(r"([，,；;])(?:\s*[，,；;])+")
"""Clause marks left around a clause the view blanked (儿子 9 岁， ，刚满): one is kept."""

_CUT_AT = LinearPattern(r"[，,；;：:、]|\s")


def _cut(piece: str, limit: int) -> str:
    """``piece`` cut to ``limit`` characters: at its last clause break (or, failing one, a
    space) within the limit when one leaves at least half of it, never inside a word."""
    if len(piece) <= limit:
        return piece
    breaks = [a for a, _ in _CUT_AT.spans(piece[: limit + 1]) if a >= limit // 2]
    clause = [a for a in breaks if not piece[a].isspace()]
    at = (clause or breaks or [limit])[-1]
    cut = piece[:at].rstrip(" ，,；;：:、")
    while not clause and (last := cut.rsplit(" ", 1))[-1].lower() in _DANGLING and len(last) == 2:
        cut = last[0]  # "stops halfway through the" -> "stops halfway through"
    return cut


_DANGLING: Final = frozenset(
    [
        "the",
        "a",
        "an",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "with",
        "and",
        "or",
        "for",
        "from",
        "my",
        "their",
        "his",
        "her",
        "its",
        "this",
        "that",
    ]
)
"""Words an English quote cut short must not end on."""


_SENTENCE_ZH = LinearPattern(r"[^。！？!?；;\n]+")
_SENTENCE_EN = LinearPattern(r"(?:[^.!?;\n]|\.\d)+")
_TOPICAL: Final = frozenset({"PRODUCT", "BRAND", "MODEL", "AMOUNT", "ORDER_ID"})


def _user_sentences(text: str, spans: list[_Span], lang: Lang) -> Iterator[tuple[int, int]]:
    """``(start, end)`` in ``text`` of each sentence of the user's turns, in order."""
    sentence_re = _SENTENCE_ZH if lang == "zh" else _SENTENCE_EN
    for span in spans:
        if span.role == "user":
            for a, b in sentence_re.spans(text[span.start : span.end]):
                yield span.start + a, span.start + b


def _topic(
    text: str, spans: list[_Span], entities: list[Entity], lang: Lang, fix: Callable[[str], str]
) -> str:
    """What the user talked about, for a record with no question or problem clause: their
    first sentence naming a product, brand, model, amount or order, else their first
    sentence (tidied as :func:`_tidy` does)."""
    named = sorted(e.start for e in entities if e.type in _TOPICAL)
    first = ""
    for start, end in _user_sentences(text, spans, lang):
        piece = _tidy(fix(text[start:end]), lang)
        if not piece:
            continue
        at = bisect.bisect_left(named, start)
        if at < len(named) and named[at] < end:
            return piece
        first = first or piece
    return first


_CHANGE: Final = LinearPattern(
    r"改为|改成|改用|改到|改寄|改送|改放|改约|改走|改一次|换成|换到|调到|挪到|推迟到|提前到"
    r"|(?i:(?:^|[^a-z])(?:instead|rather than|(?:switch|change|move|cut|bump)\s(?:[a-z0-9]+\s){0,4}"
    r"(?:down\s|up\s)?to|make it|put (?:it|them|the whole [a-z]+|everything) on)(?:$|[^a-z]))"
)
"""A clause saying what replaces a plan ("ship it to my home instead", "改成放快递柜",
"switch it to charcoal", "put the whole sofa on my Amex")."""


def _change(text: str, spans: list[_Span], lang: Lang, fix: Callable[[str], str]) -> str:
    """The clause of the user's last live sentence saying what replaces their plan
    (tidied), or ``""``: 床垫那个订单帮我改成1.8米的, of "… 改成1.8米的 我们换了张大床 差价多少"."""
    last = ""
    for start, end in _user_sentences(text, spans, lang):
        piece = text[start:end]
        m = _CHANGE.search(piece)
        if m is not None:
            a, b = around(piece, m.start(), m.end(), _CHANGE_CLAUSE[lang])
            clause = piece[a:b]
            last = _tidy(fix(clause if len(clause.strip()) >= 4 else piece), lang) or last
    return last


_CHANGE_CLAUSE: Final = {
    "zh": LinearPattern(r"[，,；;。！？!?]|\s+"),
    "en": LinearPattern(r"[,;.!?]|\s(?:but|and|so)\s"),
}
"""What ends the clause of a change: punctuation, and in Chinese a space."""


@dataclass(frozen=True, slots=True)
class _Slots:
    orders: tuple[str, ...] = ()
    ids: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Identifiers other than orders: (name, values) in :data:`_ID_ORDER`, a code named
    by the cue the user said before it (``取件码``), else by its label's name."""
    product: str = ""
    amount: str = ""
    eta: str = ""
    eta_verb: str = ""
    outcomes: tuple[Outcome, ...] = ()
    items: tuple[tuple[str, str], ...] = ()
    """What the agent ordered or sent for the user (:func:`committed_items`)."""
    reason: str = ""
    question: str = ""
    change: str = ""
    """The user's sentence saying what replaces their plan (:func:`_change`)."""
    topic: str = ""
    """What the user talked about: the problem they described, else their sentence naming
    a product (see :func:`_topic`), so a symptom said in the middle of a long enquiry is
    in the record whatever its intent."""
    kept: tuple[str, ...] = ()
    """Labels of the lasting statements the profile keeps (not quoted: named only when the
    session said nothing else)."""
    withdrawn: tuple[str, ...] = ()
    """Request families the user took back with nothing in their place."""
    withdrawn_beside: tuple[str, ...] = ()
    """Request families the user took back beside another request."""
    settled: str = ""
    """Why the user took them back, in their words (:attr:`Amended.settling`)."""
    purchase: bool = False
    """The user finally asked to buy something."""
    requested: frozenset[str] = frozenset()
    """The families of the user's live requests."""
    chosen: str = ""
    """What the user finally chose among what was offered (an option with its price, or the
    clause picking one of the ways offered)."""


_ID_ORDER: Final = (
    "REFUND_ID",
    "RETURN_ID",
    "EXCHANGE_ID",
    "WORK_ORDER_ID",
    "TICKET_ID",
    "COUPON_CODE",
    "INVOICE_NO",
    "TRACKING_NO",
    "CODE",
)
_ID_NAMES: Final = {
    "REFUND_ID": ("退款编号", "refund"),
    "RETURN_ID": ("退货单号", "return"),
    "EXCHANGE_ID": ("换货单号", "exchange"),
    "WORK_ORDER_ID": ("工单号", "work order"),
    "TICKET_ID": ("投诉单号", "ticket"),
    "COUPON_CODE": ("券码", "coupon code"),
    "INVOICE_NO": ("发票号码", "invoice number"),
    "TRACKING_NO": ("运单号", "tracking number"),
    "CODE": ("编号", "reference"),
}
_ETA_VERB = LinearPattern(
    r"^\s*(?:内|之内|以内|左右)?\s*(?:会|将|可以|可|就)?\s*(?:为您)?\s*"
    r"(到账|送达|发出|发货|到货|寄出|寄回|到达|联系您|联系|上门|回电|回复|审核|完成|有效|退回|生效)"
)
"""The verb the agent said right after the expected date: 明天发出, 48 小时内联系您."""


_GENERAL: Final = LinearPattern(
    r"一般|通常|正常情况|大多|大部分|普遍|往往|平均|签收|收货后|收到货|"
    r"(?i:usually|typically|normally|generally|in general|on average|most (?:cards|banks|orders|"
    r"cases|items)|tends? to|of (?:delivery|receipt))"
)
"""How things usually go, or a condition (一般24小时内审核, 签收7天内都能退, refunds usually take
3-5 business days): a date after it in its clause is no date for this case."""
_CLAUSE_END: Final = LinearPattern(r"[，,。！？!?；;\n]")


_PAST_DAY: Final = LinearPattern(
    r"^(?:昨天|前天|昨晚|上周|上个?月|上个?星期|上个?礼拜|去年)|(?i:^(?:yesterday|last\s))"
)
_DONE_ON: Final = LinearPattern(
    r"^\s*(?:就|都)?(?:已经?|下的|下了|买的|拍的|签收的?|发的|付的|到的|退的|申请的|提交的)"
    r"|(?i:^\s*(?:ago|already))"
)
"""Right after a date, what says it is past: 25 号下的单, 25 号已签收, two days ago."""


def _past(text: str, start: int, end: int) -> bool:
    """Whether the date ``text[start:end]`` is a day gone by (昨天, last week, 25 号下的单)."""
    return _PAST_DAY.search(text[start:end]) is not None or _DONE_ON.search(text[end:]) is not None


def _general(text: str, at: int) -> bool:
    """Whether the clause holding ``text[at]`` says how things usually go before it."""
    before = text[max(0, at - 40) : at]
    ends = [m.end() for m in _CLAUSE_END.finditer(before)]
    return _GENERAL.search(before[ends[-1] if ends else 0 :]) is not None


def _ids(text: str, entities: list[Entity], lang: Lang) -> tuple[tuple[str, tuple[str, ...]], ...]:
    named: dict[str, dict[str, None]] = {}
    for label in _ID_ORDER:
        for e in entities:
            if e.type == label:
                name = _ID_NAMES[label][0 if lang == "zh" else 1]
                if label == "CODE":
                    name = cue_before(text, e.start) or name
                named.setdefault(name, {})[e.text] = None
    return tuple((name, tuple(values)) for name, values in named.items())


def _all(entities: list[Entity], label: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(e.text for e in entities if e.type == label))


def _first(entities: list[Entity], label: str, spans: list[_Span], role: str | None = None) -> str:
    for e in entities:
        if e.type == label and (role is None or _role_at(spans, e.start) == role):
            return e.text
    return ""


_MAX_MODELS: Final = 3
"""Most models the record names (the user's, in order: 飞利浦 S5000、SH50)."""


def _last_said(entities: list[Entity], label: str, spans: list[_Span]) -> str:
    """The agent's last value of ``label``: of the prices it quoted, the one it confirmed
    (``V11 原装替换电池 359 元，订单 6440388`` after ``Z30 是 2999 元``)."""
    said = [e.text for e in entities if e.type == label and _role_at(spans, e.start) != "user"]
    return said[-1] if said else ""


_MAX_PRODUCTS: Final = 2
"""Most products the record names: the user's first and one asked for later (破壁机、隔音罩)."""


def _product(entities: list[Entity], spans: list[_Span]) -> str:
    """Brand, models and product the user named first (else the agent): every model the
    user named, so one said once in a long session is not lost."""
    parts: list[str] = []
    for label in ("BRAND", "MODEL", "PRODUCT"):
        values = [_first(entities, label, spans, "user") or _first(entities, label, spans)]
        if label == "BRAND":
            values = [_brand_of_model(entities, spans) or values[0]]
        if label in ("MODEL", "PRODUCT") and values[0]:
            said = [
                e.text for e in entities if e.type == label and _role_at(spans, e.start) == "user"
            ]
            most = _MAX_MODELS if label == "MODEL" else _MAX_PRODUCTS
            values = list(dict.fromkeys(said or values))[:most]
        kept: list[str] = []
        for value in values:
            if value and not any(value.lower() in p.lower() for p in [*parts, *kept]):
                parts = [p for p in parts if p.lower() not in value.lower()]
                kept.append(value)
        if kept:
            parts.append("、".join(kept))
    out = ""
    for part in parts:  # a space between words, none between Chinese ones (九阳破壁机)
        cjk = bool(out) and _CJK_END.search(out) is not None and _CJK_START.match(part) is not None
        out += part if not out or cjk else " " + part
    return out


def _brand_of_model(entities: list[Entity], spans: list[_Span]) -> str:
    """The brand right before the user's first model (:func:`brand_of`)."""
    model = next(
        (e for e in entities if e.type == "MODEL" and _role_at(spans, e.start) == "user"), None
    )
    return "" if model is None else brand_of(entities, model)


_CJK_END = LinearPattern(r"[\u4e00-\u9fff]$")
_CJK_START = LinearPattern(r"^[\u4e00-\u9fff]")


_LINK_WORD = LinearPattern(r"\s*[是为]\s*")


def _chosen_product(choice: Choice, entities: list[Entity], spans: list[_Span], lang: Lang) -> str:
    """The product slot for a final choice: the product said, then the chosen option."""
    label = _LINK_WORD.sub(" ", choice.option.label).strip()
    if lang == "en" and not label.lower().startswith(("the ", "a ")):
        label = f"the {label}"
    base = _product(entities, spans)
    return f"{base} {label}" if base and base.lower() not in label.lower() else label


def _closing(text: str, spans: list[_Span]) -> list[str]:
    """The agent's turns after the user's last one (what the session closed on)."""
    last = max((i for i, s in enumerate(spans) if s.role == "user"), default=-1)
    return [text[s.start : s.end] for s in spans[last + 1 :] if s.role == "assistant"]


def _with_variant(product: str, variant: Sequence[str]) -> str:
    """The product slot with the variant the agent confirmed (colour, capacity, size), each
    value the product does not already name; nothing without a product."""
    if not product:
        return product
    extra = [v for v in variant if v.casefold() not in product.casefold()]
    return " ".join([product, *extra])


_SETTLED_CLAUSES: Final = 3


def _settled(view: Amended, lang: Lang) -> str:
    """What the user said beside their retraction, as the record quotes it (a few clauses)."""
    pieces = [_tidy(view.fix(view.view[a:b]), lang) for a, b in view.settling]
    said = [p for p in pieces if p and words_in(p)][:_SETTLED_CLAUSES]
    return ("，" if lang == "zh" else ", ").join(said)


def _chosen(
    view: Amended, spans: list[_Span], lang: Lang, choice: Choice | None, picked: Sequence[Act]
) -> str:
    """The final choice as the record states it: the option with its price, else the user's
    last clause picking one of the ways offered."""
    if choice is not None:
        label = _LINK_WORD.sub(" ", choice.option.label).strip()
        price = choice.option.price
        if price and price not in label:
            label += f"（{price}）" if lang == "zh" else f" ({price})"
        return label
    for act in reversed(picked):
        at = spans[act.turn].start
        piece = _tidy(view.fix(view.view[at + act.start : at + act.end]), lang)
        if words_in(piece):
            return piece
    return ""


def _slots(
    view: Amended,
    spans: list[_Span],
    lang: Lang,
    choice: Choice | None,
    picked: Sequence[Act] = (),
) -> _Slots:
    text, entities, fix = view.view, view.entities, view.fix
    etas = [
        e
        for e in entities
        if e.type == "DATE"
        and _role_at(spans, e.start) == "assistant"
        and text[e.start] != " "
        and not _general(text, e.start)
        and not _past(text, e.start, e.end)
    ]
    verb = _ETA_VERB.match(text[etas[-1].end : etas[-1].end + 24]) if etas else None
    said = [e for e in entities if text[e.start] != " "]  # not in a clause that stopped counting
    agent = [text[s.start : s.end] for s in spans if s.role == "assistant"]
    reason = _clause(
        text,
        spans,
        entities,
        _PROBLEM_ZH if lang == "zh" else _PROBLEM_EN,
        lang,
        fix=fix,
        problem=True,
    )
    return _Slots(
        orders=_all(entities, "ORDER_ID"),
        ids=_ids(text, entities, lang),
        product=_with_variant(
            _chosen_product(choice, entities, spans, lang)
            if choice is not None
            else _product(entities, spans),
            confirmed_variant(_closing(text, spans), lang),
        ),
        amount=(
            choice.option.price
            if choice is not None and choice.option.price
            else _first(said, "AMOUNT", spans, "user") or _last_said(said, "AMOUNT", spans)
        ),
        eta=etas[-1].text if etas else "",
        eta_verb=(verb.group(1) or "") if verb is not None else "",
        outcomes=find_outcomes(agent),
        items=committed_items(agent, lang),
        reason=reason,
        question=_clause(
            text, spans, entities, _QUESTION_ZH if lang == "zh" else _QUESTION_EN, lang, fix=fix
        ),
        change=_change(text, spans, lang, fix),
        topic=reason or _topic(text, spans, entities, lang, fix),
        kept=tuple(t.zh if lang == "zh" else t.en for t in view.kept_topics),
        withdrawn=view.withdrawn,
        withdrawn_beside=view.withdrawn_beside,
        settled=_settled(view, lang) if view.withdrawn else "",
        purchase="purchase" in view.asked,
        requested=view.requested,
        chosen=_chosen(view, spans, lang, choice, picked),
    )


# --------------------------------------------------------------------------- sentences

_EXCHANGE = LinearPattern(
    r"(?i)换货|换(?:一|个|成|大|小|新|码|尺码|颜色|号)|调换|exchange|replace|swap"
)
_RETURN = re.compile(r"(?i)退货|退掉|退回|寄回|退了|\breturn")
_REFUND = LinearPattern(r"(?i)退款|退钱|refund|money back")
_CANCEL = re.compile(r"(?i)取消|撤销|\bcancel")


_EXCHANGED_TO: Final = LinearPattern(
    r"(?:换成|换为|调换成)"
    r"(?P<to_zh>[^，,。！？!?；;\n吗呢吧]{1,12}?)(?:的|吧|吗|呢|[，,。！？!?；;\n]|$)"
    r"|(?i:(?:swap|exchange|change|switch|trade|replace)\s+"
    r"(?:it|them|this|that|(?:the|my|a|an|this|these)\s+[^,.;!?\n]{1,30}?)\s+(?:for|to|with|into)\s+"
    r"(?P<to>(?:the\s+|a\s+|an\s+)?[^,.;!?\n]{1,30}?)(?:\s+(?:one|instead|please|then))*"
    r"\s*(?:$|[,.;!?\n]))"
)
"""What an exchange is for ("swap the black for the navy", "exchange it for a large",
"换成藏青色"): ``to``/``to_zh``."""


def _return_action(user_text: str, lang: Lang) -> str:
    for rx, zh, en in (
        (_REFUND, "申请退款", "a refund"),
        (_RETURN, "申请退货", "a return"),
        (_EXCHANGE, "申请换货", "an exchange"),
        (_CANCEL, "申请取消订单", "a cancellation"),
    ):
        if rx.search(user_text):
            if rx is _EXCHANGE and (m := _EXCHANGED_TO.search(user_text)) is not None:
                to = (m.group("to_zh") or m.group("to") or "").strip()
                if to:
                    return f"申请换货（换成{to}）" if lang == "zh" else f"{en} to {to}"
            return zh if lang == "zh" else en
    return "申请退货" if lang == "zh" else "a return"


_PANGU_AFTER = LinearPattern(r"([\u4e00-\u9fff])([A-Za-z0-9\[¥$])")
_PANGU_BEFORE = LinearPattern(r"([A-Za-z0-9\]])([\u4e00-\u9fff])")


def _pangu(s: str) -> str:
    """Space between CJK and Latin/digits, except inside dates (6月29日, 2026年)."""
    return _PANGU_BEFORE.sub(_space_before, _PANGU_AFTER.sub(_space_after, s))


def _space_after(m: LinearMatch) -> str:
    han, other = m.group(1) or "", m.group(2) or ""
    return han + other if han in "年月" and other.isdigit() else f"{han} {other}"


def _space_before(m: LinearMatch) -> str:
    other, han = m.group(1) or "", m.group(2) or ""
    return other + han if other.isdigit() and han in "年月日号" else f"{other} {han}"


_ASKED_BACK: Final = frozenset({"refund", "return", "exchange", "cancel"})
"""Request families that make a session a return request, whatever else it asked."""
_SUBSUMED: Final = frozenset(
    {Intent.REFUND_STATUS, Intent.TRACKING_INQUIRY, Intent.OTHER, Intent.PRODUCT_CONSULT}
)
"""Intents a request made in the same session outranks (its status, the delivery asked
before it)."""


def _takes_back(dialogue: Dialogue, view: Amended) -> bool:
    """Whether a session only takes things back: the user retracted a request or a topic
    and asked for nothing of a return's kind (its words of cancelling name no order)."""
    retracting = dialogue.withdrawn_topics or any(
        a.kind is ActKind.RETRACTION for a in dialogue.live("user")
    )
    return bool(retracting) and not _ASKED_BACK & view.asked


def _asked_or_done(dialogue: Dialogue, view: Amended) -> bool:
    """Whether a request of a return's kind was made in the session: the user asked for
    one, or the agent took or promised the step (the words of its paperwork, 取件码,
    退货运单, return label, ask for none)."""
    if _ASKED_BACK & view.asked:
        return True
    return any(
        _ASKED_BACK & set(a.families)
        for a in dialogue.acts
        if a.role != "user" and a.kind is ActKind.COMMITMENT
    )


_HELD: Final = LinearPattern(
    r"收到|到了|到货|签收|买的|买了|下单|订单|穿|试了|用了|拆|这件|这双|这条|这个|这款|这台|那件|那双|"
    r"尺码|码数|大了|小了|偏大|偏小|不合适|不合身|不喜欢|发错|发成|颜色不对|质量|坏|破|瑕疵|"
    r"(?i:received|arrived|got it|bought|ordered|order|wore|tried|this one|these|wrong|"
    r"too big|too small|fit|defect|broken|damaged|size)"
)
"""Words of goods the user has: what an exchange is of."""


def _nothing_to_exchange(dialogue: Dialogue, view: Amended, live: Sequence[str]) -> bool:
    """Whether the only request is an exchange with nothing to exchange: no id, no problem,
    no goods the user has (收到, 这双, 小了, it arrived, too big), no step the agent took or
    promised; 换个电视 for the bedroom is a purchase."""
    if view.requested != {"exchange"} or any(e.type in ID_LABELS for e in view.entities):
        return False
    if any(a.role != "user" and a.kind is ActKind.COMMITMENT for a in dialogue.acts):
        return False  # the agent did something for it (ordered the ear pads, booked…)
    said = "\n".join(live)
    problems = (symptoms.PROBLEM_ZH, symptoms.PROBLEM_EN, _HELD)
    return not any(rx.search(said) is not None for rx in problems)


_FAMILY_HEADS: Final = {
    "price": ("申请价保", "requested a price adjustment"),
    "merge": ("申请合并发货", "asked to combine the shipments"),
    "address": ("申请修改收货地址", "asked to change the delivery address"),
    "urge": ("催促发货", "asked to hurry the delivery"),
    "repair": ("申请维修", "requested a repair"),
    "schedule": ("预约上门时间", "booked a visit"),
    "claim": ("申请理赔", "filed a claim"),
    "subscription": ("开通周期购", "set up a subscription"),
}
"""Heads for what the user asked for that no intent names, when nothing stronger was asked."""
_STRONGER: Final = frozenset({"refund", "return", "exchange", "cancel", "complaint"})


def _family_head(s: _Slots, lang: Lang) -> str:
    """The head for the user's request no intent names (a price adjustment, a repair)."""
    if s.requested & _STRONGER:
        return ""
    found = next((f for f in _FAMILY_HEADS if f in s.requested), None)
    return "" if found is None else _FAMILY_HEADS[found][0 if lang == "zh" else 1]


_WITHDRAWN: Final = {
    "refund": ("退款申请", "the refund request"),
    "return": ("退货申请", "the return request"),
    "exchange": ("换货申请", "the exchange request"),
    "complaint": ("投诉", "the complaint"),
    "cancel": ("取消订单的请求", "the cancellation"),
    "address": ("改地址申请", "the address change"),
    "urge": ("催单", "the request to hurry the delivery"),
    "invoice": ("开票申请", "the invoice request"),
    "repair": ("维修申请", "the repair request"),
    "schedule": ("预约", "the appointment"),
    "price": ("保价申请", "the price-protection claim"),
    "delivery": ("送货安排", "the delivery arrangement"),
    "claim": ("理赔申请", "the claim"),
    "subscription": ("周期购", "the subscription"),
}
"""How the record names a request the user took back."""


_REQUESTED: Final = {
    "refund": (
        ("申请退款", "撤回了退款申请"),
        ("requested a refund", "withdrew the refund request"),
    ),
    "return": (
        ("申请退货", "撤回了退货申请"),
        ("requested a return", "withdrew the return request"),
    ),
    "exchange": (
        ("申请换货", "撤回了换货申请"),
        ("requested an exchange", "withdrew the exchange request"),
    ),
    "cancel": (
        ("申请取消订单", "撤回了取消订单的请求"),
        ("requested a cancellation", "withdrew the cancellation"),
    ),
    "complaint": (("进行投诉", "撤回了投诉"), ("complained", "withdrew the complaint")),
    **{
        f: ((zh, f"撤回了{_WITHDRAWN[f][0]}"), (en, f"withdrew {_WITHDRAWN[f][1]}"))
        for f, (zh, en) in _FAMILY_HEADS.items()
        if f in _WITHDRAWN
    },
    "subscription": (
        ("开通周期购", "取消了周期购"),
        ("set up a subscription", "cancelled the subscription"),
    ),
}
"""How a record states a request, and how it states it withdrawn (both languages)."""


def taken_back(dialogue: Dialogue) -> Callable[[str], str] | None:
    """How an earlier session's record reads once ``dialogue`` (this session's) took back
    what it asked for (:attr:`Dialogue.unmatched`) or arranged (:attr:`Dialogue.undone`):
    the request stated withdrawn (申请退货 → 撤回了退货申请), without its reason, expected
    date, amount and the agent's confirmation (``because …``, ``; expected …``, ``，预计…``,
    ``（699 元）``, ``（客服确认：…）``: they were the arrangement's, and it is no more);
    ``None`` when nothing of an earlier session was taken back."""
    pairs = [pair for f in dialogue.unmatched for pair in _REQUESTED.get(f, ())]
    return partial(_withdrawn_record, pairs) if pairs or dialogue.undone else None


def withdrawn_heads(dialogue: Dialogue) -> tuple[str, ...]:
    """How a record states each request of an earlier session ``dialogue`` took back
    (申请价保, requested a refund): the one record stating it is the one taken back,
    whatever else the session named."""
    return tuple(head for f in dialogue.unmatched for head, _ in _REQUESTED.get(f, ()))


_HEAD_AMOUNT: Final = LinearPattern(
    r"(?P<pre>[（(][^（）()]*?)(?:,\s)?(?:[$¥£€][0-9][0-9,.]*|[0-9][0-9,.]*\s?"
    r"(?:元|块钱?|(?i:bucks|dollars?|yuan|rmb|quid|pounds?|euros?)))(?P<post>[）)])"
)
"""The amount a record's subject names: ``破壁机（699 元）``, ``(Bosch dishwasher, $149)``,
``(LG OLED, 150 bucks)``."""


def _withdrawn_record(pairs: Sequence[tuple[str, str]], text: str) -> str:
    colon = min((at for at in (text.find("："), text.find(": ")) if at >= 0), default=len(text))
    text = without_agreed(substitute(text[:colon], pairs) + text[colon:])  # quotes as said
    for a, b in _HEAD_AMOUNT.spans(text)[:1]:
        text = text[:a] + text[b:]
        text = text.replace("（）", "").replace(" ()", "")
    marker = marker_for(text)
    text = _one_marker(unsay(text, schedule_words(text), marker), marker)  # 每月10号: one
    if marker == MARKER_ZH:
        parts = text.split("，")
        return "，".join(p for i, p in enumerate(parts) if not (i and p.startswith("预计")))
    body, end = (text[:-1], ".") if text.endswith(".") else (text, "")
    parts = body.split("; ")
    kept = [p for i, p in enumerate(parts) if not (i and p.startswith("expected "))]
    head, cut, _ = kept[0].partition(" because ")
    return "; ".join([head if cut else kept[0], *kept[1:]]) + end


_WITHDREW: Final = {"subscription": ("取消了", "cancelled")}
"""The verb of taking back a request where 撤回了 / withdrew does not fit."""


def _withdrawn(families: Sequence[str], lang: Lang) -> str:
    """What the user took back, each with its verb (撤回了退款申请、取消了周期购)."""
    zh = lang == "zh"
    said = [
        f"{verb}{names[0]}" if zh else f"{verb} {names[1]}"
        for f in families
        if (names := _WITHDRAWN.get(f)) is not None
        and (verb := _WITHDREW.get(f, ("撤回了", "withdrew"))[0 if zh else 1])
    ]
    return ("、" if zh else " and ").join(said)


def _sentence_zh(intent: Intent, s: _Slots, user_text: str) -> str:
    order = "、".join(s.orders)
    if order and s.product:
        subject = f"订单 {order} 的{s.product}"
    else:
        subject = f"订单 {order}" if order else s.product
    if subject and s.amount:
        subject += f"（{s.amount}）"
    of = f"{subject}的" if subject else ""
    about = f"就{subject}" if subject else ""
    detail = s.question or s.reason
    asked = s.question or s.topic
    heads = {
        Intent.RETURN_REQUEST: _return_action(user_text, "zh"),
        Intent.REFUND_STATUS: f"查询{of}退款进度",
        Intent.TRACKING_INQUIRY: f"查询{of}物流进度",
        Intent.COMPLAINT: "进行投诉",
        Intent.PRODUCT_CONSULT: f"咨询{subject or '商品'}" + (f"：{asked}" if asked else ""),
        Intent.INVOICE: f"申请为{subject}开具发票" if subject else "咨询发票事宜",
        Intent.ACCOUNT: "咨询账号问题" + (f"：{detail}" if detail else ""),
        Intent.OTHER: (f"咨询{of}相关事宜" if subject else "进行了一般咨询")
        + (f"：{s.change or detail or s.topic}" if s.change or detail or s.topic else ""),
    }
    head = heads[intent]
    if intent in (Intent.RETURN_REQUEST, Intent.COMPLAINT):
        head = f"因{subject}{s.reason}{head}" if s.reason else f"{about}{head}"
    asked = _family_head(s, "zh")
    if asked:  # a request's record says the problem it is for before a question on it
        why = s.reason or s.question or s.topic
        head = f"{about}{asked}" + (f"：{why}" if why else "")
    elif s.purchase and intent in (Intent.OTHER, Intent.PRODUCT_CONSULT) and subject:
        head = f"购买{subject}" + (f"：{detail or s.topic}" if detail or s.topic else "")
    elif s.withdrawn:
        why = s.settled or detail or s.topic
        taken = _withdrawn(s.withdrawn, "zh") or "撤回了"
        head = f"{about}{taken}" + (f"：{why}" if why else "")
    elif s.kept and intent is Intent.OTHER and not (subject or detail or s.topic):
        head = f"更新了画像：{'、'.join(s.kept)}"
    if (taken := _withdrawn(s.withdrawn_beside, "zh")) and taken not in head:
        head += f"，{taken}"  # beside another request: 申请退货，取消了周期购
    verb = s.eta_verb or {
        Intent.TRACKING_INQUIRY: "送达",
        Intent.RETURN_REQUEST: "到账" if heads[intent] == "申请退款" else "处理",
        Intent.REFUND_STATUS: "到账",
    }.get(intent, "处理")
    eta = ""
    if s.eta:
        lead = {"有效": "", "生效": "", "寄回": "需在"}.get(verb, "预计")
        eta = f"，{lead}{s.eta}{verb}"
    ids = "".join(f"，{name} {'、'.join(values)}" for name, values in _unquoted(s.ids, head))
    did = "，客服" + "、".join(phrase(o, "zh") for o in s.outcomes) if s.outcomes else ""
    if s.change and flat(s.change) not in flat(head):  # a change said beside a question
        head += f"；要求{s.change}"
    chose = f"，最终选择{s.chosen}" if s.chosen and flat(s.chosen) not in flat(head) else ""
    did += "".join(f"，客服已{verb}{what}" for verb, what in _unsaid(s.items, head + chose))
    return _pangu("用户" + head + chose + ids + did + eta)


def _unquoted(
    ids: Sequence[tuple[str, tuple[str, ...]]], said: str
) -> list[tuple[str, tuple[str, ...]]]:
    """The ``(name, values)`` ids with the values the record's sentence does not hold yet
    (取件码 8-2-3301 quoted in the description is not said again)."""
    out = []
    for name, values in ids:
        left = tuple(v for v in values if v not in said)
        if left:
            out.append((name, left))
    return out


def _unsaid(items: Sequence[tuple[str, str]], said: str) -> list[tuple[str, str]]:
    """The ``(verb, thing)`` items whose thing the record's sentence does not name yet."""
    return [(v, w) for v, w in items if flat(w) not in flat(said)]


_DURATION_EN = re.compile(r"(?i)\b(?:days?|weeks?|hours?|months?)\b")
_RELATIVE_EN = re.compile(r"(?i)^(?:today|tonight|tomorrow|next|this)\b")


def _sentence_en(intent: Intent, s: _Slots, user_text: str) -> str:
    extras = ", ".join(x for x in (s.product, s.amount) if x)
    if s.orders:
        subject = ("orders " if len(s.orders) > 1 else "order ") + ", ".join(s.orders)
        subject += f" ({extras})" if extras else ""
    else:
        subject = f"the {s.product}" + (f" ({s.amount})" if s.amount else "") if s.product else ""
    because = f" because {s.reason}" if s.reason else ""
    detail = s.question or s.reason
    asked = s.question or s.topic
    heads = {
        Intent.RETURN_REQUEST: f"requested {_return_action(user_text, 'en')}"
        + (f" for {subject}" if subject else "")
        + because,
        Intent.REFUND_STATUS: "asked about the refund status"
        + (f" of {subject}" if subject else ""),
        Intent.TRACKING_INQUIRY: "asked about the delivery" + (f" of {subject}" if subject else ""),
        Intent.COMPLAINT: "complained" + (f" about {subject}" if subject else "") + because,
        Intent.PRODUCT_CONSULT: f"asked about {subject or 'a product'}"
        + (f": {asked}" if asked else ""),
        Intent.INVOICE: "requested an invoice" + (f" for {subject}" if subject else ""),
        Intent.ACCOUNT: "asked for help with their account" + (f": {detail}" if detail else ""),
        Intent.OTHER: "contacted customer service"
        + (f" about {subject}" if subject else "")
        + (f": {s.change or detail or s.topic}" if s.change or detail or s.topic else ""),
    }
    head = heads[intent].rstrip(" ?.")
    asked = _family_head(s, "en")
    if asked:  # a request's record says the problem it is for before a question on it
        why = s.reason or s.question or s.topic
        head = asked + (f" for {subject}" if subject else "")
        head += f": {why}" if why else ""
    elif s.purchase and intent in (Intent.OTHER, Intent.PRODUCT_CONSULT) and subject:
        head = f"bought {subject}" + (f": {detail or s.topic}" if detail or s.topic else "")
    elif s.withdrawn:
        head = (_withdrawn(s.withdrawn, "en") or "withdrew") + (
            f" for {subject}" if subject else ""
        )
        why = s.settled or detail or s.topic
        head += f": {why}" if why else ""
    elif s.kept and intent is Intent.OTHER and not (subject or detail or s.topic):
        head = f"updated their profile: {', '.join(s.kept)}"
    if (taken := _withdrawn(s.withdrawn_beside, "en")) and taken not in head:
        head += f"; {taken}"
    if s.change and flat(s.change) not in flat(head):  # a change said beside a question
        head = head.rstrip(" ?.") + f"; asked: {s.change}"
    tail = f"; chose {s.chosen}" if s.chosen and flat(s.chosen) not in flat(head) else ""
    tail += "".join(f"; {name} {', '.join(values)}" for name, values in _unquoted(s.ids, head))
    if s.outcomes:
        tail += "; the agent " + " and ".join(phrase(o, "en") for o in s.outcomes)
    tail += "".join(f"; the agent {verb} {what}" for verb, what in _unsaid(s.items, head + tail))
    if s.eta:
        prep = (
            "within "
            if _DURATION_EN.search(s.eta)
            else ("" if _RELATIVE_EN.match(s.eta) else "by ")
        )
        tail += f"; expected {prep}{s.eta}"
    return "The user " + head.rstrip(" ?.") + tail + "."


# --------------------------------------------------------------------------- summarise


def _one_marker(text: str, marker: str) -> str:
    """``text`` with markers side by side (每月10号: 每月, 10号) made one."""
    for pair in (marker + marker, f"{marker} {marker}"):
        while pair in text:
            text = text.replace(pair, marker)
    return text


def summarise(user_id: str, session_id: str, turns: Sequence[Turn]) -> SessionSummary:
    """Summarise one session's transcript into a masked record plus the user's clear PII.

    Raises :class:`~policies.errors.InvalidUserId` for a bad ``user_id``,
    :class:`~policies.errors.InvalidField` for a bad ``session_id``, and
    :class:`~policies.errors.InvalidText` for a transcript without a non-empty
    user turn or with a turn that fails :func:`~policies.validation.check_text`.
    """
    check_user_id(user_id)
    if not check_field_length("session_id", session_id, MAX_ID_CHARS).strip():
        raise InvalidText("session_id is empty", field="session_id")
    text, spans = _prepare(turns)
    user_spans = [s for s in spans if s.role == "user"]
    user_text = "\n".join(text[s.start : s.end] for s in user_spans)
    language = detect_language(user_text)
    entities = extract_entities(text)
    utterances = [_utterance(text, s, entities) for s in spans]
    dialogue = read_dialogue(utterances, language)
    view = amend(text, [s.start for s in spans], entities, dialogue, language)
    offered = options(text, [(s.start, s.end) for s in spans], language)
    said = [(s.start, s.end) for s in user_spans]
    choice = final_choice(view.view, said, offered, view.entities, language) or stated_choice(
        view.view, said, language
    )
    if choice is not None:
        view = view.without(choice.rejected)
    live = [view.view[s.start : s.end] for s in user_spans]
    live = [t for t in live if words_in(t)]
    intent = classify_turns(live) if live else classify_turns([user_text])
    if not live:
        intent = replace(intent, label=Intent.OTHER)
    elif intent.label in _SUBSUMED and _ASKED_BACK & view.requested:
        intent = replace(intent, label=Intent.RETURN_REQUEST)  # "要退款…退款多久到账"
    elif intent.label is Intent.RETURN_REQUEST and _takes_back(dialogue, view):
        intent = replace(intent, label=Intent.OTHER)  # "出差取消了，放驿站的不用了"
    elif intent.label is Intent.RETURN_REQUEST and not _asked_or_done(dialogue, view):
        intent = replace(intent, label=Intent.OTHER)  # 取件码不对: a return nobody asked for
    if intent.label is Intent.RETURN_REQUEST and _nothing_to_exchange(dialogue, view, live):
        intent = replace(intent, label=Intent.PRODUCT_CONSULT)  # 给卧室换个电视: to buy
    pii = [
        PiiMatch(m.kind, m.start + s.start, m.end + s.start, m.value)
        for s in user_spans
        for m in find_pii(text[s.start : s.end])
        if text[s.start + m.start : s.start + m.end].casefold() not in view.wrong
    ]
    slots = _slots(view, spans, language, choice, dialogue.picked)
    sentence = (_sentence_zh if language == "zh" else _sentence_en)(
        intent.label,
        slots,
        view.fix("\n".join(live)),  # what an exchange is for, put right
    )
    user_turns = {k: (s.start, s.end) for k, s in enumerate(spans) if s.role == "user"}
    settled = settled_from(dialogue, view, user_turns)  # after the last change of mind
    words = quote(
        sentence,
        view,
        user_turns,
        dialogue,
        after=settled,
        lang=language,
        tidy=lambda p: _tidy(p, language),
    )
    sentence = with_own_words(sentence, words, language)
    confirmed = agreed(
        view,
        [(s.role, s.start, s.end) for s in spans],
        settled,
        sentence,
        lang=language,
        specific=lambda a, b: names_a_thing(view, a, b),
    )
    sentence = with_agreed(sentence, confirmed, language)
    dropped = moved_on([(u.role, u.text) for u in utterances])  # 白色 → 雾霾蓝
    dropped += settled_words(sentence)  # 2TB … (the agent confirmed: the 200GB plan)
    marker = MARKER_ZH if language == "zh" else MARKER_EN
    sentence = unsay(sentence, dropped, marker) if dropped else sentence
    unique = {(e.type, e.text): e for e in reversed(view.entities)}.values()  # first one wins
    return SessionSummary(
        user_id=user_id,
        session_id=session_id,
        intent=intent.label,
        intent_confidence=intent.confidence,
        entities=sorted(unique, key=lambda e: e.start),
        occurred_at=_occurred_at(turns),
        summary_text=sentence,
        language=language,
        pii=pii,
        outcomes=slots.outcomes,
        dialogue=dialogue,
        turn_index=tuple(s.index for s in spans),
        turn_entities=tuple(u.entities for u in utterances),
    )


def _utterance(text: str, span: _Span, entities: Sequence[Entity]) -> Utterance:
    """The turn at ``span`` with its entities, offsets into the turn."""
    return Utterance(
        span.role,
        text[span.start : span.end],
        tuple(
            replace(e, start=e.start - span.start, end=e.end - span.start)
            for e in entities
            if span.start <= e.start and e.end <= span.end
        ),
    )
