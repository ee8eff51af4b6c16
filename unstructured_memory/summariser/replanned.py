"""What an earlier record says of a plan a later session changed: pure rules.

A plan made in one session (a delivery day, an install slot, a pickup place, a quantity, a
colour, a size, how often a subscription ships) is changed in a later one: 空调改到下周二下午装,
make it 18 chairs, 改寄郑州; or a value of it said wrong is put right (内存我说错了 其实是256G的,
my bad, I meant 128GB). The earlier record still states the old plan, and an agent
reading both would not know which holds. When the later session changes a plan, each
earlier record on the same thing (naming one of its ids, models or products) shows the
values the later record replaced as updated, the rest of its words kept.

A value is replaced when the later record names a value *of the same kind* and not that
one: a weekday (周六 → 周二, Saturday → Friday), a day of the month (15号 → 20号, the 12th →
the 9th), a time of day (9点到12点, 1-5 pm) or a part of it (上午 → 下午), a frequency (每周 →
每两周, every 4 weeks → every 6 weeks), a quantity (10 盒 → 15 盒, 24 folding chairs → 18), a
measure (1.5米 → 1.8米), a colour (燕麦色 → 墨绿色, sage → charcoal), a place or a drop-off
(洛阳 → 郑州, 快递上门 → 门店自提, the porch → office reception), a shop or point named
(the Kroger on Maple → the CVS by my office) and an amount (2399 元 → 2999
元). A kind the later record does not name says nothing of the old value, but for a price:
when a quantity, a measure, a capacity, a count of instalments or a frequency is replaced,
the earlier price was of the old one and goes too (1.5米 → 1.8米: 2399 元 is no longer it).

Pure functions: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import Final

from policies.linear_re import LinearPattern
from unstructured_memory.summariser.acts import negated
from unstructured_memory.summariser.agreed import confirmed_in, without_agreed
from unstructured_memory.summariser.entities import ID_LABELS
from unstructured_memory.summariser.topics import CITY_ZH
from values.sessions import Lang

__all__ = [
    "CHANGES",
    "REFERS_BACK",
    "changes_plan",
    "moved_on",
    "named_again",
    "of_one_thing",
    "on_the_same_thing",
    "plan_values",
    "replanned_words",
    "schedule_words",
    "settled_words",
]

CHANGES: Final = LinearPattern(
    r"改成|改到|改为|改寄|改送|改约|改期|改个|改一下|改下|[改换调][小大少多低高]|换个|换成|换到|推迟|延后|"
    r"延期|往后推|提前|挪到|调到|不要[^，。！？]{0,8}了|"
    r"不用[^，。！？]{0,8}了|取消|算了|别[^，。！？]{0,6}了|还是|"
    r"说错|报错|写错|填错|打错|搞错|弄错|记错|看错|更正|"
    r"(?i:instead|change|switch|move|moved|reschedule|push (?:it )?back|bring (?:it )?forward|"
    r"cancel|make it|rather|actually|swap|update|no longer|not (?:the|on|at)|cut|reduce|"
    r"lower|increase|bump|down to|up to|slow|i meant|my bad|typo|said the wrong|"
    r"gave (?:you )?the wrong|(?:was|is) wrong|turns out)"
)
"""Words of a change of plan in the user's turns, or of a value said wrong before (上回我说的
尺码说错了, my bad, I meant 128GB): the earlier record's value of that kind is replaced."""

