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

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Final

from policies.linear_re import LinearMatch, LinearPattern
from policies.pii import PiiKind, find_pii, mask_pii, mask_value
from policies.profile_merge import Observation, ObservationKind
from unstructured_memory.profile.base import Extraction, Instruction
from unstructured_memory.profile.registry import RuleExtractorConfig
from unstructured_memory.summariser import amounts, cues
from unstructured_memory.summariser.acts import Act, ActKind, negated
from unstructured_memory.summariser.amended import lasting
from unstructured_memory.summariser.entities import Entity, Lang, extract_entities
from unstructured_memory.summariser.summary import SessionSummary
from unstructured_memory.summariser.topics import (
    CHANNEL,
    CHANNEL_CODES,
    FORMAT,
    FORMAT_CODES,
    mentions,
)
from unstructured_memory.summariser.transcript import Turn

__all__ = [
    "MAX_INSTRUCTION_CHARS",
    "MAX_TEMPORARY_CHARS",
    "MAX_VALUE_CHARS",
    "NOTE_PREFIX",
    "RuleExtractor",
    "observe_session",
    "observe_turns",
]

MAX_VALUE_CHARS: Final = 64
"""Longest fact or preference value kept (longer ones are cut)."""

MAX_TEMPORARY_CHARS: Final = 200
"""Longest temporary intent kept."""

MAX_INSTRUCTION_CHARS: Final = 200
"""Longest instruction kept as an explicit fact."""

NOTE_PREFIX: Final = "note:"
"""The key of an instruction no topic names: ``note:`` and a digest of its words."""

_CODED: Final = frozenset({"notification_channel", "content_format"})
"""Topics whose values are codes (read by :meth:`_Observer._preferences`)."""

_SENTENCE = LinearPattern(r"[^。！？!?；;\n]+")
_CLAUSE = LinearPattern(r"[^，,。！？!?；;\n]+")

_TEMPORARY = LinearPattern(
    r"暂时|先不|先别|这段时间|这阵子|最近在|近期|这几天|这周|本周|下周|下个?星期|下礼拜|下个月|过几天|"
    r"过段时间|出差期间|临时|(?i:for now|temporarily|this week|next week|these days|for a while)"
)
_QUESTION = LinearPattern(r"吗|呢|[?？]|什么时候|多久|怎么|能不能|可不可以")

