"""What a lasting statement about the user speaks of: its topic, by the shape of the words.

A topic is found by a pattern of how people state it, not by a word alone:
``大件都走德邦`` names a carrier, ``顺丰单号 SF…`` does not; ``放丰巢柜`` names where
parcels go, ``工作日晚上8点后再联系`` when to call. Each topic has a key (the
explicit fact the profile rules write, or the learned fact's slot) and labels
for the record and the context. The notification channel, the content format
and the budget are slots of the profile with values of their own
(:mod:`unstructured_memory.profile.rules`), not topics here.

Patterns run under RE2 in linear time (:class:`~policies.linear_re.LinearPattern`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from policies.births import BIRTH_ZH
from policies.linear_re import LinearPattern, PatternSet
from unstructured_memory.summariser.cues import REFUSED_AFTER_ZH
from unstructured_memory.summariser.sizes import SIZE_WORN_EN, SIZE_WORN_ZH
from unstructured_memory.summariser.vehicles import VEHICLE

__all__ = [
    "CHANNEL",
    "CHANNEL_CODES",
    "CITY_ZH",
    "CODED_TOPICS",
    "DIET_NAMES",
    "FORMAT",
    "FORMAT_CODES",
    "NOTE",
    "PET_EN",
    "PET_ZH",
    "TOPICS",
    "Mention",
    "Topic",
    "mentions",
    "stated_in",
    "topics_of",
]


_PET_ZH: Final = (
    r"猫咪|狗狗|猫|狗|仓鼠|兔子|鹦鹉|宠物|布偶|英短|美短|蓝猫|橘猫|狸花|暹罗|加菲|缅因|金毛|泰迪|柯基|"
    r"哈士奇|二哈|边牧|柴犬|拉布拉多|萨摩耶|比熊|博美|法斗|雪纳瑞|德牧"
)
_PET_EN: Final = (
    r"cats?|dogs?|pupp(?:y|ies)|kittens?|pets?|retrievers?|corgis?|labs?|labradors?|poodles?|"
    r"beagles?|huskies|husky|ragdolls?|terriers?|spaniels?|bulldogs?|shepherds?|hamsters?|rabbits?|"
    r"parrots?|collies?|dachshunds?|schnauzers?|pugs?|chihuahuas?|greyhounds?|whippets?|"
    r"(?:cocka|labra|golden|berne)?doodles?|cockapoos?|pomeranians?|tabb(?:y|ies)|bernese"
)
"""Animals and common breeds said of one's pet (a prior: the shape around them decides)."""
PET_ZH: Final = _PET_ZH
PET_EN: Final = _PET_EN


_HABIT_ZH: Final = (
    r"我们?(?:平时|一般)?(?:每周|每星期|一周|一星期|每个?周末|周末|每天|天天|每晚|每个?月|一个月)"
    r"(?:都|会|要|基本)?[去在]?(?:[一二两三四五六七八九十几\d]+次)?[去在]?"
    r"[^\s，,。！？；!?~～、你您我他她它这那用买单货快退客话等催不没别]{2,8}(?:$|[\s，,。！？；!?~～])"
)
"""Something the user does regularly, by its shape: I, how often, what (我一周去三次岩馆抱石);
what is done ends the clause and names no one, no order and no refusal (我周末收不了快递
is none)."""
_HABIT_EN: Final = (
    r"(?:^|[^a-z'])i (?:usually |often |always |also |regularly )?"
    r"(?:go|do|play|bake|cook|brew|ride|run|swim|climb|hike|fish|paint|draw|knit|sew|garden|"
    r"practi[cs]e|train|surf|skate|dance|sing|row|sail|camp|shoot)(?: [a-z'-]+){0,4} "
    r"(?:every (?:weekend|week|day|morning|evening|night|saturday|sunday)|on (?:the )?weekends"
    r"|(?:once|twice|three times|four times|\d+ times) a week|most weekends)(?:$|[^a-z])"
)
"""The same in English: I, a verb of pastime, what, how often (I bake sourdough every
weekend, I go fly fishing on weekends)."""


@dataclass(frozen=True, slots=True)
class Topic:
    """One topic: ``key`` names it in the profile; ``fact`` topics are facts about the
    user (learned, newest wins), the others instructions (explicit facts). A ``context``
    topic (a family member, a hobby) is usually said as the context of a request: the
    record keeps quoting it."""

    key: str
    zh: str
    en: str
    pattern: LinearPattern
    fact: bool = False
    context: bool = False
    names: LinearPattern | None = None
    """Words naming the topic itself ("联系时间", "the old time"): a withdrawal naming them
    takes the topic back, a question naming them makes the answer a value of it."""
    aliases: tuple[str, ...] = ()
    """Other words a fact key may name the topic by, each a whole part of the key
    (``my_car`` for the vehicle; never ``carrier``)."""

    def keys(self, key: str) -> bool:
        """Whether a fact key another wrote under (an agent's ``delivery_dropoff``,
        ``preferred_drop_off``, ``my_car``) is this topic's whole slot: it holds the topic's
        key, or one of its :attr:`aliases` as a part. Never for a topic kept in parts (an
        invoice's title beside its format: ``invoice_title`` is no invoice instruction's to
        replace)."""
        if key == self.key or key.startswith("note:"):
            return key == self.key
        if self.key in _IN_PARTS:
            return False
        parts = key.replace("-", "_").casefold().split("_")
        return self.key.replace("_", "") in "".join(parts) or any(a in parts for a in self.aliases)


_IN_PARTS: Final = frozenset({"invoice"})
"""Topics an agent may keep in parts (an invoice's title, its format)."""


@dataclass(frozen=True, slots=True)
class Mention:
    """A coded value said at ``text[start:end]`` (a channel, a content format)."""

    code: str
    start: int
    end: int


CHANNEL_CODES: Final = {
    "微信": "wechat",
    "短信": "sms",
    "邮件": "email",
    "邮箱": "email",
    "电邮": "email",
    "电话": "phone",
    "站内信": "app_push",
    "推送": "app_push",
    "app": "app_push",
    "wechat": "wechat",
    "weixin": "wechat",
    "sms": "sms",
    "text": "sms",
    "texts": "sms",
    "texting": "sms",
    "text message": "sms",
    "text messages": "sms",
    "email": "email",
    "emails": "email",
    "emailing": "email",
    "e-mail": "email",
    "e-mails": "email",
    "mail": "email",
    "phone": "phone",
    "call": "phone",
    "calls": "phone",
    "calling": "phone",
    "phone call": "phone",
    "phone calls": "phone",
    "ring": "phone",
    "push notifications": "app_push",
    "push notification": "app_push",
    "the app": "app_push",
    "in-app messages": "app_push",
    "in-app notifications": "app_push",
    "in-app notification": "app_push",
    "in-app alerts": "app_push",
    "app notifications": "app_push",
    "app notification": "app_push",
    "app alerts": "app_push",
    "app push": "app_push",
}
"""Words naming a notification channel, by the code the profile stores."""