_NUM_ZH: Final = r"[0-9一二两三四五六七八九十]+"
_WEEKDAYS: Final = {
    "一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "日": 7, "天": 7,
    "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6, "sun": 7,
}  # fmt: skip
_COLOURS_EN: Final = (
    r"black|white|grey|gray|silver|gold|red|pink|rose|orange|yellow|green|sage(?: green)?|"
    r"olive|mint|teal|blue|navy|sky blue|purple|lilac|lavender|beige|cream|ivory|tan|brown|"
    r"charcoal|graphite|walnut|oak|khaki|burgundy|maroon|coral|turquoise"
)
_MEMBERS_ZH: Final = (
    r"爸|妈|老婆|老公|爱人|媳妇|丈夫|妻子|儿子|女儿|哥|姐|弟|妹|父亲|母亲|婆婆|岳母|同事"
)
_KINDS: Final = {
    "weekday": (
        LinearPattern(r"(?:周|星期|礼拜)[一二三四五六日天](?P<post>$|[^次])"),
        LinearPattern(r"(?i:(?:mon|tues|wednes|thurs|fri|satur|sun)days?)"),
    ),
    "day": (
        LinearPattern(rf"(?:{_NUM_ZH}月)?[0-9]{{1,2}}\s?[号日]"),
        LinearPattern(
            r"(?i:(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+[0-9]{1,2}"
            r"(?:st|nd|rd|th)?|(?:the\s+)?[0-9]{1,2}(?:st|nd|rd|th))"
        ),
    ),
    "time": (
        LinearPattern(
            r"[0-9]{1,2}(?:[:：][0-9]{2})?\s?点半?"
            r"(?:\s?[到至\-~]\s?[0-9]{1,2}(?:[:：][0-9]{2})?\s?点半?)?"
        ),
        LinearPattern(
            r"(?i:[0-9]{1,2}(?::[0-9]{2})?\s?(?:(?:-|–|to)\s?[0-9]{1,2}(?::[0-9]{2})?\s?)?"
            r"(?:am|pm))(?P<post>$|[^A-Za-z])"
        ),
    ),
    "part_of_day": (
        LinearPattern(r"上午|下午|中午|晚上|早上|傍晚|(?i:morning|afternoon|evening)"),
    ),
    "frequency": (
        LinearPattern(
            rf"每(?:{_NUM_ZH}|隔)?个?(?:周|星期|礼拜|月|天|季度)|{_NUM_ZH}个?(?:周|月|星期)一次|"
            r"(?i:every\s+(?:other\s+|[0-9]+\s+|two\s+|three\s+|four\s+|five\s+|six\s+)?"
            r"(?:day|week|month)s?|weekly|monthly|fortnightly|bi-?weekly|bi-?monthly|"
            r"(?:once|twice) a (?:week|month))"
        ),
    ),
    "quantity": (
        LinearPattern(
            rf"{_NUM_ZH}\s?(?:个|件|盒|箱|把|张|台|份|套|瓶|包|袋|罐|双|条|只|桶|支|卷|提)"
            r"(?P<post>$|[^0-9])"
        ),
        LinearPattern(
            r"(?i:[0-9]+\s+(?:[a-z-]+\s+)?(?:chairs|boxes|packs|bottles|bags|cans|pairs|units|"
            r"pieces|sets|cases|rolls|tins|jars|cartons|tables|plates|cups|pods|filters))"
        ),
    ),
    "measure": (
        LinearPattern(
            r"[0-9]+(?:\.[0-9]+)?\s?(?:米|厘米|公分|寸|英寸|(?i:cm|m|inch(?:es)?|ft|feet))"
            r"(?P<post>$|[^A-Za-z0-9])"
        ),
    ),
    "size": (  # a garment or shoe size: 40码, XL, size 9.5
        LinearPattern(r"(?P<pre>^|[^0-9A-Za-z.])[0-9]{2,3}(?:\.5)?\s?码"),
        LinearPattern(
            r"(?P<pre>^|[^0-9A-Za-z])(?:[0-9]?X{1,3}[SL]|[SML]\s?[码号])(?P<post>$|[^A-Za-z0-9])"
        ),
        LinearPattern(r"(?i:(?:size|sz)\s+[0-9]{1,2}(?:\.5)?)(?P<post>$|[^0-9.])"),
    ),
    "bandwidth": (
        LinearPattern(
            r"(?P<pre>^|[^0-9A-Za-z])[0-9]{2,4}\s?(?:M|兆|(?i:mbps))(?P<post>$|[^A-Za-z0-9])"
        ),
        LinearPattern(r"[千百]兆|(?i:gigabit)"),
    ),
    "colour": (
        LinearPattern(r"[\x{4e00}-\x{9fff}]{1,3}色"),
        # a shade word and its base colour, no 色 (曜石黑, 冰川白, 远峰蓝, 石墨灰)
        LinearPattern(
            r"(?P<pre>^|[^不没很太挺好说明天拉抹摸])[\x{4e00}-\x{9fff}]{2}[黑白灰蓝绿紫]"
        ),
        LinearPattern(rf"(?P<pre>[^A-Za-z])(?i:{_COLOURS_EN})(?P<post>$|[^A-Za-z])"),
    ),
    "place": (
        LinearPattern(
            rf"{CITY_ZH}|驿站|丰巢|快递柜|前台|门卫|物业|门口|自提|到店|门店|上门|"
            r"(?i:porch|front desk|reception|locker|pickup|pick up|front door|mailroom|"
            r"concierge|store|doorstep)"
        ),
    ),
    "venue": (  # a shop or point a parcel waits at, by its name
        LinearPattern(
            r"(?P<pre>(?:^|[^A-Za-z])(?i:at|inside|to) the )[A-Z][A-Za-z'&]*"
            r"(?: [A-Z][A-Za-z'&]*)*(?: (?:on|at) (?:[0-9]+(?:st|nd|rd|th)?|[A-Z][a-z]+)"
            r"(?: [A-Z][a-z]+)*)?"
        ),
    ),
    "amount": (
        LinearPattern(r"[0-9][0-9,]*(?:\.[0-9]+)?\s?元|[$¥£€]\s?[0-9][0-9,]*(?:\.[0-9]+)?"),
    ),
    "capacity": (
        LinearPattern(r"(?P<pre>^|[^A-Za-z0-9])[0-9]{2,4}\s?(?i:gb?|tb?)(?P<post>$|[^A-Za-z0-9])"),
        LinearPattern(r"(?P<pre>^|[^A-Za-z0-9.])[0-9]\s?(?i:gb|tb)(?P<post>$|[^A-Za-z0-9])"),
    ),
    "instalments": (
        LinearPattern(
            rf"{_NUM_ZH}\s?期|(?i:(?:[0-9]+|two|three|four|five|six|ten|twelve|eighteen|"
            r"twenty-four)\s+(?:monthly\s+|interest-free\s+|bi-?weekly\s+)?(?:payments|instal+ments))"
        ),
    ),
    "recipient": (
        LinearPattern(
            r"(?P<pre>(?:收件人|收货人|签收人)已?(?:写|填|是|为|改成|改为|换成|[：:])?\s?"
            rf"(?:我(?:{_MEMBERS_ZH}))?\s?)[\x{{4e00}}-\x{{9fff}}]{{2,3}}"
        ),
        LinearPattern(
            r"(?P<pre>(?i:recipient|addressee)(?:\s+(?i:is|to|as|will be|name is))*\s+"
            r"(?:(?i:my)\s+[a-z-]+,?\s+)?)[A-Z][a-z]+(?:\s[A-Z][a-z]+)?"
        ),
    ),
}
"""Each kind of plan value and the words that name one."""

