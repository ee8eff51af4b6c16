"""Products, models and brands found by shape and part of speech, not by a word list.

Two grammars feed :mod:`~unstructured_memory.summariser.entities` (the lexicon stays a
prior, never the only door):

* **Latin names** (:func:`latin_names`): a run of Latin tokens, each a capitalised or
  camel-case word (``Kindle``, ``UPPAbaby``, ``Litter-Robot``), a model token of letters
  and digits (``WH-1000XM5``, ``G20S``, ``Z9``, ``HL-L2350DW``), a number after a word
  (``Mate 60``, ``Paperwhite 5``) or a series word (``Pro``, ``Ti``, ``Super``, ``RS``).
  A run holding a model token or a number is a MODEL (``RTX 4070 Ti Super``); its first
  word is the BRAND when another word follows it (``Kindle`` ``Paperwhite 5``,
  ``Bugaboo`` ``Fox 5``) or the lexicon knows it (``Sony`` ``WH-1000XM5``). A run of
  words only is a name too in Chinese text (``Kindle Oasis``: a Latin word there names a
  brand or a model) and, in English text, after a determiner (``the Kindle Scribe``).
  Ids (five digits in a row, three numbered parts) and measures (``2K``, ``64GB``,
  ``100-inch``) are not models.
* **Chinese noun phrases** (:func:`chinese_products`): the nouns jieba tags
  (``rjieba.tag``) after a purchase, ownership or pointing cue (``买的``, ``买个``,
  ``我的``, ``那台``, ``订单 X 的``, ``推荐一款``) are a PRODUCT (``电动晾衣架``,
  ``20 寸登机箱``); a brand word the lexicon knows at its head is its BRAND. The CJK
  word right before a Latin model is its BRAND (``石头`` ``G20S``, ``小天才`` ``Z9``),
  and a number of three to six digits after a brand is a MODEL (``乐高 42143``).

Pure functions of the text; every pattern runs under RE2 in linear time, and jieba only
tags the few characters after a cue.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection
from typing import Final

import rjieba

from policies.linear_re import LinearPattern, Subject
from unstructured_memory.summariser import symptoms

__all__ = [
    "brand_before",
    "chinese_products",
    "english_products",
    "english_subjects",
    "is_attribute",
    "latin_names",
    "thing_opening",
]

Span = tuple[str, int, int]
"""A found entity: (label, start, end)."""

_WORD = r"(?:[A-Z][A-Za-z]*(?:-[A-Za-z]+)*|[a-z]+[A-Z][A-Za-z]*)"
_ALNUM = r"[A-Za-z]*[0-9]{1,4}(?:[A-Za-z]+[0-9]{0,4})*"
"""Letters and digits with no more than four digits in a row (an id has five)."""
_MODEL_TOKEN = rf"(?:[A-Za-z]{{1,8}}-)?{_ALNUM}(?:[-+][A-Za-z0-9]+)*\+?"
_TOKEN = rf"(?:{_MODEL_TOKEN}|{_WORD}|[0-9]{{1,6}})"
_LETTERED = (
    r"(?:(?:[A-Za-z]{1,8}-)?(?:[A-Za-z]+[0-9]{1,4}(?:[A-Za-z]+[0-9]{0,4})*"
    r"|[0-9]{1,4}[A-Za-z]+(?:[0-9]{1,4}[A-Za-z]*)*)|[A-Za-z]{1,8}-[0-9]{1,4}[A-Za-z]*)"
    r"(?:[-+][A-Za-z0-9]+)*\+?"
)
"""A token opening a run that holds a letter and a digit, four digits in a row at most:
``WH-1000XM5``, ``G20S``, ``TN-760`` (never an id such as ``RF2026060171645``)."""
_RUN = LinearPattern(
    rf"(?P<pre>[^0-9A-Za-z_.@/#-])(?:{_WORD}|{_LETTERED})(?: {_TOKEN}){{0,5}}"
    r"(?P<post>$|[^0-9A-Za-z_@/#-])"
)
"""A run of Latin tokens between non-Latin characters, opening with a letter."""
_SPEC_EN = LinearPattern(r"[0-9]+(?:\.[0-9]+)?-?(?:[A-Za-z]+|\")(?:-[A-Za-z]+)*")
"""A measure said as one word: ``100-inch``, ``9-foot``, ``5-weight``, ``3-pack``."""
_ORDINAL = LinearPattern(r"[0-9]+(?i:st|nd|rd|th)")
_UNIT_AFTER = LinearPattern(
    r"^\s?(?:\"|″|”|元|块|个|件|台|把|只|寸|米|升|克|斤|天|年|月|号|岁|%|(?i:oz|inch|in|ft|foot|feet|"
    r"cm|mm|ml|l|kg|lb|lbs|pm|am|days?|hours?|years?|pcs|pieces?|dollars?|bucks|yuan|gb|tb|w"
    r"|v)(?P<post>$|[^A-Za-z]))"
)
_SERIES: Final = frozenset(
    [
        "pro",
        "max",
        "ultra",
        "plus",
        "mini",
        "lite",
        "se",
        "air",
        "turbo",
        "slim",
        "neo",
        "ti",
        "super",
        "rs",
        "gt",
        "edge",
        "note",
        "prime",
        "duo",
        "fold",
        "flip",
        "classic",
        "sport",
        "elite",
        "xl",
    ]
)
"""Words that go on a model: ``Pro``, ``Ti Super``, ``RS``."""
_KEEP_WHOLE: Final = frozenset(
    [
        "iphone",
        "ipad",
        "mate",
        "pura",
        "nova",
        "galaxy",
        "pixel",
        "redmi",
        "find",
        "reno",
        "mi",
        "xiaomi",
        "airpods",
        "watch",
        "macbook",
        "surface",
        "thinkpad",
        "switch",
        "model",
        "series",
        "mark",
        "mk",
    ]
)
"""Series names a model starts with, and the words that name a model (``iPhone 15``,
``Model Y``, ``Series 9``): one model, not a brand and a model."""
_NOT_NAMES: Final = frozenset(
    [
        "i",
        "the",
        "a",
        "an",
        "my",
        "our",
        "your",
        "his",
        "her",
        "their",
        "its",
        "this",
        "that",
        "these",
        "those",
        "it",
        "we",
        "he",
        "she",
        "they",
        "you",
        "hi",
        "hello",
        "hey",
        "thanks",
        "thank",
        "sorry",
        "yes",
        "no",
        "ok",
        "okay",
        "and",
        "but",
        "so",
        "or",
        "if",
        "is",
        "are",
        "was",
        "were",
        "be",
        "can",
        "could",
        "do",
        "does",
        "did",
        "will",
        "would",
        "should",
        "what",
        "when",
        "where",
        "why",
        "how",
        "which",
        "who",
        "please",
        "also",
        "then",
        "just",
        "still",
        "any",
        "all",
        "order",
        "orders",
        "ticket",
        "refund",
        "return",
        "exchange",
        "case",
        "room",
        "building",
        "unit",
        "floor",
        "level",
        "size",
        "day",
        "days",
        "week",
        "month",
        "year",
        "today",
        "tomorrow",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "am",
        "pm",
        "vip",
        "app",
        "ok",
        "id",
        "sms",
        "email",
        "wechat",
        "tracking",
        "delivery",
        "item",
        "parcel",
        "package",
        "number",
        "reference",
        "ref",
        "code",
        "new",
        "old",
        "chinese",
        "english",
        "mandarin",
        "cantonese",
        "japanese",
        "korean",
        "french",
        "german",
        "spanish",
        "american",
        "british",
        "european",
        "us",
        "uk",
        "eu",
        "usa",
    ]
)
"""Capitalised words that name no product: sentence openers, days, months, business words."""
_DETERMINERS: Final = frozenset(
    ["the", "my", "a", "an", "this", "that", "our", "your", "his", "her", "their", "new", "old"]
)
"""Words before an English name of a product (``the Kindle Scribe``)."""


def _has_digit(token: str) -> bool:
    return any(c.isdigit() for c in token)


def _digit_runs(token: str) -> list[int]:
    runs, n = [], 0
    for c in token:
        if c.isdigit():
            n += 1
        elif n:
            runs.append(n)
            n = 0
    return [*runs, n] if n else runs


def _is_model_token(token: str) -> bool:
    """Letters and digits of a model: no id (five digits in a row, three numbered parts,
    two with one of digits only), no measure (``2K``, ``64GB``, ``100-inch``: digits, then
    letters only), no number."""
    runs = _digit_runs(token)
    if not runs or not any(c.isalpha() for c in token) or max(runs) > 4:
        return False
    if token[0].isdigit() and len(runs) == 1:
        return False  # a measure: 2K, 5G, 64GB, 100-inch, 5-weight
    numbered = [part for part in token.split("-") if _has_digit(part)]
    return len(numbered) <= 1 or (
        len(numbered) == 2 and all(any(c.isalpha() for c in part) for part in numbered)
    )  # C22-IH66E, DJ13-B5: each numbered part lettered (an id's are digits: BX26-0718)


def _is_name(token: str) -> bool:
    return token.lower() not in _NOT_NAMES and (
        token[0].isupper() or any(c.isupper() for c in token[1:])
    )


def _tokens(text: str, start: int, end: int) -> list[tuple[int, int]]:
    out, at = [], start
    for piece in text[start:end].split(" "):
        out.append((at, at + len(piece)))
        at += len(piece) + 1
    return out


def _goes_on(text: str, tok: tuple[int, int], kept: list[tuple[int, int]]) -> bool:
    """Whether token ``tok`` belongs to the name ``kept`` so far."""
    a, b = tok
    word = text[a:b]
    if word.lower() in _NOT_NAMES:
        return False
    if word.isdigit():  # a number goes on a name (Mate 60, Paperwhite 5), never before a unit
        return bool(kept) and len(word) <= 4 and _UNIT_AFTER.match(text[b : b + 8]) is None
    if _has_digit(word):
        return _is_model_token(word)
    return (bool(kept) and word.lower() in _SERIES) or _is_name(word)


def _is_unmodelled_name(
    text: str, kept: list[tuple[int, int]], lang: str, lexicon: Collection[str]
) -> bool:
    """Whether words with no digit name a product: not an abbreviation or a shout, not the
    lexicon's own term, and in English text after a determiner (``the Kindle Scribe``)."""
    words = [text[a:b] for a, b in kept]
    if all(w.isupper() for w in words) and (len(words) > 1 or len(words[0]) <= 3):
        return False  # PLA, CPU, DROP TABLE
    if " ".join(words).lower() in lexicon:
        return False
    before = text[max(0, kept[0][0] - 8) : kept[0][0]]
    return lang != "en" or (
        before.endswith(" ")
        and before.rstrip().rsplit(" ", 1)[-1].lower() in _DETERMINERS
        and _PAYMENT_AFTER.match(text[kept[-1][1] :]) is None
        and _PAID_ON.search(text[max(0, kept[0][0] - 60) : kept[0][0]]) is None
    )