_CH_ZH = r"(?P<zh{n}>微信|短信|邮件|邮箱|电邮|电话|站内信|(?i:app)(?:推送|消息|通知)?|推送)"
_CH_EN = (
    r"(?P<en{n}>wechat|weixin|sms|text messages?|texts?|texting|e-?mails?|emailing|mail|"
    r"phone calls?|phone|calls?|calling|ring|push notifications?|in-app (?:messages|"
    r"notifications?|alerts?)|app (?:notifications?|alerts?|push)|the app)"
)


def _numbered(*branches: str) -> LinearPattern:
    """One pattern of ``branches``; ``{n}`` in each becomes its branch number, so the
    value group of every branch has a name of its own (``zh0``, ``en3``)."""
    return LinearPattern("|".join(b.replace("{n}", str(i)) for i, b in enumerate(branches)))


CHANNEL: Final = _numbered(
    r"(?:(?:打|来|致|回)(?:个)?|用|走|通过|发|回|给我发|给我打|发个|打个)" + _CH_ZH,
    r"(?:发|寄|送|推)(?:到|给)?(?:我|我的)(?:的)?" + _CH_ZH,
    _CH_ZH
    + r"(?:里|上)?(?:跟我|和我|同我)?(?:通知|联系|告诉|提醒|发给|给我|找我|回复|沟通|推送|说一声|"
    r"告知|催|说|讲|留言|发消息)",
    _CH_ZH + r"(?:就行|就好|就可以|吧|最好|比较好|方便)",
    _CH_ZH + r"比",
    _CH_ZH + REFUSED_AFTER_ZH,
    r"(?:通知|联系|告诉|提醒|找)我[^，,。！？]{0,6}" + _CH_ZH,
    r"(?i:(?:notify|contact|reach|update|message|ping|tell|inform|alert|let)\s+(?:me\s+)?"
    r"(?:know\s+)?(?:only\s+)?(?:by|via|on|through|over|with)\s+(?:an?\s+)?" + _CH_EN + ")",
    r"(?i:(?:prefer|rather|only|just|use|via|by|want)\s+(?:get\s+|have\s+|receive\s+)?"
    r"(?:an?\s+)?" + _CH_EN + ")",
    r"(?i:(?P<en{n}>call|text|email|e-mail|wechat|ring|phone)(?:\s+me|\s+us|ing\s+me))",
    r"(?i:(?P<en{n}>call|text|e-?mail|wechat|sms))\s?(?:我|给我)",
    r"(?i:(?:switch|change|move)\s+(?:me\s+|it\s+|that\s+)?(?:over\s+)?to\s+" + _CH_EN + ")",
    r"(?i:(?:no|stop|without|not by|not|never)\s+(?:more\s+)?(?:the\s+|those\s+|your\s+)?"
    + _CH_EN
    + ")",
    r"(?i:(?:get|receive|use|have|send)\s+(?:me\s+)?"
    + _CH_EN
    + r"\s+(?:notifications?|alerts?|messages?|updates?))",
    r"(?i:" + _CH_EN + r"\s+(?:is|are|would be|works)\s+(?:fine|ok|okay|best|better|good|great|"
    r"enough|preferred))",
    r"(?i:" + _CH_EN + r"\s+works(?:\s+(?:for me|for us|better|best))?\s*$)",
    r"(?i:(?:^\s*|(?:^|[^a-z])(?:you|please|pls|kindly)\s+)(?:didn'?t|don'?t|do not|did not|never)"
    r"\s+(?P<en{n}>call|text|e-?mail|ring|phone)(?:$|[^a-z]))",
    r"(?i:" + _CH_EN + r"\s+(?:only|please))",
)
"""A channel named as the way to reach the user ("有事打电话", "微信通知我", "text me")."""

FORMAT_CODES: Final = {
    "图文": "image_text",
    "文字": "text",
    "视频": "video",
    "text": "text",
    "written": "text",
    "pictures": "image_text",
    "photos": "image_text",
    "step-by-step pictures": "image_text",
    "video": "video",
    "videos": "video",
}
"""Words naming a content format, by the code the profile stores."""

CODED_TOPICS: Final = frozenset({"notification_channel", "content_format"})
"""Topics whose values are codes (:data:`CHANNEL_CODES`, :data:`FORMAT_CODES`): the
profile's fields, not explicit facts."""

_FMT_ZH = r"(?P<zh{n}>图文|文字|视频)"
_FMT_EN = r"(?P<en{n}>step-by-step pictures|pictures|photos|written|text|videos?)"
FORMAT: Final = _numbered(
    _FMT_ZH + r"(?:版|说明|教程|讲解|形式|指导|解说)?(?:的)?(?:就行|就好|就可以|比较好|更好|吧)",
    r"(?:喜欢|习惯|偏好|想要|更想要|发我|给我发|给我|发|要)" + _FMT_ZH,
    r"(?:不要|别发|不看|不想看|别给我发|别)" + _FMT_ZH,
    r"(?i:(?:prefer|rather have|send me|give me|just)\s+(?:the\s+|a\s+)?" + _FMT_EN + ")",
    r"(?i:(?:no|not|don'?t send)\s+(?:more\s+)?(?P<en{n}>videos?))",
    r"(?i:" + _FMT_EN + r"\s+(?:guides?|tutorials?|instructions?)\s+"
    r"(?:please|are better|work better|only))",
)
"""A content format the user wants or refuses ("发图文就行", "不要视频", "no videos")."""


def mentions(text: str, pattern: LinearPattern, codes: dict[str, str]) -> list[Mention]:
    """The coded values ``pattern`` (:data:`CHANNEL`, :data:`FORMAT`) finds in ``text``."""
    # groups by number: RE2's match objects rebuild their name table for each lookup by name
    groups = [i for name, i in pattern.groupindex.items() if name[:2] in ("zh", "en")]
    out = []
    for m in pattern.finditer(text):
        for i in groups:
            word = m.group(i)
            if word:
                code = codes.get(word.lower())
                if code is not None:
                    a, b = m.span(i)
                    out.append(Mention(code, a, b))
                break
    return out