_SETS_PRICE: Final = frozenset({"quantity", "measure", "capacity", "instalments", "frequency"})
"""Kinds of plan value a price is of: 10 盒 → 15 盒 makes the earlier 2399 元 no longer the
price (a weekday, a colour or a place changes no price)."""
_NOT_COLOUR: Final = frozenset(
    {"颜色", "出色", "特色", "角色", "脸色", "成色", "货色", "本色", "彩色", "明白", "空白", "蛋白",
     "坦白", "表白", "告白", "拉黑", "抹黑", "摸黑", "天黑", "变黑", "发黑", "发白", "黑白"}
)  # fmt: skip
_GRAMMAR: Final = frozenset("了的是有在不很太也都就还把被给和与或个")
"""Function words: a colour name holds none (落了灰, 是白 are no colours)."""
_EDGE: Final = " \t,.;:!?，。；：！？()（）"


def _not_colour(said: str) -> bool:
    """Whether a colour match is a word that names none (颜色, 明白) or a phrase (落了灰)."""
    shade = not said.endswith("色")
    return said[-2:] in _NOT_COLOUR or (shade and any(c in _GRAMMAR for c in said))


def _values(text: str, *, stated: bool = False) -> Iterator[tuple[str, str, str]]:
    """``(kind, as said, as compared)`` of each plan value ``text`` names; ``stated``: not
    one a negation governs (别寄洛阳了 states no plan to ship to 洛阳)."""
    lang: Lang = "en" if text.isascii() else "zh"
    for kind, patterns in _KINDS.items():
        for a, b in (span for pattern in patterns for span in pattern.spans(text)):
            said = text[a:b].strip(_EDGE)
            if not said or (kind == "colour" and _not_colour(said)):
                continue
            if stated and negated(text, a, lang, b):
                continue
            yield kind, said, _compared(kind, said)