_PAYMENT_AFTER: Final = LinearPattern(
    r"\s+(?i:plan|card|account|payments?|instal+ments?|credit|balance|points|wallet|"
    r"financing|loan|pay)(?:$|[^A-Za-z])"
)
"""A payment noun after a name: ``the Affirm plan``, ``my Venmo balance`` name a way of paying."""
_PAID_ON: Final = LinearPattern(
    r"(?i:(?:^|[^a-z])(?:put|charge[ds]?|pa(?:y|id|ying)|bill(?:ed)?|split|back|"
    r"refund(?:s|ed)?|credit(?:s|ed)?)(?:\s+[^\s.;!?]+){0,5}"
    r"\s+(?:on|to|with|via|through|using)\s+(?:my|your|their|the|our)\s+$)"
)
"""Money put on a name or paid back to it: ``put the sofa on my Amex``, ``charge the rest to
my Discover``, ``$150 will go back to your Mastercard``."""


_DELETE_DIGITS: Final = dict.fromkeys(map(ord, "0123456789"))


def _may_name(text: str) -> bool:
    """Whether English text may hold a name: a digit (a model), or a capitalised word right
    after a determiner (``the Kindle Scribe``); most sentences hold neither."""
    if not text.isalpha() and text.translate(_DELETE_DIGITS) != text:
        return True
    words = text.split()
    return any(
        w.lower() in _DETERMINERS and nxt[:1].isupper() for w, nxt in itertools.pairwise(words)
    )


