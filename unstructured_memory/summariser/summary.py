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
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final

from policies.errors import InvalidText
from policies.linear_re import LinearMatch, LinearPattern
from policies.pii import PiiMatch, find_pii, mask_pii
from policies.validation import (
    MAX_ID_CHARS,
    MAX_TEXT_BYTES,
    check_field_length,
    check_text,
    check_user_id,
)
from unstructured_memory.summariser.entities import detect_language, extract_entities
from unstructured_memory.summariser.intent import classify_intent, classify_turns
from unstructured_memory.summariser.outcome import find_outcomes, phrase
from values.entities import Entity
from values.sessions import Intent, Lang, Outcome, SessionSummary, Turn

__all__ = ["MAX_TRANSCRIPT_BYTES", "SessionSummary", "TextAnalysis", "analyse_text", "summarise"]

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


def _keep_within_budget(turns: list[Turn]) -> list[Turn]:
    sizes = [len(t.text.encode("utf-8")) + 1 for t in turns]
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
    kept: list[Turn] = []
    for i, turn in enumerate(turns):
        if not isinstance(turn, Turn):
            raise InvalidText(f"turns[{i}] is not a Turn", field="turns")
        text = check_text(turn.text, field=f"turns[{i}].text", allow_empty=True)
        if text.strip():
            kept.append(turn)
    if not any(t.role == "user" for t in kept):
        raise InvalidText("transcript has no non-empty user turn", field="turns")
    kept = _keep_within_budget(kept)
    spans: list[_Span] = []
    pos = 0
    for turn in kept:
        spans.append(_Span(turn.role, pos, pos + len(turn.text)))
        pos += len(turn.text) + 1
    return "\n".join(t.text for t in kept), spans


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
_PROBLEM_ZH = LinearPattern(
    r"无法|不能|不了|坏了|坏掉|损坏|破损|破了|碎了|裂了|没收到|没有收到|收不到|没声音|不工作|不亮|不转|"
    r"漏水|漏电|异响|发错|少发|漏发|错发|质量问题|有问题|瑕疵|划痕|不充电|充不进|失败|过敏|不合适|"
    r"太小|太大|偏小|偏大|鼓包|生锈|异味|不一致|掉色|开胶|连不上|不想要|不要了|拍错|买错"
)
_PROBLEM_EN = re.compile(
    r"(?i)\b(?:doesn'?t|does not|won'?t|will not|can'?t|cannot|isn'?t|not working|stopped|broken|"
    r"broke|damaged|cracked|defective|missing|never arrived|wrong|leaks?|leaking|dead|faulty|"
    r"too (?:small|big|large)|rude|late|fake|counterfeit)\b"
)
_QUESTION_ZH = LinearPattern(
    r"吗|呢|怎么|如何|能否|是否|多少|多久|哪|什么|有没有|能不能|可不可以|[?？]"
)
_QUESTION_EN = re.compile(r"(?i)\?|\b(?:how|what|which|when|does|do|is|can|could|will)\b")
_CLAUSE_ZH = LinearPattern(r"[^，。！？!?；;,\n]+")
_CLAUSE_EN = LinearPattern(r"(?:[^.,!?;\n]|[.,]\d)+")  # a decimal point does not end a clause
_SUBJECTLESS_EN = re.compile(
    r"(?i)^(?:doesn'?t|does not|won'?t|will not|can'?t|cannot|isn'?t|is|was|stopped|keeps|"
    r"never|arrived|came|broke|leaks?)\b"
)
_LEAD_ZH = LinearPattern(
    r"^(?:您好|你好|亲|请问|麻烦|就是|但是|可是|然后|而且|现在|已经|还|我的|我|这个|那个|这台|那台|它|"
    r"这款|这|那|你们的|你们|的|了|是|，|\s)+"
)
_TRAIL_ZH = "了啊呀呢吧哦嘛的～~" + "".join(c for c in map(chr, range(0x3001)) if c.isspace())
"""Particles and white space stripped from the end of a clause (``str.rstrip``)."""
_LEAD_EN = LinearPattern(r"(?i)^(?:hi|hello|hey|so|and|but|well|um|ok|okay|please|,|\s)+")
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
) -> str:
    """The first user clause holding ``cue``, trimmed to what follows its last product entity."""
    clause_re = _CLAUSE_ZH if lang == "zh" else _CLAUSE_EN
    after = _AfterProducts(entities)
    for span in spans:
        if span.role != "user":
            continue
        for a, b in clause_re.spans(text[span.start : span.end]):
            clause_start, clause_end = span.start + a, span.start + b
            hit = cue.search(text[clause_start:clause_end])
            if hit is None:
                continue
            start = clause_start
            if lang == "zh":  # keep what follows the product: "扫地机无法回充" -> "无法回充"
                start = after(clause_start, clause_start + hit.start())
            piece = _tidy(text[start:clause_end], lang)
            if piece:
                return piece
    return ""