def _compared(kind: str, said: str) -> str:
    """A value as it is compared: spaces and case aside; a weekday by its number."""
    flat = "".join(said.split()).casefold().replace("–", "-")
    if kind == "weekday":
        key = flat[-1] if not flat.isascii() else flat[:3]
        return str(_WEEKDAYS.get(key, flat))
    if kind == "size":  # 40 码 and 40码, XL and xl码, size 9.5 and Size 9.5
        return flat.removesuffix("码").removesuffix("号")
    if kind == "colour" and not flat.isascii():  # 成墨绿色 (换成墨绿色) is 墨绿
        return flat.removesuffix("色")[-2:]
    return flat


def plan_values(text: str) -> dict[str, set[str]]:
    """The plan values ``text`` states (no negation governs them), by kind, as compared."""
    out: dict[str, set[str]] = {}
    for kind, _, compared in _values(text, stated=True):
        out.setdefault(kind, set()).add(compared)
    return out


@lru_cache(maxsize=8)
def _stated(later: str) -> dict[str, frozenset[str]]:
    """The plan values ``later`` states, by kind; of a kind the agent's confirmation in it
    names, only those (read once however many earlier records it is compared with)."""
    said = plan_values(later) | plan_values(confirmed_in(later))
    return {kind: frozenset(values) for kind, values in said.items()}


def _replaced(
    values: Sequence[tuple[str, str, str]], now: dict[str, frozenset[str]]
) -> tuple[list[str], bool]:
    """Of ``values`` (:func:`_values`), those of a kind ``now`` names that it does not
    hold, as said; and whether one of them was of a kind a price is of."""
    found: list[str] = []
    priced = False
    for kind, said, compared in values:
        held = now.get(kind)
        if held and not any(_same(kind, compared, v) for v in held):
            found.append(said)
            priced |= kind in _SETS_PRICE
    return found, priced


def replanned_words(earlier: str, later: str) -> tuple[str, ...]:
    """The words of ``earlier`` (a record) naming a plan value that ``later`` (the record
    of the session that changed the plan) replaced with another of the same kind; of a kind
    the agent's confirmation in ``later`` names, only what it names holds (周六家里没人 is
    the user's reason, 已改约下周二 the plan)."""
    now = _stated(later)
    values = list(_values(earlier))
    found, priced = _replaced(values, now)
    if priced and "amount" not in now:  # the old price is no longer it
        found += [said for kind, said, _ in values if kind == "amount"]
    if _paid_in_full(later):  # the instalment plan is gone: its count, amounts and dates
        for a, b in _CLAUSE.spans(earlier):
            clause = earlier[a:b]
            if _ON_INSTALMENTS.search(clause) is not None:
                found += [said for _, said, _ in _values(clause)]
    return tuple(dict.fromkeys(found))


def settled_words(record: str) -> tuple[str, ...]:
    """The words of ``record`` (a session's record) naming a value its own confirmation
    settled otherwise: of each kind the agent's confirmation names, the values the rest of
    the record names and the confirmation does not (2TB … (the agent confirmed: Started the
    200GB plan) → 2TB); an amount only as the price of such a value ($9.99), never on its
    own (a refund of 50 元 says nothing of the order's 1999 元)."""
    confirmation = confirmed_in(record)
    if not confirmation:
        return ()
    now = _stated(confirmation)
    values = list(_values(without_agreed(record)))
    found, priced = _replaced(values, {k: v for k, v in now.items() if k != "amount"})
    if priced:
        paid = now.get("amount", frozenset())
        found += [
            said
            for kind, said, compared in values
            if kind == "amount" and not any(_same(kind, compared, v) for v in paid)
        ]
    return tuple(dict.fromkeys(found))