def latin_names(
    text: str,
    lang: str,
    brands: Collection[str],
    products: Collection[str],
    subject: Subject | None = None,
) -> list[Span]:
    """MODEL and BRAND spans of the Latin runs of ``text`` (see the module docstring);
    ``brands`` and ``products`` are the lexicon's terms, case-folded; ``subject``: ``text``
    prepared for scanning, when the caller has it."""
    out: list[Span] = []
    if lang == "en" and not _may_name(text):
        return out
    lexicon = {*brands, *products}
    for start, end in _RUN.scan(subject or Subject(text)):
        if text[start:end].lower() in _NOT_NAMES:
            continue  # "I", "The", "Thanks": most runs are one such word
        toks = _tokens(text, start, end)
        while toks and text[toks[0][0] : toks[0][1]].lower() in _NOT_NAMES:
            toks = toks[1:]  # "The", "My", "Orders" open no name
        kept: list[tuple[int, int]] = []
        for tok in toks:
            if not _goes_on(text, tok, kept):
                break
            kept.append(tok)
        if not kept:
            continue
        words = [text[a:b] for a, b in kept]
        if not any(_has_digit(w) for w in words) and not _is_unmodelled_name(
            text, kept, lang, lexicon
        ):
            continue
        first = words[0].lower()
        split = (
            len(kept) > 1
            and first not in _KEEP_WHOLE
            and (
                first in brands
                or (
                    not words[0].isupper()
                    and not words[1].isdigit()
                    and words[1].lower() not in _SERIES
                )
            )
        )
        if split:
            out += [("BRAND", kept[0][0], kept[0][1]), ("MODEL", kept[1][0], kept[-1][1])]
        elif not (first in brands and len(kept) == 1):  # the lexicon's brand alone: its own
            out.append(("MODEL", kept[0][0], kept[-1][1]))
    return out