def _tidy(piece: str, lang: Lang) -> str:
    """A piece of the user's text as the record quotes it: lead words and particles off,
    in the third person (English), masked, cut to the clause length."""
    if lang == "zh":
        piece = _LEAD_ZH.sub("", piece).rstrip(_TRAIL_ZH)
    else:
        piece = _LEAD_EN.sub("", piece).strip()
        for rx, repl in _PRONOUNS_EN:
            piece = rx.sub(repl, piece)
        if _SUBJECTLESS_EN.match(piece):
            piece = "it " + piece
    piece = mask_pii(piece)[0].strip()
    return piece[: _MAX_CLAUSE if lang == "zh" else 2 * _MAX_CLAUSE]


_SENTENCE_ZH = LinearPattern(r"[^。！？!?；;\n]+")
_SENTENCE_EN = LinearPattern(r"(?:[^.!?;\n]|\.\d)+")
_TOPICAL: Final = frozenset({"PRODUCT", "BRAND", "MODEL", "AMOUNT", "ORDER_ID"})


def _topic(text: str, spans: list[_Span], entities: list[Entity], lang: Lang) -> str:
    """What the user talked about, for a record with no question or problem clause: their
    first sentence naming a product, brand, model, amount or order, else their first
    sentence (tidied as :func:`_tidy` does)."""
    named = sorted(e.start for e in entities if e.type in _TOPICAL)
    sentence_re = _SENTENCE_ZH if lang == "zh" else _SENTENCE_EN
    first = ""
    for span in spans:
        if span.role != "user":
            continue
        for a, b in sentence_re.spans(text[span.start : span.end]):
            start, end = span.start + a, span.start + b
            piece = _tidy(text[start:end], lang)
            if not piece:
                continue
            at = bisect.bisect_left(named, start)
            if at < len(named) and named[at] < end:
                return piece
            first = first or piece
    return first


@dataclass(frozen=True, slots=True)
class _Slots:
    orders: tuple[str, ...] = ()
    ids: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Identifiers other than orders: (label, values) in :data:`_ID_ORDER`."""
    product: str = ""
    amount: str = ""
    eta: str = ""
    eta_verb: str = ""
    outcomes: tuple[Outcome, ...] = ()
    reason: str = ""
    question: str = ""
    topic: str = ""
    """The user's sentence naming what they talked about (see :func:`_topic`)."""


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


def _all(entities: list[Entity], label: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(e.text for e in entities if e.type == label))


def _first(entities: list[Entity], label: str, spans: list[_Span], role: str | None = None) -> str:
    for e in entities:
        if e.type == label and (role is None or _role_at(spans, e.start) == role):
            return e.text
    return ""


def _product(entities: list[Entity], spans: list[_Span]) -> str:
    parts: list[str] = []
    for label in ("BRAND", "MODEL", "PRODUCT"):
        value = _first(entities, label, spans, "user") or _first(entities, label, spans)
        if value and not any(value.lower() in p.lower() for p in parts):
            parts = [p for p in parts if p.lower() not in value.lower()]
            parts.append(value)
    return " ".join(parts)