_SCHEDULE: Final = frozenset({"weekday", "day", "time", "part_of_day", "frequency"})


def schedule_words(text: str) -> tuple[str, ...]:
    """The words of ``text`` naming when something happens (a weekday, a day of the month,
    a time or part of the day, a frequency: 每月10号, every 4 weeks on Mondays): what an
    arrangement taken back no longer has."""
    return tuple(dict.fromkeys(said for kind, said, _ in _values(text) if kind in _SCHEDULE))


_PROPOSES: Final = LinearPattern(
    r"呢\s*[？?]?\s*$|呢[，,。！？?\s]|还是|要不|不如|换成?|改成?|就[^，,。！？]{0,8}[吧了]|行不行|"
    r"可以不|(?i:what about|how about|instead|actually|rather|switch|change|go with|make it|"
    r"let'?s do|that one|i'?ll take|i'?ll go|prefer|better)"
)
"""A user turn proposing or taking another value (那雾霾蓝的呢, 就43码吧, what about Thursday)."""


def moved_on(turns: Sequence[tuple[str, str]]) -> tuple[str, ...]:
    """The plan values a session (its ``(role, text)`` turns) moved on from, as said: of a
    kind a user turn proposes or takes another value of (:data:`_PROPOSES`) after an
    earlier turn named one, each value the last turn naming the kind does not hold (白色 →
    那雾霾蓝的呢 → 雾霾蓝已下单: 白色; Tuesday 9-12 → what about Thursday → Thursday 1-5pm:
    Tuesday). Two things named one after the other (黑色保温杯, 再加一个白色的饭盒) propose
    nothing."""
    named: dict[str, list[tuple[int, str, str]]] = {}
    moved: set[str] = set()
    for turn, (role, text) in enumerate(turns):
        values = list(_values(text, stated=True))
        proposes = role == "user" and _PROPOSES.search(text) is not None
        for kind, said, compared in values:
            before = named.get(kind, [])
            if proposes and any(t < turn and not _same(kind, c, compared) for t, _, c in before):
                moved.add(kind)
            named.setdefault(kind, []).append((turn, said, compared))
    found: list[str] = []
    for kind in moved:
        last = max(t for t, _, _ in named[kind])
        held = [c for t, _, c in named[kind] if t == last]
        found += [said for _, said, c in named[kind] if not any(_same(kind, c, h) for h in held)]
    return tuple(dict.fromkeys(found))


def _same(kind: str, a: str, b: str) -> bool:
    """Whether two compared values of ``kind`` are one: a part of the other (43 码 and
    43码的), but a size only itself (L is not XL)."""
    return a == b if kind == "size" else a in b or b in a


_FULL_PAYMENT: Final = LinearPattern(
    r"一次性(?:付清|付款|扣款|支付)|一次付清|全款|全额(?:支付|付款)|"
    r"(?i:pa(?:y|id|ying) (?:it |for it )?(?:in full|upfront|up front)|in one payment|"
    r"(?:put|charge) (?:it )?all on|the whole (?:thing|amount|[a-z]+) on (?:my|the|their))"
)
"""Paying the whole price at once: what ends an instalment plan."""
_ON_INSTALMENTS: Final = LinearPattern(
    r"期|(?i:payments?|instal+ments?|pay in [0-9]|klarna|affirm|afterpay)"
)
"""Words of an instalment plan: a clause holding one states the plan's values."""
_CLAUSE: Final = LinearPattern(r"[^，,；;。（）()]+")


def _paid_in_full(later: str) -> bool:
    """Whether ``later`` (a record) says the whole price is paid at once, no negation
    governing it."""
    lang: Lang = "en" if later.isascii() else "zh"
    return any(not negated(later, a, lang, b) for a, b in _FULL_PAYMENT.spans(later))


_THINGS: Final = frozenset({"PRODUCT", "BRAND", "MODEL"})


