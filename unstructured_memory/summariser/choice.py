"""Options offered in a session and the one the user finally chose.

An **option** is a piece of a turn that names something with its price: ``A 款是轻享版
299 元``, ``2 支装 129 元、4 支装 229 元`` (two options), ``The 4-pack is $16.49 and
the 8-pack is $27.99``. Its *key* is the label's head, up to a unit word (``B 款``,
``4 支装``, ``8-pack``); its *names* the other words of its label (``专业版``).

The user **chooses** an option by naming its key or one of its names, alone or
after a word of choice (``那还是要 B 吧``, ``那拿 4 支装吧``, ``8-pack, it works out
cheaper``, ``I'll take the blue one``), in a clause that names no other option;
the last such clause wins (the final choice). :func:`final_choice` returns the
chosen option, so the record names it with its own price, and the user's clauses
that name the rejected options, so the record does not quote them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from policies.linear_re import LinearPattern
from unstructured_memory.summariser.cues import CHOICE, DECLINED, RETRACTION
from unstructured_memory.summariser.entities import Entity, Lang
from unstructured_memory.tokenize import EN_STOP_WORDS, segment

__all__ = ["Choice", "Option", "final_choice", "flat", "options", "pieces", "stated_choice"]

_SEPARATOR: Final = {
    "zh": LinearPattern(r"[，,。！？!?；;\n、…⋯～~]+"),
    "en": LinearPattern(r"[,!?;\n]+|\.(?:\s|$)|(?i:\s(?:and|or|vs\.?|versus|but)\s)"),
}
"""What separates two options (or a choice from the rest of its turn)."""
_PRICE: Final = LinearPattern(
    r"(?:¥|￥|\$|US\$)\s?\d+(?:[.,]\d+)?|\d+(?:\.\d+)?\s?(?:元|块|(?i:yuan|rmb|dollars?|usd))"
)
"""A price with its currency."""
_BARE: Final = LinearPattern(
    r"(?:^|[^0-9A-Za-z.:：~～-])(?P<bare>\d{2,5}(?:\.\d{1,2})?)"
    r"(?:$|[^0-9A-Za-z%点时:：.]|\.(?:$|[^0-9]))"
)
"""A bare number of two to five digits: a price when no currency is said; not the end of a
range, a time or a measure's whole part (9-12点, 18:00, 10.5mm)."""
_LEAD: Final = LinearPattern(r"^[是为的有要和或及]+")

_UNIT = (
    r"(?:款|版|装|号|色|寸|码|型|套|档|米|升|代|系列|配置|套餐|(?i:-?pack|size|inch|model|version|plan|"
    r"edition|tier|option|colou?r))"
)
_GROUP: Final = LinearPattern(
    r"[0-9A-Za-z][0-9A-Za-z.+\-]*\s*[\u4e00-\u9fff]{0,2}?"
    + _UNIT
    + r"|[\u4e00-\u9fff]{1,4}?"
    + _UNIT
)
"""A name of an option: a letter or number with its unit (``B 款``, ``4 支装``, ``8-pack``) or
a short word ending in one (``专业版``)."""

_COPULA: Final = LinearPattern(
    r"(?:是|为|要|卖|价格|售价|的话|就是|只要|(?i:\s+(?:is|costs|at|for|goes for|comes to|would be)"
    r"\s*))$"
)
_ARTICLE: Final = LinearPattern(
    r"^(?i:(?:there (?:is|are)|we have|you can (?:get|choose)|we offer)\s+)?"
    r"(?i:the|an?|one|option)\s+"
)
_CUE: Final = LinearPattern(
    r"订单|单号|编号|工单|运单|快递|退款|(?i:order|refund|ticket|tracking|number|id|#)"
)
"""Labels that name an identifier, not an option."""
_GENERIC: Final = frozenset(
    {
        "原装",
        "这款",
        "那款",
        "两款",
        "三款",
        "一款",
        "新款",
        "同款",
        "可以",
        "如果",
        "其他",
        "机器",
        "常用",
        "目前",
        "现在",
        "我们",
        "您好",
        "价格",
        "一块",
        "一个",
        "一台",
        "一件",
        "配套",
        "还有",
        "另外",
        "这个",
        "那个",
        "the",
        "and",
        "one",
        "for",
        "with",
        "there",
        "plan",
        "option",
    }
)
_CORE: Final = LinearPattern(r"[0-9A-Za-z][0-9A-Za-z.+\-]*")