_EN_PRODUCT = LinearPattern(
    r"(?i:(?:^|[^A-Za-z])(?:the|my|a|an|this|that|our|your|his|her|their) +)"
    r"(?P<p>[0-9]+(?:\.[0-9]+)?-?(?:[A-Za-z]+|\")(?:-[A-Za-z]+)*"
    r"(?: +[0-9]+(?:\.[0-9]+)?-?(?:[A-Za-z]+|\")(?:-[A-Za-z]+)*){0,3}"
    r"(?: +[A-Za-z][A-Za-z-]*){1,3})"
)
"""A determiner, measures (``100-inch``, ``9-foot 5-weight``) and the words they measure."""
_EN_STOP: Final = frozenset(
    [
        "has",
        "have",
        "had",
        "is",
        "was",
        "are",
        "were",
        "from",
        "for",
        "with",
        "that",
        "which",
        "and",
        "or",
        "in",
        "on",
        "at",
        "to",
        "of",
        "by",
        "keeps",
        "kept",
        "doesn't",
        "won't",
        "isn't",
        "can't",
        "it",
        "its",
        "since",
        "after",
        "before",
        "when",
    ]
)


def english_products(text: str) -> list[Span]:
    """PRODUCT spans of English measured noun phrases: ``the 100-inch ALR screen``,
    ``a 9-foot 5-weight rod`` (the measures and up to two words after them, up to a verb
    or a preposition)."""
    out: list[Span] = []
    for m in _EN_PRODUCT.finditer(text):
        a, b = m.span(_EN_PRODUCT.groupindex["p"])
        words = text[a:b].split()
        kept: list[str] = []
        measures = True
        for w in words:
            if measures and _ORDINAL.fullmatch(w) is not None:
                break  # the 12th: a date, not a measure
            if measures and _SPEC_EN.fullmatch(w) is not None:
                kept.append(w)
                continue
            measures = False
            if w.lower() in _EN_STOP or (kept and sum(1 for k in kept if not k[0].isdigit()) >= 2):
                break
            kept.append(w)
        if kept and not kept[-1][0].isdigit():
            out.append(("PRODUCT", a, a + len(" ".join(kept))))
    return out


_EN_SUBJECT = LinearPattern(
    r"(?:^|[.!?;,:]\s*|\s(?:and|but|so|because|hi|hey)\s+)(?i:the|my|our|this|that|his|her)\s+"
    r"(?P<np>[a-z]+(?:[ -][a-z]+){0,6})"
)
"""A clause opening on a determiner and lower-case words: the thing it may be about."""
_EN_BROKEN = LinearPattern(
    r"(?i:^\s(?:(?:is|was|are|were|got|has been|came)\s+)?(?:snap(?:ped|s)?|broken|broke|bust|torn"
    r"|ripped|split|cracked|damaged|dented|faulty|defective|loose|stuck)(?:$|[^A-Za-z]))"
)
"""A broken state after a thing (snapped, is broken, came loose): symptoms.PROBLEM_EN misses
what is said with a copula."""
_EN_PARTS_OF: Final = frozenset({"on", "of", "in"})
_EN_GENERIC: Final = frozenset(
    {
        "order",
        "package",
        "parcel",
        "item",
        "delivery",
        "courier",
        "driver",
        "app",
        "website",
        "site",
        "refund",
        "service",
        "payment",
        "account",
        "code",
        "link",
        "price",
        "one",
        "thing",
        "stuff",
        "shipment",
        "tracking",
    }
)
"""Nouns that name no product of their own (the package arrived late)."""
_EN_PERCEIVED: Final = frozenset(
    f"{verb}{ending}"
    for verb in ("smell", "look", "feel", "sound", "seem", "taste", "appear")
    for ending in ("", "s", "ed")
) | {"smelt", "felt"}
"""Verbs of perception or seeming (smells, looks, sounds, seems, tastes): a verb, so a
product's name ends before one (the noise sounds like grinding: no "noise sounds like")."""
_EN_MEDIUM: Final = frozenset(
    {
        "puddle",
        "puddles",
        "pool",
        "water",
        "liquid",
        "fluid",
        "oil",
        "mess",
        "spill",
        "stain",
        "stains",
        "residue",
        "smoke",
        "steam",
        "moisture",
        "condensation",
        "mold",
        "mould",
        "dust",
        "foam",
        "gunk",
        "goo",
        "sludge",
        "leak",
        "drip",
        "drips",
        "flood",
        "smell",
        "odor",
        "odour",
        "noise",
        "sound",
        "air",
        "floor",
        "wall",
        "ceiling",
        "kitchen",
        "bathroom",
        "bedroom",
        "room",
        "garage",
        "basement",
        "hallway",
        "house",
        "apartment",
    }
)
"""Heads of what a fault shows in or where it is (a body of liquid, a mess, a smell or a
noise, a room or a surface of the home): no product, whatever verb follows (the puddle
smells burnt, the kitchen smells like gas, the water keeps leaking, the floor is damaged);
the thing of one's own said so stays one (the toaster smells burnt, the water bottle
leaks)."""


