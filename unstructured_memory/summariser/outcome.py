"""What the agent did for the user, read from the agent's turns by rules: no LLM.

``find_outcomes(["已为您创建维修工单 WO2026070100123"])`` gives
``(Outcome.WORK_ORDER_OPENED,)``. Each outcome has a phrase for the record in
Chinese and English (:func:`phrase`). A stronger outcome of the same request
supersedes a weaker one (an approved exchange, its submission). Patterns run
under RE2 in linear time (:mod:`policies.linear_re`).

:class:`Outcome` is ``values.sessions``'s, re-exported here for one release.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from policies.linear_re import LinearMatch, LinearPattern, PatternSet
from values.sessions import Outcome

__all__ = ["Outcome", "committed_items", "find_outcomes", "phrase"]


_SENTENCE = r"[^。！？!?\n]"
"""A character that does not end a sentence."""

_DONE = r"(?:$|[^后以之的])"
"""After an approval, what makes it one given, not one to come (审核通过后安排取件)."""

_PATTERNS: Final[tuple[tuple[Outcome, LinearPattern], ...]] = tuple(
    (outcome, LinearPattern(rx))
    for outcome, rx in (
        (
            Outcome.TICKET_OPENED,
            r"(?:登记|创建|提交|开|生成|建)了?(?:一个|一张)?(?:您的)?投诉"
            r"|投诉(?:工单|单)?(?:已|已经)(?:登记|创建|提交|受理)"
            r"|(?i:(?:opened|created|raised|filed|logged)\s+(?:a\s+|an\s+)?(?:support\s+)?"
            r"(?:ticket|case|complaint))"
            r"|(?i:ticket\s+(?:has\s+been|was|is)\s+(?:opened|created|raised))",
        ),
        (
            Outcome.WORK_ORDER_OPENED,
            r"(?:创建|提交|开|生成|派|安排|建)了?(?:一个|一张)?(?:维修|安装|上门|售后)?工单"
            r"|工单(?:已|已经)(?:创建|提交|生成|派发|派)"
            r"|(?i:(?:opened|created|raised|scheduled)\s+(?:a\s+)?(?:repair\s+|service\s+)?"
            r"work\s?order)",
        ),
        (
            Outcome.EXCHANGE_APPROVED,
            r"换货(?:申请)?(?:已|已经)?(?:审核)?(?:通过|同意|批准)|(?:同意|批准|通过)了?(?:您的)?换货"
            r"|(?:生成|创建)了?换货单"
            r"|(?i:(?:approved|accepted|arranged)\s+(?:an?\s+|your\s+)?(?:exchange|replacement))"
            r"|(?i:(?:exchange|replacement)\s+(?:has\s+been|was|is)\s+approved)"
            r"|换货" + _SENTENCE + r"{0,40}审核(?:已|已经)?通过" + _DONE,
        ),
        (
            Outcome.EXCHANGE_SUBMITTED,
            r"(?:提交|发起|登记)了?(?:您的)?换货"
            r"|(?i:(?:submitted|filed|created)\s+(?:an?\s+|your\s+)?(?:exchange|replacement)"
            r"\s+request)",
        ),
        (
            Outcome.RETURN_APPROVED,
            r"退货(?:申请)?(?:已|已经)?(?:审核)?(?:通过|同意|批准|受理)|(?:同意|批准|受理)了?(?:您的)?退货"
            r"|(?i:(?:approved|accepted)\s+(?:the\s+|your\s+|a\s+)?return)"
            r"|(?i:return\s+(?:has\s+been|was|is)\s+approved)"
            r"|退货" + _SENTENCE + r"{0,40}审核(?:已|已经)?通过" + _DONE,
        ),
        (
            Outcome.RETURN_SUBMITTED,
            r"(?:提交|发起|登记)了?(?:您的)?退货"
            r"|(?i:(?:submitted|created)\s+(?:a\s+|your\s+)?return\s+request)",
        ),
        (
            Outcome.REFUND_COMPLETED,
            r"退款(?:已|已经)(?:到账|退回到?(?:您的)?账户)"
            r"|(?i:refund\s+(?:has\s+|was\s+)(?:been\s+)?(?:credited|completed|received))",
        ),
        (
            Outcome.REFUND_ISSUED,
            r"(?:发起|提交|办理|安排|申请)了?(?:一笔)?(?:全额|部分)?退款"
            r"|退款(?:已|已经)(?:发起|提交|办理|原路退回|退回|处理)|已(?:原路)?退款"
            r"|(?i:(?:issued|processed|initiated)\s+(?:a\s+|the\s+|your\s+)?(?:full\s+|partial\s+)?"
            r"refund)"
            r"|(?i:refund\s+(?:has\s+been|was|is)\s+(?:issued|processed|initiated))",
        ),
        (
            Outcome.COUPON_ISSUED,
            r"(?:补发|发放|赠送|送您|发给您|补偿)了?(?:您)?" + _SENTENCE + r"{0,16}"
            r"(?:优惠券|代金券|红包|券)"
            r"|(?:优惠券|代金券|红包)(?:已|已经)(?:发放|补发|到账|发到)"
            r"|(?i:(?:issued|sent|added|given)\s+(?:you\s+)?(?:an?\s+)?(?:[a-z0-9$%-]+\s+){0,3}"
            r"(?:coupon|voucher))",
        ),
        (
            Outcome.INVOICE_ISSUED,
            r"发票(?:已|已经)(?:开具|开好|开出|开|寄出|发送|发到)"
            r"|(?:开具|开好|开出)了?(?:电子|纸质)?(?:增值税)?(?:专用|普通)?发票"
            r"|(?i:invoice\s+(?:has\s+been|was|is)\s+(?:issued|sent))"
            r"|(?i:issued\s+(?:an?\s+|the\s+|your\s+)?invoice)",
        ),
        (
            Outcome.SERVICE_OPENED,
            r"(?:开通|创建|提交|安排)了?(?:售后|保修|维修)服务"
            r"|(?i:(?:opened|created)\s+(?:a\s+|an\s+)?(?:service|repair|warranty)\s+"
            r"(?:order|request|claim))",
        ),
        (
            Outcome.RESHIPMENT,
            r"补发了?(?:一件|一台|一双|一个)?(?:新的|新品|商品|货|包裹|配件)|重新发货|重新寄出"
            r"|(?i:(?:reship|resend|re-send)|send\s+you\s+a\s+new)",
        ),
        (
            Outcome.DECLINED,
            r"(?:无法|不能)(?:为您)?(?:办理|受理|退款|退货|换货|补偿)"
            r"|不支持" + _SENTENCE + r"{0,12}(?:退|换)|不符合" + _SENTENCE + r"{0,12}条件"
            r"|(?i:not\s+eligible\s+for)"
            r"|(?i:(?:can'?t|cannot|unable\s+to)\s+(?:offer|issue|process|accept)\s+"
            r"(?:an?\s+|the\s+|your\s+)?(?:refund|return|exchange))",
        ),
    )
)

_SUPERSEDES: Final[Mapping[Outcome, Outcome]] = {
    Outcome.EXCHANGE_APPROVED: Outcome.EXCHANGE_SUBMITTED,
    Outcome.RETURN_APPROVED: Outcome.RETURN_SUBMITTED,
    Outcome.REFUND_COMPLETED: Outcome.REFUND_ISSUED,
}

_PHRASES: Final[Mapping[Outcome, tuple[str, str]]] = {
    Outcome.TICKET_OPENED: ("已登记投诉工单", "opened a ticket"),
    Outcome.WORK_ORDER_OPENED: ("已创建服务工单", "opened a work order"),
    Outcome.EXCHANGE_APPROVED: ("已同意换货", "approved an exchange"),
    Outcome.EXCHANGE_SUBMITTED: ("已提交换货申请", "submitted an exchange request"),
    Outcome.RETURN_APPROVED: ("已同意退货", "approved the return"),
    Outcome.RETURN_SUBMITTED: ("已提交退货申请", "submitted a return request"),
    Outcome.REFUND_COMPLETED: ("确认退款已到账", "confirmed the refund arrived"),
    Outcome.REFUND_ISSUED: ("已发起退款", "issued a refund"),
    Outcome.COUPON_ISSUED: ("已发放优惠券", "issued a coupon"),
    Outcome.INVOICE_ISSUED: ("已开具发票", "issued an invoice"),
    Outcome.SERVICE_OPENED: ("已开通售后服务", "opened an after-sales service"),
    Outcome.RESHIPMENT: ("已安排补发", "arranged a reshipment"),
    Outcome.DECLINED: ("未能受理该请求", "declined the request"),
}


_SAID: Final = PatternSet([rx for _, rx in _PATTERNS])


def find_outcomes(agent_texts: Iterable[str]) -> tuple[Outcome, ...]:
    """The outcomes the agent's turns state, in order of first mention, superseded ones
    left out."""
    found: list[Outcome] = []
    for text in agent_texts:
        said = _SAID.present(text)
        hits = sorted(
            (m.start(), order)
            for order, (outcome, rx) in enumerate(_PATTERNS)
            if order in said and (m := rx.search(text)) is not None
        )
        for _, order in hits:
            outcome = _PATTERNS[order][0]
            if outcome not in found:
                found.append(outcome)
    dropped = {_SUPERSEDES[o] for o in found if o in _SUPERSEDES}
    return tuple(o for o in found if o not in dropped)


def phrase(outcome: Outcome, lang: str) -> str:
    """How the record states ``outcome`` (``lang`` ``"zh"`` or ``"en"``)."""
    zh, en = _PHRASES[outcome]
    return zh if lang == "zh" else en


_ITEM_ZH: Final = LinearPattern(
    r"(?:已(?:为您|帮您|给您)?(?P<verb>下单|下好单|补发|寄出|加购)了?|(?P<verb2>补发))"
    r"(?:一[件个台双套只盒])?(?:新的)?"
    r"(?P<what>[^\s，,。；;、！？!?：:（(\d单工请的新一][^\s，,。；;、！？!?：:（(\d单工请的]{0,5})"
    r"|(?:^|[，,。；;！!：:\s])(?P<what3>(?:[A-Za-z]{1,6}\s?)?[^\x00-\x{4dff}\x{9fa0}-\x{10ffff}"
    r"您你我单的了是已]{2,6})\s?(?:[0-9]+(?:\.[0-9]+)?\s?元\s?)?已(?:为您|帮您|给您)?"
    r"(?P<verb3>下单|补发|寄出)"
    r"|(?P<gift>赠送|送|赠)您?一[套个件份盒瓶只支张副把条]\s?(?P<what4>[^\s，,。；;、！？!?：:（(\d单的哦呢啊吧]{2,8})"
)
_ITEM_EN: Final = LinearPattern(
    r"(?i:(?:^|[.;!]\s*)(?P<what>[a-z]+(?: [a-z]+){0,2}) (?P<verb>ordered|reshipped)(?:$|[,.;! ])"
    r"|(?:i'?ve |we'?ve |i have |we have )?(?P<verb2>ordered|placed an order for|reshipped|resent) "
    r"(?:you )?(?:a |an |the |your |new |a new |replacement )*(?P<what2>[a-z][a-z -]{1,24}?)"
    r"(?:$|[,.;!]| for | at | to )"
    r"|(?:comes with|we'?ll (?:throw in|include|add)|you(?:'ll)? get|includes?) (?:a |an )?"
    r"(?P<gift>free) (?P<what5>[a-z][a-z -]{1,24}?)(?:$|[,.;!]| with | when | if ))"
)
"""What the agent ordered or sent for the user: 已下单壶盖, 补发杯盖, HEPA 滤网 89 元已下单,
杯盖已为您补发, Ear pads ordered, I've ordered you a new filter; or promised with the purchase
(下单送一套硅胶烤盘, it comes with a free travel pouch)."""
_SENT: Final = {
    "下好单": "下单",
    "placed an order for": "ordered",
    "resent": "reshipped",
    "赠送": "承诺赠送",
    "送": "承诺赠送",
    "赠": "承诺赠送",
    "free": "promised a free",
}
"""A verb's usual form."""
_NOT_ITEM: Final = frozenset(
    {"it", "that", "this", "them", "one", "order", "item", "package", "parcel", "replacement"}
    | {"包裹", "快递", "商品", "宝贝", "东西", "货"}
)
"""Words that name no thing of their own."""
_NOT_IN_ITEM: Final = frozenset({"we", "i", "you", "they", "have", "has", "is", "are", "was"})
"""Words that make a phrase a clause, not a thing ("We have ordered …")."""


def committed_items(agent_texts: Iterable[str], lang: str) -> tuple[tuple[str, str], ...]:
    """``(verb, thing)`` the agent says it ordered or sent for the user, in order, each
    once (``("下单", "壶盖")``, ``("ordered", "Ear pads")``): a part bought instead of an
    exchange is named in the record."""
    rx = _ITEM_ZH if lang == "zh" else _ITEM_EN
    found: list[tuple[str, str]] = []
    for text in agent_texts:
        for m in rx.finditer(text):
            what = " ".join(_first(m, rx, "what", "what2", "what3", "what4", "what5").split())
            verb = _first(m, rx, "verb", "verb2", "verb3", "gift").lower()
            item = (_SENT.get(verb, verb), what)
            if (
                what
                and what.casefold() not in _NOT_ITEM
                and not set(what.casefold().split()) & _NOT_IN_ITEM
                and item not in found
            ):
                found.append(item)
    return tuple(found)


def _first(m: LinearMatch, rx: LinearPattern, *names: str) -> str:
    """The first of the groups ``names`` that ``rx`` has and ``m`` filled."""
    return next((v for n in names if n in rx.groupindex and (v := m.group(n))), "")
