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
(:mod:`policies.linear_re`; PII through :func:`policies.pii.recent_pii`), and
models, brands and products by shape and part of speech
(:mod:`~unstructured_memory.summariser.shapes`), and sets ``doc.ents``; an
``entity_ruler`` (``overwrite_ents=False``) then adds PRODUCT and BRAND from the
shipped lexicon ``data/lexicon.json``, a prior for what the grammars miss.
Overlaps go to the more specific label:
PII > the ids named by a cue (REFUND_ID, RETURN_ID, EXCHANGE_ID, TICKET_ID,
WORK_ORDER_ID, COUPON_CODE, INVOICE_NO, TRACKING_NO, and CODE after a code cue
such as 取件码 or booking ref) > ORDER_ID > AMOUNT > DATE > MODEL, BRAND of a Latin
name > CODE of no cue > PRODUCT, BRAND of a Chinese noun phrase > the lexicon.

Identifiers are one grammar of shape: letters and digits in parts joined by one of
``- _ / .`` (``TK-88-00412``, ``PO/64/2026/0117``, ``64.2611.0305``), or digit
groups with a space between them (``2409 1558 8120``); full-width digits and
letters are read as ASCII. After a cue an id needs a digit and four or five
characters (three after a code cue: ``取件码 A7Q3``); with no cue, an id-like
position (``77310 那个单子``, a list before ``这两单``, a turn that is one number,
the answer to ``订单号是？``) or five digits in a row with more. Dates, amounts and
numbers before their unit are never ids; a code said again without its cue takes
the label its cue gave it (the same value, or an id of the same shape).
Amounts said in words or hedged (``两三千``, ``一万出头``, ``3000 左右``, ``under two
hundred bucks``) are AMOUNTs (:mod:`~unstructured_memory.summariser.amounts`).

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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from typing import Any, Final

import spacy
from spacy.language import Language
from spacy.tokens import Doc, Span

from policies.linear_re import LinearPattern, PatternSet, Subject
from policies.pii import STREET_WORD_EN, PiiKind, mask_value, recent_pii
from policies.validation import check_text
from unstructured_memory.summariser import amounts, shapes
from unstructured_memory.tokenize import segment
from values.entities import Entity
from values.sessions import Lang