def _slots(text: str, spans: list[_Span], entities: list[Entity], lang: Lang) -> _Slots:
    etas = [e for e in entities if e.type == "DATE" and _role_at(spans, e.start) == "assistant"]
    verb = _ETA_VERB.match(text[etas[-1].end : etas[-1].end + 24]) if etas else None
    agent = [text[s.start : s.end] for s in spans if s.role == "assistant"]
    return _Slots(
        orders=_all(entities, "ORDER_ID"),
        ids=tuple((label, v) for label in _ID_ORDER if (v := _all(entities, label))),
        product=_product(entities, spans),
        amount=_first(entities, "AMOUNT", spans, "user") or _first(entities, "AMOUNT", spans),
        eta=etas[-1].text if etas else "",
        eta_verb=(verb.group(1) or "") if verb is not None else "",
        outcomes=find_outcomes(agent),
        reason=_clause(text, spans, entities, _PROBLEM_ZH if lang == "zh" else _PROBLEM_EN, lang),
        question=_clause(
            text, spans, entities, _QUESTION_ZH if lang == "zh" else _QUESTION_EN, lang
        ),
        topic=_topic(text, spans, entities, lang),
    )


# --------------------------------------------------------------------------- sentences

_EXCHANGE = LinearPattern(
    r"(?i)换货|换(?:一|个|成|大|小|新|码|尺码|颜色|号)|调换|exchange|replace|swap"
)
_RETURN = re.compile(r"(?i)退货|退掉|退回|寄回|退了|\breturn")
_REFUND = LinearPattern(r"(?i)退款|退钱|refund|money back")
_CANCEL = re.compile(r"(?i)取消|撤销|\bcancel")


def _return_action(user_text: str, lang: Lang) -> str:
    for rx, zh, en in (
        (_REFUND, "申请退款", "a refund"),
        (_RETURN, "申请退货", "a return"),
        (_EXCHANGE, "申请换货", "an exchange"),
        (_CANCEL, "申请取消订单", "a cancellation"),
    ):
        if rx.search(user_text):
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
        + (f"：{detail or s.topic}" if detail or s.topic else ""),
    }
    head = heads[intent]
    if intent in (Intent.RETURN_REQUEST, Intent.COMPLAINT):
        head = f"因{subject}{s.reason}{head}" if s.reason else f"{about}{head}"
    verb = s.eta_verb or {
        Intent.TRACKING_INQUIRY: "送达",
        Intent.RETURN_REQUEST: "到账" if heads[intent] == "申请退款" else "处理",
        Intent.REFUND_STATUS: "到账",
    }.get(intent, "处理")
    eta = ""
    if s.eta:
        lead = {"有效": "", "生效": "", "寄回": "需在"}.get(verb, "预计")
        eta = f"，{lead}{s.eta}{verb}"
    ids = "".join(f"，{_ID_NAMES[label][0]} {'、'.join(values)}" for label, values in s.ids)
    did = "，客服" + "、".join(phrase(o, "zh") for o in s.outcomes) if s.outcomes else ""
    return _pangu("用户" + head + ids + did + eta)


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
        + (f": {detail or s.topic}" if detail or s.topic else ""),
    }
    tail = "".join(f"; {_ID_NAMES[label][1]} {', '.join(values)}" for label, values in s.ids)
    if s.outcomes:
        tail += "; the agent " + " and ".join(phrase(o, "en") for o in s.outcomes)
    if s.eta:
        prep = (
            "within "
            if _DURATION_EN.search(s.eta)
            else ("" if _RELATIVE_EN.match(s.eta) else "by ")
        )
        tail += f"; expected {prep}{s.eta}"
    return "The user " + heads[intent].rstrip(" ?.") + tail + "."


# --------------------------------------------------------------------------- summarise


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
    intent = classify_turns([text[s.start : s.end] for s in user_spans])
    pii = [
        PiiMatch(m.kind, m.start + s.start, m.end + s.start, m.value)
        for s in user_spans
        for m in find_pii(text[s.start : s.end])
    ]
    slots = _slots(text, spans, entities, language)
    sentence = (_sentence_zh if language == "zh" else _sentence_en)(intent.label, slots, user_text)
    unique = {(e.type, e.text): e for e in reversed(entities)}.values()  # first occurrence wins
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
    )
