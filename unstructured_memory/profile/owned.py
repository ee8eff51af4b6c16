"""What the user says is theirs: the sayings that name a device (我那车是23款秦PLUS DM-i,
mine's a Nothing Phone (2a), 我用的是, I drive a), a model something is bought for (华为 P40
的钢化膜, tabs for the Bosch …), a look at the thing itself (写的是, the label) and a device
switched to (换成了, switched over to); and whose else a thing may be (the family members
:data:`MEMBER_OF` names, 他的, a friend's). Pure patterns and functions, read by
:mod:`unstructured_memory.profile.rules`."""

from __future__ import annotations

from typing import Final

import rjieba

from policies.linear_re import LinearPattern
from unstructured_memory.summariser import shapes

__all__ = [
    "CHECKED",
    "CLAUSE",
    "MEMBER_OF",
    "PARTED_AFTER",
    "PARTED_BEFORE",
    "SWITCHED_TO",
    "Span",
    "bought_for",
    "clause_around",
    "things_said_to_be",
]

CLAUSE: Final = LinearPattern(r"(?:[^，,。！？!?；;\n.]|\.[^\s.])+")
"""A clause: the text between commas and sentence ends (an English full stop before a space
or the end; not the point of 13.5-inch)."""

MEMBER_OF: Final = LinearPattern(
    r"(儿子|女儿|闺女|老婆|老公|媳妇|爱人|爸爸|妈妈|爸妈|父母|老爸|老妈|孩子|宝宝|外婆|外公|奶奶|爷爷|婆婆|公公|爸|妈|"
    r"小孩|小朋友|老人|"
    r"(?i:son|daughter|wife|husband|kids?|children|mom|mum|dad|mother|father|parents|partner|"
    r"baby|grandma|grandpa|grandmother|grandfather))"
)
"""A family member, whose a thing may be (给我妈的 iPhone 13, my husband is a Leo)."""


_FOR_IT_EN: Final = LinearPattern(r"(?:^|[^A-Za-z])(?i:for\s+(?:(?:my|our|the)\s+)?)$")
"""Right before a model something is bought for, said as the user's own or the one they
mean (tabs for the Bosch …, a charger for my Dell …; not ``for a Pixel 8``: any one)."""
_OF_IT_ZH: Final = LinearPattern(r"^\s?的\s?[\x{4e00}-\x{9fff}]")
"""Right after a model, a thing of it: ``P40 的钢化膜``, ``Find X7 的屏幕``."""
CHECKED: Final = LinearPattern(
    r"看了?一?下|看了|查了?一?下|写的是|写着|显示的?是|标的是|铭牌|标签"
    r"|(?i:checked|looked at|the label|sticker|settings|it says)"
)
"""A look at the thing itself (I checked the label, 看了下设置里 写的是 nova 12): a model the
user puts right after it is the one they have."""
_SOMEONE_ELSE: Final = LinearPattern(r"(?:[他她]|别人|朋友|同事)的?\s*$")
_PART_ASKED: Final = LinearPattern(
    r"^([\x{4e00}-\x{9fff}]{2,4}?)(?:有卖|有没有|有货|还有|有吗|卖吗|怎么卖|多少钱|能买|哪里买|在哪买)"
)
"""A thing of a model asked for by name (滚刷有卖吗, 拖布还有货吗), whatever its word's tag."""

SWITCHED_TO: Final = LinearPattern(
    r"(?:换了|换成|改用|升级到|升级成|升到|入了)了?\s*(?:一?\s*[台部个辆款只]\s*)?$"
    r"|(?i:(?:switched|moved|changed|upgraded)(?:\s+over)?\s+to|jumped ship[^.;!?]{0,12}?got"
    r"|replaced\s+(?:it|mine|my\s+[a-z]+|the\s+[a-z]+)\s+with|traded\s+up\s+to)"
    r"\s+(?:an?\s+|the\s+|my\s+)?$"
)
"""Right before a device the user switched to (换成了 vivo X100 Pro, 换了台追觅 X40, upgraded to
an iPhone 15 Pro, jumped ship, got a Galaxy Z Flip5): it replaces the one they had."""