@dataclass(frozen=True, slots=True)
class Option:
    """An option: its label as said, its names (case-folded, no spaces; the first is its
    key), a letter that names it alone (``B`` of ``B 款``), its price, and its span in the
    transcript."""

    label: str
    names: tuple[str, ...]
    letter: str
    price: str
    start: int
    end: int

    @property
    def key(self) -> str:
        """The option's first name."""
        return self.names[0]


@dataclass(frozen=True, slots=True)
class Choice:
    """The option the user chose, and the spans of the user's clauses naming the others."""

    option: Option
    rejected: tuple[tuple[int, int], ...]


def flat(text: str) -> str:
    """``text`` without white space, case-folded: how options and choices are compared."""
    return "".join(text.split()).casefold()


def pieces(text: str, lang: Lang) -> list[tuple[int, int]]:
    """The pieces of ``text`` between separators, white space trimmed."""
    out = []
    at = 0
    for a, b in [*_SEPARATOR[lang].spans(text), (len(text), len(text))]:
        piece = text[at:a]
        start = at + len(piece) - len(piece.lstrip())
        end = a - (len(piece) - len(piece.rstrip()))
        if end > start:
            out.append((start, end))
        at = b
    return out


def _labelled(label: str, price: str, start: int, end: int, lang: Lang) -> Option | None:
    """The option ``label`` names at ``price`` (``None`` when the label is no option's)."""
    label = _LEAD.sub("", label.strip(" ，,、和或及"))
    if lang == "en":
        label = _ARTICLE.sub("", label)
    while (c := _COPULA.search(label)) is not None and c.end() > c.start():
        label = (label[: c.start()] + label[c.end() :]).strip()
    if not label or len(label) > 30 or _CUE.search(label) is not None:
        return None
    groups = _GROUP.spans(label)
    found = [_LEAD.sub("", label[a:b]) for a, b in groups]
    cores = []  # "2-year" of "2-year plan": a token said without its unit
    for x, y in groups:
        inner = _CORE.spans(label[x:y])
        token = label[x + inner[0][0] : x + inner[0][1]] if inner else ""
        if len(token) >= 2 and not token.isdigit():
            cores.append(token)
    words = [
        w
        for w in segment(label)
        if not w.isdigit()
        and (len(w) >= 4 or (not w.isascii() and len(w) >= 2))
        and w.lower() not in EN_STOP_WORDS
    ]
    names = [flat(n) for n in [*found, *cores, *words] if n and flat(n) not in _GENERIC]
    if not names and len(label) <= 12:
        names = [flat(label)]
    if not names:
        return None
    first = label[groups[0][0]] if groups else ""
    letter = first if first.isupper() and first.isascii() else ""
    return Option(label, tuple(dict.fromkeys(names)), letter, price, start, end)


def _options_in(piece: str, start: int, before: str, lang: Lang) -> list[Option]:
    """The options of one piece: one per price, labelled by what precedes it (a piece that
    is only a price takes the piece ``before`` it as its label)."""
    prices = _PRICE.spans(piece)
    if not prices:
        prices = _BARE.spans(piece, "bare")
    out: list[Option] = []
    at = 0
    for a, b in prices:
        label = piece[at:a] or (before if not out else "")
        found = _labelled(label, piece[a:b].strip(), start + at, start + b, lang)
        if found is not None:
            out.append(found)
        at = b
    return out


_ITEM: Final = LinearPattern(
    r"(?:^|[\s：:；;。，,])(?:\d[）)、]|\d[.．]\s|[（(]\d[）)]|[①②③④⑤⑥⑦⑧⑨]|[一二三四五六]、)\s*"
)
"""An enumerator opening an item of a list (``1）``, ``(2)``, ``③``, ``二、``)."""