_AMOUNT = LinearPattern(
    r"(\d+(?:\.\d+)?)\s*(?:-|~|～|到|至)\s*(\d+(?:\.\d+)?)\s*(?:元|块)"
    r"|(\d+(?:\.\d+)?)\s*(?:元|块)"
    r"|(?:￥|¥|\$)\s*(\d+(?:\.\d+)?)(?:\s*(?:-|~|to)\s*(?:￥|¥|\$)?\s*(\d+(?:\.\d+)?))?"
    rf"|(?P<said>{amounts.SAID})"
)
"""An amount: a range or a number with a unit or a currency sign, or one said in words or
hedged (:data:`~unstructured_memory.summariser.amounts.SAID`: 两三千, 3000 左右, a couple
hundred dollars), which counts when :func:`~unstructured_memory.summariser.amounts.is_amount`
says so (:func:`_amount_in`)."""
_BUDGET = LinearPattern(
    r"预算|价位|价格区间|档|以内|之内|以下|左右|上下|不超过|之间|出头|封顶|最多|顶多|就行|能接受|可以接受"
    r"|(?i:budget|under|within|up to|around|about|max|at most|tops|or less|-?ish\s|is fine)"
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


def _amount_in(clause: str) -> LinearMatch | None:
    """The first amount of ``clause`` (:data:`_AMOUNT`; one said in words only where
    :func:`~unstructured_memory.summariser.amounts.is_amount` holds)."""
    for m in _AMOUNT.finditer(clause):
        if m.group("said") is None or (
            amounts.is_amount(clause, m.start(), m.end()) and amounts.budget_text(m.group(0) or "")
        ):
            return m
    return None


def _budget_value(m: LinearMatch) -> str:
    said = m.group("said")
    if said:
        return amounts.budget_text(said)
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


def _blanked(text: str, acts: Sequence[Act]) -> str:
    """``text`` with the clauses that stopped counting blanked (same length)."""
    chars = list(text)
    for act in acts:
        if not act.live:
            chars[act.start : act.end] = " " * (act.end - act.start)
    return "".join(chars)


def observe_session(
    turns: Sequence[Turn], summary: SessionSummary
) -> tuple[list[Observation], list[Instruction]]:
    """The observations and instructions of rules + NER in the user's turns, as the
    session's acts leave them (see the module docstring)."""
    dialogue = summary.dialogue
    index = summary.turn_index or tuple(range(len(turns)))
    wrong = frozenset(turns[index[t]].text[a:b].casefold() for t, a, b in dialogue.wrong_spans())
    lang = summary.language
    observations: list[Observation] = []
    instructions: dict[str, list[str]] = {}
    for k, i in enumerate(index):
        turn = turns[i]
        if turn.role != "user" or not turn.text.strip():
            continue
        at = turn.time or summary.occurred_at
        at = at.replace(tzinfo=UTC) if at.tzinfo is None else at
        acts = [a for a in dialogue.acts if a.turn == k] if dialogue.acts else []
        observer = _Observer(summary.session_id, at, lang, wrong)
        observations += observer.turn(turn.text, acts)
        for key, text in observer.instructions:
            said = instructions.setdefault(key, [])
            if text not in said:
                said.append(text)
    return observations, [
        Instruction(key, "；".join(texts)[:MAX_INSTRUCTION_CHARS])
        for key, texts in instructions.items()
    ]


def observe_turns(turns: Sequence[Turn], summary: SessionSummary) -> list[Observation]:
    """The observations of :func:`observe_session`."""
    return observe_session(turns, summary)[0]


_MEMBER_OF = LinearPattern(
    r"(儿子|女儿|闺女|老婆|老公|媳妇|爱人|爸爸|妈妈|爸妈|父母|老爸|老妈|孩子|宝宝|外婆|外公|奶奶|爷爷|婆婆|公公|"
    r"(?i:son|daughter|wife|husband|kids?|children|mom|mum|dad|mother|father|parents|partner|"
    r"baby|grandma|grandpa|grandmother|grandfather))"
)
_MEMBER_NAMES: Final = {
    "爸": "爸爸",
    "妈": "妈妈",
    "老爸": "爸爸",
    "老妈": "妈妈",
    "媳妇": "老婆",
    "爱人": "老婆",
    "闺女": "女儿",
    "爸妈": "父母",
    "mum": "mom",
    "mother": "mom",
    "father": "dad",
    "kid": "kids",
    "children": "kids",
    "grandmother": "grandma",
    "grandfather": "grandpa",
}


class _Observer:
    """Observations and instructions of one user turn, stamped with its session and time."""

    def __init__(self, session: str, at: datetime, lang: Lang, wrong: frozenset[str]) -> None:
        self.session = session
        self.at = at
        self.lang = lang
        self.wrong = wrong
        self.instructions: list[tuple[str, str]] = []

    def _make(
        self,
        kind: ObservationKind,
        key: str,
        value: str,
        scenario: str | None = None,
        clear: str | None = None,
        **flags: Any,
    ) -> Observation:
        limit = MAX_TEMPORARY_CHARS if kind is ObservationKind.TEMPORARY else MAX_VALUE_CHARS
        return Observation(
            kind,
            key,
            value[:limit],
            self.session,
            self.at,
            scenario=scenario,
            clear=clear,
            **flags,
        )

    def turn(self, said: str, acts: Sequence[Act]) -> list[Observation]:
        text = _blanked(said, acts)
        out = [
            self._make(ObservationKind.FACT, "address", mask_value(m.kind, m.value), clear=m.value)
            for m in find_pii(text)
            if m.kind is PiiKind.ADDRESS and m.value.casefold() not in self.wrong
        ]
        entities = [
            e
            for e in extract_entities(said)
            if text[e.start : e.end].strip() and said[e.start : e.end].casefold() not in self.wrong
        ]
        for a, b in _SENTENCE.spans(text):
            sentence = text[a:b]
            if not sentence.strip():
                continue
            mine = [x for x in acts if a <= x.start < b and x.live]
            out += self._device(sentence, [e for e in entities if a <= e.start and e.end <= b])
            out += self._member(sentence)
            if _TEMPORARY.search(sentence) is not None:
                if _QUESTION.search(sentence) is None:
                    masked = mask_pii(" ".join(sentence.split()))[0]
                    out.append(self._make(ObservationKind.TEMPORARY, "intent", masked))
                continue
            out += self._preferences(text, sentence, mine)
            out += self._topics(text, mine)
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

    def _preferences(self, text: str, sentence: str, acts: Sequence[Act]) -> list[Observation]:
        """Channel, format and budget: explicit when the sentence instructs, negated when a
        negation governs the value; nothing lasting from what is said for this request
        only."""
        instructs = cues.INSTRUCTION.search(sentence) is not None or any(
            a.kind is ActKind.INSTRUCTION for a in acts
        )
        out = []
        for key, pattern, codes in (
            ("notification_channel", CHANNEL, CHANNEL_CODES),
            ("content_format", FORMAT, FORMAT_CODES),
        ):
            said: list[tuple[str, bool]] = []
            for act in acts:
                if act.one_off or (act.kind is ActKind.QUESTION and not instructs):
                    continue
                refusing = act.kind is ActKind.RETRACTION  # "短信提醒就不用了"
                piece = text[act.start : act.end]
                for m in mentions(piece, pattern, codes):
                    said.append((m.code, refusing or negated(piece, m.start, self.lang)))
            # refusing one value and naming another is an instruction to use the other
            explicit = instructs or any(refused for _, refused in said)
            out += [
                self._make(
                    ObservationKind.PREFERENCE,
                    key,
                    code,
                    explicit=explicit or refused,
                    negated=refused,
                )
                for code, refused in said
            ]
        for a, b in _CLAUSE.spans(sentence):
            clause = sentence[a:b]
            amount = _amount_in(clause)
            if amount is None:
                continue
            scenario = _scenario(clause)
            if scenario is None and _BUDGET.search(clause) is None:
                continue
            out.append(
                self._make(
                    ObservationKind.PREFERENCE,
                    "budget",
                    _budget_value(amount),
                    scenario=scenario,
                    explicit=instructs,
                )
            )
        return out

    def _topics(self, text: str, acts: Sequence[Act]) -> list[Observation]:
        """Lasting statements with a topic: facts about the user become observations,
        instructions explicit facts (:attr:`instructions`); an instruction of no topic is
        kept as a note in the user's words."""
        out = []
        for act in acts:
            piece = text[act.start : act.end]
            words = mask_pii(" ".join(piece.split()))[0]
            found = [t for t in lasting(act, piece) if t.key not in _CODED]
            for topic in found:
                if topic.fact:
                    scenario = None
                    if topic.key == "family":
                        m = _MEMBER_OF.search(piece)
                        who = (m.group(1) or "") if m is not None else ""
                        scenario = _MEMBER_NAMES.get(who.lower(), who.lower()) or None
                    out.append(
                        self._make(ObservationKind.FACT, topic.key, words, scenario=scenario)
                    )
                else:
                    self.instructions.append((topic.key, words))
            coded = mentions(piece, CHANNEL, CHANNEL_CODES) or mentions(piece, FORMAT, FORMAT_CODES)
            if (
                act.kind is ActKind.INSTRUCTION
                and not found
                and not coded
                and not act.one_off
                and _amount_in(piece) is None
            ):
                digest = hashlib.sha256(words.casefold().encode()).hexdigest()[:8]
                self.instructions.append((f"{NOTE_PREFIX}{digest}", words))
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
        observations, instructions = observe_session(turns, summary)
        kept: list[Observation] = []
        temporary = 0
        for o in observations:
            if o.kind is ObservationKind.TEMPORARY:
                temporary += 1
                if temporary > self.config.max_temporary:
                    continue
            kept.append(o)
        return Extraction(tuple(kept), source=self.name, instructions=tuple(instructions))

    def close(self) -> None:
        """Nothing to release."""