def english_subjects(text: str) -> list[Span]:
    """PRODUCT spans of the thing an English clause opens on when a problem follows it: ``the
    salad spinner keeps leaking``, ``my camping lantern is broken``; of a part, its whole
    (``the hinge on the jewelry box snapped``: ``jewelry box``); never what a fault shows in
    (:data:`_EN_MEDIUM`: ``the puddle smells burnt``) nor a name running over a verb of
    perception (:data:`_EN_PERCEIVED`)."""
    out: list[Span] = []
    for m in _EN_SUBJECT.finditer(text):
        a, b = m.span(_EN_SUBJECT.groupindex["np"])
        words = text[a:b].split(" ")
        for k in range(1, len(words) + 1):
            end = a + len(" ".join(words[:k]))
            after = text[end:] if text[end : end + 1] == " " else " " + text[end:]
            if words[k - 1].lower() in _EN_PERCEIVED:
                break  # the noise sounds like grinding: a verb, the name ended before it
            if symptoms.PROBLEM_EN.match(after) is None and _EN_BROKEN.match(after) is None:
                continue
            head = words[:k]
            if any(w.lower() in _EN_STOP - _EN_PARTS_OF or w.endswith("ed") for w in head):
                break  # the package arrived late: a verb, no thing of one's own
            of = [i for i, w in enumerate(head) if w.lower() in _EN_PARTS_OF]
            if of:  # the hinge on the jewelry box: the box
                head = head[of[-1] + 1 :]
                head = head[1:] if head and head[0].lower() in _DETERMINERS else head
            if (
                1 <= len(head) <= 3
                and " ".join(head).lower() not in _EN_GENERIC
                and head[-1].lower() not in _EN_MEDIUM
            ):
                start = end - len(" ".join(head))
                out.append(("PRODUCT", start, end))
            break
    return out


# --------------------------------------------------------------------------- Chinese

_CUE = LinearPattern(
    r"(?:买|装|收到|用|订|拿|入手|送|选|挑|换|补|来|推荐|看看|看下|看中|想要|要)"
    r"(?:了|的|[一两几]?[个台根件双把款套只部条张瓶盒支辆块副卷包袋罐箱份])"
    r"|(?:推荐|看看|看下|想要)(?:一下)?(?:一?[个台根件双把款套只部条张瓶盒支辆])?"
    r"|(?:我|我家|我们|家里|你们|他|她)(?:的|家的)|我家"
    r"|(?:要|得|来|去|着)(?:穿|戴|用|吃|喝|送|带|铺|盖|玩|骑|装|换)的"
    r"|(?:这|那)(?:个|台|款|件|双|把|根|套|只|部|条|张|瓶|盒|支|辆)"
    r"|订单(?:号|编号)?\s?[:：]?\s?[0-9A-Za-z][0-9A-Za-z-]{3,}\s?(?:的|里的|里那个|那个|这个)"
)
"""Where a product is named next: after a purchase (买的, 买个), ownership (我的), pointing
(那台), what it is for (要穿的校服, 要送的茶叶) or an order (订单 6257702 的)."""
_SPEC_UNITS: Final = (
    "英寸",
    "公斤",
    "毫升",
    "寸",
    "米",
    "升",
    "L",
    "斤",
    "码",
    "匹",
    "P",
    "GB",
    "G",
    "TB",
    "T",
    "W",
    "瓦",
    "ml",
)
"""Units of a measure before a product (``20 寸登机箱``), the longer of two with one start first."""