def _by_label(ents: Sequence[tuple[str, str]], labels: frozenset[str]) -> dict[str, set[str]]:
    """The texts of ``ents`` whose label is one of ``labels``, case-folded, by label."""
    out: dict[str, set[str]] = {}
    for label, text in ents:
        if label in labels:
            out.setdefault(label, set()).add(text.casefold())
    return out


REFERS_BACK: Final = LinearPattern(
    r"那单|那个单|那个订单|那笔|上次那个|之前那个|之前的订单|上次的订单|"
    r"(?i:that order|the order i|my last order|the one i ordered|that one i)"
)
"""The user pointing back at an order without naming it ("手机那单还没发吧")."""


def on_the_same_thing(
    earlier: Sequence[tuple[str, str]],
    later: Sequence[tuple[str, str]],
    *,
    last: bool,
    referred: bool = False,
) -> bool:
    """Whether an earlier record (its ``(label, text)`` entities) is on the thing whose plan
    the later session (its entities) changed: it names one of the later's ids, or, when the
    later names no id, one of its products, brands or models, or it is the ``last`` record
    before it; with ``referred`` (the user pointed back at an order without naming it,
    :data:`REFERS_BACK`), the last record is, whatever product word the later used (手机 for
    荣耀 Magic6). Never a record of several things of a kind (two orders: which one's plan
    changed is not known) or naming an id or a thing the later does not, where the later
    names one of that kind (another order)."""

    def meet(a: set[str], b: set[str]) -> bool:  # 沙发 and 定制布艺沙发 are one thing
        return any(x in y or y in x for x in a for y in b)

    before, now = _by_label(earlier, ID_LABELS), _by_label(later, ID_LABELS)
    if any(len(v - now.get(k, set())) > 1 for k, v in before.items()):
        return False  # several orders: which one's plan changed is not known
    if any(now.get(k) and not v <= now[k] for k, v in before.items()):
        return False  # another order
    if {i for v in before.values() for i in v} & {i for v in now.values() for i in v}:
        return True  # one id, whatever each session took it for (an order, a code)
    if now or (referred and last):  # another id named; or the order pointed back at
        return not now
    had, has = _by_label(earlier, _THINGS), _by_label(later, _THINGS)
    if any(v and has.get(k) and not meet(v, has[k]) for k, v in had.items()):
        return False  # another thing (products against products, brands against brands)
    return any(meet(v, has.get(k, set())) for k, v in had.items()) or last


def of_one_thing(earlier: Sequence[tuple[str, str]]) -> bool:
    """Whether a record (its ``(label, text)`` entities) names at most one id of each kind:
    of two orders, which one a later session is on is not known."""
    return all(len(v) <= 1 for v in _by_label(earlier, ID_LABELS).values())


def named_again(
    earlier: Sequence[tuple[str, str]],
    later: Sequence[tuple[str, str]],
    said: str,
    *,
    last: bool,
) -> bool:
    """Whether an earlier record (its ``(label, text)`` entities) is on a thing a later
    session names again: one of its identifiers is among the later's entities or in
    ``said`` (the later user's words), or one of its products, brands or models is said
    there, or contains one the later names (扫地机 for 扫地机器人, "the air fryer repair");
    else, when one of the two names no thing (上次那个退货不退了), the ``last`` record
    before it; never a record of several things of a kind the later does not name (two
    orders: which one the later is on is not known)."""
    words = said.casefold()
    before, now = _by_label(earlier, ID_LABELS), _by_label(later, ID_LABELS)
    if any(len(v - now.get(k, set())) > 1 for k, v in before.items()):
        return False
    ids = {t for ts in before.values() for t in ts}
    if ids & {t for ts in now.values() for t in ts}:
        return True
    things = {t for ts in _by_label(earlier, _THINGS).values() for t in ts}
    named = {t for ts in _by_label(later, _THINGS).values() for t in ts}
    if any(t in words for t in ids | things) or any(n in t for n in named for t in things):
        return True
    return not (things and named) and last  # neither is on another thing: the last record


def changes_plan(user_text: str) -> bool:
    """Whether the user's words change a plan (:data:`CHANGES`)."""
    return CHANGES.search(user_text) is not None