PARTED_BEFORE: Final = LinearPattern(
    r"(?:(?:之前|以前|原来|原先)(?:用)?(?:的\s*(?:[那这]\s*)?|[那这]\s*)|[旧老]的\s*(?:[那这]\s*)?)"
    r"(?:一?[台部个只辆]\s*)?$"
    r"|(?i:(?:^|[^a-z])(?:(?:my|our|the)\s+old|(?:gave|sold|donated|traded in|handed down|"
    r"passed on)\s+(?:away\s+)?(?:my|our|the)(?:\s+old)?)\s+$)"
)
"""Right before a device the user had (之前那台 iPhone 15, 旧的 iPad Air 4, my old Pixel 7,
sold my Kindle): no longer theirs."""
PARTED_AFTER: Final = LinearPattern(
    r"^\s*(?:已经|早就|早)?\s*(?:送(?:给|人|了)|给了|卖了|卖掉|转卖|转给|让给|传给|淘汰|换掉|扔了"
    r"|给(?:我|了)?(?:妈|爸|儿子|女儿|闺女|老婆|老公|孩子|家人|朋友|同事|弟弟|妹妹|哥哥|姐姐|爷爷|奶奶))"
    r"|(?i:^\s*(?:went to|goes to|is with my|got passed on)\s)"
)
"""Right after a device the user had (iPhone 15 送我妈了, 小米 13 已经卖了, iPad 给闺女用了): no
longer theirs."""

Span = tuple[int, int]

_SAID_TO_BE_ZH: Final = LinearPattern(
    r"我(?P<mark>的|家里?的?|[这那](?:台|辆|部|个|款|只)?)?"
    r"(?P<kind>[\x{4e00}-\x{9fff}]{1,4}?|[A-Za-z]{2,12}\s?)?(?:就|也)?是\s{0,2}"
)
"""What the user's thing is (我那车是, 我的是, 我家扫地机是; not 我是): a name follows."""
_SAID_TO_BE_EN: Final = LinearPattern(
    r"(?:^|[^A-Za-z])(?i:(?:my|our)\s+(?P<kind>[a-z]+)(?:'s|’s|\s+is)|mine(?:'s|’s|\s+is))"
    r"\s+(?i:(?:an?|the)\s+)?"
)
"""What the user's thing is in English: my car is a, our motor's a, mine's a."""
_NAME_ZH: Final = LinearPattern(
    r"^(?:[0-9]{2}款)?[\x{4e00}-\x{9fff}]{0,4}\s?[A-Za-z0-9][A-Za-z0-9.+()-]*"
    r"(?:\s?[A-Za-z0-9][A-Za-z0-9.+()-]*)*(?:\s?[\x{4e00}-\x{9fff}]{0,2}[版款代寸])?"
    r"|^[\x{4e00}-\x{9fff}]{1,4}\s?[0-9]{2}款"
)
"""A name said as what a thing is: 23款秦PLUS DM-i, 海豹 23款, 9th gen 10.2寸, 华为 Mate 60."""
_NAME_EN: Final = LinearPattern(
    r"^(?:(?:19|20)[0-9]{2}\s+)?(?:[A-Z0-9][A-Za-z0-9+.-]*|[a-z]+[A-Z][A-Za-z0-9]*|\([A-Za-z0-9]+\))"
    r"(?:\s+(?:[A-Z0-9][A-Za-z0-9+.-]*|[a-z]+[A-Z][A-Za-z0-9]*|\([A-Za-z0-9]+\)))*"
)
"""A name in English: capitalised words and models (2019 Skoda Octavia, Nothing Phone (2a))."""
_NAMED: Final = LinearPattern(
    r"[A-Za-z]{3,}|[A-Za-z][0-9]|[0-9][A-Za-z]|[\x{4e00}-\x{9fff}][^款版代寸]*[0-9]"
)
"""A name, not a measure, a size or a year (XL, 42, 2019 款 are none)."""
_NOT_A_NAME_AFTER: Final = LinearPattern(r"^\s?(?:会员|码|号|色|卡|(?i:size|member))")
_NOT_A_THING: Final = LinearPattern(
    r"^(?:名字|姓名|邮箱|微信|账号|账户|地址|电话|手机号|订单|单号|尺码|鞋码|会员|等级|预算|生日|身高|体重|颜色|尺寸"
    r"|快递|问题|意思|想法|狗|猫|狗狗|猫咪|兔子"
    r"|(?i:name|address|email|number|order|account|size|budget|birthday|favou?rite|problem"
    r"|question|issue|guess|point|plan|fault|bad|dog|cat|puppy|pup|kitten|bird|rabbit))$"
)
"""What the user's things are not devices of: their name, order, size, pets."""
_NOT_A_KIND_TAGS: Final = frozenset("vdrpcuamtf")
_USED_ZH: Final = LinearPattern(
    r"我(?:家|们)?(?:一直|现在|平时|自己)?(?:用|开|戴|骑)的(?:就|也)?是\s{0,2}"
)
"""What the user uses, drives, wears (我用的是, 我家开的是): a name follows."""
_HAVE_EN: Final = LinearPattern(
    r"(?:^|[^A-Za-z])(?i:(?:i|we)(?:\s+(?:have|own|drive|use|run|ride)|'ve\s+got|\s+have\s+got)"
    r"\s+(?:an?|the)\s+)"
)
"""What the user has, drives, uses in English (I drive a, we've got a): a name follows, with a
model or two capitalised words (a 2015 Subaru Outback, a Breville Barista Pro)."""
_MODEL_OR_TWO_WORDS: Final = LinearPattern(r"[0-9]|[A-Z][A-Za-z]*\s+[A-Z(]")
_SAYINGS: Final = (
    (_SAID_TO_BE_ZH, _NAME_ZH),
    (_USED_ZH, _NAME_ZH),
    (_SAID_TO_BE_EN, _NAME_EN),
    (_HAVE_EN, _NAME_EN),
)