def _spec_length(text: str, at: int) -> int:
    """Characters of a measure opening ``text[at:]`` (``20 寸``, `` 1.5 匹``), 0 if none."""
    i = at + (text[at : at + 1] == " ")
    j = i
    while j < len(text) and j - i < 6 and (text[j].isdigit() or (text[j] == "." and j > i)):
        j += 1
    if j == i or not text[i].isdigit():
        return 0
    j += text[j : j + 1] == " "
    unit = next((u for u in _SPEC_UNITS if text.startswith(u, j)), None)
    if unit is None:
        return 0
    j += len(unit)
    j += text[j : j + 1] == " "
    return j - at


_NOUNS: Final = frozenset({"n", "nz", "nt", "ng", "vn", "nr", "nrt", "ns", "j", "b"})
_HEADS: Final = frozenset({"n", "nz", "nt", "ng", "nr", "nrt", "ns", "j"})
"""Tags a product's last word may have: a noun, never a verbal noun (钓鱼竿|运输)."""
_FUNCTION_CHARS: Final = frozenset("能有没当会要想是在也都就还才被把给让用可得的了着过已")
"""Characters jieba glues to a noun (书能, 破壁机有, 按摩仪当): a product's name ends there."""
_ATTRIBUTES: Final = frozenset(
    [
        "颜色",
        "码数",
        "尺码",
        "价位",
        "价格",
        "物流",
        "外箱",
        "包装",
        "成分",
        "配方",
        "型号",
        "尺寸",
        "重量",
        "容量",
        "款式",
        "师傅",
        "质量",
        "声音",
        "降价",
        "功能",
        "效果",
        "味道",
        "口味",
        "版本",
        "配件",
        "链接",
        "问题",
        "情况",
        "开机",
        "关机",
        "启动",
        "使用",
        "安装",
        "售后",
        "维修",
        "保修",
        "发货",
        "退货",
        "换货",
        "专用",
    ]
)
"""Words about a product, not part of its name (保温杯|颜色, 跑鞋|码数)."""
_BRANDISH: Final = frozenset({"n", "nz", "nt", "nr", "nrt", "ns", "j", "a", "m", "t"})
"""Tags a brand's words may have (jieba knows few brands: 万代 is a time, 极米 a numeral)."""
_NUMERALS: Final = frozenset("零一二三四五六七八九十百千万亿两几半")
_GENERIC: Final = frozenset(
    [
        "收货地址",
        "收货电话",
        "银行卡",
        "邮箱",
        "会员",
        "超级会员",
        "方向",
        "时间段",
        "婴儿",
        "原装",
        "正品",
        "全新",
        "官方",
        "原厂",
        "东西",
        "事",
        "事情",
        "问题",
        "情况",
        "时候",
        "地方",
        "样子",
        "感觉",
        "款",
        "种",
        "颜色",
        "尺码",
        "价格",
        "钱",
        "订单",
        "快递",
        "包裹",
        "货",
        "商品",
        "宝贝",
        "产品",
        "儿子",
        "女儿",
        "老婆",
        "老公",
        "孩子",
        "宝宝",
        "妈妈",
        "爸爸",
        "妈",
        "爸",
        "朋友",
        "同学",
        "公司",
        "自己",
        "我们",
        "家里",
        "家人",
        "老人",
        "客服",
        "店",
        "店家",
        "型号",
        "款式",
        "版本",
        "系列",
        "型",
        "号",
        "链接",
        "页面",
        "东东",
        "礼物",
        "活动",
        "优惠",
        "发票",
        "地址",
        "电话",
        "手机号",
        "记录",
        "信息",
        "消息",
        "通知",
        "短信",
        "照片",
        "图片",
        "视频",
        "单子",
        "钱款",
        "售后",
        "师傅",
        "快递员",
        "人",
    ]
)
"""Nouns that name no product: people, things in general, business words."""
_NAMES_AN_ID: Final = frozenset("码号单")
_WHOLE_REST = LinearPattern(r"[\u4e00-\u9fff]{2,6}")
_PURCHASE = LinearPattern(
    r"(?:买|补|来|换|要|订|拿|入手|选|挑)[一两几]?[个台根件双把款套只部条张瓶盒支辆块副卷包袋罐箱份]$"
)
_TIME_CHARS: Final = frozenset("年月天周日号次点分秒")
"""A short rest of a clause after a purchase cue (``补个加热管``): the product itself."""
_CLOSED: Final = frozenset(
    [
        "的",
        "了",
        "是",
        "个",
        "这",
        "那",
        "我",
        "你",
        "他",
        "她",
        "它",
        "们",
        "和",
        "与",
        "在",
        "给",
        "把",
        "被",
        "就",
        "也",
        "都",
        "还",
        "买",
        "要",
        "用",
        "想",
        "上",
        "下",
        "看",
    ]
)
_MEASURE_END: Final = frozenset("个台款件只部双把套张条支块份瓶盒袋")