CITY_ZH: Final = (
    r"北京|上海|天津|重庆|广州|深圳|杭州|南京|苏州|成都|武汉|西安|长沙|郑州|济南|青岛|大连|沈阳|"
    r"哈尔滨|长春|石家庄|太原|合肥|南昌|福州|厦门|泉州|宁波|温州|无锡|常州|南通|徐州|佛山|东莞|"
    r"珠海|中山|惠州|昆明|贵阳|南宁|海口|三亚|兰州|西宁|银川|乌鲁木齐|拉萨|呼和浩特|烟台|潍坊|"
    r"绍兴|嘉兴|金华|台州|扬州|镇江|洛阳|保定|唐山|廊坊|香港|澳门|台北|[\u4e00-\u9fff]{2,3}市"
)
"""A city of residence: the big ones by name, any other with 市."""
_CITY_TAIL = (
    r"(?:[\u4e00-\u9fff]{1,5}?(?:新区|区|县|镇))?(?:$|[，,。！？!?；;\s了啦呢呀吧]|的(?:$|[，,。！？!?；;\s])"
    r"|[\u4e00-\u9fff]{0,4}?(?:这边|那边|这儿|那儿)|住|工作|上班|定居|生活)"
)
"""What ends a city of residence: its district, the clause's end (not 在北京出差)."""
DIET_NAMES: Final = (
    r"纯素|全素|蛋奶素|奶蛋素|鱼素|素食|吃素|吃斋|清真|生酮"
    r"|(?i:vegetarian|vegan|pescatarian|pescetarian|flexitarian|halal|kosher|keto|paleo|"
    r"plant[- ]based|gluten[- ]free|dairy[- ]free)"
)
"""The names of a diet (纯素, 蛋奶素, vegetarian, halal): what a diet said since replaces."""
_CARRIER_ZH = (
    r"(?:顺丰|德邦|京东(?:快递|物流)?|中通|圆通|申通|韵达|极兔|邮政|EMS|ems|菜鸟|跨越|百世|宅急送|丹鸟|"
    r"安能|壹米滴答|(?i:sf|dhl|ups|fedex|zto|yto|sto))"
)
_CARRIER_EN = (
    r"(?:sf express|sf|deppon|jd logistics|jd|ups|fedex|dhl|usps|royal mail|dpd|evri|hermes|"
    r"parcelforce|canada post|australia post|ems|china post|gls|tnt|yodel|amazon logistics|"
    r"zto|yto|sto express|sto|yunda|j&t|jt express|best express|cainiao|zhongtong|yuantong)"
)
_TIME_ZH = (
    r"(?:工作日|周末|周[一二三四五六日天]|星期[一二三四五六日天]|礼拜[一二三四五六日天]|上午|下午|中午|晚上|"
    r"早上|白天|夜里|傍晚|上班时间|下班后|\d{1,2}\s*[点:：]\s*\d{0,2}|\d{1,2}点半?|[一二三四五六七八九十]{1,2}点半?)"
)
_TIME_EN = (
    r"(?:\d{1,2}(?::\d\d)?\s*(?:am|pm|a\.m\.|p\.m\.)?|noon|midday|mornings?|afternoons?|"
    r"evenings?|nights?|weekends?|weekdays?|work(?:ing)? hours|office hours|lunch(?:time)?|"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)days?)"
)

_COUNT_ZH = r"(?:[一二两三四五六七八九十]|\d{1,2})"
_COUNT_EN = r"(?:two|three|four|five|six|seven|eight|\d)"
_NOW_ZH = r"(?:现在|目前|如今|已经|都|也|平时|一直|还是|得|要)?"
_SHIFT_VERB = r"(?:不再|不用|不|没|没有)?(?:上|值|跑|倒|调到|调成|换到|换成|改成|改上|改|是)了?"
_SHIFT_ZH = (
    r"(?:大夜班|夜班|长白班|常白班|白班|白天班|晚班|早班|中班|正常班|三班倒|两班倒|倒班|轮班"
    r"|朝九晚五|996|双休|单休)"
)
_SHIFT_EN = (
    r"(?:the )?(?:nights|night shifts?|days|day shifts?|evenings|early shifts?|late shifts?"
    r"|rotating shifts|shifts|from home|remotely)(?:$|[^a-z])"
)
"""A work shift, and working at home or at the office: when the user is at home."""
"""How many live at home (the household topic)."""

