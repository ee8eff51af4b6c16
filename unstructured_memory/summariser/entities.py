"""Named entities of customer-service text: a blank spaCy pipeline with rules, no model.

Two pipelines, each built lazily once per process under a lock:

* ``spacy.blank("zh")`` with the jieba segmenter, used whenever the text holds
  any CJK character (jieba also splits Latin runs, the English tokenizer cannot
  split CJK runs). Its jieba is the project's shared tokenizer
  (:func:`unstructured_memory.tokenize.segment`, with the shipped user
  dictionary), and segmentation is cut at every candidate entity boundary
  first, so every entity is a whole number of tokens.
* ``spacy.blank("en")`` for text without CJK characters; spans that do not fall
  on token boundaries are widened to them (``alignment_mode="expand"``).

Each pipeline runs two components. ``dualtrack_patterns`` finds ids, amounts,
dates, models and PII with regular expressions run by RE2 in linear time
(:mod:`policies.linear_re`; PII through :func:`policies.pii.recent_pii`) and
sets ``doc.ents``; an ``entity_ruler`` (``overwrite_ents=False``) then adds
PRODUCT and BRAND from the shipped lexicon ``data/lexicon.json``. Overlaps go
to the more specific label:
PII > the ids named by a cue (REFUND_ID, RETURN_ID, EXCHANGE_ID, TICKET_ID,
WORK_ORDER_ID, COUPON_CODE, INVOICE_NO, TRACKING_NO) > ORDER_ID > AMOUNT > DATE
> MODEL > CODE > PRODUCT, BRAND.

Labels: the identifiers of :data:`ID_LABELS` (orders, refunds, returns,
exchanges, complaint tickets, work orders, coupon codes, invoice numbers,
tracking numbers, and CODE: a code of an identifier's shape that no cue names,
such as ``SV202607050033``), PRODUCT, BRAND, MODEL, AMOUNT, DATE (dates,
relative days and durations such as ``1-3 个工作日``) and the PII labels PHONE,
EMAIL, ID_CARD, BANK_CARD, ADDRESS. For ids, only the id itself is the entity
(``订单号：88231`` gives ``88231``), and a list continues its cue
(``换货单 EX7781201 和 EX7781202`` gives two EXCHANGE_IDs).

**PII entities carry the masked text** (:func:`policies.pii.mask_value`): a
clear PII value never leaves this module in an :class:`Entity`. Their offsets
still refer to the clear value in the input text.

:class:`Entity` is ``values.entities``'s and ``Lang`` ``values.sessions``'s,
re-exported here for one release.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Final

import spacy
from spacy.language import Language
from spacy.tokens import Doc, Span

from policies.linear_re import LinearPattern, PatternSet, Subject
from policies.pii import PiiKind, mask_value, recent_pii
from policies.validation import check_text
from unstructured_memory.tokenize import segment
from values.entities import Entity
from values.sessions import Lang

__all__ = [
    "ENTITY_LABELS",
    "ID_LABELS",
    "PII_LABELS",
    "Entity",
    "Lang",
    "detect_language",
    "extract_entities",
]

PII_LABELS: Final = frozenset(kind.name for kind in PiiKind)
"""Entity labels whose text is masked: PHONE, EMAIL, ID_CARD, BANK_CARD, ADDRESS."""

ID_LABELS: Final = frozenset(
    {
        "ORDER_ID",
        "REFUND_ID",
        "RETURN_ID",
        "EXCHANGE_ID",
        "TICKET_ID",
        "WORK_ORDER_ID",
        "COUPON_CODE",
        "INVOICE_NO",
        "TRACKING_NO",
        "CODE",
    }
)
"""Labels of identifiers: what a user would have to repeat if it were lost."""

ENTITY_LABELS: Final = (
    frozenset({"PRODUCT", "BRAND", "MODEL", "AMOUNT", "DATE"}) | ID_LABELS | PII_LABELS
)
"""Every label :func:`extract_entities` produces."""


# --------------------------------------------------------------------------- patterns

# Patterns run under RE2 in linear time (policies.linear_re): a "pre" group
# stands for a one-character lookbehind, a "post" group for a lookahead.
_B = r"(?P<pre>[^0-9A-Za-z])"
"""Not right after a letter or digit: ``(?<![0-9A-Za-z])``."""
_E = r"(?P<post>$|[^0-9A-Za-z])"
"""Not right before a letter or digit: ``(?![0-9A-Za-z])``."""
_NO_DIGIT_AFTER = r"(?P<post>$|\D)"
_ID = r"(?P<id>[A-Za-z]{0,4}\d[0-9A-Za-z]{4,30})" + _E
_SEP = r"\s*(?:是|为|:|：|#|＃)?\s*#?\s*"
_CODE_ID = r"[A-Za-z]{0,6}[-_]?\d[0-9A-Za-z]{2,30}(?:[-_][0-9A-Za-z]{1,30}){0,3}"
"""An identifier after a cue: letters, an optional dash, a digit, more; dashed parts."""
_CUE_ID = r"(?P<id>" + _CODE_ID + ")" + _E
_COUPON_ID = r"(?P<id>\d{0,30}[A-Za-z][A-Za-z0-9_-]{2,31}|\d{6,32})" + _E
"""A coupon code: letters and digits with at least one letter, or six digits or more."""
_NO = r"\s*(?i:id|number|num|no\.?|#|code)"

_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_EN_NUM = r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|a few|several)"
_ZH_NUM = r"[一二两三四五六七八九十]"
_ZH_DAY = r"[一二三四五六日天]"
_CURRENCY = r"(?:¥|￥|US\$|\$)"
_CODE = r"(?P<pre>[^A-Za-z])(?i:rmb|cny|usd)\s?"
_UNIT_WORDS = r"(?:元|块钱|块|(?i:rmb|yuan|dollars?|usd|bucks)(?P<{post}>$|[^A-Za-z])|美元|美金|刀)"

# (label, priority, pattern); a pattern with an "id" group marks only that group.
_PATTERNS: Final[tuple[tuple[str, int, LinearPattern], ...]] = tuple(
    (label, prio, LinearPattern(rx))
    for label, prio, rx in (
        ("REFUND_ID", 1, _B + r"RF\d{6,24}" + _E),
        (
            "REFUND_ID",
            1,
            r"(?:退款(?:单号|编号|号)|(?i:refund)\s*(?i:id|number|no\.?|#))" + _SEP + _ID,
        ),
        (
            "TRACKING_NO",
            1,
            _B + r"(?:SF|YT|JD[A-Z]{0,2}|ZTO|YD|STO|EMS|JT|DPK|YZ)\d{9,15}" + _E,
        ),
        ("TRACKING_NO", 1, _B + r"1Z[0-9A-Z]{16}" + _E),
        (
            "TRACKING_NO",
            1,
            r"(?:运单|快递单|物流单|快递|(?i:tracking))\s*(?:号|编号|(?i:number|no\.?|#|code))?"
            + _SEP
            + _ID,
        ),
        (
            "RETURN_ID",
            1,
            rf"(?:退货(?:申请)?(?:单号|单|编号|号)|(?i:return)\s*(?i:request)?{_NO}"
            rf"|(?i:rma)(?:{_NO})?){_SEP}{_CUE_ID}",
        ),
        (
            "EXCHANGE_ID",
            1,
            rf"(?:换货(?:申请)?(?:单号|单|编号|号)|(?i:exchange|replacement)\s*(?i:order)?{_NO})"
            rf"{_SEP}{_CUE_ID}",
        ),
        (
            "TICKET_ID",
            1,
            r"(?:(?:投诉|客诉)(?:工单|单)(?:号|编号)?|(?:投诉|客诉)(?:编号|号)"
            rf"|(?i:ticket|case)(?:{_NO})?){_SEP}{_CUE_ID}",
        ),
        (
            "WORK_ORDER_ID",
            1,
            rf"(?:工单(?:号|编号)?|(?i:work\s?order)(?:{_NO})?){_SEP}{_CUE_ID}",
        ),
        (
            "COUPON_CODE",
            1,
            r"(?:(?:优惠券|优惠码|折扣码|券码|兑换码|礼品卡|红包)(?:号|码|编号|卡号)?"
            rf"|(?i:coupon|promo|voucher|discount|gift\s?card)(?:{_NO})?){_SEP}{_COUPON_ID}",
        ),
        (
            "INVOICE_NO",
            1,
            rf"(?:发票(?:号码|号|编号|代码)|(?i:invoice){_NO}){_SEP}{_CUE_ID}",
        ),
        ("ORDER_ID", 2, r"订单\s*(?:号|编号)?" + _SEP + _ID),
        ("ORDER_ID", 2, r"(?P<pre>[^运递流款货务工诉])单号" + _SEP + _ID),
        ("ORDER_ID", 2, _B + r"(?i:orders?)\s*(?i:number|num|no\.?|id)?" + _SEP + _ID),
        ("ORDER_ID", 2, r"(?P<pre>[^0-9A-Za-z#])#(?P<id>\d{5,24})" + _E),
        # amounts: a currency sign, or a currency code that does not end a word, before
        # the number; or a unit after it
        (
            "AMOUNT",
            3,
            _CURRENCY + r"\s?(?:\d{1,3}(?:,\d{3})+(?:\.\d{1,2})?(?P<post>$|\D)"
            r"|\d+(?:\.\d{1,2})?(?P<post2>$|\D))",
        ),
        (
            "AMOUNT",
            3,
            _CODE + r"\s?(?:\d{1,3}(?:,\d{3})+(?:\.\d{1,2})?(?P<post>$|\D)"
            r"|\d+(?:\.\d{1,2})?(?P<post2>$|\D))",
        ),
        (
            "AMOUNT",
            3,
            _B
            + r"(?:\d{1,3}(?:,\d{3})+(?:\.\d{1,2})?\s?"
            + _UNIT_WORDS.format(post="post")
            + r"|\d+(?:\.\d{1,2})?\s?"
            + _UNIT_WORDS.format(post="post2")
            + ")",
        ),
        ("AMOUNT", 3, _ZH_NUM + r"+[百千万][一二两三四五六七八九十百千万]*(?:元|块钱|块)"),
        (
            "DATE",
            4,
            _B
            + r"(?:19|20)\d{2}[-/.](?:1[0-2]|0?[1-9])[-/.](?:3[01]|[12]\d|0?[1-9])"
            + _NO_DIGIT_AFTER,
        ),
        (
            "DATE",
            4,
            r"(?P<pre>\D)(?:(?:19|20)\d{2}年)?(?:1[0-2]|0?[1-9])月(?:3[01]|[12]\d|0?[1-9])[日号]",
        ),
        ("DATE", 4, r"(?P<pre>\D)(?:(?:19|20)\d{2}年)?(?:1[0-2]|0?[1-9])月(?:份|初|中旬|底)"),
        (
            "DATE",
            4,
            r"大后天|今天|明天|后天|昨天|前天|今晚|明早|月底|月初|周末|年底"
            rf"|(?:下|上|这|本)个?(?:周|星期|礼拜){_ZH_DAY}?|(?:下|上)个?月"
            rf"|(?:周|星期|礼拜){_ZH_DAY}",
        ),
        (
            "DATE",
            4,
            rf"(?:\d+|{_ZH_NUM}+)(?:\s?[-~～到至]\s?(?:\d+|{_ZH_NUM}+))?\s?个?"
            r"(?:工作日|自然日|天|小时|星期|月)(?:内|之内|左右)?",
        ),
        (
            "DATE",
            4,
            r"(?P<pre>[^A-Za-z])(?i:"
            rf"{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s*\d{{4}})?(?P<post>$|(?-i:[^\dA-Za-z]))"
            rf"|(?:\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}(?:,?\s*\d{{4}})?"
            r"|today|tonight|tomorrow|yesterday"
            rf"|(?:next|last|this)\s+(?:week|month|year|weekend|{_WEEKDAY})|{_WEEKDAY}"
            rf"|{_EN_NUM}(?:\s?(?:-|to|~)\s?{_EN_NUM})?\s+(?:business\s+|working\s+|calendar\s+)?"
            r"(?:days?|weeks?|hours?|months?))(?P<post2>$|(?-i:[^A-Za-z])))",
        ),
        (
            "MODEL",
            5,
            _B + r"(?:(?:iPhone|iPad|Mate|Pura|nova|Galaxy|Pixel|Redmi|Find|Reno|Mi|Xiaomi|"
            r"AirPods|Watch)\s?(?:[A-Z]{0,2}\d{1,3}[A-Za-z]?|Pro|Air|Max|Ultra)"
            r"|[A-Z]{1,2}\d{1,3}[a-z]?)"
            r"(?:\s?(?:Pro\s?Max|Pro\+?|Max|Ultra|Plus|Mini|mini|Lite|SE|Air|Turbo|Slim|Neo))*"
            + _E,
        ),
        # codes of the shape of an identifier that no cue names: letters then five digits
        # or more, or eight digits or more
        ("CODE", 6, _B + r"[A-Za-z]{1,6}[-_]?\d{5,24}(?:[-_]\d{1,12})?" + _E),
        ("CODE", 6, _B + r"\d{8,24}" + _E),
    )
)

_PATTERN_SET: Final = PatternSet([rx for _, _, rx in _PATTERNS])
"""One pass telling which of :data:`_PATTERNS` can match a text: only those are scanned."""

_GROUPS: Final = tuple("id" if "id" in rx.groupindex else None for _, _, rx in _PATTERNS)
"""The group each pattern marks (``None``: the whole match)."""

_CONTINUED: Final = frozenset(ID_LABELS - {"CODE"})
"""Labels a list continues: ``订单 3349201 和 3349202`` makes both ORDER_ID."""

_NEXT_ID = LinearPattern(
    r"^\s*(?:和|、|及|与|以及|跟|,|/|&|(?i:and|or))\s*#?\s*(?P<id>" + _CODE_ID + r")" + _E
)
"""Another identifier right after one, joined by a list word."""

_NEXT_WINDOW: Final = 80
"""How far after an identifier :data:`_NEXT_ID` looks (an identifier is at most ~70 chars)."""

_PII_PRIORITY: Final = 0


@dataclass(frozen=True, slots=True)
class _Candidate:
    label: str
    priority: int
    start: int
    end: int


def _pattern_candidates(text: str) -> list[_Candidate]:
    cands = [_Candidate(m.kind.name, _PII_PRIORITY, m.start, m.end) for m in recent_pii(text)]
    subject = Subject(text)
    hits = _PATTERN_SET.candidates(subject)
    for k, (label, prio, rx) in enumerate(_PATTERNS):
        if k in hits:
            cands.extend(_Candidate(label, prio, a, b) for a, b in rx.scan(subject, _GROUPS[k]))
    queue = [c for c in cands if c.label in _CONTINUED]
    while queue:
        c = queue.pop()
        m = _NEXT_ID.match(text[c.end : c.end + _NEXT_WINDOW])
        if m is not None:
            a, b = m.span(_NEXT_ID.groupindex["id"])
            follower = _Candidate(c.label, c.priority, c.end + a, c.end + b)
            cands.append(follower)
            queue.append(follower)
    return cands


def _resolve(cands: list[_Candidate]) -> list[_Candidate]:
    """The candidates kept, by priority, then length, then position; none overlap."""
    taken = bytearray(max((c.end for c in cands), default=0))
    chosen: list[_Candidate] = []
    for c in sorted(cands, key=lambda c: (c.priority, c.start - c.end, c.start)):
        if taken.find(1, c.start, c.end) == -1:
            taken[c.start : c.end] = b"\x01" * (c.end - c.start)
            chosen.append(c)
    return sorted(chosen, key=lambda c: c.start)


@lru_cache(maxsize=512)
def _entity_spans(text: str) -> tuple[_Candidate, ...]:
    """Resolved pattern entities of ``text`` (cached: the tokenizer and component share it)."""
    return tuple(_resolve(_pattern_candidates(text)))


# --------------------------------------------------------------------------- lexicon


@lru_cache(maxsize=1)
def _lexicon() -> dict[str, tuple[str, ...]]:
    raw = resources.files("unstructured_memory.summariser").joinpath("data/lexicon.json")
    data: dict[str, Any] = json.loads(raw.read_text(encoding="utf-8"))
    out: dict[str, tuple[str, ...]] = {}
    for label in ("PRODUCT", "BRAND"):
        terms: list[str] = []
        for term in data[label]:
            terms.append(term)
            if term.isascii() and term[-1].isalpha() and not term.endswith("s"):
                terms.append(term + "s")
        out[label] = tuple(dict.fromkeys(terms))
    return out


@lru_cache(maxsize=1)
def _lexicon_re() -> LinearPattern:
    """Any lexicon term, longest first; an ASCII term must end a word.

    Non-ASCII terms come first: an ASCII term matching at the same position is
    a prefix of the non-ASCII one's Latin head, so shorter, as longest-first wants.
    """
    terms = sorted({t for ts in _lexicon().values() for t in ts}, key=len, reverse=True)
    wide = "|".join(re.escape(t) for t in terms if not t.isascii())
    ascii_ = "|".join(re.escape(t) for t in terms if t.isascii())
    return LinearPattern(rf"(?i:{wide}|(?:{ascii_})(?P<post>$|[^0-9A-Za-z]))")


def _boundaries(text: str) -> list[int]:
    cuts = {0, len(text)}
    for c in _entity_spans(text):
        cuts.update((c.start, c.end))
    for a, b in _lexicon_re().spans(text):
        if a == 0 or not (text[a - 1].isascii() and text[a - 1].isalnum()):
            cuts.update((a, b))
    return sorted(cuts)


class _BoundedJieba:
    """Stands in for the ``jieba`` module in spaCy's Chinese tokenizer.

    Segments with the shared project tokenizer, but never across a candidate
    entity boundary.
    """

    def cut(self, text: str, cut_all: bool = False) -> Iterator[str]:
        cuts = _boundaries(text)
        for start, end in itertools.pairwise(cuts):
            yield from segment(text[start:end])


# --------------------------------------------------------------------------- pipelines

_PATTERNS_COMPONENT = "dualtrack_patterns"


@Language.component(_PATTERNS_COMPONENT)
def _patterns_component(doc: Doc) -> Doc:
    spans: list[Span] = []
    taken = bytearray(len(doc))
    for c in _entity_spans(doc.text):
        span = doc.char_span(c.start, c.end, label=c.label, alignment_mode="expand")
        if span is not None and taken.find(1, span.start, span.end) == -1:
            taken[span.start : span.end] = b"\x01" * (span.end - span.start)
            spans.append(span)
    doc.ents = spans
    return doc


_MAX_DOCS_PER_PIPELINE: Final = 50_000
"""A pipeline's vocabulary grows with every new token string (order ids...),
so a pipeline is rebuilt after this many documents."""

_lock = threading.Lock()
_pipelines: dict[str, Language] = {}
_uses: dict[str, int] = {}


def _build(lang: Lang) -> Language:
    if lang == "zh":
        nlp = spacy.blank("zh", config={"nlp": {"tokenizer": {"segmenter": "jieba"}}})
        tokenizer: Any = nlp.tokenizer  # spaCy's ChineseTokenizer calls jieba_seg.cut()
        tokenizer.jieba_seg = _BoundedJieba()
    else:
        nlp = spacy.blank("en")
    nlp.add_pipe(_PATTERNS_COMPONENT)
    ruler = nlp.add_pipe(
        "entity_ruler", config={"phrase_matcher_attr": "LOWER", "overwrite_ents": False}
    )
    patterns = [
        {"label": label, "pattern": term}
        for label, terms in _lexicon().items()
        for term in terms
        if lang == "zh" or term.isascii()
    ]
    ruler.add_patterns(patterns)  # type: ignore[attr-defined]
    return nlp


def _pipeline(lang: Lang) -> Language:
    with _lock:
        nlp = _pipelines.get(lang)
        if nlp is None or _uses[lang] >= _MAX_DOCS_PER_PIPELINE:
            nlp = _pipelines[lang] = _build(lang)
            _uses[lang] = 0
        _uses[lang] += 1
        return nlp


_CJK_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_RE = re.compile(r"[A-Za-z]")


def detect_language(text: str) -> Lang:
    """``"zh"`` when CJK characters are at least a quarter of the letters, else ``"en"``.

    Text without letters counts as Chinese, the primary language.
    """
    cjk = len(_CJK_RE.findall(text))
    latin = len(_LATIN_RE.findall(text))
    if cjk == 0 and latin > 0:
        return "en"
    return "zh" if 3 * cjk >= latin else "en"


_NUMBER_CUE = LinearPattern(r"号|[\s:：是为]*$")


def _names_a_number(text: str, span: Span, following: list[Span]) -> bool:
    """A product word that introduces a phone number: 手机号, 手机 138…, phone: 138…."""
    if text.startswith("号", span.end_char):
        return True
    if not following or following[0].label_ != "PHONE":
        return False
    return _NUMBER_CUE.fullmatch(text[span.end_char : following[0].start_char]) is not None


def extract_entities(text: str) -> list[Entity]:
    """Entities of ``text`` in order of position; PII entities hold masked text.

    Raises :class:`policies.errors.InvalidText` for text that is not a valid,
    non-empty string within :data:`policies.validation.MAX_TEXT_BYTES`.
    """
    text = check_text(text)
    lang: Lang = "zh" if _CJK_RE.search(text) else "en"
    doc = _pipeline(lang)(text)
    out: list[Entity] = []
    ents = list(doc.ents)
    for i, span in enumerate(ents):
        label = span.label_
        value = span.text
        if label == "PRODUCT" and _names_a_number(text, span, ents[i + 1 : i + 2]):
            continue
        if label in PII_LABELS:
            value = mask_value(PiiKind[label], value)
        out.append(Entity(label, value, span.start_char, span.end_char))
    return out
