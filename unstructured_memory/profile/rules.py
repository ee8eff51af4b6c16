"""Profile extraction by rules + NER: what the user said about themselves, no model.

Only the user's turns are read, a sentence at a time (split at 。！？；, line
ends and their ASCII forms):

- **facts**: an address (a PII match: its value is masked, the clear value
  goes to the vault), a device model (a MODEL entity in a sentence that owns
  it, "我的", "我家", "用的是", "买的", "订单", "my", "I have"; its slot is the
  product named beside it, ``device_model@扫地机``), a member level ("金卡会员",
  "PLUS 会员", "gold member");
- **preferences**: a notification channel ("以后微信通知我" -> ``wechat``), a
  content format ("发图文就行" -> ``image_text``, "不要视频" -> ``text``), a
  budget per scenario, read a clause at a time ("自用 2000-3000 元；为父母选购
  500 元档" -> ``budget@self`` 2000-3000元, ``budget@parents`` 500元): an
  amount with a budget word (预算, 档, 以内, budget, under) or a scenario;
- **temporary intents**: a sentence that is not a question and holds a word
  of time-bound intent (暂时, 先不, 下周, 这几天, for now, next week), kept
  masked as it was said. Preferences said in such a sentence ("这周先用短信
  联系我") are temporary too and never reach the profile.

Every pattern runs under RE2 in linear time (:class:`policies.linear_re.LinearPattern`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Final

from policies.linear_re import LinearMatch, LinearPattern
from policies.pii import PiiKind, find_pii, mask_pii, mask_value
from policies.profile_merge import Observation, ObservationKind
from unstructured_memory.profile.base import Extraction
from unstructured_memory.profile.registry import RuleExtractorConfig
from unstructured_memory.summariser.entities import extract_entities
from values.entities import Entity
from values.sessions import SessionSummary, Turn

__all__ = ["RuleExtractor", "observe_turns"]

MAX_VALUE_CHARS: Final = 64
"""Longest fact or preference value kept (longer ones are cut)."""

MAX_TEMPORARY_CHARS: Final = 200
"""Longest temporary intent kept."""

_SENTENCE = LinearPattern(r"[^。！？!?；;\n]+")
_CLAUSE = LinearPattern(r"[^，,。！？!?；;\n]+")

_TEMPORARY = LinearPattern(
    r"暂时|先不|先别|这段时间|这阵子|最近在|近期|这几天|这周|本周|下周|下个?星期|下礼拜|下个月|过几天|"
    r"过段时间|出差期间|临时|(?i:for now|temporarily|this week|next week|these days|for a while)"
)
_QUESTION = LinearPattern(r"吗|呢|[?？]|什么时候|多久|怎么|能不能|可不可以")

_CHANNELS: Final = {
    "微信": "wechat",
    "短信": "sms",
    "邮件": "email",
    "邮箱": "email",
    "电话": "phone",
    "站内信": "app_push",
    "app": "app_push",
    "wechat": "wechat",
    "sms": "sms",
    "text": "sms",
    "text message": "sms",
    "text messages": "sms",
    "email": "email",
    "e-mail": "email",
    "phone": "phone",
    "phone call": "phone",
    "phone calls": "phone",
    "the app": "app_push",
}
_CHANNEL_WORD = r"(微信|短信|邮件|邮箱|电话|站内信|(?i:app))"
_CHANNEL = LinearPattern(
    r"(?:用|通过|走|发|打)?" + _CHANNEL_WORD + r"(?:通知|联系|告诉|提醒|发给|给)我"
    r"|(?:通知|联系|提醒)我(?:的话)?(?:请|麻烦)?(?:就)?(?:用|通过|走|发|打)"
    + _CHANNEL_WORD
    + r"|(?:以后|今后|之后)(?:都|请|麻烦)?(?:用|通过|走)"
    + _CHANNEL_WORD
    + r"|(?i:(?:notify|contact|text|message|reach|update)\s+me\s+(?:by|via|on|through|over)\s+"
    r"(e-mail|email|sms|text messages|text message|text|wechat|phone|the app|app))"
    r"|(?i:prefer\s+(e-mail|email|sms|text messages|wechat|phone calls|phone))"
)

_FORMATS: Final = {
    "图文": "image_text",
    "文字": "text",
    "视频": "video",
    "text": "text",
    "written": "text",
    "pictures": "image_text",
    "step-by-step pictures": "image_text",
    "video": "video",
    "videos": "video",
}
_FORMAT = LinearPattern(
    r"(图文|文字|视频)(?:版|说明|教程|讲解|形式)?(?:就行|就好|就可以|比较好|更好|吧)"
    r"|(?:喜欢|习惯|偏好|想要|更想要|发我|给我发|给我)(图文|文字|视频)"
    r"|(不要|别发|不看|不想看|别给我发)视频"
    r"|(?i:(?:prefer|rather have|send me)\s+(?:the\s+|a\s+)?"
    r"(step-by-step pictures|pictures|written|text|videos|video))"
    r"|(?i:(no)\s+videos?)"
)

_AMOUNT = LinearPattern(
    r"(\d+(?:\.\d+)?)\s*(?:-|~|～|到|至)\s*(\d+(?:\.\d+)?)\s*(?:元|块)"
    r"|(\d+(?:\.\d+)?)\s*(?:元|块)"
    r"|(?:￥|¥|\$)\s*(\d+(?:\.\d+)?)(?:\s*(?:-|~|to)\s*(?:￥|¥|\$)?\s*(\d+(?:\.\d+)?))?"
)
_BUDGET = LinearPattern(
    r"预算|价位|价格区间|档|以内|之内|以下|左右|上下|不超过|之间"
    r"|(?i:budget|under|within|up to|around)"
)
_SCENARIOS: Final[tuple[tuple[str, LinearPattern], ...]] = (
    ("self", LinearPattern(r"自用|自己用|给自己|(?i:for myself|for me)")),
    (
        "parents",
        LinearPattern(r"父母|爸妈|爸爸|妈妈|老人|长辈|(?i:parents?|mom|dad|mother|father)"),
    ),
    ("child", LinearPattern(r"孩子|儿子|女儿|小孩|宝宝|(?i:kids?|son|daughter|child)")),
    ("gift", LinearPattern(r"送礼|送人|礼物|(?i:gift|present)")),
    ("work", LinearPattern(r"公司|办公|单位|(?i:office|for work)")),
)

_OWN = LinearPattern(
    r"我的|我用|我家|我这台|我这个|我手上|用的是|手机是|买的|入手|订单"
    r"|(?i:my\s|i have|i use|i'm using|i am using|i bought)"
)
_MEMBER = LinearPattern(
    r"(钻石|黑金|铂金|白金|金卡|银卡|黄金|白银|青铜|超级|(?i:88vip|svip|plus|vip\d?|v\d))\s*(?:会员|卡会员)"
    r"|(?:会员等级|会员级别)(?:是|为)?\s*(钻石|黑金|铂金|白金|金卡|银卡|黄金|白银|(?i:88vip|svip|plus|vip\d?|v\d))"
    r"|(?i:(gold|silver|platinum|diamond|plus|premium|prime|vip)\s+member)"
)


def _first_group(m: LinearMatch, count: int) -> str:
    for i in range(1, count + 1):
        value = m.group(i)
        if value:
            return value
    return ""


def _budget_value(m: LinearMatch) -> str:
    low, high, single, sign, sign_high = (m.group(i) for i in range(1, 6))
    if low and high:
        return f"{low}-{high}元"
    if single:
        return f"{single}元"
    unit = "$" if "$" in (m.group(0) or "") else "¥"
    return f"{unit}{sign}-{unit}{sign_high}" if sign_high else f"{unit}{sign}"


def _scenario(text: str) -> str | None:
    for name, rx in _SCENARIOS:
        if rx.search(text) is not None:
            return name
    return None


def observe_turns(turns: Sequence[Turn], summary: SessionSummary) -> list[Observation]:
    """The observations of rules + NER in the user's turns (see the module docstring)."""
    out: list[Observation] = []
    for turn in turns:
        if turn.role != "user" or not turn.text.strip():
            continue
        at = turn.time or summary.occurred_at
        at = at.replace(tzinfo=UTC) if at.tzinfo is None else at
        out += _Observer(summary.session_id, at).turn(turn.text)
    return out