__all__ = [
    "ENTITY_LABELS",
    "ID_LABELS",
    "PII_LABELS",
    "Entity",
    "Lang",
    "brand_of",
    "cue_before",
    "detect_language",
    "extract_entities",
    "unit_follows",
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
_CUE_B = r"(?P<pre>[^0-9A-Za-z_./\\-])"
"""Not inside a token of letters, digits and separators: a cue word there is part of an id
(``AA000-RMA0-0-00`` names no return)."""
_NO_DIGIT_AFTER = r"(?P<post>$|\D)"

# ---- identifiers: one grammar of shape, a cue before (or after) it naming the label
_SEGMENTED = r"[0-9A-Za-z]+(?:[-_/.][0-9A-Za-z]+)*"
"""Letters and digits in parts joined by one of ``- _ / .``: TK-88-00412, PO/64/2026/0117,
64.2611.0305, SN64K9X0217, A7Q3 (that it holds a digit, and is long enough, is checked
after the match: :func:`_id_ok`)."""
_SPACED = r"[0-9]{3,6}(?: [0-9]{3,6})+"
_FIVE_DIGITS = r"(?:[0-9A-Za-z]+[-_/.])*[0-9A-Za-z]*[0-9]{5}[0-9A-Za-z]*(?:[-_/.][0-9A-Za-z]+)*"
"""An identifier of the :data:`_SEGMENTED` shape with five digits in a row: what an id no
cue names needs (``64417-B``, ``TK-63-00418``)."""
"""Digit groups with one space between them, as people read a long number: 2409 1558 8120."""
_TOKEN = rf"(?:{_SPACED}|{_SEGMENTED})"
_ID = rf"(?P<id>{_TOKEN}){_E}"
_COUPON_ID = (
    r"(?P<id>[A-Za-z_-]{0,30}\d[A-Za-z0-9_-]{0,31}[A-Za-z][A-Za-z0-9_-]{0,31}"
    r"|[A-Za-z][A-Za-z_-]{0,30}\d[0-9_-]{0,31}|[A-Z][A-Z_-]{3,31}|\d{6,32})" + _E
)
"""A coupon code: letters and digits (SAVE20, vip888, 20OFF), four capitals or more
(WELCOME), or six digits or more; never a word in lower case (the discount *still*
applies)."""
_SEP = (
    r"\s{0,3}(?:(?:是|为)\s{0,2}(?:多少|什么|啥)?\s{0,2}[?？]|[?？]|是|为|:|：|#|＃"
    r"|(?i:is|was)\s)?\s{0,3}#?\s{0,3}"
)
"""Between a cue and its id: 是, a colon, ``#``, ``is``; or the question an agent asked,
the id being the next turn's answer (``订单号是？`` / ``6263357``)."""
_NO = r"\s*(?:#|(?i:id|number|num|no|code)(?:[\s:：#＃.]|$))"
"""The word after a cue naming the id ("ticket ID: …", "order no. …"), ended by a separator:
in "ticket ID000" the letters are the id's own."""

_CODE_CUES_STRONG = (
    r"取件码|取货码|提货码|提取码|寄件码|开箱码|开柜码|柜码|核销码|绑定码|激活码|预约码|配对码"
    r"|(?i:(?:pick-?up|collection|locker|booking|reservation|confirmation"
    r"|activation|pairing|redemption|access)\s?(?:ref(?:erence)?|code|number|no\.?|#)"
    r"|booking|reservation)"
)
"""Cues of short codes: after them three characters with a digit are an id (A7Q3)."""
_CODE_CUES = (
    r"会员卡号|会员编号|会员号|会员卡|保修卡号|保修卡|质保卡号|保修单号"
    r"|(?i:sn|s/n|imei)(?:\s?[码号]|\s|[:：#])"
    r"|序列号|串号|机身码|设备号|设备码|防伪码|溯源码|追溯码|条形码|条码|预约单号|预约号|生产批号|批次号|批号"
    r"|合同编号|合同号|申请单号|申请号|报名号|编号"
    r"|[\u4e00-\u9fff][^\x00-\u4dff\ua000-\U0010ffff的了是个这那张下买订运递流款货务工诉我你他她它们些点次]"
    r"单(?:号|编号)?"
    r"|(?i:(?:price\s+)?adjustment|(?:protection|warranty|insurance)\s+claim"
    r"|(?:member(?:ship)?|loyalty|warranty(?:\s+card)?|serial|batch|lot|claim|appointment"
    r"|purchase\s+order|po|contract|application)\s?(?:ref(?:erence)?|number|num|no\.?|code|id|#)"
    r"|serial|ref(?:erence)?(?:\s?(?:number|no\.?|code|#))?)"
)
"""Cues of codes with no label of their own (CODE): the record names them by the cue."""

_UNIT_AFTER = LinearPattern(
    r"^\s{0,2}(?:元|块|个|件|台|把|只|位|次|天|周|月|年|日|份|箱|瓶|袋|盒|双|张|条|斤|公斤|克|米|寸|岁"
    r"|点|分钟|秒|小时|%|％|(?i:kg|g|cm|mm|m|ml|l|gb|tb|mah|w|v|yuan|rmb|usd|dollars?|bucks"
    r"|days?|hours?|weeks?|months?|years?|pcs|inch(?:es)?|ft|feet|foot|minutes?|mins?|pm|am)"
    r"(?P<post>$|[^A-Za-z]))"
)
"""A unit right after a number: ``10-15 天``, ``64231 100 块`` hold no id."""
_NOT_ID = LinearPattern(
    r"(?:19|20)\d{2}[-/.](?:1[0-2]|0?[1-9])(?:[-/.](?:3[01]|[12]\d|0?[1-9]))?"
    r"|(?:1[0-2]|0?[1-9])[-/.](?:3[01]|[12]\d|0?[1-9])|\d{1,6}\.\d{1,2}|\d{1,3}(?:,\d{3})+"
)
"""Shapes of a date or an amount, never an id (``2026-07-05``, ``49.90``)."""

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

_SAID: Final = 1000
"""The check of an amount said in words: :func:`amounts.is_amount`."""

_UNCUED_PRIORITY: Final = 6
"""The priority of a code no cue names (below every other label)."""

_PREFIXED = r"(?:\d{3,}|\d{2}[-_]\d{3,})(?:[-_][0-9A-Za-z]+)*"
"""What follows a prefix naming an id's kind: a part of three digits or more, or of two
before one of three or more (RMA-5512-0093, RMA-55-0931, WO-26-11820)."""

# (label, priority, pattern, shortest id); a pattern with an "id" group marks only that
# group, and its match is checked by _id_ok when it has a shortest length.
_SPECS: Final[tuple[tuple[str, int, str, int], ...]] = (
    ("REFUND_ID", 1, _B + r"(?P<id>RF\d{6,24})" + _E, 0),
    # an id whose own prefix names it: RF-3309-1172, RMA-5512-0039
    ("REFUND_ID", 1, _B + r"(?P<id>RF[-_]" + _PREFIXED + ")" + _E, 0),
    ("RETURN_ID", 1, _B + r"(?P<id>(?i:rma)[-_]?" + _PREFIXED + ")" + _E, 0),
    ("WORK_ORDER_ID", 1, _B + r"(?P<id>WO[-_]" + _PREFIXED + ")" + _E, 0),
    (
        "REFUND_ID",
        1,
        _CUE_B
        + r"(?:退款(?:申请)?(?:单号|单|编号|号)|(?i:refund)\s*(?i:id|number|no\.?|#))"
        + _SEP
        + _ID,
        5,
    ),
    (
        "TRACKING_NO",
        1,
        _B + r"(?:SF|YT|JD[A-Z]{0,2}|ZTO|YD|STO|EMS|JT|DPK|YZ)\d{9,15}" + _E,
        0,
    ),
    ("TRACKING_NO", 1, _B + r"1Z[0-9A-Z]{16}" + _E, 0),
    (
        "TRACKING_NO",
        1,
        _CUE_B + r"(?:运单|快递单|物流单|快递|包裹"
        r"|(?:顺丰|圆通|中通|申通|韵达|极兔|德邦|邮政)(?:快递)?(?:单号|运单号?|单)"
        r"|(?i:tracking|parcel|shipment|waybill))\s*(?:号|编号|(?i:number|no\.?|#|code|id))?"
        + _SEP
        + _ID,
        6,
    ),
    (
        "RETURN_ID",
        1,
        _CUE_B
        + rf"(?:退货(?:申请(?:单号|单|编号|号)?|单号|单|编号|号)|(?i:return)\s*(?i:request)?{_NO}"
        rf"|(?i:return)|(?i:rma)(?:{_NO})?){_SEP}{_ID}",
        4,
    ),
    (
        "EXCHANGE_ID",
        1,
        _CUE_B
        + rf"(?:换货(?:申请)?(?:单号|单|编号|号)|(?i:exchange|replacement)\s*(?i:order)?(?:{_NO})?)"
        rf"{_SEP}{_ID}",
        4,
    ),
    (
        "TICKET_ID",
        1,
        _CUE_B + r"(?:(?:投诉|客诉|理赔|索赔)(?:工单|单)(?:号|编号)?"
        r"|(?:投诉|客诉|理赔|索赔)(?:编号|号)"
        rf"|(?i:ticket|case|complaint|claim)(?:{_NO})?){_SEP}{_ID}",
        4,
    ),
    (
        "WORK_ORDER_ID",
        1,
        _CUE_B + r"(?:(?:寄修|维修|返修|检修|报修|安装|派工)?工单(?:号|编号)?"
        r"|(?:寄修|维修|返修|检修|报修|安装|派工)单(?:号|编号)?"
        rf"|(?i:work\s?order|repair(?:\s?order)?|service\s?order)(?:{_NO})?){_SEP}{_ID}",
        4,
    ),
    (
        "COUPON_CODE",
        1,
        r"(?:(?:优惠券|优惠码|折扣码|券码|兑换码|礼品卡|红包)(?:号|码|编号|卡号)?"
        rf"|(?i:coupon|promo|voucher|discount|gift\s?card)(?:{_NO})?){_SEP}{_COUPON_ID}",
        0,
    ),
    (
        "INVOICE_NO",
        1,
        rf"(?:发票(?:号码|号|编号|代码)|(?i:invoice){_NO}){_SEP}{_ID}",
        4,
    ),
    ("ORDER_ID", 2, r"订单\s*(?:号|编号)?" + _SEP + _ID, 5),
    ("ORDER_ID", 2, r"(?P<pre>[^\u4e00-\u9fff]|[的个这那张我])单号" + _SEP + _ID, 5),
    ("ORDER_ID", 2, _B + r"(?i:orders?)\s*(?i:number|num|no\.?|id)?" + _SEP + _ID, 5),
    ("ORDER_ID", 2, r"(?P<pre>[^0-9A-Za-z#])#(?P<id>\d{5,24})" + _E, 0),
    (
        "ORDER_ID",
        2,
        _B + rf"(?P<id>{_TOKEN}(?:\s{{0,2}}(?:、|,|，|和|及|与|/)\s{{0,2}}{_TOKEN})*)"
        r"\s{0,2}(?:这|那)(?:个|张|[几两三四五六七八九十]|\d{1,2})?\s?(?:单子|订单|单)",
        5,
    ),
    # orders in an id-like position: numbers after a count of orders (两单，6355902 和 …)
    # or in a clause about a purchase (刚下单的投影幕布 6180335, the one I ordered, 6167702)
    (
        "ORDER_ID",
        2,
        r"(?:[两几三四五六七八九十0-9]单|(?:这|那)(?:几|两)单)[，,:：\s]{0,3}(?P<id>[0-9]{5,20})"
        + _E,
        5,
    ),
    (
        "ORDER_ID",
        2,
        r"(?:下单|下的单|买的|买了|订的|拍的|拍了|购买|(?i:ordered|bought|purchased))"
        r"[^。！？!?；;\n0-9]{0,16}?[\s,，:：(（](?P<id>[0-9]{6,20})" + _E,
        6,
    ),
    # a long number right after the thing it is for, opening a clause (床垫 6530712 约个送货时间);
    # not after a word naming another number (工号, 邮编, 卡号)
    (
        "ORDER_ID",
        2,
        r"(?:^|[，,。！？!?；;\n])\s{0,2}[\x{4e00}-\x{9fff}]{0,4}"
        r"[^\x00-\x{4dff}\x{9fa0}-\x{10ffff}号码卡编账机话户证]\s{0,2}(?P<id>[0-9]{7,20})" + _E,
        7,
    ),
    # a long number whose delivery is asked after (8310264 到哪了, has 8310264 shipped?)
    (
        "ORDER_ID",
        2,
        r"(?:^|[，,。！？!?；;\n])\s{0,2}(?P<id>[0-9]{7,20})\s{0,2}"
        r"(?:到哪|到了|到没|发货|发了|发出|怎么还|还没|什么时候|啥时候|物流|签收)",
        7,
    ),
    (
        "ORDER_ID",
        2,
        r"(?P<pre>[^A-Za-z])(?i:has|did|is|was|where is|where's|when will|when does|will)\s+"
        r"(?:the\s+|my\s+)?(?P<id>[0-9]{7,20})\s*(?:[,?]|(?i:shipp?|arriv|been|left|come|get|go))",
        7,
    ),
    # a code cue is a word of its own (ref, never preference)
    ("CODE", 2, rf"(?P<pre>[^A-Za-z])(?:{_CODE_CUES_STRONG}){_SEP}{_ID}", 3),
    ("CODE", 2, rf"(?P<pre>[^A-Za-z])(?:{_CODE_CUES}){_SEP}{_ID}", 5),
    # amounts: a currency sign, or a currency code that does not end a word, before
    # the number; or a unit after it
    (
        "AMOUNT",
        3,
        _CURRENCY + r"\s?(?:\d{1,3}(?:,\d{3})+(?:\.\d{1,2})?(?P<post>$|\D)"
        r"|\d+(?:\.\d{1,2})?(?P<post2>$|\D))",
        0,
    ),
    (
        "AMOUNT",
        3,
        _CODE + r"\s?(?:\d{1,3}(?:,\d{3})+(?:\.\d{1,2})?(?P<post>$|\D)"
        r"|\d+(?:\.\d{1,2})?(?P<post2>$|\D))",
        0,
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
        0,
    ),
    ("AMOUNT", 3, _ZH_NUM + r"+[百千万][一二两三四五六七八九十百千万]*(?:元|块钱|块)", 0),
    # said in words or hedged: 两三千, 一万出头, 3000 左右, under two hundred bucks
    ("AMOUNT", 3, rf"(?P<pre>[^0-9A-Za-z.])(?:{amounts.SAID})", _SAID),
    (
        "DATE",
        4,
        _B
        + r"(?:19|20)\d{2}[-/.](?:1[0-2]|0?[1-9])[-/.](?:3[01]|[12]\d|0?[1-9])"
        + _NO_DIGIT_AFTER,
        0,
    ),
    (
        "DATE",
        4,
        r"(?P<pre>\D)(?:(?:19|20)\d{2}年)?(?:1[0-2]|0?[1-9])月(?:3[01]|[12]\d|0?[1-9])[日号]",
        0,
    ),
    (
        "DATE",
        4,
        r"(?P<pre>\D)(?:(?:19|20)\d{2}年)?(?:1[0-2]|0?[1-9])月(?:份|初|中旬|底)",
        0,
    ),
    # a day of the month (28 号上午, 30日前); not a size (穿 28 号) nor a building (3 号楼)
    (
        "DATE",
        4,
        r"(?P<pre>(?:^|[^0-9A-Za-z.穿码鞋第])\s?)(?:(?:3[01]|[12]\d|[1-9])\s?[号日]"
        r"(?:上午|下午|中午|晚上|早上)?)(?P<post>$|[^楼线门柜床房仓店栋单室座层排号码的])",
        0,
    ),
    (
        "DATE",
        4,
        r"(?:大后天|今天|明天|后天|昨天|前天|今晚|明早|月底|月初|周末|年底"
        rf"|(?:下|上|这|本)个?(?:周|星期|礼拜){_ZH_DAY}?|(?:下|上)个?月"
        rf"|(?:周|星期|礼拜){_ZH_DAY})(?:上午|下午|中午|晚上|早上)?",
        0,
    ),
    (
        "DATE",
        4,
        rf"(?:\d+|{_ZH_NUM}+)(?:\s?[-~～到至]\s?(?:\d+|{_ZH_NUM}+))?\s?个?"
        r"(?:工作日|自然日|天|小时|星期|月)(?:内|之内|左右)?",
        0,
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
        0,
    ),
    (
        "MODEL",
        5,
        _B + r"(?:(?:iPhone|iPad|Mate|Pura|nova|Galaxy|Pixel|Redmi|Find|Reno|Mi|Xiaomi|"
        r"AirPods|Watch)\s?(?:[A-Z]{0,2}\d{1,3}[A-Za-z]?|Pro|Air|Max|Ultra)"
        r"|[A-Z]{1,2}\d{1,3}[a-z]?)"
        r"(?:\s?(?:Pro\s?Max|Pro\+?|Max|Ultra|Plus|Mini|mini|Lite|SE|Air|Turbo|Slim|Neo))*" + _E,
        0,
    ),
    # codes of the shape of an identifier that no cue names: parts holding five digits
    # or more with a letter or a separator, or eight digits or more (see _id_ok); or a
    # turn that is one number of five digits or more
    ("CODE", _UNCUED_PRIORITY, _B + rf"(?P<id>{_FIVE_DIGITS}){_E}", -5),
    ("CODE", _UNCUED_PRIORITY, r"(?P<pre>\n)(?P<id>[A-Za-z]{0,4}\d{5,24})\s{0,3}(?P<post>$|\n)", 5),
)
_PATTERNS: Final[tuple[tuple[str, int, LinearPattern], ...]] = tuple(
    (label, prio, LinearPattern(rx)) for label, prio, rx, _ in _SPECS
)
_SHORTEST: Final = tuple(n for *_, n in _SPECS)
"""Per pattern: the fewest letters and digits its id holds (0: no check; negative: an id
of no cue, which needs that many digits and a letter or separator, or eight digits)."""

_CUE_BEFORE = LinearPattern(rf"(?P<cue>{_CODE_CUES_STRONG}|{_CODE_CUES}){_SEP}$")
"""A code cue ending right before an identifier (:func:`cue_before`)."""

_HALF_WIDTH: Final = {
    **{0xFF10 + i: 0x30 + i for i in range(10)},
    **{0xFF21 + i: 0x41 + i for i in range(26)},
    **{0xFF41 + i: 0x61 + i for i in range(26)},
    0xFF0D: 0x2D,
    0xFF3F: 0x5F,
    0xFF0F: 0x2F,
    0xFF0E: 0x2E,
}
"""Full-width digits, letters and id separators as ASCII: one character for one."""


_DELETE_DIGITS: Final = dict.fromkeys(map(ord, "0123456789"))
_DELETE_ID_CHARS: Final = dict.fromkeys(
    map(ord, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_./ ")
)
_DELETE_NUMBER_CHARS: Final = dict.fromkeys(map(ord, "0123456789-/.,"))
_DELETE_SEPARATORS: Final = dict.fromkeys(map(ord, "-_./ "))
_ENDS_A_PHRASE: Final = frozenset("，。,.;；!！?？)）]】、:：\n")
"""What may follow an identifier with no unit between (no regex needed to tell)."""


_FULL_WIDTH_RE = re.compile("[\uff10-\uff19\uff21-\uff3a\uff41-\uff5a\uff0d-\uff0f\uff3f]")


def _half_width(text: str) -> str:
    """``text`` with full-width digits, letters and id separators in ASCII (translated only
    when it holds one: most text holds none)."""
    if text.isascii() or _FULL_WIDTH_RE.search(text) is None:
        return text
    return text.translate(_HALF_WIDTH)


def _id_shape_ok(value: str, shortest: int) -> bool:
    """Whether ``value`` has an identifier's shape: a digit, ``shortest`` letters and
    digits or more (no cue: five digits in a row with more, or eight), no date or amount."""
    digits = len(value) - len(value.translate(_DELETE_DIGITS))
    if digits == 0 or len(value) > _LONGEST_ID:
        return False
    if not value.translate(_DELETE_NUMBER_CHARS) and _NOT_ID.fullmatch(value) is not None:
        return False  # digits and separators only, and a date or an amount
    if shortest < 0:
        return digits >= 8 or (not value.isdigit() and _longest_digit_run(value) >= -shortest)
    return len(value.translate(_DELETE_SEPARATORS)) >= shortest


def _id_ok(text: str, start: int, end: int, shortest: int) -> bool:
    """Whether ``text[start:end]`` (matched by an id pattern) is an identifier: of an id's
    shape (:func:`_id_shape_ok`) and not a number followed by its unit."""
    if not _id_shape_ok(text[start:end], shortest):
        return False
    return not unit_follows(text, end)


_UNIT_CHARS: Final = frozenset("元块个件台把只位次天周月年日份箱瓶袋盒双张条斤克米寸岁点秒%％")
_UNIT_WORDS_ZH: Final = ("公斤", "分钟", "小时")


def unit_follows(text: str, end: int) -> bool:
    """Whether a unit follows ``text[:end]`` (at most two spaces between): ``10-15 天``,
    ``64231 100 块``, ``40 oz``. What :data:`_UNIT_AFTER` says, read without a regex where
    the next character tells (a CJK unit, a phrase end)."""
    rest = text[end : end + 14]
    head = rest.lstrip(" ")
    if len(rest) - len(head) > 2 or not head:
        return False
    first = head[0]
    if first in _UNIT_CHARS or head.startswith(_UNIT_WORDS_ZH):
        return True
    if not first.isascii() or not first.isalpha():
        return False
    return _UNIT_AFTER.match(rest) is not None


def _longest_digit_run(value: str) -> int:
    longest = run = 0
    for c in value:
        run = run + 1 if c.isdigit() else 0
        longest = max(longest, run)
    return longest


_LONGEST_ID: Final = 64
"""Longest identifier (characters): a longer run of letters and digits is not one."""

_LIST_SEP = LinearPattern(r"\s{0,2}(?:、|,|，|和|及|与|/)\s{0,2}")


def _id_spans(text: str, start: int, end: int, shortest: int) -> list[tuple[int, int]]:
    """The identifiers of one id match: itself, the ids of a list (``6411208、6411209``),
    the parts of a slash list of long numbers (``6405521/6405538``), or, for digit groups
    that end in a unit (``64231 100 块``), the first group."""
    value = text[start:end]
    if not shortest:
        return [(start, end)]
    if value.translate(_DELETE_ID_CHARS):  # more than letters, digits and separators
        cuts = _LIST_SEP.spans(value)
        bounds = [start, *(x for a, b in cuts for x in (start + a, start + b)), end]
        return [
            s
            for a, b in zip(bounds[::2], bounds[1::2], strict=True)
            for s in _id_spans(text, a, b, shortest)
        ]
    if "/" in value and all(len(p) >= 5 and p.isdigit() for p in value.split("/")):
        out, at = [], start
        for part in value.split("/"):
            out.append((at, at + len(part)))
            at += len(part) + 1
        return out
    if _id_ok(text, start, end, shortest):
        return [(start, end)]
    if " " in value and "/" not in value:  # digit groups: the first group alone
        first = start + value.index(" ")
        if _id_ok(text, start, first, shortest):
            return [(start, first)]
    return []


_PATTERN_SET: Final = PatternSet([rx for _, _, rx in _PATTERNS])
"""One pass telling which of :data:`_PATTERNS` can match a text: only those are scanned."""

_GROUPS: Final = tuple("id" if "id" in rx.groupindex else None for _, _, rx in _PATTERNS)
"""The group each pattern marks (``None``: the whole match)."""

_CONTINUED: Final = frozenset(ID_LABELS - {"CODE"})
"""Labels a list continues: ``订单 3349201 和 3349202`` makes both ORDER_ID."""

_NEXT_ID = LinearPattern(
    r"^\s*(?:和|、|及|与|以及|跟|,|，|/|&|(?i:and|or))\s*#?\s*(?P<id>" + _TOKEN + r")" + _E
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
    """The candidates of PII and the patterns in ``text``."""
    cands = [_Candidate(m.kind.name, _PII_PRIORITY, m.start, m.end) for m in recent_pii(text)]
    text = _half_width(text)  # one character for one: offsets hold
    subject = Subject(text)
    hits = _PATTERN_SET.candidates(subject)
    for k, (label, prio, rx) in enumerate(_PATTERNS):
        if k in hits:
            shortest = _SHORTEST[k]
            if shortest == _SAID:
                cands.extend(
                    _Candidate(label, prio, a, b)
                    for a, b in rx.scan(subject)
                    if amounts.is_amount(text, a, b)
                )
                continue
            cands.extend(
                _Candidate(label, prio, x, y)
                for a, b in rx.scan(subject, _GROUPS[k])
                for x, y in _id_spans(text, a, b, shortest)
            )
    queue = [c for c in cands if c.label in _CONTINUED]
    while queue:
        c = queue.pop()
        m = _NEXT_ID.match(text[c.end : c.end + _NEXT_WINDOW])
        if m is not None:
            a, b = m.span(_NEXT_ID.groupindex["id"])
            for x, y in _id_spans(text, c.end + a, c.end + b, 4):
                follower = _Candidate(c.label, c.priority, x, y)
                cands.append(follower)
                queue.append(follower)
    return cands


_NAME_PRIORITY: Final = 5
"""Models and brands of a Latin name (as the MODEL pattern)."""
_PHRASE_PRIORITY: Final = 7
"""Products of a Chinese noun phrase: below every pattern, above the lexicon."""
_CJK_BEFORE = LinearPattern(r"[\u4e00-\u9fff]\s?$")
_NUMBER_MODEL = LinearPattern(r"(?P<pre>[\u4e00-\u9fff ])[0-9]{3,6}(?P<post>$|[^0-9A-Za-z.%])")
_PROPER: Final = frozenset({"nz", "nr", "nrt", "ns", "nt", "a", "j", "t", "m"})
_GENERATION: Final = LinearPattern(
    r"(?P<pre>[\u4e00-\u9fff ])[0-9]{1,2}(?:\s?(?i:pro\+?|max|ultra|plus|mini|lite|se))*"
    r"(?P<post>$|[^0-9A-Za-z.%])"
)
"""A generation after a brand: 小米 14, 小米14 Ultra, 荣耀 90 Pro (not 小米 2 台)."""
_KNOWN_ONLY: Final = frozenset[str]()
"""No part of speech makes a brand: only one the lexicon knows comes before a generation."""
_LONE_NUMBER = LinearPattern(
    r"(?P<pre>[^0-9A-Za-z.,#$¥￥-])[0-9]{3,6}(?P<post>$|[^0-9A-Za-z.,%元块])"
)


def _cjk_brand(
    text: str, start: int, brands: frozenset[str], products: frozenset[str]
) -> _Candidate | None:
    """The Chinese brand right before ``text[start]`` (:func:`shapes.brand_before`)."""
    if _CJK_BEFORE.search(text[max(0, start - 2) : start]) is None:
        return None
    brand = shapes.brand_before(text, start, brands, products)
    return None if brand is None else _Candidate("BRAND", _NAME_PRIORITY, *brand)


def _brand_of_model(
    line: str, start: int, brands: frozenset[str], products: frozenset[str]
) -> list[_Candidate]:
    """The Chinese brand right before the model at ``line[start]`` (石头 G20S, 小天才 Z9); a
    known brand and a product before the model are both (九阳豆浆机 DJ13-B5: 九阳, 豆浆机)."""
    brand = _cjk_brand(line, start, brands, products)
    if brand is None:
        return []
    known = shapes.brand_before(line, brand.start, brands, ())
    if known is not None and line[known[0] : known[1]].casefold() in brands:
        return [_Candidate("BRAND", _NAME_PRIORITY, *known), replace(brand, label="PRODUCT")]
    return [brand]


_STREET: Final = LinearPattern(rf"^{STREET_WORD_EN}$")
"""A street word: the name before it is a street's (Maple Ave), no brand and model."""


def _no_streets(line: str, named: list[_Candidate]) -> list[_Candidate]:
    """``named`` without a street said by its name and street word (the Maple Ave post
    office): a model that is a street word, and the name right before it."""
    out = list(named)
    for k, c in enumerate(named):
        if c.label == "MODEL" and _STREET.search(line[c.start : c.end]) is not None:
            out[k] = replace(c, label="")
            if k > 0 and named[k - 1].label == "BRAND" and named[k - 1].end + 1 == c.start:
                out[k - 1] = replace(named[k - 1], label="")
    return [c for c in out if c.label]


@lru_cache(maxsize=1024)
def _line_shapes(line: str) -> tuple[_Candidate, ...]:
    """Models, brands and products of one line found by shape and part of speech
    (:mod:`~unstructured_memory.summariser.shapes`); a pure function of the line, cached (a
    transcript is analysed, then each of its turns: every turn is read once). What the
    patterns find wins where the two overlap (:func:`_resolve`)."""
    lang: Lang = "zh" if _CJK_RE.search(line) else "en"
    brands, products = _folded_lexicon()
    latin = _LATIN_RE.search(line) is not None
    digits = _DIGIT_RE.search(line) is not None
    subject = Subject(line)
    named = (
        _no_streets(
            line,
            [
                _Candidate(label, _NAME_PRIORITY, a, b)
                for label, a, b in shapes.latin_names(line, lang, brands, products, subject)
            ],
        )
        if latin
        else []
    )
    if lang != "zh":
        if digits:
            named += [
                _Candidate(label, _PHRASE_PRIORITY, a, b)
                for label, a, b in shapes.english_products(line)
            ]
        named += [
            _Candidate(label, _PHRASE_PRIORITY, a, b)
            for label, a, b in shapes.english_subjects(line)
        ]
        return tuple(named)
    out: list[_Candidate] = []
    for k, c in enumerate(named):
        if c.label == "BRAND" and k + 1 < len(named) and named[k + 1].start == c.end + 1:
            brand = _cjk_brand(line, c.start, brands, products)
            if brand is not None:
                # 雷蛇 BlackShark V2 Pro: the Chinese word is the brand, the Latin run its model
                out += [brand, _Candidate("MODEL", _NAME_PRIORITY, c.start, named[k + 1].end)]
                named[k + 1] = replace(named[k + 1], label="")
                continue
        if c.label:
            out.append(c)
    models = [c.start for c in out if c.label == "MODEL"]
    for start in models:
        out += [c for c in _brand_of_model(line, start, brands, products) if c not in out]
    for a, b in _NUMBER_MODEL.scan(subject) if digits else ():  # 乐高 42143: after a brand
        before = shapes.brand_before(line, a, brands, products, proper=_PROPER)
        if before is not None:
            out += [
                _Candidate("BRAND", _NAME_PRIORITY, *before),
                _Candidate("MODEL", _NAME_PRIORITY, a, b),
            ]
    for a, b in _GENERATION.scan(subject) if digits else ():
        before = shapes.brand_before(line, a, brands, products, proper=_KNOWN_ONLY)
        if before is not None and not unit_follows(line, b):
            out += [
                _Candidate("BRAND", _NAME_PRIORITY, *before),
                _Candidate("MODEL", _NAME_PRIORITY, a, b),
            ]
    out = [_with_edition(line, c) for c in out]
    out += [
        _Candidate(label, _PHRASE_PRIORITY, a, b)
        for label, a, b in shapes.chinese_products(line, brands, products, subject)
    ]
    return tuple(out)


_EDITION: Final = LinearPattern(
    r"^(?:[一-龥]{1,3}版|至尊|旗舰|青春|尊享|典藏|顶配|高配|标准|纪念|冠军)(?:版)?"
)
"""An edition said right after a model, with no space: 至尊版, 国行版, or 至尊 alone."""


def _with_edition(line: str, c: _Candidate) -> _Candidate:
    """A model with the edition said right after it (``K70至尊版``), a whole word of the
    line: ``的版本`` is no edition."""
    if c.label != "MODEL":
        return c
    m = _EDITION.match(line[c.end : c.end + 5])
    if m is None or "的" in (m.group(0) or "") or line[c.end : c.end + m.end() + 1][-1:] == "本":
        return c
    return replace(c, end=c.end + m.end())


def _shape_candidates(text: str) -> list[_Candidate]:
    """:func:`_line_shapes` of every line of ``text``, at their offsets."""
    out: list[_Candidate] = []
    at = 0
    for line in text.split("\n"):
        if line.strip():
            out += [replace(c, start=c.start + at, end=c.end + at) for c in _line_shapes(line)]
        at += len(line) + 1
    return out


def _resolve(cands: list[_Candidate]) -> list[_Candidate]:
    """The candidates kept, by priority, then length, then position; none overlap."""
    taken = bytearray(max((c.end for c in cands), default=0))
    chosen: list[_Candidate] = []
    for c in sorted(cands, key=lambda c: (c.priority, c.start - c.end, c.start)):
        if taken.find(1, c.start, c.end) == -1:
            taken[c.start : c.end] = b"\x01" * (c.end - c.start)
            chosen.append(c)
    return sorted(chosen, key=lambda c: c.start)


def _cue_labels(text: str, chosen: list[_Candidate]) -> list[_Candidate]:
    """``chosen`` with each code no cue names given the label a cue gave the same value, or
    else an id of the same :func:`_shape`, elsewhere in ``text`` (``ticket TK-63-20917`` …
    ``TK-63-20917 isn't yours`` … ``sorry, TK-63-29017``)."""
    named: dict[str, str] = {}
    for c in chosen:
        if c.label in ID_LABELS and c.priority < _UNCUED_PRIORITY:
            value = text[c.start : c.end]
            named.setdefault(value.casefold(), c.label)
            named.setdefault(_shape(value), c.label)
    if not named:
        return chosen
    out = []
    for c in chosen:
        if c.priority == _UNCUED_PRIORITY:
            value = text[c.start : c.end]
            label = named.get(value.casefold()) or named.get(_shape(value))
            out.append(replace(c, label=label) if label else c)
        else:
            out.append(c)
    return out


_SHAPE_TABLE: Final = str.maketrans("0123456789", "9999999999")


def _shape(value: str) -> str:
    """An identifier's shape: its letters (upper case) and separators, each digit a 9
    (``TK-63-29017`` and ``TK-63-20917`` are both ``TK-99-99999``): ids of one system."""
    return "\x00" + value.upper().translate(_SHAPE_TABLE)


def _numbered_models(text: str, cands: list[_Candidate]) -> list[_Candidate]:
    """A number of the shape of a numbered model said in ``text`` is that kind of model too
    (乐高 42143 … 是 42115 那个): digits of the same length, standing alone."""
    numbered = {
        c.end - c.start for c in cands if c.label == "MODEL" and text[c.start : c.end].isdigit()
    }
    if not numbered:
        return []
    spans = [(c.start, c.end) for c in cands if c.priority <= _NAME_PRIORITY]
    return [
        _Candidate("MODEL", _NAME_PRIORITY, a, b)
        for a, b in _LONE_NUMBER.spans(text)
        if b - a in numbered and not any(x < b and a < y for x, y in spans)
    ]


@lru_cache(maxsize=512)
def _entity_spans(text: str) -> tuple[_Candidate, ...]:
    """Resolved entities of ``text`` (cached: the tokenizer and component share it): the
    patterns' over the whole text, the shapes' line by line, then what the whole text says
    (:func:`_numbered_models`, :func:`_cue_labels`)."""
    cands = _pattern_candidates(text)
    cands += _shape_candidates(text)
    cands += _numbered_models(text, cands)
    return tuple(_cue_labels(text, _resolve(cands)))


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
def _folded_lexicon() -> tuple[frozenset[str], frozenset[str]]:
    """The lexicon's brands and products, case-folded."""
    lex = _lexicon()
    return (
        frozenset(t.casefold() for t in lex["BRAND"]),
        frozenset(t.casefold() for t in lex["PRODUCT"]),
    )


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
_DIGIT_RE = re.compile(r"[0-9]")


def cue_before(text: str, start: int) -> str:
    """The cue word of a code said right before ``text[start:]`` (``取件码``, ``SN 码``,
    ``booking ref``), as the user wrote it; ``""`` when none is."""
    window = _half_width(text[max(0, start - 24) : start])
    m = _CUE_BEFORE.search(window)
    if m is None:
        return ""
    return " ".join((m.group("cue") or "").split()).rstrip(":：#＃ ")


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


_BRAND_GAP: Final = 12
"""Most characters between a brand and the model it names."""


def brand_of(entities: Sequence[Entity], model: Entity) -> str:
    """The brand right before ``model`` among ``entities`` (in order), if one ends at most
    :data:`_BRAND_GAP` characters before it ("苹果不用了，换了华为 Mate 60": 华为)."""
    return next(
        (
            e.text
            for e in reversed(entities)
            if e.type == "BRAND" and e.end <= model.start <= e.end + _BRAND_GAP
        ),
        "",
    )


_CACHED_TEXTS: Final = 128
"""Texts whose entities are kept (a session's turns and its transcript, a few times over)."""


def extract_entities(text: str) -> list[Entity]:
    """Entities of ``text`` in order of position; PII entities hold masked text.

    Raises :class:`policies.errors.InvalidText` for text that is not a valid,
    non-empty string within :data:`policies.validation.MAX_TEXT_BYTES`.
    """
    return list(_entities(check_text(text)))


@lru_cache(maxsize=_CACHED_TEXTS)
def _entities(text: str) -> tuple[Entity, ...]:
    """:func:`extract_entities` of a checked text, kept for the few texts a session reads
    more than once (its turns by the summariser and by the profile rules), as
    :func:`_entity_spans` keeps their spans."""
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
        elif label in ID_LABELS:
            value = _half_width(value)
        out.append(Entity(label, value, span.start_char, span.end_char))
    return tuple(out)