TOPICS: Final[tuple[Topic, ...]] = (
    Topic(
        "notification_channel",
        "通知渠道",
        "notification channel",
        CHANNEL,
        names=LinearPattern(
            r"通知方式|联系方式|通知渠道|(?:怎么|如何|用什么|哪种|什么)(?:方式|渠道)?(?:联系|通知|告知|提醒)"
            r"|(?i:notifications?|contact method|how to reach|"
            r"how (?:would|should|do|can|shall) (?:you|we)[^?]{0,30}"
            r"(?:notif|contact|reach|updat|tell|let you know)|"
            r"(?:preferred|best) (?:way|channel|method) to (?:reach|contact|notify)|"
            r"which (?:channel|way) (?:do you|would you))"
        ),
    ),
    Topic(
        "content_format",
        "内容形式",
        "content format",
        FORMAT,
        names=LinearPattern(r"教程形式|说明形式|(?i:format)"),
    ),
    Topic(
        "carrier",
        "快递",
        "carrier",
        LinearPattern(
            rf"(?:走|用|发|寄|选|换成|改成|改用|只要|要|都走|都用|别用|不要|不用|别走|别发|除了|除)\s*{_CARRIER_ZH}"
            rf"|{_CARRIER_ZH}(?:快递|物流)?(?:除外|以外都|之外都)"
            rf"|{_CARRIER_ZH}(?:快递|物流)?(?:就行|就好|吧|最好|比较好|靠谱|快|发货|到付|配送)"
            rf"|(?i:(?:ship|send|use|deliver|post)[a-z]*\s+(?:it\s+|them\s+|everything\s+|"
            rf"orders?\s+|parcels?\s+|big items\s+)?(?:with|via|by|through)\s+{_CARRIER_EN}"
            rf"|(?:use|choose|pick|prefer|want|go with|stick with|stay with|switch to|"
            rf"put me on|back to)\s+{_CARRIER_EN}"
            rf"|{_CARRIER_EN}\s+(?:only|please|is better|works best)"
            rf"|{_CARRIER_EN}(?:'?s|\s+(?:is|are|would be|will be|works|will do))\s+"
            rf"(?:fine|ok|okay|good|great|better|best|alright|my go-to|my default)"
            rf"|(?:anything but|except|other than|rather than|instead of)\s+{_CARRIER_EN}"
            rf"|(?:no|not|never|don'?t use|avoid)\s+{_CARRIER_EN})"
        ),
        names=LinearPattern(  # not the parcel (快递别上午敲门): the company carrying it
            r"快递公司|物流公司|(?:哪家|什么|哪个|哪种)快递|(?i:carrier|courier|shipping company)"
        ),
    ),
    Topic(
        "dropoff",
        "收货方式",
        "drop-off",
        LinearPattern(
            r"[放搁存撂](?:在|到)?[^，,。！？；]{0,8}?(?:丰巢|快递柜|柜子|智能柜|驿站|菜鸟驿站|代收点|门口|家门口|门外|"
            r"前台|"
            r"门卫|物业|保安室|楼下|邻居|传达室|收发室)|(?:丰巢|快递柜|驿站|代收点|门卫|前台|物业)(?:就行|就好|吧|代收|签收)"
            r"|(?:别|不要|不用)放(?:门口|[^，,。！？]{1,6})|送(?:到|去)(?:公司|单位|前台|门卫)"
            r"|(?:交给|交到|转交|给到)[^，,。！？；]{0,6}?(?:门卫|物业|保安|前台|邻居|传达室|收发室|驿站|丰巢)"
            r"|送货上门|(?:别|不要)放驿站"
            r"|(?i:leave (?:it|them|the (?:parcel|package|box)s?|parcels|packages|deliveries|stuff|"
            r"everything|things|anything|(?:my|our) (?:parcels|packages|stuff|deliveries))\s+"
            r"(?:at|with|by|in|on|behind|outside|under|inside)\s+[^,.;!?]{2,30}|"
            r"put (?:it|them|stuff|everything|parcels|packages)\s+(?:in|inside|behind|under|by)\s+"
            r"(?:the|my|our)\s+[^,.;!?]{2,30}|(?:parcel|package) locker|"
            r"under the (?:door)?mat|(?:outside|at) (?:my|the) (?:front |back )?door(?:$|[^a-z])|"
            r"with the (?:concierge|doorman|porter|neighbou?r)|at (?:the )?(?:front desk|reception|"
            r"concierge|mailroom)|don'?t leave [^,.;!?]{2,30}|pick(?:-| )?up point|"
            r"(?:hand|give)\s+(?:it|them|everything|parcels?|packages?|the [a-z]+)\s+to\s+"
            r"(?:(?:the|my|our)\s+[a-z ]{0,20}(?:guard|security|concierge|doorman|porter|reception|"
            r"neighbou?r|office|mother|mum|mom|father|dad|wife|husband|son|daughter)|her|him)|"
            r"(?:bring|deliver|take|carry)\s+(?:it|them|everything|parcels?|packages?|"
            r"the [a-z]+)\s+(?:up\s+)?to\s+(?:my|the)\s+(?:door|flat|apartment|office|room|floor)|"
            r"(?:don'?t|do not|not|never|no)\s+(?:ring|knock|press|buzz)(?:ing)?\s+(?:on\s+)?"
            r"(?:the\s+)?(?:door ?bell|bell|door|buzzer)|"
            r"(?:text|call|message) (?:me )?(?:on|upon|before) arrival)"
            r"|(?:别|不要|不用|千万别)(?:按|敲)(?:门铃|门)|到了(?:先)?(?:给我)?(?:发短信|发微信)"
        ),
        names=LinearPattern(
            r"放哪|放在哪|收货方式|收货地点|代收|放门口|丰巢|驿站|快递柜|(?i:drop-?off|locker|"
            r"concierge|front desk|where to leave|leave it)"
        ),
    ),
    Topic(
        "contact_time",
        "联系时间",
        "contact hours",
        LinearPattern(
            rf"{_TIME_ZH}[^，,。！？]{{0,8}}(?:联系|打电话|来电|打给|回电|致电|沟通|电话|找我)"
            rf"|(?:联系|打电话|来电|回电|致电)[^，,。！？]{{0,8}}{_TIME_ZH}"
            # a call said with a bare 打 ending its clause: 只能下午三点到四点之间打
            rf"|{_TIME_ZH}[^，,。！？]{{0,8}}打(?:$|[\s吧啊哈呀哦，,。！？])"
            rf"|(?i:(?:call|contact|reach|ring|phone|text)[a-z]*\s+(?:me\s+)?(?:only\s+)?"
            rf"(?:after|before|between|in the|on|during|at)\s+{_TIME_EN}"
            rf"|(?:after|before|between)\s+{_TIME_EN}[^,.;!?]{{0,24}}(?:call|contact|reach|ring)"
            rf"|(?:call|contact|reach|ring)\s+me[^.;!?]{{0,24}}\s(?:after|before|between)\s+{_TIME_EN}"
            rf"|(?:don'?t|never|no)\s+(?:call|calls|contact)[^,.;!?]{{0,12}}(?:before|after|"
            rf"during|at)\s+{_TIME_EN})"
        ),
        names=LinearPattern(
            r"联系时间|时间段|打电话的时间|联系您的时间|方便的时间|什么时候方便|几点方便|"
            r"(?i:the old time|call(?:ing)? times?|contact hours|when to call|good time to call|"
            r"times? to call)"
        ),
    ),
    Topic(
        "delivery_time",
        "送货时间",
        "delivery time",
        LinearPattern(
            rf"{_TIME_ZH}[^，,。！？]{{0,4}}(?:送|配送|派送|上门|收货|到货)"
            rf"|送货[^，,。！？]{{0,6}}{_TIME_ZH}"
            rf"|(?i:deliver[a-z]*\s+(?:only\s+)?(?:on|at|in|during|after|before)\s+{_TIME_EN})"
        ),
        names=LinearPattern(
            r"送货时间|配送时间|周末送|送货的时间|"
            r"(?i:delivery (?:time|day|slot|window)s?|weekend deliver)"
        ),
    ),
    Topic(
        "diet",
        "饮食",
        "diet",
        LinearPattern(
            r"吃素|素食|吃斋|纯素|全素|蛋奶素|奶蛋素|鱼素|不吃|不能吃|吃不了|忌口|清真|乳糖不耐"
            r"|(?:我|孩子|儿子|女儿|宝宝|老婆|老公|家人|家里人|他|她|爸|妈)[^，,。！？]{0,4}(?:对)?"
            r"[^，,。！？]{0,6}过敏|过敏体质|(?:查出|一查|确诊|检查出)[^，,。！？\s]{0,3}?对[\x{4e00}-\x{9fff}]{1,5}过敏"
            r"|(?:医生|大夫|营养师)[^，,。！？]{0,6}?(?:多|少|不要|别|不能|不让)(?:吃|补|喝|碰)"
            r"|我(?:在|正在|一直在?)?(?:控糖|戒糖|控盐|减脂|生酮|断碳|低碳饮食)"
            r"|(?i:vegetarian|vegan|pescatarian|pescetarian|flexitarian|allergic to|allergy|halal|"
            r"kosher|gluten[- ]free|lactose|"
            r"(?:don'?t|doesn'?t|can'?t) eat|no (?:pork|beef|meat|nuts|dairy|shellfish)|"
            r"(?:doctor|gp|dietitian|nutritionist)[^.;!?]{0,30}?(?:more|less|cut (?:down on|out|"
            r"back on)|avoid|no more|off|lay off)\s+(?:the\s+)?(?:salt|sugar|carbs|protein|fat|"
            r"dairy|gluten|caffeine|red meat|meat|alcohol|sodium|iron)|"
            r"(?:i'?m|i am|we'?re|(?:put|has|have|got) (?:me|us|him|her|them) on|started|"
            r"switched to|been on|went|going)\s+(?:strict(?:ly)?\s+|on\s+|doing\s+|eating\s+)?"
            r"(?:(?:a|the) (?:strict )?)?(?:keto|low[- ](?:carb|sodium|salt|fat|sugar|fodmap)|"
            r"high[- ](?:protein|fib(?:er|re))|paleo|whole30|plant[- ]based|mediterranean))"
        ),
        fact=True,
        names=LinearPattern(r"饮食|忌口|吃的方面|(?i:diet|dietary)"),
    ),
    Topic(
        "invoice",
        "发票",
        "invoice",
        LinearPattern(
            r"(?:发票|开票)[^，,。！？]{0,12}(?:电子|纸质|抬头|税号|公司|个人|专票|普票|不要|别|不用|"
            r"邮箱|邮件|(?i:pdf))"
            r"|(?:电子|纸质|增值税|专用|普通)发票|抬头[^，,。！？]{0,3}(?:写|开|是|用|填)"
            r"|(?:开|要|用)(?:个|张)?(?:专票|普票)|(?:都|就)?开这个抬头"
            r"|(?:不要|别|不用)[^，,。！？]{0,4}(?:纸质)?发票"
            r"|(?:抬头|开票|发票|改成|改为|开成|开给|开到|写成|填)[^，,。！？]{0,10}?"
            r"[\u4e00-\u9fff（）()]{4,30}(?:有限公司|有限责任公司|股份公司|工作室|事务所)"
            r"|(?i:invoice|receipt|billed to|bill to|issued to|in the name of)[^.;!?]{0,40}?"
            r"(?-i:[A-Z][A-Za-z&.\- ]{1,40} (?:LLC|Ltd\.?|Limited|Inc\.?|GmbH|Co\.|Corp\.?|PLC))"
            r"|(?i:(?:electronic|paper|digital|company|vat|e-|pdf|printed|hard-?copy) ?"
            r"(?:invoice|receipt)|(?:e-?mail|mail|post|send) (?:me |us )?(?:the |my |our |all )?"
            r"(?:[a-z]+ )?(?:invoices|receipts)|"
            r"invoice (?:to|under|in the name|title|header|for the company|addressed)|"
            r"(?:no|don'?t (?:need|want|send)) (?:a )?(?:paper |printed )?(?:invoice|receipt))"
        ),
        names=LinearPattern(r"发票|开票|抬头|(?i:invoice|receipt)"),
    ),
    Topic(
        "packaging",
        "包装",
        "packaging",
        LinearPattern(
            r"(?:包装|外包装|塑料袋|价格单|价签|小票|发货单|吊牌|购物袋)[^，,。！？]{0,8}"
            r"(?:别|不要|不用|去掉|拿掉|放|撕掉)|(?:别|不要|不用)[^，,。！？]{0,6}(?:包装|礼盒|塑料袋|价格单|"
            r"价签|小票|发货单|购物袋)|保密发货|隐私发货|礼品包装|(?:要|用)礼盒"
            r"|(?:多|加)(?:塞|放|加)?[^，,。！？]{0,4}(?:冰袋|冰块|泡沫箱|保温袋)|冷链[^，,。！？]{0,8}冰袋"
            r"|(?i:gift[- ]wrap|plain (?:box|packaging|parcel)|"
            r"no (?:price tags?|receipts?|invoices?) in|discreet|"
            r"(?:don'?t|no|without) (?:plastic|packaging|price tags?)|eco packaging)"
        ),
        names=LinearPattern(r"包装|礼盒|(?i:packaging|gift wrap)"),
    ),
    Topic(
        "service_language",
        "沟通语言",
        "language",
        LinearPattern(
            r"(?:说|讲|用|会)(?:粤语|英文|英语|普通话|中文|方言|日语|韩语)|(?:粤语|英文|英语|普通话)"
            r"(?:沟通|交流|客服|师傅|回复)"
            r"|(?i:(?:speak|reply|respond|talk|write|answer)[a-z]*\s+(?:to me\s+)?in\s+"
            r"(?:english|chinese|mandarin|cantonese|spanish|french|german|japanese|korean)|"
            r"(?:english|mandarin|cantonese)[- ]speaking|only (?:speaks? )?(?:english|mandarin|"
            r"cantonese|shanghainese|chinese)|(?:don'?t|doesn'?t|can'?t) speak (?:english|"
            r"mandarin|chinese|cantonese))"
            r"|只会(?:说|讲)?(?:粤语|上海话|方言|普通话|英语)|不会(?:说|讲)普通话"
        ),
        names=LinearPattern(r"语言|(?i:language)"),
    ),
    Topic(
        "accessibility",
        "沟通须知",
        "accessibility",
        LinearPattern(
            r"耳朵不好|听力不好|听力不太好|听不清|耳背|助听器|视力不好|看不清字|眼睛不好|色盲|色弱"
            r"|(?i:hard of hearing|deaf|hearing (?:aid|impair|loss|problem)|visually impaired|"
            r"can'?t hear|large (?:print|text)|partially sighted|colou?r-?blind)"
        ),
        fact=True,
    ),
    Topic(
        "payment",
        "付款方式",
        "payment",
        LinearPattern(
            r"货到付款|到付|(?:^|[^搬])运费我[出付来]|运费自理|花呗|分期付|信用卡(?:支付|付)|"
            r"(?i:cash on delivery|pay on delivery|in installments|installment plan|"
            r"pay by (?:card|paypal)|i'?ll pay (?:for )?(?:the )?(?:shipping|postage))"
        ),
        names=LinearPattern(r"付款方式|支付方式|(?i:payment method)"),
    ),
    Topic(
        "city",
        "所在城市",
        "city",
        LinearPattern(
            rf"(?:(?:我|我们|我家|人|家)(?:现在|目前|已经|如今|平时|一直|都|常年)?(?:住|住在|在)"
            rf"|(?:搬到|搬去|搬家到|搬来|定居在?|落户)\s*(?:了\s*)?|(?:现在|目前|如今)(?:住|住在|在)"
            rf"|(?:新家|新房子?|新住处|房子)(?:安|买|租)?在了?)"
            rf"\s*(?:{CITY_ZH}){_CITY_TAIL}"
            rf"|(?:调到|调去|调回|调动到|外派到|派驻到?|派到|回(?:到)?老家)\s*(?:{CITY_ZH})"
            r"(?:[\u4e00-\u9fff]{1,5}?(?:新区|区|县))?(?:工作|上班|常驻|定居|生活|发展|来了|去了|了)"
            # a home bought or handed over in a city (在合肥买了房, 在佛山交了房)
            rf"|在\s*(?:{CITY_ZH})(?:[\u4e00-\u9fff]{{1,5}}?(?:新区|区|县))?"
            r"(?:买了|交了|安了|置了|付了首付的?)(?:房|房子|新房|家|套房)"
            r"|(?i:(?:moved|relocated|moving) (?:in)?to|(?:moved|moving) into "
            r"(?:a|an|our|my|the) (?:new )?(?:house|home|flat|apartment|place|condo) in|"
            r"(?:moved|moving) to (?:a|an|our|my|the) (?:new )?(?:house|home|flat|apartment|"
            r"place|condo) in|(?:i|we) (?:now )?live in|"
            r"(?:i'?m|we'?re|i am|we are) (?:now )?(?:based|living|located) in|(?:i'?m|we'?re) in|"
            r"(?:my|our) (?:new |own )?(?:house|home|flat|apartment|place|condo|townhouse)"
            r"(?: is)? in|(?:closed|closing) on (?:a|an|our|my|the) (?:new )?(?:house|home|flat|"
            r"apartment|place|condo|townhouse) in|(?:i|we) (?:just |finally )?(?:bought|got) "
            r"(?:a|an|our|my|the) (?:new )?(?:house|home|flat|apartment|place|condo|townhouse) in)"
            r"\s+(?-i:[A-Z][a-z]+(?: [A-Z][a-z]+)?)"
        ),
        fact=True,
        context=True,
    ),
    Topic(
        "home",
        "送货须知",
        "delivery notes",
        LinearPattern(
            r"没(?:有)?电梯|爬楼|步梯|(?:住|在|搬到|搬去|换到)\s*\d{1,2}\s*楼"
            r"|(?:住|在|搬到|搬去|换到)[一二三四五六七八九十]{1,3}楼"
            r"|(?i:no (?:elevator|lift)|walk-?up|\d{1,2}(?:st|nd|rd|th) floor|gated community|"
            r"ground[- ]floor (?:unit|flat|apartment)|(?:live|living|moved|moving) (?:on|into|to) "
            r"the ground floor|(?:we'?re|i'?m|we are|i am) (?:now )?on the ground floor|"
            r"buzzer|gate code)"
        ),
        fact=True,
    ),
    Topic(
        "household",
        "家里人口",
        "household",
        LinearPattern(
            rf"(?:家里|家中|我家|我们家|咱家|全家)[^，,。！？；]{{0,4}}?(?:小两口|两口子|{_COUNT_ZH}\s*口人"
            rf"|{_COUNT_ZH}\s*个人(?:住|生活|过)?(?:$|[，,。！？；了]))"
            rf"|一家{_COUNT_ZH}口|(?:我|自己)?一个人住|独居|就我(?:一个人|自己)(?:住|在家)"
            # someone moved in (婆婆搬过来跟我们住了, my dad moved in with us)
            r"|(?:搬过来|搬来|住过来|接过来)(?:跟|和)?(?:我们|我)?(?:一起)?住"
            rf"|(?i:(?:my|our) [a-z-]+(?: [a-z-]+)? (?:has )?moved in with (?:us|me))"
            rf"|(?i:(?:it'?s|it is) just (?:me|us two|the two of us|us)\s+(?:at home|here|"
            rf"in the (?:house|flat|apartment)|living here)|i live (?:alone|on my own|by myself)"
            rf"|(?:there are|there'?re|we'?re|we are) (?:now )?(?:a (?:family|household) of )?"
            rf"{_COUNT_EN} (?:of us|people)(?:$|[^a-z])"
            rf"|(?:family|household) of {_COUNT_EN}(?:$|[^a-z]))"
        ),
        fact=True,
        context=True,
    ),
    Topic(
        "size",
        "尺码",
        "size",
        LinearPattern(
            r"(?:鞋码|尺码|码数|穿|我是)[^，,。！？；]{0,4}\d{2}(?:\.5)?\s*(?:码|号)?"
            r"|(?:身高|体重)\s*\d{2,3}"
            r"|(?i:my (?:shoe |dress |ring |clothes )?size is (?:us |eu |uk )?\d{1,2}(?:\.5)?|"
            r"i'?m (?:always )?(?:a )?(?:(?:us|eu|uk) (?:size )?|size )\d{1,2}(?:\.5)?(?:$|[^0-9])|"
            r"i wear (?:a )?(?:size )?(?:us |eu |uk )?\d{1,2}(?:\.5)?|"
            r"(?:^|[,.:;]\s*|(?:in|size|wear|a|an|my|fit|fits|take|i'?m|i am|it'?s|is)\s+)"
            r"(?:us|eu|uk)\s+(?:men'?s\s+|women'?s\s+)?(?:size\s+)?\d{1,2}(?:\.5)?"
            r"(?:\s*$|\s*[,.;!?)]|\s+(?:wide|narrow|regular|please|shoes?|boots?|sneakers?|"
            r"trainers?|in|for|and|or)(?:$|[^a-z])))"
            r"|" + SIZE_WORN_ZH + r"|" + SIZE_WORN_EN
        ),
        fact=True,
        context=True,
    ),
    Topic(
        "bed",
        "床的尺寸",
        "bed size",
        LinearPattern(
            r"床[^，,。！？；]{0,3}?(?:\d\.\d\s*(?:米|m)|1米[2-8]|\d{3}\s*[x×*]\s*\d{3})"
            r"|(?:\d\.\d\s*(?:米|m)|1米[2-8])[^，,。！？；]{0,4}?床"
            r"|(?i:(?:california|cal|eastern|super|emperor|split)\s+king"
            r"|(?:queen|king|double|twin|full|single)(?:[- ]size[d]?)?\s+(?:bed|mattress)"
            r"|bed'?s\s+(?:is\s+)?an?\s+(?:queen|king|double|twin|full))"
        ),
        fact=True,
        context=True,
    ),
    Topic(
        "skin",
        "肤质",
        "skin type",
        LinearPattern(
            r"(?:我|本人|自己)[^，,。！？；]{0,4}?(?:大?油皮|干皮|混油|混干|混合性?皮肤?|敏感肌|油性皮肤|"
            r"干性皮肤|中性皮肤|痘痘肌|油痘肌|干敏皮?)"
            r"|(?:我|本人)的?(?:皮肤|脸)[^，,。！？；]{0,3}(?:偏干|偏油|很干|很油|特别干|特别油|敏感|"
            r"容易过敏|混合)"
            r"|(?i:(?:i have|i've got|i got)\s+(?:very |quite |really |super |a bit )?(?:oily|dry|"
            r"combination|sensitive|normal|acne-prone)\s+skin|my skin(?:'s| is)\s+(?:very |quite |"
            r"really |super |a bit )?(?:oily|dry|sensitive|combination)|i'?m (?:oily|dry|"
            r"sensitive)-skinned)"
        ),
        fact=True,
        context=True,
    ),
    Topic(
        "family",
        "家人",
        "family",
        LinearPattern(
            r"(?:给|帮|为|替)(?:我)?(?:儿子|女儿|闺女|老婆|老公|媳妇|爱人|爸爸|妈妈|爸妈|父母|老爸|老妈|"
            r"孩子|宝宝|外婆|外公|奶奶|爷爷|婆婆|公公)|我(?:家)?(?:儿子|女儿|闺女|老婆|老公|媳妇|爱人|"
            r"孩子|宝宝|爸|妈)"
            r"|(?:我们|咱们?|俺)家?的?(?:儿子|女儿|闺女|孩子|宝宝|小孩|老人|爸|妈)"
            r"|家里(?:有)?(?:孩子|小孩|宝宝|老人)"
            r"|(?:^|[，,\s])(?:(?:早上|上午|中午|下午|晚上|平时|白天|周末)\s*)?(?:孩子|小孩|宝宝|小朋友)"
            r"(?:天天|每天|平时|经常|老是|总是?|要睡|在睡|睡觉|午睡|还小|在家|正在|容易)"
            r"|(?i:(?:for|to) (?:my|our) (?:[a-z]+ )?(?:son|daughter|wife|husband|kids?|children|"
            r"mom|mum|dad|mother|father|parents|partner|baby|grandma|grandpa|grandmother|"
            r"grandfather)|"
            r"(?:my|our) (?:[a-z]+ )?(?:son|daughter|wife|husband|kids?|children|mom|mum|dad|"
            r"mother|father|parents|partner|baby)(?:'s)?(?:$|[^a-z])|"
            r"(?:my|our) (?:[a-z]+ )?(?:twins|toddler|newborn|grandson|granddaughter|grandkids|"
            r"niece|nephew)|"
            r"(?:^|[,;]\s*)the (?:kids|baby|toddler|twins) (?:is|are|naps?|sleeps?|always|"
            r"usually|gets?)\s|"
            r"we (?:have|'ve got|just had) (?:a |an |two |three )?(?:newborn|baby|babies|"
            r"toddler|twins|kids?|(?:\d{1,2}|one|two|three|four|five|six)[- ]"
            r"(?:year|month|week)[- ]old)|(?:i'?m|we'?re|wife is|she'?s) (?:expecting|pregnant)|"
            r"(?:first|second) baby|"
            r"due (?:in|on) (?:january|february|march|april|may|june|july|august|september|"
            r"october|november|december))"
            r"|(?:宝宝|孩子|儿子|女儿|闺女|娃)(?:今年|才|刚|刚满|快)?\s*"
            r"(?:\d{1,2}|[一二三四五六七八九十两半]{1,3})\s*(?:个)?(?:月|岁|周)"
            r"|双胞胎|二胎|怀孕|怀了|预产期|刚出生|新生儿|坐月子"
            rf"|{BIRTH_ZH}"  # a birth told as news (闺女十号生的)
            r"|(?i:gave birth|had (?:the|our|a|my) baby|(?:baby|little one) (?:arrived|is here))"
        ),
        fact=True,
        context=True,
    ),
    Topic(
        "hobby",
        "爱好",
        "hobbies",
        LinearPattern(
            r"(?:喜欢|爱|经常|平时|周末|每周|每天|常常|一直在|我)[^。！？；]{0,12}?(?:钓鱼|跑步|跑马拉松|健身|"
            r"露营|骑行|骑车|"
            r"爬山|游泳|瑜伽|摄影|拍照|烘焙|弹钢琴|弹吉他|画画|滑雪|打篮球|踢足球|打羽毛球|打网球|打乒乓|"
            r"徒步|登山|打游戏|玩游戏|追剧|做饭|看书|钓)"
            r"|(?i:i (?:love|enjoy|like|go|do)\s+(?:to\s+)?(?:running|run|fishing|fish|hiking|hike|"
            r"camping|cycling|yoga|photography|baking|bake|climbing|swimming|swim|skiing|golf|"
            r"tennis|gaming|guitar|piano|marathons?)|i run marathons|i'?m a (?:runner|cyclist|"
            r"photographer|gamer|climber|swimmer))"
            rf"|{_HABIT_ZH}|(?i:{_HABIT_EN})"
        ),
        fact=True,
        context=True,
    ),
    Topic(
        "pet",
        "宠物",
        "pets",
        LinearPattern(
            rf"(?:我家|家里)(?:养了?|有)?(?:[一两三四]?只|俩|仨)?(?:{_PET_ZH})"
            rf"|我(?:养了?|有)(?:[一两三四]?只|俩|仨)?(?:{_PET_ZH})"
            r"|(?:[一两三四五]|\d)只(?:猫|狗|猫咪|狗狗|主子)|(?:我家|家里)的?(?:猫|狗|猫咪|狗狗|主子)"
            rf"|(?i:i have (?:a |an |two |three )?(?:[a-z]+ )?(?:{_PET_EN})|"
            rf"(?:my|our) (?:[a-z]+ )?(?:{_PET_EN})\s|(?:two|three|\d) (?:cats|dogs))"
            # a pet the household no longer has: its newest word
            rf"|(?:{_PET_ZH})(?:也|已经|都)?(?:送人|送走|送给|送回|送我|送到|给了|没了|走了|去世|过世|丢了)"
            rf"|(?i:(?:re-?homed|gave away|gave up|lost) (?:the|our|my) (?:[a-z]+ )?(?:{_PET_EN})"
            rf"|(?:the|our|my) (?:[a-z]+ )?(?:{_PET_EN}) (?:passed away|died|is gone|went to live))"
        ),
        fact=True,
        context=True,
    ),
    Topic(
        "occupation",
        "职业",
        "occupation",
        LinearPattern(
            r"我(?:是|(?:在[^，,。！？；\s]{1,8}?)?(?:当|做|干))(?:一名|一个|个)?[^，,。！？；]{0,8}?"
            r"(?:教练|老师|教师|医生|护士|程序员|设计师|"
            r"工程师|学生|律师|司机|厨师|会计|宝妈|主播|博主|摄影师|店主|老板|销售|模特|运动员|跑者|"
            r"健身爱好者|骑手|快递员|外卖员|保安|工人|电工|厨子|店员|文员)"
            # news of a job: where or as what the user works now, a job left or taken
            r"|(?:现在|如今|目前)(?:改|换)?(?:在|去)[^，,。！？；\s]{1,8}?(?:上班|工作|打工"
            r"|当[^，,。！？；\s]{1,4}|开(?:塔吊|吊车|叉车|货车|出租|网约车|滴滴|挖掘机))"
            r"|(?:辞职|离职|退休|裸辞|失业|下岗|转行|跳槽|换工作|换了(?:份|个)工作)了"
            r"|(?:换了|找了|找到了?)(?:一)?(?:份|个)新工作"
            # the hours one works: a shift, at home or at the office (a family member's
            # shift is theirs: 我老公上夜班 names no 我 before the shift)
            rf"|我{_NOW_ZH}(?:在[^，,。！？；\s]{{1,8}}?)?{_SHIFT_VERB}?{_SHIFT_ZH}"
            rf"|(?:调到|调成|换到|换成|改成|改上|换了|转成|转到|转|不用|不再)了?{_SHIFT_ZH}"
            rf"|(?:现在|如今|目前|平时|每天|一直|常年|长期)(?:都|也|要|得)?{_SHIFT_VERB}?{_SHIFT_ZH}"
            rf"|(?:我|全员|都|现在|目前|如今|平时|长期|以后)(?:现在|目前|如今|已经|都|也|又|平时|一直"
            rf"|长期|改成|改为)?(?:居家办公|在家办公|远程办公|在家上班|在家工作|远程上班|回公司坐班"
            rf"|回公司上班|坐班)"
            r"|(?i:i'?m an? (?:[a-z]+ ){0,3}(?:teacher|nurse|doctor|engineer|developer|student|"
            r"chef|driver|designer|trainer|coach|photographer|lawyer|accountant|nanny|runner|"
            r"musician)"
            r"|i (?:now )?work (?:as|at|for|in) (?:an? |the )?[a-z]"
            r"|(?:i'?m|i am) (?:now )?(?:working|teaching|employed) (?:as|at|for|in) "
            r"|(?:i'?m|i am) (?:now )?teaching [a-z]+ (?:at|in) "
            r"|i (?:left|quit) (?:my job|the hospital|the company|the firm|the school|teaching|"
            r"nursing)|(?:i'?m|i am|i'?ve|i have|i just) (?:now )?retired"
            r"|(?:started|took) a (?:new )?job|got a (?:new )?job (?:at|as|in|with)\s"
            # the hours one works (my wife works nights is hers)
            rf"|(?:^|[^a-z'])i (?:now |still |mostly |usually )?work {_SHIFT_EN}"
            rf"|(?:^|[^a-z'])(?:i'?m|i am) (?:now |still |mostly |usually )?(?:on|doing|working) "
            rf"{_SHIFT_EN}"
            r"|(?:^|[^a-z'])(?:i'?m|i am) (?:now |still )?(?:back in the office|working from home"
            r"|wfh|fully remote|remote now)"
            r"|(?:^|[^a-z'])i (?:now )?(?:wfh|work remotely))"
        ),
        fact=True,
        context=True,
    ),
    Topic("vehicle", "车辆", "car", VEHICLE, fact=True, context=True, aliases=("car",)),
)
"""Every topic, in the order the record lists them."""


NOTE: Final = Topic("note", "嘱咐", "instructions", LinearPattern(r"^$"))
"""An instruction no topic names, kept in the user's words (its pattern matches nothing)."""


_STATED: Final = PatternSet([t.pattern for t in TOPICS])


def stated_in(text: str) -> frozenset[int]:
    """Indices (into :data:`TOPICS`) of the topics whose pattern matches in ``text``: one
    pass for what ``t.pattern.search(text)`` tells of each."""
    return _STATED.present(text)


def topics_of(text: str) -> tuple[Topic, ...]:
    """The topics ``text`` speaks of, in :data:`TOPICS` order."""
    said = stated_in(text)
    return tuple(t for k, t in enumerate(TOPICS) if k in said)