def _items(turn: str) -> list[tuple[int, int]]:
    """The items of ``turn`` when it enumerates two or more (each from after its
    enumerator to the next one), else none."""
    marks = _ITEM.spans(turn)
    if len(marks) < 2:
        return []
    ends = [a for a, _ in marks[1:]] + [len(turn)]
    return [(b, end) for (_, b), end in zip(marks, ends, strict=True)]


def _listed(turn: str, start: int, lang: Lang) -> list[Option]:
    """The options of an enumerated list: each item's first piece names it, its first
    price prices it ("2）宝宝好 V3，可登机，5.8kg，899 元" is 宝宝好 V3 at 899 元)."""
    out = []
    for a, b in _items(turn):
        item = turn[a:b]
        price = _PRICE.spans(item)
        heads = pieces(item, lang)
        if not price or not heads or heads[0][1] > price[0][0]:
            continue
        x, y = heads[0]
        found = _labelled(
            item[x:y], item[price[0][0] : price[0][1]].strip(), start + a, start + b, lang
        )
        if found is not None:
            out.append(found)
    return out


def options(text: str, spans: Sequence[tuple[int, int]], lang: Lang) -> list[Option]:
    """The options offered in ``text`` (a transcript, turns at ``spans``), in order: those
    of an enumerated list by their items (:func:`_listed`), others by piece."""
    out: list[Option] = []
    for s, e in spans:
        listed = _listed(text[s:e], s, lang)
        found_in = [listed] if len(listed) >= 2 else []
        if not found_in:
            before = ""
            for a, b in pieces(text[s:e], lang):
                found_in.append(_options_in(text[s + a : s + b], s + a, before, lang))
                before = text[s + a : s + b]
        for found in (o for group in found_in for o in group):
            if all(o.key != found.key for o in out[-6:]):
                out.append(found)
    return out


_LETTER: Final = LinearPattern(r"(?:^|[^A-Za-z])(?P<letter>[A-Z])(?:$|[^A-Za-z])")


_QUESTION: Final = LinearPattern(r"[?？]|吗|呢|哪个|区别|(?i:which|difference|what about)")


def _names(option: Option, clause: str, offered: Sequence[Option]) -> bool:
    """Whether ``clause`` names ``option`` by a name no other offered option has, or by
    its letter."""
    said = flat(clause)
    others = {n for o in offered if o.key != option.key for n in o.names}
    if any(n in said for n in option.names if n not in others):
        return True
    return bool(option.letter) and any(
        m.group("letter") == option.letter for m in _LETTER.finditer(clause)
    )


_PICK: Final = {
    "zh": LinearPattern(
        r"(?:^|[，,。！？…\s])(?:先|那|那就|就|还是|最后|最终|决定|我)?(?:要|拿|选|买|来|订|换成|改成)"
        r"(?:这个|那个|这款|那款|一个|个|一台|台|一件|件)?(?P<what>[^，,。！？!?；;\n…吧了的]{1,12})"
    ),
    "en": LinearPattern(
        r"(?i:(?:i'?ll (?:take|go with|go for|get|have|choose)|let'?s (?:go with|do)|make it|"
        r"i'?d (?:like|prefer|rather have)|give me|i (?:choose|pick|want)|go with|switch to|"
        r"change (?:it|that) to)\s+(?:the\s+|a\s+)?"
        r"(?P<what>[a-z0-9 -]{2,24}?)(?:\s+(?:one|instead|then|please))?(?:$|[.,!?;]))"
    ),
}
"""A pick said in words ("先拿樱花粉吧", "还是要雾霾蓝吧", "I'll take the blue one")."""
_VALUE: Final = LinearPattern(
    r"\d|[红黑白蓝灰绿粉紫黄金银棕橙青]|[A-Z]|(?i:black|white|blue|red|green|grey|gray|pink|"
    r"silver|gold|navy|beige|small|medium|large|xl)"
)