def things_said_to_be(sentence: str) -> list[tuple[int, int, str | None, str]]:
    """What ``sentence`` says the user's things are (my car is a 2017 Honda Civic, mine's a
    Fairphone (5), 我那车是23款秦PLUS DM-i, 我的是10th gen 10.2寸的) or uses (我用的是 21款途观L,
    I drive a 2015 Subaru Outback): per saying, the span of
    what follows it in its clause, the thing's kind (车, car; none for 我的是, mine's) and
    the name said (``""`` when it names no device: a size, a colour, a person, a pet)."""
    out = []
    for rx, name_rx in _SAYINGS:
        for m in rx.finditer(sentence):
            kind = (m.group("kind") or "").strip() or None if "kind" in rx.groupindex else None
            if rx is _SAID_TO_BE_ZH and kind is None and m.group("mark") is None:
                continue  # 我是…: the user, not their thing
            a, b = m.end(), clause_around(sentence, m.end())[1]
            found = name_rx.search(sentence[a:b])
            name = (found.group(0) or "").rstrip(".") if found is not None else ""
            named = bool(name) and _NAMED.search(name) is not None
            if rx is _HAVE_EN and _MODEL_OR_TWO_WORDS.search(name) is None:
                named = False  # I use a Visa card: one word, no model
            if not named or _NOT_A_NAME_AFTER.match(sentence[a + len(name) : b]) is not None:
                name = ""
            if kind is not None and (
                _NOT_A_THING.match(kind) is not None
                or MEMBER_OF.fullmatch(kind) is not None
                or kind[-1] in "码号单"
                or rjieba.tag(kind)[-1][1][0] in _NOT_A_KIND_TAGS
            ):
                name = ""  # my husband is a Leo, 我的订单是 6630712, 我觉得是…
            out.append((a, b, kind, name))
    return out


def bought_for(sentence: str, start: int, end: int) -> bool:
    """Whether the model at ``sentence[start:end]`` (its brand included) is what something
    is bought for, so the user's own: a thing of it (华为 P40 的钢化膜, Find X7 的屏幕, T20
    的滚刷有卖吗; not its price, colour or other attribute, nor the model of someone named
    before it: 给我妈的 iPhone 13 的壳), or what a thing is for (screen protectors for the
    Galaxy S23, filters for my Shark NV360)."""
    before = sentence[:start]
    clause = before[clause_around(sentence, start)[0] :]
    if MEMBER_OF.search(clause) is not None or _SOMEONE_ELSE.search(clause) is not None:
        return False
    if _FOR_IT_EN.search(before) is not None:
        return True
    m = _OF_IT_ZH.match(sentence[end:])
    if m is None:
        return False
    rest = sentence[end + m.end() - 1 :]
    if shapes.thing_opening(rest):
        return True
    part = _PART_ASKED.match(rest)
    return part is not None and not shapes.is_attribute(part.group(1) or "")


def clause_around(sentence: str, at: int) -> tuple[int, int]:
    """The clause of ``sentence`` (cut at commas and sentence ends) holding ``sentence[at]``."""
    return next(((a, b) for a, b in CLAUSE.spans(sentence) if a <= at < b), (0, len(sentence)))