class _Observer:
    """Observations of one user turn, stamped with its session and time."""

    def __init__(self, session: str, at: datetime) -> None:
        self.session = session
        self.at = at

    def _make(
        self,
        kind: ObservationKind,
        key: str,
        value: str,
        scenario: str | None = None,
        clear: str | None = None,
    ) -> Observation:
        limit = MAX_TEMPORARY_CHARS if kind is ObservationKind.TEMPORARY else MAX_VALUE_CHARS
        return Observation(
            kind, key, value[:limit], self.session, self.at, scenario=scenario, clear=clear
        )

    def turn(self, text: str) -> list[Observation]:
        out = [
            self._make(ObservationKind.FACT, "address", mask_value(m.kind, m.value), clear=m.value)
            for m in find_pii(text)
            if m.kind is PiiKind.ADDRESS
        ]
        entities = extract_entities(text)
        for a, b in _SENTENCE.spans(text):
            sentence = text[a:b]
            out += self._device(sentence, [e for e in entities if a <= e.start and e.end <= b])
            out += self._member(sentence)
            if _TEMPORARY.search(sentence) is None:
                out += self._preferences(sentence)
            elif _QUESTION.search(sentence) is None:
                masked = mask_pii(sentence.strip())[0]
                out.append(self._make(ObservationKind.TEMPORARY, "intent", masked))
        return out

    def _device(self, sentence: str, entities: list[Entity]) -> list[Observation]:
        models = [e for e in entities if e.type == "MODEL"]
        if not models or _OWN.search(sentence) is None:
            return []
        out = []
        for model in models:
            brand = next(
                (e.text for e in entities if e.type == "BRAND" and e.end <= model.start), ""
            )
            products = [e for e in entities if e.type == "PRODUCT"]
            after = [e for e in products if e.start >= model.end]
            product = (after[0] if after else products[-1]).text if products else None
            value = f"{brand} {model.text}" if brand else model.text
            out.append(self._make(ObservationKind.FACT, "device_model", value, scenario=product))
        return out

    def _member(self, sentence: str) -> list[Observation]:
        m = _MEMBER.search(sentence)
        if m is None:
            return []
        level = _first_group(m, 3)
        value = f"{level.upper() if level.isascii() else level}会员"
        if m.group(3):
            value = f"{level.lower()} member"
        return [self._make(ObservationKind.FACT, "member_level", value)]

    def _preferences(self, sentence: str) -> list[Observation]:
        out = []
        m = _CHANNEL.search(sentence)
        if m is not None:
            channel = _CHANNELS.get(_first_group(m, 5).lower())
            if channel is not None:
                out.append(self._make(ObservationKind.PREFERENCE, "notification_channel", channel))
        m = _FORMAT.search(sentence)
        if m is not None:
            said = _first_group(m, 5)
            fmt = (
                "text"
                if said in ("不要", "别发", "不看", "不想看", "别给我发") or said.lower() == "no"
                else _FORMATS.get(said.lower())
            )
            if fmt is not None:
                out.append(self._make(ObservationKind.PREFERENCE, "content_format", fmt))
        for a, b in _CLAUSE.spans(sentence):
            clause = sentence[a:b]
            amount = _AMOUNT.search(clause)
            if amount is None:
                continue
            scenario = _scenario(clause)
            if scenario is None and _BUDGET.search(clause) is None:
                continue
            out.append(
                self._make(
                    ObservationKind.PREFERENCE, "budget", _budget_value(amount), scenario=scenario
                )
            )
        return out


class RuleExtractor:
    """Rules + NER (the default extractor): see the module docstring."""

    def __init__(self, config: RuleExtractorConfig | None = None) -> None:
        self.config = config or RuleExtractorConfig()

    @property
    def name(self) -> str:
        """``rules``."""
        return "rules"

    def extract(self, turns: Sequence[Turn], summary: SessionSummary) -> Extraction:
        """The rules' observations; never a record sentence (the summary's stands)."""
        kept: list[Observation] = []
        temporary = 0
        for o in observe_turns(turns, summary):
            if o.kind is ObservationKind.TEMPORARY:
                temporary += 1
                if temporary > self.config.max_temporary:
                    continue
            kept.append(o)
        return Extraction(tuple(kept), source=self.name)

    def close(self) -> None:
        """Nothing to release."""