def stated_choice(view: str, user_spans: Sequence[tuple[int, int]], lang: Lang) -> Choice | None:
    """The user's last pick when they picked two different things in words (no priced
    options to choose among): "先拿樱花粉吧……还是要雾霾蓝吧" picks 雾霾蓝, and the user's
    clauses naming 樱花粉 are rejected."""
    picks: list[tuple[str, int, int]] = []
    for s, e in user_spans:
        for m in _PICK[lang].finditer(view[s:e]):
            what = (m.group("what") or "").strip()
            if what and _VALUE.search(what) is not None:
                a, b = m.span(_PICK[lang].groupindex["what"])
                picks.append((what, s + a, s + b))
    if len({flat(w) for w, _, _ in picks}) < 2:
        return None
    last, start, end = picks[-1]
    option = Option(last, (flat(last),), "", "", start, end)
    rejected = []
    for s, e in user_spans:
        for a, b in pieces(view[s:e], lang):
            clause = flat(view[s + a : s + b])
            if any(flat(w) in clause for w, _, _ in picks[:-1] if flat(w) != option.key):
                rejected.append((s + a, s + b))
    return Choice(option, tuple(rejected))


def _digits(price: str) -> str:
    return "".join(ch for ch in price if ch.isdigit() or ch == ".").rstrip(".")


def _listing(clause: str, option: Option, lang: Lang) -> bool:
    """Whether ``clause`` names prices of its own (a listing is no choice); a word of
    choice naming the ``option``'s own price is none ("那就宝宝好吧 899那个")."""
    said = {_digits(o.price) for o in _options_in(clause, 0, "", lang)}
    if CHOICE.search(clause) is not None:
        said.discard(_digits(option.price))
    return bool(said)


def final_choice(
    view: str,
    user_spans: Sequence[tuple[int, int]],
    offered: Sequence[Option],
    entities: Sequence[Entity],
    lang: Lang,
) -> Choice | None:
    """The option the user finally chose among ``offered`` (``None`` without two options
    or a choice), reading the user's clauses of the amended ``view``."""
    del entities  # the option's own words name it; entities add nothing here
    offered = [o for o in offered if view[o.start : o.end].strip()]  # none turned down
    if not offered:
        return None
    chosen: Option | None = None
    mentions: list[tuple[tuple[int, int], Option]] = []
    for s, e in user_spans:
        for a, b in pieces(view[s:e], lang):
            clause = view[s + a : s + b]
            if _QUESTION.search(clause) is not None:
                continue  # asking about an option is no choice
            before = [o for o in offered if o.start < s + a]
            named = [o for o in before if _names(o, clause, before)]
            if (
                len({o.key for o in named}) == 1
                and not _listing(clause, named[-1], lang)
                and RETRACTION.search(clause) is None  # "虎贝尔那个就算了" chooses nothing
                and DECLINED.search(clause) is None  # "no assembly" neither
            ):
                chosen = named[-1]
            mentions += [((s + a, s + b), o) for o in named]
    if chosen is None:
        return None
    rejected = [span for span, o in mentions if o.key != chosen.key]
    rejected += _picked_before(view, user_spans, chosen, offered, lang)
    return Choice(chosen, tuple(sorted(set(rejected))))


def _picked_before(
    view: str,
    user_spans: Sequence[tuple[int, int]],
    chosen: Option,
    offered: Sequence[Option],
    lang: Lang,
) -> list[tuple[int, int]]:
    """The user's clauses that picked something else before ``chosen`` was offered ("I'll
    take the 27-inch at $329" … "give me the 32-inch instead"): a pick replaced."""
    out: list[tuple[int, int]] = []
    for s, e in user_spans:
        if s >= chosen.start:
            break
        for a, b in pieces(view[s:e], lang):
            clause = view[s + a : s + b]
            m = _PICK[lang].search(clause)
            what = m.group("what") if m is not None else None
            if what is None and (m := CHOICE.search(clause)) is not None:
                what = m.group("what") or m.group("what_en")
            if what is None or _VALUE.search(what) is None:
                continue
            if chosen.key not in flat(what) and not (
                chosen.letter and _names(chosen, what, offered)
            ):
                out.append((s + a, s + b))
    return out