def _glued(word: str, rest: list[tuple[str, str]]) -> bool:
    """Whether jieba glued a name's last character to the word after it: two characters,
    not a noun, the second opening a problem (宝坏|了) or a request (枪帮|我)."""
    if len(word) != 2 or not "\u4e00" <= word[0] <= "\u9fff" or word[0] in _FUNCTION_CHARS:
        return False
    after = word[1] + "".join(w for w, _ in rest)
    return word[1] in _GLUED_AFTER or symptoms.PROBLEM_ZH.match(after) is not None


_GLUED_AFTER: Final = frozenset("帮给把被让")
"""Characters that open a request right after a name (筋膜枪帮我退了)."""


def _np(tags: list[tuple[str, str]], known: Collection[str] = ()) -> int:
    """Characters of the noun phrase opening ``tags``: nouns, after a verb as a modifier
    (折叠|婴儿床, 登|机箱), up to a symptom, a part, an attribute or a function word glued
    on (保温杯|漏水, 拉杆箱|轮子, 跑鞋|码数, 破壁机|有), ending on a noun, at most eight
    characters. ``known``: the lexicon's words, never cut (美的 holds a 的)."""
    length = end = 0
    for i, (word, tag) in enumerate(tags):
        head = word
        for k, ch in enumerate(word):
            if k and ch in _FUNCTION_CHARS and word not in known:
                head = word[:k]  # 书能 -> 书, 破壁机有 -> 破壁机
                break
        noun = tag in _NOUNS and word not in _CLOSED
        modifier = (
            i == 0 and tag == "v" and len(word) <= 2 and len(tags) > 1 and tags[1][1] in _NOUNS
        )
        if length and end == length and _glued(word, tags[i + 1 :]) and length < 8:
            return length + 1  # 暖手|宝坏|了, 筋膜|枪帮|我: the name's last character
        if not (noun or modifier) or not all("\u4e00" <= c <= "\u9fff" for c in word):
            break
        if length and (
            symptoms.PROBLEM_ZH.search(word) is not None
            or symptoms.PART.match(word) is not None
            or word in _ATTRIBUTES
            or word.endswith("色")
        ):
            break
        if length + len(head) > 8:
            break
        length += len(head)
        if tag in _HEADS or head != word:
            end = length
        if head != word:
            break
    return end


_THING_TAGS: Final = frozenset({"n", "nz", "ng"})


def is_attribute(word: str) -> bool:
    """Whether ``word`` is a word about a thing rather than a thing (价格, 颜色, 红色)."""
    return word in _ATTRIBUTES or word.endswith("色")


def thing_opening(text: str) -> str:
    """The noun phrase of a thing opening ``text`` (钢化膜 of 钢化膜还有货吗, 屏幕 of 屏幕碎了), or
    ``""``: none, or a word about a thing rather than a thing (价格, 颜色: :data:`_ATTRIBUTES`)."""
    cut = next((i for i, c in enumerate(text[:8]) if not "\u4e00" <= c <= "\u9fff"), len(text[:8]))
    tags = rjieba.tag(text[:cut]) if cut else []
    n = _np(tags)
    thing = text[:n]
    if (
        not n
        or not (tags[0][1] in _THING_TAGS or n > len(tags[0][0]))  # 充电|头: a verb modifies
        or tags[0][0] in _ATTRIBUTES
        or thing in _ATTRIBUTES
        or thing.endswith("色")
    ):
        return ""
    return thing


def chinese_products(
    text: str,
    brands: Collection[str],
    products: Collection[str],
    subject: Subject | None = None,
) -> list[Span]:
    """PRODUCT and BRAND spans from the nouns after a cue, BRAND spans before the Latin
    models already found and MODEL spans of numbers after a brand (see the module
    docstring)."""
    out: list[Span] = []
    ends = [end for _, end in _CUE.scan(subject or Subject(text))]
    ends += [a for a in _subjects(text) if a not in ends]
    homes = {end for end in ends if text.endswith("我家", 0, end)}
    for end in sorted(ends):
        at = end
        spec = _spec_length(text, at)
        head = at + spec
        window = text[head : head + 12]
        cut = next((i for i, c in enumerate(window) if not "\u4e00" <= c <= "\u9fff"), len(window))
        if cut < 2:
            continue
        tags = rjieba.tag(window[:cut])
        n = _np(tags, brands)
        rest = window[:cut]
        if (
            n < 2
            and _WHOLE_REST.fullmatch(rest) is not None
            and _PURCHASE.search(text[max(0, end - 4) : end]) is not None
            and not any(c in _FUNCTION_CHARS or c in _NUMERALS or c in _TIME_CHARS for c in rest)
        ):
            n = cut  # 补个加热管: the rest of the clause is the product, whatever jieba tags it
        if n < 2:
            continue
        phrase = window[:n]
        first = tags[0][0]
        last = next((w for w, _ in reversed(tags) if phrase.endswith(w)), "")
        if last in _GENERIC or (
            phrase in _GENERIC
            or first in _GENERIC
            or phrase[-1] in _NAMES_AN_ID
            or phrase in _ATTRIBUTES
            or phrase.endswith("色")
        ):
            continue  # 提货码, 保修卡号, 质检单: the name of an identifier, not a product
        start = head
        if end in homes and first not in brands:
            continue  # after 我家 alone, a product with its brand (我家美的空气炸锅), not 我家六楼
        if first in brands and len(first) < n:
            out.append(("BRAND", head, head + len(first)))
            start = head + len(first)
        elif first in brands:
            continue
        if spec and start == head:
            start = at + (len(text[at : at + 12]) - len(text[at : at + 12].lstrip()))
        out.append(("PRODUCT", start, head + n))
    return out


