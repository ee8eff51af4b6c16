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
  amount with a budget word (预算, 档, 以内, budget, under) or a scenario; one said in
  words keeps them (``7000-8000元（七八千）``), and one stated or capped is explicit;
- **temporary intents**: a sentence that is not a question and holds a word
  of time-bound intent (暂时, 先不, 下周, 这几天, for now, next week), kept
  masked as it was said. Preferences said in such a sentence ("这周先用短信
  联系我") are temporary too and never reach the profile.

Every pattern runs under RE2 in linear time (:class:`policies.linear_re.LinearPattern`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Final

from policies.births import BIRTH, ENDS_PREGNANCY
from policies.linear_re import LinearMatch, LinearPattern
from policies.pii import PiiKind, find_pii, mask_pii, mask_value
from policies.profile_merge import DISOWNED, PREVIOUS, REFERENCE, Observation, ObservationKind
from unstructured_memory.profile.acknowledged import acknowledged
from unstructured_memory.profile.base import NOTE_PREFIX, Extraction, Instruction, note_key
from unstructured_memory.profile.disowned import disowned
from unstructured_memory.profile.owned import (
    CHECKED,
    CLAUSE,
    MEMBER_OF,
    PARTED_AFTER,
    PARTED_BEFORE,
    SWITCHED_TO,
    Span,
    bought_for,
    clause_around,
    things_said_to_be,
)
from unstructured_memory.profile.registry import RuleExtractorConfig
from unstructured_memory.profile.revoked import revoked
from unstructured_memory.profile.self_facts import kept_facts
from unstructured_memory.summariser import amounts, cues, sizes
from unstructured_memory.summariser.acts import asked_topic, families, instructs, negated
from unstructured_memory.summariser.amended import substitute
from unstructured_memory.summariser.entities import brand_of, extract_entities
from unstructured_memory.summariser.own_words import SIZE, amended
from unstructured_memory.summariser.topics import (
    CHANNEL,
    CHANNEL_CODES,
    CODED_TOPICS,
    FORMAT,
    FORMAT_CODES,
    NOTE,
    PET_EN,
    PET_ZH,
    TOPICS,
    Topic,
    mentions,
    stated_in,
)
from unstructured_memory.summariser.vehicles import driven
from values.dialogue import Act, ActKind
from values.entities import Entity
from values.sessions import Lang, SessionSummary, Turn

__all__ = [
    "MAX_INSTRUCTION_CHARS",
    "MAX_TEMPORARY_CHARS",
    "MAX_VALUE_CHARS",
    "NOTE_PREFIX",
    "RuleExtractor",
    "observe_session",
    "observe_turns",
]

MAX_VALUE_CHARS: Final = 120
"""Longest fact or preference value kept (longer ones are cut)."""

MAX_TEMPORARY_CHARS: Final = 200
"""Longest temporary intent kept."""

MAX_INSTRUCTION_CHARS: Final = 200
"""Longest instruction kept as an explicit fact."""

_TOPICS: Final = {t.key: t for t in TOPICS}
_VEHICLE: Final = "vehicle"

_QUESTION = LinearPattern(r"吗|呢|[?？]|什么时候|多久|怎么|能不能|可不可以")

_AMOUNT = LinearPattern(
    r"(\d+(?:\.\d+)?)\s*(?:-|~|～|到|至)\s*(\d+(?:\.\d+)?)\s*(?:元|块)"
    r"|(\d+(?:\.\d+)?)\s*(?:元|块)"
    r"|(?:￥|¥|\$)\s*(\d+(?:\.\d+)?)(?:\s*(?:-|~|to)\s*(?:￥|¥|\$)?\s*(\d+(?:\.\d+)?))?"
    rf"|(?P<said>{amounts.SAID})"
    r"|(?:预算|最多花|顶多花|最多|顶多|不超过|(?i:budget))\s{0,2}"
    r"(?:是|在|为|大概|差不多|(?i:is|of|around|about))?\s{0,2}"
    r"(?P<bare>\d{2,7})(?:$|[^0-9.%])"
)
"""An amount: a range or a number with a unit or a currency sign, or one said in words or
hedged (:data:`~unstructured_memory.summariser.amounts.SAID`: 两三千, 3000 左右, a couple
hundred dollars), which counts when :func:`~unstructured_memory.summariser.amounts.is_amount`
says so (:func:`_amount_in`)."""
_CJK_TEXT = LinearPattern(r"[\x{4e00}-\x{9fff}]")
_BUDGET = LinearPattern(
    r"预算|价位|价格区间|档|以内|之内|以下|左右|上下|不超过|之间|出头|封顶|最多|顶多|就行|能接受|可以接受"
    r"|(?i:budget|under|within|up to|around|about|max|at most|tops|or less|-?ish\s|is fine|"
    r"no more than|(?:spend|pay)(?:ing)?\s+(?:any\s+)?more than)"
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
    r"我的|我用|我家|我[这那](?:台|个|部|款|只|辆)|我手上|用的是|手机是|买的|入手|订单|换了|换成|现在用"
    r"|我(?:手机|电脑|笔记本|平板|相机|耳机|打印机|电视|车|手表)(?:就|也)?是"
    r"|家里|家中|家用的"
    r"|(?i:my\s|i have|i use|i'm using|i am using|i bought|switched to|upgraded to|got a new|"
    r"now (?:use|have)|on mine|of mine|mine (?:is|has)|mine'?s|i'?ve got|i own|our\s|"
    r"ours (?:is|has)|we have|we've got|we use|we own)"
)
_CLAUSE_END: Final = LinearPattern(r"[，,。！？!?；;\n]")
"""What ends a clause: a brand before it is no brand of a model after it."""
_PAPER: Final = LinearPattern(r"[ABab][0-9]\s*(?:纸|(?i:paper|sheets?))")
"""A paper size read as a model (A4 纸, A3 paper)."""
_SHOWN: Final = LinearPattern(
    r"(?:显示|跳|报|提示|闪|亮|出现|弹)(?:了|出|着)?(?:个|一个)?\s*(?:错误码|故障码|代码)?\s*$"
    r"|(?i:(?:error|fault)(?:\s+code)?|code|shows?|showing|flash(?:es|ing)?|displays?|displaying"
    r"|throws?|throwing)\s+(?:an?\s+|the\s+)?$"
)
"""Right before a code a thing shows (屏幕跳个 E3, 显示 E1, keeps showing E24, error code F21): an
error code, no model."""
_MINE: Final = LinearPattern(
    r"(?i:on mine|of mine|mine (?:is|has|does)|with mine)|我的(?:就|也)是这"
)
"""A sentence saying the model just named is the user's own ("the camera bar is huge on mine")."""
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


def _amount_in(clause: str, lang: Lang) -> LinearMatch | None:
    """The first amount of ``clause`` the user does not refuse ("不用卡 3000 了")
    (:data:`_AMOUNT`; one said in words only where
    :func:`~unstructured_memory.summariser.amounts.is_amount` holds)."""
    for m in _AMOUNT.finditer(clause):
        if m.group("bare") is not None:  # "budget about 1500 yuan": the amount with its unit
            at = m.start(_AMOUNT.groupindex["bare"])
            unit = _AMOUNT.search(clause[at:])
            if unit is not None and unit.start() == 0 and unit.group("bare") is None:
                return _amount_in(clause[at:], lang)
        if negated(clause, m.start(), lang):
            continue
        if m.group("said") is None or (
            amounts.is_amount(clause, m.start(), m.end()) and amounts.budget_text(m.group(0) or "")
        ):
            return m
    return None


_BUDGET_WORD = LinearPattern(r"预算|(?i:budget)")
_ON_BEHALF = LinearPattern(
    r"朋友|同事|同学|别人|邻居|(?i:friend|colleague|coworker|someone else|neighbou?r)"
)


_CAP: Final = LinearPattern(
    r"以内|之内|不超过|别超过|别过|最多|顶多|封顶"
    r"|(?i:(?:^|\s)(?:under|at most|no more than|not more than|max|tops|up to|"
    r"(?:spend|pay)(?:ing)?\s+(?:any\s+)?more than)(?:$|\s))"
)
"""A cap the user sets on what they spend (两千以内, under two hundred bucks, don't want to
spend more than 200 bucks)."""


def _states_budget(sentence: str, *, asked: bool = False) -> bool:
    """Whether ``sentence`` states the user's own budget ("预算5000", "my budget is $800",
    "under two hundred bucks"): a word of budget, or a cap in a sentence that asks nothing
    (``asked``: "有500以内的吗" stays a mention), for no friend ("帮朋友问问 500 以内的")."""
    said = _BUDGET_WORD.search(sentence) is not None or (
        not asked and _CAP.search(sentence) is not None and cues.QUESTION.search(sentence) is None
    )
    return said and _ON_BEHALF.search(sentence) is None


def _budget_value(m: LinearMatch, clause: str) -> str:
    said = m.group("said")
    if said:
        value, words = amounts.budget_text(said), " ".join(said.split())
        if any(ch.isdigit() for ch in words):
            return value
        return f"{value}（{words}）" if _CJK_TEXT.search(words) else f"{value} ({words})"
    bare = m.group("bare")
    if bare:
        return f"{bare}元" if _CJK_TEXT.search(clause) is not None else f"${bare}"
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


_PREFERRED: Final = LinearPattern(
    r"比[^，,。！？；]{1,8}(?:好|方便|强|靠谱)|更(?:喜欢|习惯|方便)|(?:习惯|喜欢|偏好)用"
    r"|(?i:(?:is|are|would be|works?)\s+(?:much\s+|way\s+|a lot\s+)?better\s+(?:than|for me)|"
    r"(?:i|we)\s+(?:much\s+|really\s+)?prefer|i'?d (?:much )?rather)"
)
"""A preference stated as the user's own comparison ("短信比邮件方便", "texts are better than
email for me"): said of how to treat them, so explicit."""
_OUTDONE: Final = LinearPattern(r"比\s*$|(?i:(?:than|over|instead of)\s+(?:the\s+)?$)")
"""Right before a value another one is preferred to (比邮件方便, better than email)."""
_NO_CHANNEL_AFTER: Final = LinearPattern(
    r"\s*(?:on\s+)?(?:the\s+)?(?:door ?bell|bell|buzzer|door)|\s*门铃"
)
"""Right after a channel word that names no channel: ring the doorbell."""
_ADDRESSED: Final = LinearPattern(
    r"(?:通知|联系|告诉|提醒|找|跟|和|给|回|(?i:call|text|e-?mail))我"
    r"|(?i:(?:call|text|e-?mail|ring|message|ping|notify|contact|tell|update|reach|phone)\s+me"
    r"|let me know)"
)
"""The agent asked to reach the user ("微信通知我", "打电话给我", "text me"): with a channel, a
direct instruction of how to reach them, explicit at once."""
_SWITCHED: Final = LinearPattern(
    r"(?:改|换)(?:成|用|为)?(?:发|打|用|走)?\s*$"
    r"|(?i:(?:switch|change|move)\s+(?:me\s+|it\s+|that\s+)?(?:over\s+)?to\s+$)"
)
"""Right before a channel switched to (改发短信, switch me over to email): an instruction."""
_DONE: Final = LinearPattern(
    r"[打发来]过|[打发来过]了|(?i:called|texted|e-?mailed|rang|phoned|messaged)"
)
"""A contact that happened (给我打了三次电话): a narrative, no instruction."""


_ORDER_BOUND: Final = frozenset({"dropoff", "carrier", "packaging", "delivery_time"})
"""Topics of how an order ships: said as goods are bought, they are that order's."""


def _of_all_goods(text: str) -> bool:
    """Whether ``text`` speaks of all the user's goods (whatever we buy, 我的快递都…)."""
    return cues.HABIT.search(text) is not None


_TAKES: Final = LinearPattern(
    r"要(?:一|两|三|几)(?:个|台|件|支|块|份|套|盒|双|瓶|箱)"
    r"|(?i:i'?ll take (?:the|a|an|one|two|[0-9])|i'?d like to order)"
)
"""Goods taken as they are offered (黑色的要一台, I'll take the grey scarf)."""


def _buys(text: str) -> bool:
    """Whether the user's turn buys something (a purchase asked, goods taken)."""
    return "purchase" in families(text) or _TAKES.search(text) is not None


def observe_session(
    turns: Sequence[Turn], summary: SessionSummary
) -> tuple[list[Observation], list[Instruction]]:
    """The observations and instructions of rules + NER in the user's turns, as the
    session's acts leave them (see the module docstring)."""
    dialogue = summary.dialogue
    index = summary.turn_index or tuple(range(len(turns)))
    wrong = frozenset(turns[index[t]].text[a:b].casefold() for t, a, b in dialogue.wrong_spans())
    pairs = tuple(dialogue.pairs([turns[i].text for i in index]))
    lang = summary.language
    changed = amended(dialogue, [turns[i].text for i in index if turns[i].role == "user"])
    observations: list[Observation] = []
    instructions: dict[str, list[str]] = {}
    for k, i in enumerate(index):
        turn = turns[i]
        if turn.role != "user" or not turn.text.strip():
            continue
        at = turn.time or summary.occurred_at
        at = at.replace(tzinfo=UTC) if at.tzinfo is None else at
        acts = [a for a in dialogue.acts if a.turn == k] if dialogue.acts else []
        before = turns[index[k - 1]] if k > 0 else None
        asked_about = asked_topic(before.text) if before and before.role != "user" else None
        asked = asked_about is not None and asked_about.key == "notification_channel"
        sized = before is not None and before.role != "user" and _asks_size(before.text)
        observer = _Observer(
            summary.session_id, at, lang, wrong, pairs, asked=asked, sized=sized, amended=changed
        )
        read = summary.turn_entities[k] if summary.turn_entities else None
        observations += observer.turn(turn.text, acts, read)
        for key, text in observer.instructions:
            said = instructions.setdefault(key, [])
            if text not in said:
                said.append(text)
    if "address" in dialogue.retracted:  # the address given for a change taken back
        observations = [o for o in observations if o.key != "address"]
    return _one_per_model(_last_of_each(observations)), [
        Instruction(key, "；".join(texts)[:MAX_INSTRUCTION_CHARS])
        for key, texts in instructions.items()
    ]


_UNSAID: Final = frozenset({ActKind.QUESTION, ActKind.SMALL_TALK})
"""Clauses a note of what the user asked to remember leaves out."""

_MEANWHILE: Final = frozenset(
    {ActKind.TEMPORARY, ActKind.REQUEST, ActKind.INSTRUCTION, ActKind.PREFERENCE}
)


def _meanwhile(act: Act) -> bool:
    """Whether a clause of a time-bound sentence belongs in its note: the intent itself and
    what it asks meanwhile (a request, an instruction, a statement of how to deliver)."""
    return act.kind in _MEANWHILE or (
        act.kind is ActKind.STATEMENT
        and any(k in _TOPICS and not _TOPICS[k].fact for k in act.topics)
    )


_WHO: Final = frozenset({"family", "pet"})
"""Fact topics naming who is in the user's household: said in a time-bound clause, still so."""


def _facts_beside(text: str, acts: Sequence[Act]) -> list[Act]:
    """The clauses of a time-bound sentence that state a fact about the user, with only
    their fact topics ("Hiking's out for now, my wife has a bad knee": the knee is no
    intent of this week; what to do meanwhile is, so no instruction is kept); a family
    member or pet the time-bound clause names is still theirs ("我女儿下周过生日")."""
    out = []
    for act in acts:
        timed = act.kind is ActKind.TEMPORARY or cues.TEMPORARY.search(text[act.start : act.end])
        facts = tuple(
            k for k in act.topics if k in _TOPICS and _TOPICS[k].fact and (not timed or k in _WHO)
        )
        if facts:
            out.append(replace(act, topics=facts))
    return out


_SUPPOSING: Final = frozenset({ActKind.FACT, ActKind.STATEMENT, ActKind.INSTRUCTION})
"""Kinds a supposing clause with no topic left is read as by mistake."""


def _unsupposed(text: str, acts: Sequence[Act]) -> list[Act]:
    """``acts`` with what a supposition says of the user taken out (:data:`cues.SUPPOSED`:
    如果我搬到杭州, if I moved to Denver): its fact topics but a household member it takes
    for granted (要是我家猫不爱吃); what it asks (如果我不在家，就放门卫) stays. A supposing
    clause asking nothing of a topic is no fact or wish to note either (等我搬到苏州以后): it
    comes back as a :data:`ActKind.QUESTION`."""
    out = []
    for act in acts:
        if not cues.SUPPOSED.spans(text[act.start : act.end]):
            out.append(act)
            continue
        kept = tuple(
            k
            for k in act.topics
            if k != NOTE.key and (k not in _TOPICS or not _TOPICS[k].fact or k in _WHO)
        )
        kind = act.kind if kept or act.kind not in _SUPPOSING else ActKind.QUESTION
        out.append(replace(act, kind=kind, topics=kept))
    return out


def _last_of_each(observations: list[Observation]) -> list[Observation]:
    """``observations`` with each value said again kept only where it was last said (a
    device named before and in its correction is one observation)."""
    seen: set[tuple[object, ...]] = set()
    out: list[Observation] = []
    for o in reversed(observations):
        key = (o.kind, o.slot, o.value, o.explicit, o.negated)
        if key not in seen:
            seen.add(key)
            out.append(o)
    return out[::-1]


def _one_per_model(observations: list[Observation]) -> list[Observation]:
    """``observations`` without a device said elsewhere in the session with its brand
    (``V12`` beside ``戴森 V12``): one model, one device."""
    devices = [o.value.casefold() for o in observations if o.key == "device_model"]
    return [
        o
        for o in observations
        if o.key != "device_model" or not any(d.endswith(f" {o.value.casefold()}") for d in devices)
    ]


def observe_turns(turns: Sequence[Turn], summary: SessionSummary) -> list[Observation]:
    """The observations of :func:`observe_session`."""
    return observe_session(turns, summary)[0]


_MEMBER_NAMES: Final = {
    "爸": "爸爸",
    "妈": "妈妈",
    "老爸": "爸爸",
    "老妈": "妈妈",
    "媳妇": "老婆",
    "爱人": "老婆",
    "闺女": "女儿",
    "爸妈": "父母",
    "小孩": "孩子",
    "小朋友": "孩子",
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

    def __init__(
        self,
        session: str,
        at: datetime,
        lang: Lang,
        wrong: frozenset[str],
        pairs: Sequence[tuple[str, str]] = (),
        *,
        asked: bool = False,
        sized: bool = False,
        amended: bool = False,
    ) -> None:
        self.session = session
        self.at = at
        self.lang = lang
        self.wrong = wrong
        self.pairs = pairs
        self.asked = asked  # the agent's turn before asked how to reach the user
        self.sized = sized  # the agent's turn before asked the user's size
        self.amended = amended  # the user amended the session (a correction, a change of mind)
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

    def turn(
        self, said: str, acts: Sequence[Act], read: Sequence[Entity] | None = None
    ) -> list[Observation]:
        """What the user's turn ``said`` tells (``read``: its entities, when the summary
        read them already)."""
        text = _blanked(said, acts)
        out = [
            self._make(ObservationKind.FACT, "address", mask_value(m.kind, m.value), clear=m.value)
            for m in find_pii(text)
            if m.kind is PiiKind.ADDRESS and m.value.casefold() not in self.wrong
        ]
        entities = [
            e
            for e in (extract_entities(said) if read is None else read)
            if text[e.start : e.end].strip() and said[e.start : e.end].casefold() not in self.wrong
        ]
        folded = said.casefold()
        fixed = any(w.casefold() in folded for w, _ in self.pairs)
        if fixed:  # a device said before its correction is the corrected one
            out += self._devices_corrected(text)
        memo = [x for x in acts if x.live and cues.MEMO.fullmatch(text[x.start : x.end])]
        named: tuple[str, list[Entity], int] | None = None  # the last sentence naming a model
        animal = ""  # the last animal a sentence named
        lasting: list[Act] = []  # the clauses of sentences bound to no time
        for a, b in cues.SENTENCE.spans(text):
            sentence = text[a:b]
            if not sentence.strip():
                continue
            mine = _unsupposed(text, [x for x in acts if a <= x.start < b and x.live])
            out += self._ours(text, mine, animal)
            said_animal = _ANIMAL.search(sentence)
            animal = _first_group(said_animal, 2) if said_animal is not None else animal
            here = [e for e in entities if a <= e.start and e.end <= b]
            if not fixed:
                said_to_be, claimed = self._said_to_be(sentence, a)
                here = [e for e in here if not any(x <= e.start < y for x, y in claimed)]
                out += said_to_be
                values = {o.value.casefold() for o in said_to_be}
                out += [
                    o for o in self._device(sentence, here, a) if o.value.casefold() not in values
                ]
                if named is not None and _MINE.search(sentence) is not None:
                    out += self._device(*named, owned=True)  # "… a Pixel 8 Pro? … on mine."
                if any(e.type == "MODEL" for e in here):
                    named = (sentence, here, a)
            out += self._member(sentence)
            # a sentence moving a day away (周三不行了 临时要出差 换周五) names it in a clause
            # that stopped counting: read it as said
            rescheduled = any(w in said[a:b].casefold() for w in self.wrong)
            if cues.TEMPORARY.search(sentence) is not None and not rescheduled:
                if _QUESTION.search(sentence) is None:
                    out += self._temporary(text, sentence, mine)
                out += self._topics(text, _facts_beside(text, mine))
                continue
            asked = text[b : b + 1] in ("?", "？")  # the sentence asks
            out += self._preferences(text, sentence, mine, asked=asked)
            out += self._topics(text, mine)
            self._standing(text, mine)
            lasting += mine
        out += self._sizes_in_passing(text, [x for x in acts if x.live])
        taken = [o.value for o in out] + [t for _, t in self.instructions]
        out += self._kept(text, lasting, taken)
        if memo:  # "US men's 10. Wide. Save it.": what the turn said is to be kept
            self._memo(text, [x for x in acts if x not in memo])
        return out

    def _kept(self, text: str, acts: Sequence[Act], taken: Sequence[str]) -> list[Observation]:
        """The facts no topic names (:func:`kept_facts`): kept as notes, news of a family
        member in that member's family slot (the newest of them wins)."""
        out = []
        for kept in kept_facts(text, acts, taken, self._words, facts_only=self.amended):
            if kept.news_of is not None:
                who = _member_named(MEMBER_OF.search(kept.news_of))
                out.append(self._make(ObservationKind.FACT, _FAMILY, kept.words, scenario=who))
            else:
                self._note(kept.words, keyed_by=kept.frame)
        return out

    def _ours(self, text: str, acts: Sequence[Act], animal: str) -> list[Observation]:
        """The user's pet told by ours/mine (:data:`_OURS`) right after a sentence naming an
        animal, with a trait of it ("a border collie? Ours is 18 kg"): the animal's name and
        the clause."""
        join = "，" if self.lang == "zh" else ", "
        for act in acts:
            piece = text[act.start : act.end]
            if animal and act.kind in _SAYING and _OURS.search(piece) and _TRAIT.search(piece):
                value = f"{animal}{join}{self._words(piece)}"
                return [self._make(ObservationKind.FACT, _PET, value)]
        return []

    def _sizes_in_passing(self, text: str, acts: Sequence[Act]) -> list[Observation]:
        """Sizes said in passing (:data:`_FITS`: the 10.5 fits, 39 的刚好合脚), or as a bare
        number where a size is spoken of: right after a clause naming size or fit (尺码没问题，
        还是 41 的; size is fine, 9.5), or answering the agent's question of the size."""
        out = []
        before = self.sized
        for act in acts:
            piece = text[act.start : act.end]
            fits = _FITS[self.lang].search(piece)
            bare = _BARE_SIZE[self.lang].search(piece)
            if fits is not None:
                size = _first_group(fits, 2)
            elif bare is not None and before and act.kind is not ActKind.QUESTION:
                size = bare.group(1) or ""
            else:
                size = ""
            if size and _SIZE not in act.topics:
                unit = "号" if "号" in piece else "码"
                spelt = f"{size}{unit}" if self.lang == "zh" else f"size {size}"
                out.append(self._make(ObservationKind.FACT, _SIZE, spelt))
            before = _SIZE_SPOKEN.search(piece) is not None
        return out

    def _standing(self, text: str, acts: Sequence[Act]) -> None:
        """A standing wish of how to be served that no topic names (what they only or never
        buy, :data:`_ONLY_BUYS`; a kind only, :func:`_kind_only`; a call before a visit, the
        only times they can be visited, :data:`_STANDING`),
        kept as a note in the clause's words (:attr:`instructions`); not the goods at hand
        (I only use it for work), nor what was asked, done or said for this time only."""
        join = "，" if self.lang == "zh" else ", "
        for k, act in enumerate(acts):
            if act.kind in _NO_WISH or act.one_off or act.topics:
                continue
            piece = text[act.start : act.end]
            buys = _ONLY_BUYS.search(piece) or _BUT_ONE.search(piece)
            if buys is not None and _GOODS.match(piece[buys.end() :]) is not None:
                buys = None
            refused = _refused_before(text, acts[:k]) if _OTHERS_OK.search(piece) else None
            if refused is not None:  # 红色的不要，其他颜色都可以
                said = join.join(self._words(text[x.start : x.end]) for x in acts[refused : k + 1])
            elif buys is not None or _STANDING.search(piece) is not None or _kind_only(piece):
                said = self._words(piece)
            else:
                continue
            self._note(said)

    def _memo(self, text: str, acts: Sequence[Act]) -> None:
        """The clauses of a turn the user asked to have remembered, as one explicit note in
        place of the turn's other notes: those stating something (not questions, small
        talk or instructions of a topic, which are kept as such)."""
        kept = [
            self._words(text[x.start : x.end])
            for x in acts
            if x.live
            and x.kind not in _UNSAID
            and not any(k in _TOPICS and not _TOPICS[k].fact for k in x.topics)
            and text[x.start : x.end].strip()
        ]
        self.instructions = [(k, t) for k, t in self.instructions if not k.startswith(NOTE_PREFIX)]
        if kept:
            said = ("，" if self.lang == "zh" else ", ").join(kept)
            self._note(said)

    def _temporary(self, text: str, sentence: str, acts: Sequence[Act]) -> list[Observation]:
        """A time-bound intent, masked as said: the clauses of the sentence that hold its
        time words and what it asks meanwhile ("I'm away next week, leave it with the
        concierge"), not its facts about the user nor its questions (the sentence when the
        acts are unknown)."""
        timed = [text[x.start : x.end] for x in acts if _meanwhile(x)]
        if not any(x.kind is ActKind.TEMPORARY for x in acts):
            timed = []
        said = ("，" if self.lang == "zh" else ", ").join(timed) if timed else sentence
        masked = mask_pii(" ".join(said.split()))[0]
        return [self._make(ObservationKind.TEMPORARY, "intent", masked)]

    def _devices_corrected(self, text: str) -> list[Observation]:
        """The devices of a turn read with every corrected-away value replaced by the right
        one ("我的吸尘器是戴森 V10" corrected to V12 later: ``戴森 V12``); a model put right
        after a look at the thing itself is the user's (:data:`CHECKED`); none in a turn
        whose every clause stopped counting."""
        fixed = substitute(text, self.pairs)
        if not fixed.strip():
            return []
        entities = extract_entities(fixed)
        checked = CHECKED.search(text) is not None
        right = [r.casefold() for _, r in self.pairs]
        out = []
        for a, b in cues.SENTENCE.spans(fixed):
            here = [e for e in entities if a <= e.start and e.end <= b]
            put_right = [
                e for e in here if e.type != "MODEL" or any(r in e.text.casefold() for r in right)
            ]
            if checked and any(e.type == "MODEL" for e in put_right):
                out += self._device(fixed[a:b], put_right, a, owned=True)
            else:
                out += self._device(fixed[a:b], here, a)
        return out

    def _device(
        self, sentence: str, entities: list[Entity], at: int = 0, *, owned: bool = False
    ) -> list[Observation]:
        """The devices a sentence (at ``at`` of the turn) says are the user's (``owned``: the
        next one said so), names as what something is bought for (:func:`owned.bought_for`) or
        as switched to (:data:`SWITCHED_TO`: it replaces the one the user had); a device's
        product is the one named in its own clause, never what is bought for it."""
        models = [e for e in entities if e.type == "MODEL"]
        if not models:
            return []
        owns = owned or _OWN.search(sentence) is not None
        out = []
        for model in models:
            brand = brand_of(entities, model)
            start, end = model.start - at, model.end - at
            ends = [e.end - at for e in entities if e.text == brand and e.end <= model.start]
            if brand and ends and _CLAUSE_END.search(sentence[max(ends) : start]) is not None:
                brand = ""  # "苹果给我妈用了，有没有 X100 Pro 的膜": another clause's brand
            if _PAPER.match(sentence[start:]) is not None:
                continue  # "A4 纸": a paper size, no device
            if _SHOWN.search(sentence[max(0, start - 24) : start]) is not None:
                continue  # "屏幕跳个 E3": a code the thing shows, no device
            opening = (
                max(
                    (
                        e.start
                        for e in entities
                        if e.type == "BRAND" and e.text == brand and e.end <= model.start
                    ),
                    default=model.start,
                )
                - at
            )  # the brand's start, or the model's
            if (
                PARTED_BEFORE.search(sentence[max(0, opening - 24) : opening]) is not None
                or PARTED_AFTER.match(sentence[end:]) is not None
            ):
                continue  # "之前那台 iPhone 15 送我妈了": a device they no longer have
            for_it = bought_for(sentence, opening, end)
            switched = SWITCHED_TO.search(sentence[max(0, opening - 24) : opening])
            if not (owns or for_it or switched):
                continue
            a, b = clause_around(sentence, start)
            products = [
                e for e in entities if e.type == "PRODUCT" and a <= e.start - at and e.end - at <= b
            ]
            after = [e for e in products if e.start >= model.end]
            product = (after[0] if after else products[-1]).text if products else None
            value = f"{brand} {model.text}" if brand else model.text
            scenario = None if for_it else product
            out.append(
                self._make(
                    ObservationKind.FACT,
                    "device_model",
                    value,
                    scenario=scenario,
                    replaces=None if switched is None else PREVIOUS,
                )
            )
        return out

    def _said_to_be(self, sentence: str, at: int) -> tuple[list[Observation], list[Span]]:
        """The devices ``sentence`` (at ``at`` of the turn) says the user's things are
        (:func:`things_said_to_be`), and the spans of the turn that say what the user's
        things or people are (models there are read here only: my husband is a Leo)."""
        out = []
        claimed = []
        for a, b, kind, name in things_said_to_be(sentence):
            claimed.append((at + a, at + b))
            if name:
                out.append(self._make(ObservationKind.FACT, "device_model", name, scenario=kind))
        return out, claimed

    def _member(self, sentence: str) -> list[Observation]:
        m = _MEMBER.search(sentence)
        if m is None:
            return []
        level = _first_group(m, 3)
        value = f"{level.upper() if level.isascii() else level}会员"
        if m.group(3):
            value = f"{level.lower()} member"
        return [self._make(ObservationKind.FACT, "member_level", value)]

    def _preferences(
        self, text: str, sentence: str, acts: Sequence[Act], *, asked: bool = False
    ) -> list[Observation]:
        """Channel, format and budget: explicit when the sentence instructs, negated when a
        negation governs the value; nothing lasting from what is said for this request
        only."""
        instructed = (
            instructs(sentence)
            or any(a.kind is ActKind.INSTRUCTION for a in acts)
            or _PREFERRED.search(sentence) is not None
        )
        out = []
        for key, pattern, codes in (
            ("notification_channel", CHANNEL, CHANNEL_CODES),
            ("content_format", FORMAT, FORMAT_CODES),
        ):
            said: list[tuple[str, bool, bool]] = []  # code, refused, asked of the agent
            for act in acts:
                if act.one_off or (act.kind is ActKind.QUESTION and not instructed):
                    continue
                refusing = act.kind is ActKind.RETRACTION  # "短信提醒就不用了"
                piece = text[act.start : act.end]
                asks = (
                    key == "notification_channel"
                    and act.kind is not ActKind.QUESTION
                    and _DONE.search(piece) is None
                    and cues.PAST.search(piece) is None
                )
                for m in mentions(piece, pattern, codes):
                    if (
                        _OUTDONE.search(piece[max(0, m.start - 6) : m.start]) is None
                        and _NO_CHANNEL_AFTER.match(piece[m.end :]) is None
                    ):
                        refused = refusing or negated(piece, m.start, self.lang, m.end)
                        directed = asks and (
                            _ADDRESSED.search(piece) is not None
                            or _SWITCHED.search(piece[max(0, m.start - 24) : m.start]) is not None
                        )
                        said.append((m.code, refused, directed))
            # refusing one value and naming another is an instruction to use the other; a
            # value refused in the sentence is not wanted by a later mention of it there
            refusals = {code for code, refused, _ in said if refused}
            said = [(c, r, d) for c, r, d in said if r or c not in refusals]
            explicit = (
                instructed or bool(refusals) or (key == "notification_channel" and self.asked)
            )
            out += [
                self._make(
                    ObservationKind.PREFERENCE,
                    key,
                    code,
                    explicit=explicit or refused or directed,
                    negated=refused,
                )
                for code, refused, directed in said
            ]
        asked = asked or any(act.kind is ActKind.QUESTION for act in acts)
        for a, b in CLAUSE.spans(sentence):
            clause = sentence[a:b]
            amount = _amount_in(clause, self.lang)
            if amount is None:
                continue
            scenario = _scenario(clause)
            if scenario is None and _BUDGET.search(clause) is None:
                continue
            out.append(
                self._make(
                    ObservationKind.PREFERENCE,
                    "budget",
                    _budget_value(amount, clause),
                    scenario=scenario,
                    explicit=instructed or _states_budget(sentence, asked=asked),
                )
            )
        return out

    def _note(self, said: str, *, keyed_by: str | None = None) -> None:
        """Keep ``said`` as a note (:attr:`instructions`), keyed by ``keyed_by`` (its own
        words by default: :func:`~unstructured_memory.profile.base.note_key`)."""
        self.instructions.append((note_key(keyed_by or said), said))

    def _put_right(self, said: str) -> list[tuple[str, str]]:
        """The corrections whose wrong value ``said`` states, not refuses ("I wear a medium"
        put right as large; not "不要L" of "不要L 要M", which stays refused)."""
        out = []
        for wrong, right in self.pairs:
            at = said.find(wrong)
            if at >= 0 and not negated(said, at, self.lang, at + len(wrong)):
                out.append((wrong, right))
        return out

    def _fact_words(self, key: str, piece: str, part: str) -> tuple[str, bool]:
        """The words a fact topic ``key`` keeps of the clause ``piece`` (``part``: its own
        run of words there): a size as settled, the cars driven now, else the part's words;
        and whether they say what holds now (not when they only give a car up: 卡罗拉卖了)."""
        words = self._words(part)
        if key == _VEHICLE:  # the car the user has now, not one given up
            now = driven(piece)
            return (self._words(now), True) if now else (words, False)
        if key == _SIZE:  # read as said: a correction's refused value stays refused
            said_size = " ".join(piece.split())
            said_size = mask_pii(substitute(said_size, self._put_right(said_size)))[0]
            return _settled_size(said_size, self.lang) or words, True
        return words, True

    def _words(self, piece: str) -> str:
        """A clause as the profile keeps it: spaces tidied, corrected values right, masked."""
        return mask_pii(substitute(" ".join(piece.split()), self.pairs))[0]

    def _measured(self, piece: str) -> bool:
        """Whether the sizes ``piece`` seems to say only measure a product ("I'll take the
        27-inch monitor"): no size worn."""
        return self.lang == "en" and sizes.measures_only(" ".join(piece.split()), self.lang)

    def _topics(self, text: str, acts: Sequence[Act]) -> list[Observation]:
        """Lasting statements with a topic (:attr:`Act.topics`) in one sentence: facts about
        the user become observations (their clause's words), instructions explicit facts
        (:attr:`instructions`) in the words of every lasting clause of the sentence ("For
        anything I send abroad from now on, please use DHL, never EMS"); a sentence
        instructing on no topic of its own, or only on facts (以后送货打我老婆电话), is kept as
        a note, unless it names a size (the size's slot keeps the latest)."""
        out = []
        lasting = [a for a in acts if a.topics]
        join = "，" if self.lang == "zh" else ", "
        # a fact said as an instruction's reason (我上夜班 快递下午送) is its slot's own
        instructing = [a for a in lasting if not all(_fact_topic(k) for k in a.topics)]
        said = join.join(
            self._words(_instructing_part(text[a.start : a.end], a.topics, self.lang))
            for a in instructing or lasting
        )
        keys = list(dict.fromkeys(k for a in lasting for k in a.topics if k not in CODED_TOPICS))
        facts: dict[tuple[str, str | None], list[str]] = {}
        gone: dict[tuple[str, str | None], list[str]] = {}
        going = dict(_going_on(text, acts))
        before, named = "", None  # the clause before, the name it opened with
        for act in acts:
            piece = text[act.start : act.end]
            told = self._words(piece)
            if before and _BARE_ALLERGY.search(piece) is not None:  # 别放芒果，她过敏
                told = f"{self._words(before)}{join}{told}"
            before = piece
            if act in going:
                facts.setdefault(going[act], []).append(told)
            elif act.kind in _SAYING:
                meant = _reference(piece)
                if meant is not None and named is not None and meant[1] in _PERSONS:
                    meant = (_FAMILY, f"{REFERENCE}name:{named}")  # Leo's taller, he's a 10
                if meant is not None:
                    facts.setdefault(meant, []).append(told)
            opened = _REFERRED.search(piece)
            named = opened.group("name") if opened is not None else None
            if named is not None and _NOT_A_NAME.search(named) is not None:
                named = None
            parts = _parts(piece, act.topics) if self.lang == "zh" else {}
            for key in (k for k in act.topics if k != _SIZE or not self._measured(piece)):
                topic = _TOPICS.get(key)
                if topic is not None and topic.fact:
                    who = (
                        _wearer(text[acts[0].start : act.start], piece)
                        if key == _SIZE
                        else _member(topic, piece)
                    )
                    words, now = self._fact_words(key, piece, parts.get(key, piece))
                    (facts if now else gone).setdefault((key, who), []).append(words)
        facts = {**gone, **facts}  # a car given up, unless one driven now is said
        denying = self._denying(text, acts)
        out += [
            self._make(
                ObservationKind.FACT,
                key,
                value := join.join(_one_size_once(kept, self.lang) if key == _SIZE else kept),
                scenario=scenario,
                replaces=ENDS_PREGNANCY if key == _FAMILY and BIRTH.search(value) else None,
            )
            for (key, scenario), words in facts.items()
            if (kept := [w for w in words if w not in denying.get(key, ())] or words)
        ]
        # how to ship or wrap what the turn buys is that order's (要一台 走顺丰送货上门)
        bought = _buys(text) and not instructs(text) and not _of_all_goods(text)
        instructions = [
            k
            for k in keys
            if k != NOTE.key and not _TOPICS[k].fact and not (bought and k in _ORDER_BOUND)
        ]
        for key in instructions:
            self.instructions.append((key, said))
        instructed = any(  # 以后送货打我老婆电话: an instruction naming facts only
            a.kind is ActKind.INSTRUCTION and all(_TOPICS[k].fact for k in a.topics if k in _TOPICS)
            for a in lasting
        )
        sized = _SIZE in keys or SIZE.search(said) is not None  # the size's slot keeps it
        if (NOTE.key in keys or instructed) and not instructions and not sized:
            self._note(said)
        return out

    def _denying(self, text: str, acts: Sequence[Act]) -> dict[str, set[str]]:
        """The words of the clauses that only deny a fact topic's value ("not just
        vegetarian", 不再是蛋奶素了: every match of the topic there governed by a negation),
        by topic: beside a clause stating the topic, they add nothing to its value."""
        out: dict[str, set[str]] = {}
        for act in acts:
            piece = text[act.start : act.end]
            for key in act.topics:
                topic = _TOPICS.get(key)
                if topic is None or not topic.fact:
                    continue
                found = topic.pattern.spans(piece)
                if found and all(negated(piece, a, self.lang, b) for a, b in found):
                    out.setdefault(key, set()).add(self._words(piece))
        return out


_FAMILY: Final = "family"
_NO_WISH: Final = frozenset(
    {ActKind.QUESTION, ActKind.SMALL_TALK, ActKind.RETRACTION, ActKind.CORRECTION}
)
"""Clauses that state no standing wish: asked, small talk, taken back or put right."""
_TIMES_EN: Final = r"(?:weekdays?|weekends?|mornings?|afternoons?|evenings?|after|before|between)"
_ONLY_BUYS: Final = LinearPattern(
    r"(?:只|就只|一直只|从来只|向来只)(?:买|用|穿|吃|喝|认)(?:$|[^了过一两几这那它\s])"
    r"|(?:从来|向来|一向)不(?:买|用|穿|吃|喝)"
    r"|(?i:(?:^|[^a-z])i\s+(?:only|never|always)\s+(?:buy|use|wear|eat|drink|order|get)\s)"
)
"""What the user only or never buys (我只用无香型的洗衣液, I only buy BPA-free stuff): its
object follows (not the goods at hand, :data:`_GOODS`)."""
_BUT_ONE: Final = LinearPattern(
    r"(?i:any(?:thing|\s+(?:colou?r|brand|flavou?r|material|style|scent))?\s+"
    r"(?:but|except|other than|apart from)\s)"
)
"""One refused with all the others allowed, in one clause (any colour but grey; its object
follows; 除了粉色都行 is :data:`_STANDING`'s)."""
_OTHERS_OK: Final = LinearPattern(
    r"^\s*(?:别的|其他|其它|其余|剩下的)[^，,。！？；]{0,6}?(?:都行|都可以|都好|随便|无所谓|都能接受)"
)
"""The others allowed (别的颜色都行), after a clause refusing one (:func:`_refused_before`)."""
_REFUSING: Final = LinearPattern(r"不要|别要|不想要|不喜欢|不穿|不用")
_THIS_ONE: Final = LinearPattern(r"^\s*(?:这|那)|不要了")
"""The goods at hand refused (这个不要了), not a kind of them."""


def _parts(piece: str, keys: Sequence[str]) -> dict[str, str]:
    """The words of each topic of ``keys`` in a Chinese clause said in runs of words
    (我上夜班 家里三口人 白天没人收快递): the runs from the one stating the topic up to the next
    run stating another topic, of ``keys`` or not (直接放小区东门的快递柜就行); runs before the
    first go with it, unless they ask a question. Empty when a topic's words are the whole
    clause. News of one fact then leaves no other slot quoting its old value."""
    wanted = {i: t.key for i, t in enumerate(TOPICS) if t.key in keys}
    if not wanted:
        return {}
    spans: dict[str, list[tuple[int, int]]] = {}
    owner: str | None = None
    runs = cues.RUN.spans(piece)
    for a, b in runs:
        stated = stated_in(piece[a:b])
        if stated:
            owner = next((key for i, key in wanted.items() if i in stated), "")
        if owner:
            spans.setdefault(owner, []).append((a, b))
    if not spans or (len(spans) == 1 and sum(map(len, spans.values())) == len(runs)):
        return {}
    first = min(spans.values())[0]
    if cues.QUESTION.search(piece[: first[0]]) is None:  # not the question asked first
        for held in spans.values():
            if held[0] == first:
                held[0] = (0, first[1])
    return {k: " ".join(piece[a:b] for a, b in v) for k, v in spans.items()}


def _instructing_part(piece: str, keys: Sequence[str], lang: Lang) -> str:
    """The words of a clause stating an instruction and a fact that are the instruction's
    (我在工厂上夜班 白天睡觉 电话别太早打: 电话别太早打); the whole clause otherwise."""
    parts = _parts(piece, keys) if lang == "zh" else {}
    own = [parts[k] for k in keys if k in parts and not _fact_topic(k)]
    return " ".join(dict.fromkeys(own)) if own else piece


def _fact_topic(key: str) -> bool:
    """Whether ``key`` names a fact topic (a fact about the user, not an instruction)."""
    topic = _TOPICS.get(key)
    return topic is not None and topic.fact


def _refused_before(text: str, acts: Sequence[Act]) -> int | None:
    """The index of the last clause of ``acts`` refusing a kind of goods (红色的不要, 不要带香味
    的), not the goods at hand (这个不要了), nor a question."""
    for k in range(len(acts) - 1, -1, -1):
        piece = text[acts[k].start : acts[k].end]
        if acts[k].kind is ActKind.QUESTION:
            return None
        if _REFUSING.search(piece) is not None:
            return k if _THIS_ONE.search(piece) is None else None
    return None


_STANDING: Final = LinearPattern(
    r"^\s*除了\s*[^这那它\s，,。！？；][^，,。！？；]{0,8}?(?:都行|都可以|都好|以外都|之外都)"
    r"|(?:来|上门|到|送|过来|出发)(?:之前|以前|前)[^，,。！？；]{0,3}?(?:先|提前)?(?:给我)?"
    r"(?:打个?|打一个|来个)电话"
    r"|(?:只能|只有)[^，,。！？；]{0,4}?(?:周末|周六|周日|晚上|下午|上午|中午|工作日|\d{1,2}点)"
    r"|(?i:(?:call|ring|phone|text)\s+(?:me\s+)?(?:first|ahead|beforehand)(?:$|[^a-z])"
    r"|(?:call|ring|phone|text)\s+(?:me\s+)?before\s+(?:you|they|he|she|anyone|someone|the\s+[a-z]+)\s+"
    r"(?:comes?|arrives?|heads?|leaves?|turns? up)"
    rf"|(?:can|could)\s+only\s+(?:do|come|visit|make it)\s+[^,.;!?]{{0,20}}?{_TIMES_EN}"
    rf"|only\s+(?:free|home|available|around|in)\s+[^,.;!?]{{0,12}}?{_TIMES_EN})"
)
"""A standing wish of how to be served, by its shape: one refused with the others allowed
(除了粉色都行), a call before a visit (来之前先打个电话,
ring me first), the only times they can be visited (上门的话只能周末, can only do weekdays
after 6pm)."""
_SAYING: Final = frozenset({ActKind.STATEMENT, ActKind.FACT, ActKind.PREFERENCE})
"""Clauses that tell something (not a request, a question or an instruction)."""
_PRONOUN: Final = LinearPattern(
    r"^\s*(?:而且|并且|还|也|不过|但|可)?(?:他|她)(?:$|[^们])"
    r"|(?i:^\s*(?:and\s+|but\s+|also\s+)?(?:he|she|he'?s|she'?s|they|they'?re)(?:$|[^a-z']))"
)
"""A clause that goes on about a person named before it (他糖尿病十几年了, she's 14)."""


def _going_on(text: str, acts: Sequence[Act]) -> list[tuple[Act, tuple[str, str | None]]]:
    """The clauses of a sentence that go on about the family member or pet a clause before
    them names, each with that member's slot, up to a clause that asks or instructs: by a
    pronoun ("买给我爸的，他糖尿病十几年了"), or with no subject of their own telling a trait
    ("我家狗狗十岁了，吃鸡肉会过敏"); a clause naming only whose the goods are opens a member
    and is theirs too ("孩子的，今年十一了，特别迷星星")."""
    out: list[tuple[Act, tuple[str, str | None]]] = []
    member: tuple[str, str | None] | None = None
    for act in acts:
        piece = text[act.start : act.end]
        whose = _WHOSE.search(piece)
        if _FAMILY in act.topics or _PET in act.topics:
            key = _FAMILY if _FAMILY in act.topics else _PET
            member = (key, _member(_TOPICS[key], piece))
        elif act.kind not in _SAYING:
            member = None
        elif whose is not None:
            who = whose.group(1) or ""
            member = (_FAMILY, _MEMBER_NAMES.get(who, who))
            out.append((act, member))
        elif member is not None and (
            (member[0] == _FAMILY and _PRONOUN.search(piece) is not None)
            or (member[0] == _FAMILY and _NAMES.search(piece) is not None)
            or (_SUBJECT.search(piece) is None and _told(piece, person=member[0] == _FAMILY))
        ):
            out.append((act, member))
    return out


_REFERRED: Final = LinearPattern(
    r"^\s*(?:而且|并且|还有|还|也|不过|但|可|对了|哦|另外)?[，,\s]*(?:(?P<he>他)|(?P<she>她)|(?P<it>它))"
    r"(?:$|[^们])"
    r"|(?i:^\s*(?:(?:and|but|also|oh|btw|plus)[\s,]+)?(?:(?P<he_en>he)|(?P<she_en>she)|(?P<it_en>it))"
    r"(?:'s|’s|\s))"
    r"|^\s*(?:(?:And|But|Also|Oh|Btw|Plus|and|but|also|oh|btw|plus)[\s,]+)?(?P<name>[A-Z][a-z]{2,})"
    r"(?:'s|’s|\s+(?:is|was|has|weighs|wears|turned|got)\s)"
)
"""A clause that speaks of someone by a word that does not name them: 他/她/它, he/she/it,
or a name (``Pretzel's down to 10 kg``)."""
_TRAIT: Final = LinearPattern(
    r"\d+(?:\.\d+)?(?:\s?[-~到至]\s?\d+)?\s?(?:周岁|岁|个月|公斤|斤|厘米|码)|穿\s?\d"
    r"|[一二两三四五六七八九十半]{1,3}\s?(?:周岁|岁|个月|公斤|斤)"
    r"|(?:今年|刚满|已经)\s?(?:\d{1,2}|[一二三四五六七八九十]{1,3})\s?了"
    r"|(?i:\d+(?:\.\d+)?\s?(?:kgs?|lbs?|pounds?|cm|years? old|months? old)(?:$|[^a-z]))"
)
"""A measure of a person or a pet: an age, a weight, a height, a size."""
_WORN_EN: Final = LinearPattern(
    r"(?i:(?:'s|’s|\sis|\sin|\swears?|\swearing)\s+(?:now\s+)?(?:a |size |a size )\d)"
)
"""A size said of a person in English: he's in a 13, she wears a 6."""
_NOT_A_NAME: Final = LinearPattern(
    r"^(?:Th(?:is|at|ese|ose|ere|ey)|Here|Wh(?:at|ich|o|ere|en|y)|How|The|One|Each|Every(?:thing)?|"
    r"Nothing|Something|Anything|Mine|Yours|Ours|Theirs|His|Hers|Shipping|Delivery|Order|Price|"
    r"You|Your)$"
)
"""Capitalised words that open a clause and name nobody."""


def _told(piece: str, *, person: bool) -> bool:
    """Whether ``piece`` tells a trait of someone: a measure (:data:`_TRAIT`), an allergy or
    food they cannot have (:data:`_ALLERGY`), and of a person a body part that ails them
    (:data:`_AILING`) or what they like (:data:`_LIKING`: not the goods, 'loves it')."""
    if _TRAIT.search(piece) is not None or _ALLERGY.search(piece) is not None:
        return True
    if not person:
        return False
    liked = _LIKING.search(piece)
    return _AILING.search(piece) is not None or (
        liked is not None and _GOODS.match(piece[liked.end() :]) is None
    )


_PERSONS: Final = frozenset({f"{REFERENCE}he", f"{REFERENCE}she"})


def _reference(piece: str) -> tuple[str, str] | None:
    """The reference slot (:data:`~policies.profile_merge.REFERENCE`) of a clause that tells
    a trait (:func:`_told`; a size said in English, for a person) of someone it does not
    name: ``("family", "~he")``, ``("pet", "~it")``, ``("family", "~name:Pretzel")``."""
    m = _REFERRED.search(piece)
    if m is None or _NOT_A_NAME.search(m.group("name") or "") is not None:
        return None
    person = m.group("it") is None and m.group("it_en") is None
    if not _told(piece, person=person) and not (person and _WORN_EN.search(piece) is not None):
        return None
    if m.group("name"):
        return (_FAMILY, f"{REFERENCE}name:{m.group('name')}")
    if not person:
        return ("pet", f"{REFERENCE}it")
    return (_FAMILY, f"{REFERENCE}{'he' if m.group('he') or m.group('he_en') else 'she'}")


_AILING: Final = LinearPattern(
    r"(?:膝盖|腰椎?|颈椎|腿脚?|眼睛|视力|听力|耳朵|牙齿?|牙口|肠胃|胃|心脏|血压|血糖|皮肤|关节|肩膀?|"
    r"脚|身体|睡眠|脾胃|肝|肾)[^，,。！？；]{0,3}?(?:不太?好|不行|不舒服|疼|痛|有问题|敏感|差)"
    r"|糖尿病|高血压|哮喘|湿疹|近视|老花|怕冷|怕热|胆子?小"
    r"|(?i:(?:has|had|got|with)\s+(?:a\s+)?(?:bad|weak|dodgy|sore|sensitive|gammy)\s+"
    r"(?:knees?|back|hips?|hearing|eyes?|eyesight|stomach|tummy|skin|teeth|joints?|neck|shoulders?)"
    r"|asthma|diabetes|diabetic|eczema|arthritis)"
)
"""A body part or health that ails a person: 她膝盖不好, 他腰椎不太好, has a bad knee."""
_ALLERGY: Final = LinearPattern(
    r"过敏|不耐受|不能吃|吃不了|(?i:allergic|allergy|intoleran|can'?t (?:eat|have|digest))"
)
"""An allergy or a food someone cannot have."""
_BARE_ALLERGY: Final = LinearPattern(
    r"^\s*(?:而且|因为|不过|但是?|可)?\s*(?:他|她|它)?\s*(?:也|都|会|很|特别|严重|有点|是)*\s*"
    r"(?:过敏|不能吃|吃不了)[了的啊呀哦哈\s]*$"
    r"|(?i:^\s*(?:and\s+|but\s+|because\s+|since\s+)?(?:he|she|it|they)(?:'s|’s|'re|\s+is|\s+are)?"
    r"\s+(?:[a-z]+ly\s+|very\s+|so\s+|really\s+)*allergic[\s.!]*$)"
)
"""An allergy said with no food, which the clause before names (千万别放芒果，它过敏;
nothing with sesame, she's seriously allergic)."""
_LIKING: Final = LinearPattern(
    r"(?:^|[^可恋心])(?:喜欢|爱|迷上?了?|痴迷|热爱)\s?"
    r"|(?i:(?:^|\s)(?:likes?|loves?|adores?|(?:is|'s)\s+(?:really\s+|totally\s+|super\s+|so\s+)?"
    r"(?:into|obsessed with|crazy about|mad about))\s+)"
)
"""A liking, its object after it (她喜欢跳广场舞, 特别迷星星, he loves dinosaurs)."""
_KIND_ONLY: Final = LinearPattern(
    r"(?i:^\s*(?:[a-z][a-z-]*\s+){0,3}[a-z][a-z-]*\s+only(?:\s+please)?\s*$)"
)
_HAND_START: Final = LinearPattern(
    r"(?i:^\s*(?:this|that|these|those|the|just|it|one|only)(?:$|[^a-z]))"
)


def _kind_only(piece: str) -> bool:
    """Whether a clause asks for a kind of goods only, as a standing wish ("alcohol-free
    products only", "unscented detergent only please"; not the goods at hand: "this one
    only", "just the charger only")."""
    return _KIND_ONLY.search(piece) is not None and _HAND_START.search(piece) is None


_GOODS: Final = LinearPattern(
    r"\s*(?:$|[，,。！？!?；;]|这|那|它|(?i:(?:it|this|that|them|these|those|you)(?:$|[^a-z])))"
)
"""What a liking of the goods at hand has after it (她很喜欢，she loves it)."""
_SUBJECT: Final = LinearPattern(r"[我你您咱]|(?i:(?:^|[^a-z])(?:i|you|we|i'm|we're)(?:$|[^a-z']))")
"""A clause with a subject of its own (the user, the agent): no trait of a member before it."""
_WHOSE: Final = LinearPattern(
    r"^\s*(?:是|这是|都是)?(?:给|帮|为)?(?:我|我家)?(儿子|女儿|闺女|孩子|宝宝|老婆|老公|媳妇|爸爸|妈妈|"
    r"爸妈|父母|老爸|老妈|外婆|外公|奶奶|爷爷)(?:买)?的\s*$"
)
"""A clause naming only whose the goods are (孩子的, 给我妈的): a member opened."""
_PET: Final = "pet"
_ANIMAL: Final = LinearPattern(
    rf"((?:{PET_ZH}))|(?i:(?:^|[^a-z])(?:a|an)\s+((?:[a-z]+\s+){{0,2}}(?:{PET_EN}))(?:$|[^a-z]))"
)
"""An animal named (适合金毛的, a Bernese mountain dog): what ours may go on about."""
_OURS: Final = LinearPattern(
    r"^\s*(?:我家的|我们家的|我家那只|我们家那只)|(?i:^\s*(?:ours|mine)(?:'s|’s|\s+is|\s+weighs))"
)
"""A clause opening with ours or mine of an animal just named."""
_NAMES: Final = LinearPattern(r"^\s*(?:and\s+)?[A-Z][a-z]+(?:\s*(?:,|and|&)\s*[A-Z][a-z]+)*\s*$")
"""A clause of names alone, after a member: theirs (my twins, Mia and Leo)."""

_SIZE: Final = "size"
_BEFORE_SIZE: Final = {"zh": 6, "en": 16}
"""How far before a size a past-time cue makes it a size no longer worn (characters)."""
_NOT_THIS_SIZE: Final = LinearPattern(
    r"(?:不|别|没|不再|不要|不是)\s*$"
    r"|(?i:(?:not|no|never|n't|instead of|rather than)\s+(?:an?\s+)?$)"
)
"""A refusal right before a size: 不买M, not a 7."""
_MISFIT: Final = LinearPattern(
    r"^[^，,。！？；]{0,4}?(?:太小|太大|太紧|太松|偏小|偏大|小了|大了|紧了|勒|绷|不合适|穿不下)"
    r"|(?i:^[^,.;!?]{0,12}?(?:too (?:tight|small|big|loose|large|short|long)|doesn'?t fit|"
    r"didn'?t fit|no longer fits?))"
)
"""A size said not to fit, right after it: W32 is too tight, M码勒得慌."""


_SIZE_ASKED: Final = LinearPattern(
    r"(?:多大|什么|几)(?:码|号)|尺码|码数|穿多大"
    r"|(?i:(?:what|which|your)\s+(?:shoe\s+|collar\s+|dress\s+)?size|size\s+do\s+you)"
)
"""The agent asking the user's size (亲穿多大码呢, What size do you wear?)."""
_SIZE_SPOKEN: Final = LinearPattern(
    r"(?:^|[^维证密件])码|尺寸|合脚|挤脚|偏小|偏大|(?i:sizes?|sizing|fits?|fitting|"
    r"too (?:small|big|tight|loose))"
)
"""A clause speaking of size or fit: a bare number after it is a size."""
_BARE_SIZE: Final = {
    "zh": LinearPattern(
        r"^\s*(?:还是|就|要|换|穿)?\s*(\d{2,3}(?:\.5)?)\s*(?:码|号)?\s*的?\s*(?:吧|呀|啊|哈|哦)?\s*$"
    ),
    "en": LinearPattern(
        r"(?i:^\s*(?:(?:a|size|in|still|it'?s|just)\s+)*((?:[1-9]|1\d|2[0-4])(?:\.5)?)\s*$)"
    ),
}
"""A clause that is a size-shaped number alone (41 的, 10.5)."""
_FITS: Final = {
    "zh": LinearPattern(
        r"(\d{2,3}(?:\.5)?)\s*(?:码|号)\s*的?\s*(?:正好|刚好|合适|合脚|合身)"
        r"|(\d{2,3}(?:\.5)?)\s*的?\s*(?:穿着|穿起来)?(?:正好|刚好)?(?:合脚|合身)"
    ),
    "en": LinearPattern(
        r"(?i:(?:the|a|my|in)\s+(?:size\s+)?((?:[1-9]|1\d|2[0-4])(?:\.5)?)\s+"
        r"(?:fits?|fitted|is (?:perfect|right|spot on|fine|good))(?:$|[^a-z]))"
    ),
}
"""A size said to fit (39 的刚好合脚, the 10.5 fits)."""


def _asks_size(said: str) -> bool:
    """Whether the agent's turn ``said`` asks the user's size."""
    return cues.QUESTION.search(said) is not None and _SIZE_ASKED.search(said) is not None


def _settled_size(words: str, lang: Lang) -> str | None:
    """The size a clause settles on, in its one spelling, with the clause when that is the
    only size and the only number it names and it refuses nothing ("鞋码 43，宽楦"); else
    the last one neither refused, past nor said not to fit ("一般都穿L 下次不买M了": ``L码``)."""
    found = sizes.size_values(words, lang)
    kept = [
        spelt
        for a, b, spelt in found
        if not negated(words, a, lang)
        and _MISFIT.search(words[b - (not words[b - 1].isalnum()) :][: 2 * _BEFORE_SIZE[lang]])
        is None
        and _NOT_THIS_SIZE.search(words[max(0, a - _BEFORE_SIZE[lang]) : a]) is None
        and cues.PAST.search(words[max(0, a - _BEFORE_SIZE[lang]) : a]) is None
    ]
    if not kept:
        return None
    others = len(cues.NUMBER.spans(words)) > sum(
        len(cues.NUMBER.spans(words[a:b])) for a, b, _ in found
    )
    quiet = cues.NEGATION.search(words) is None and not others  # no other value to misquote
    if len(kept) == len(found) and len(set(kept)) == 1 and quiet:
        return f"{kept[-1]}（{words}）" if lang == "zh" else f"{kept[-1]} ({words})"
    return kept[-1]


_QUOTED: Final = LinearPattern(r"^(?P<value>[^（(]+?)\s?[（(](?P<words>.*)[）)]$")
"""A size kept with the words that said it: ``L码（换L吧）``, ``W34 (I'm a W34 now)``."""


def _one_size_once(kept: list[str], lang: Lang) -> list[str]:
    """The sizes the clauses of a sentence settle on, each value once, with the words of
    every clause that said it ("换L吧 以后都买L": ``L码（换L吧，以后都买L）``, not the value
    twice)."""
    said: dict[str, list[str]] = {}
    for words in kept:
        m = _QUOTED.match(words)
        value, quote = (m.group("value"), m.group("words")) if m is not None else (words, None)
        said.setdefault(value or words, []).append(quote or "")
    out = []
    for value, quotes in said.items():
        joined = ("，" if lang == "zh" else ", ").join(quotes)
        if not all(quotes):
            out.append(value)
        else:
            out.append(f"{value}（{joined}）" if lang == "zh" else f"{value} ({joined})")
    return out


def _member(topic: Topic, piece: str) -> str | None:
    """The family member a family fact is about (its slot's scenario)."""
    if topic.key != "family":
        return None
    return _member_named(MEMBER_OF.search(piece))


def _member_named(m: LinearMatch | None) -> str | None:
    """The family member a :data:`MEMBER_OF` match names, in its one spelling (媳妇: 老婆)."""
    who = (m.group(1) or "").lower() if m is not None else ""
    return _MEMBER_NAMES.get(who, who) or None


_WORN_BY: Final = LinearPattern(
    r"(?:^|[^我])(?:他|她)(?:们)?|(?i:(?:^|[^a-z'])(?:he|she)(?:'s|’s|$|[^a-z']))"
)
"""A third person as the subject of a size (她穿37, he's a 10)."""
_SELF_WORN: Final = LinearPattern(
    r"我自己|我(?:平时|一般)?穿|(?i:(?:^|[^a-z'])(?:i|i'm|i am|me|my own|myself)(?:$|[^a-z']))"
)
"""The user as the wearer (我自己穿42, I'm a 10)."""


def _wearer(before: str, piece: str) -> str | None:
    """The family member a size clause is about (its slot's scenario): one it names before
    the size (我儿子穿130的, my husband wears a 10.5), or one the sentence named before a
    clause saying 他/她, he/she (给我老公买双鞋，他穿43); none when the user wears it."""
    if _SELF_WORN.search(piece) is not None:
        return None
    m = MEMBER_OF.search(piece)
    if m is None and _WORN_BY.search(piece) is not None:
        m = MEMBER_OF.search(before)
    return _member_named(m)


def _disowning(turns: Sequence[Turn], summary: SessionSummary) -> list[Observation]:
    """A :data:`~policies.profile_merge.DISOWNED` observation for each thing a user turn
    disowns of what they told an earlier session (:func:`disowned`): its value says it is
    not so, with the user's account of what holds instead."""
    out = []
    index = summary.turn_index or tuple(range(len(turns)))
    lang = summary.language
    for i in index:
        turn = turns[i]
        if turn.role != "user":
            continue
        at = turn.time or summary.occurred_at
        at = at.replace(tzinfo=UTC) if at.tzinfo is None else at
        for d in disowned(turn.text, lang):
            said = f"不是{d.words}" if lang == "zh" else f"not {d.words}"
            if d.now:
                said += f"：{d.now}" if lang == "zh" else f": {d.now}"
            out.append(
                Observation(
                    ObservationKind.FACT, DISOWNED, said, summary.session_id, at, replaces=d.words
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
        observations, instructions = observe_session(turns, summary)
        instructions = acknowledged(turns, instructions, summary.language)
        kept: list[Observation] = []
        temporary = 0
        for o in observations:
            if o.kind is ObservationKind.TEMPORARY:
                temporary += 1
                if temporary > self.config.max_temporary:
                    continue
            kept.append(o)
        disowns = _disowning(turns, summary)
        kept += disowns
        gone = ["".join((o.replaces or "").split()).casefold() for o in disowns]
        instructions = [  # a note of what the user disowned in the same session
            i
            for i in instructions
            if not any(g in "".join(i.text.split()).casefold() for g in gone)
        ]
        withdrawn = summary.dialogue.withdrawn_topics
        kept += [
            Observation(
                ObservationKind.FACT,
                key,
                "",
                summary.session_id,
                summary.occurred_at,
                negated=True,
            )
            for key in withdrawn
            if key in _TOPICS and _TOPICS[key].fact
        ]
        return Extraction(
            tuple(kept),
            source=self.name,
            instructions=tuple(instructions),
            withdrawn=tuple(k for k in withdrawn if k not in _TOPICS or not _TOPICS[k].fact),
            revoked=tuple(
                name
                for t in turns
                if t.role == "user"
                for name in revoked(t.text, summary.language)
            ),
        )

    def close(self) -> None:
        """Nothing to release."""