_CLAUSE_START: Final = LinearPattern(r"(?:[，,。！？!?；;\n ]|那个|这个)[\x{4e00}-\x{9fff}]")
_STATE_WORDS: Final = (
    r"(?:还没(?:装|到|发|修|好|来)|没(?:装|到|发|来)|装不上|用不了|到了|坏|裂|漏|"
    r"不亮|不转|没反应|有味|有问题|出问题|太重|太吵|卡住|松了|掉了|断了)"
)
_STATE: Final = LinearPattern(r"^[^，,。！？!?；;\n]{0,4}?" + _STATE_WORDS)
"""A state of a thing right after it names the thing (划船机还没装, 杯盖裂了)."""
_STATED_NEAR: Final = LinearPattern(_STATE_WORDS)
_NEAR: Final = 18
"""Characters after a clause's start that hold its noun phrase (at most 10) and the state
or symptom after it (8): a clause without one there is not tagged at all."""


def _subjects(text: str) -> list[int]:
    """Where a clause opens on a noun phrase a state or a symptom follows: the thing the
    clause is about (划船机还没装 箱子太重了; 电陶炉 E3 的面板有裂纹)."""
    out = []
    starts = [0] if text[:1] and "\u4e00" <= text[0] <= "\u9fff" else []
    for start in starts + [b - 1 for _, b in _CLAUSE_START.spans(text)]:
        near = text[start : start + _NEAR]
        if _STATED_NEAR.search(near) is None and symptoms.PROBLEM_ZH.search(near) is None:
            continue  # no state or symptom within reach: no tagging
        tags = rjieba.tag(text[start : start + 10])
        n = _np(tags)
        if n < 2 or symptoms.PART.match(text[start : start + n]) is not None:
            continue  # 拉链卡住了: a part of the thing named before, said with its symptom
        after = text[start + n : start + n + 8]
        if _STATE.search(after) is not None or symptoms.PROBLEM_ZH.match(after) is not None:
            out.append(start)
    return out


def brand_before(
    text: str,
    start: int,
    brands: Collection[str],
    products: Collection[str],
    *,
    proper: Collection[str] = _BRANDISH,
) -> tuple[int, int] | None:
    """The Chinese brand right before the model at ``text[start]`` (one space between them
    or none): the last words of the CJK run there that jieba tags as nouns, adjectives or
    numerals (小天才, 石头, 九号), two to four characters; ``None`` for a verb, a pronoun,
    a product or a business word (型号 X20, 买了 Z9). ``proper``: the tags a brand's last
    word may have (a number after a brand asks for a proper noun: 乐高 42143, not 价格 1499);
    a brand the lexicon knows always counts."""
    end = start - 1 if start and text[start - 1] == " " else start
    begin = end
    while begin > 0 and end - begin < 10 and "\u4e00" <= text[begin - 1] <= "\u9fff":
        begin -= 1
    if end - begin < 2:
        return None
    run = text[begin:end]
    tags = rjieba.tag(run)
    if tags and tags[-1][0] in brands:
        return end - len(tags[-1][0]), end
    if tags and tags[-1][1] not in proper:
        return None
    length = 0
    for word, tag in reversed(tags):
        if (
            tag not in _BRANDISH
            or word in _CLOSED
            or word in _GENERIC
            or word in products
            or word[-1] in _NAMES_AN_ID
            or any(c in _FUNCTION_CHARS for c in word)
        ):
            break
        if tag == "m" and (word[-1] in _MEASURE_END or all(c in _NUMERALS for c in word)):
            break
        if length + len(word) > 4:
            break
        length += len(word)
    if length < 2:
        return None
    return end - length, end
