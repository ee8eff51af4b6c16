"""Profile extraction by a chat model: an OpenAI-compatible ``POST {base_url}/chat/completions``.

Optional (the default is rules + NER, :mod:`unstructured_memory.profile.rules`).
The transcript is sent **masked** (:func:`policies.pii.mask_pii`: no clear PII
leaves the process), with a prompt asking for lines of two kinds::

    [画像] 事实|设备型号|扫地机|比特 S10 Pro
    [画像] 偏好|预算|父母|500元
    [画像] 临时|下周出差，暂时不报销
    [记录] 用户因订单 88231 的扫地机无法回充申请退款，退款编号 RF20260629001，客服已发起退款

``[画像]`` lines become observations (facts: 设备型号, 会员等级; preferences:
通知渠道, 内容形式, 预算 per scenario; temporary intents), ``[记录]`` lines the
record sentence (masked again; any identifier the rules found and the sentence
left out is appended, so nothing is lost). The address stays with the rules,
which see it locally and vault it.

Any failure (timeout, transport error, an HTTP error status, a body that is
not a chat completion, a line of another shape, an unknown key or value, no
``[记录]`` line) falls back to the rules' extraction: the session is never lost.
The fallback is logged as a warning with a reason code and never any text.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from types import TracebackType
from typing import Any, Final

import httpx

from policies.linear_re import LinearPattern
from policies.pii import mask_pii
from policies.profile_merge import Observation, ObservationKind
from unstructured_memory.profile.base import Extraction, Instruction, note_key
from unstructured_memory.profile.registry import ChatExtractorConfig, RuleExtractorConfig
from unstructured_memory.profile.rules import (
    MAX_INSTRUCTION_CHARS,
    MAX_TEMPORARY_CHARS,
    MAX_VALUE_CHARS,
    RuleExtractor,
)
from unstructured_memory.summariser.amended import substitute
from unstructured_memory.summariser.entities import ID_LABELS
from values.sessions import SessionSummary, Turn

__all__ = ["PROMPT", "ChatExtractor", "ChatExtractorConfig", "checked", "parse_answer"]

_log = logging.getLogger(__name__)

PROMPT: Final = "\n".join(
    (
        "你是电商客服系统的记忆整理助手。阅读下面的客服对话（个人信息已打码），"
        "只输出下列格式的行，每行一条，不要输出任何其他内容：",
        "[画像] 事实|会员等级|<值>",
        "[画像] 事实|设备型号|<品类>|<型号>  （用户自己拥有的设备，品类如 手机、扫地机）",
        "[画像] 偏好|<键>|<场景>|<值>  （顺带提到的偏好。键：通知渠道，"
        "值：微信、短信、邮件、电话、APP；内容形式，值：文字、图文、视频；这两种的场景写 通用。"
        "预算，场景：自用、父母、孩子、送礼、办公、通用，值如 500元、2000-3000元）",
        "[画像] 指令|<键>|<场景>|<值>  （用户直接要求以后都这样对待他，"
        "如 以后都用微信通知我；键和值同 偏好）",
        "[画像] 拒绝|<键>|<值>  （用户明确不要的渠道或形式，"
        "如 别再发邮件了 写 拒绝|通知渠道|邮件）",
        "[画像] 嘱咐|<主题>|<用户原话>  （没有上述键的长期要求；"
        "主题：快递、收货方式、联系时间、送货时间、发票、包装、其他）",
        "[画像] 临时|<内容>  （只在近期有效的打算，如 下周出差，暂时不报销；不要写成偏好）",
        "[记录] <一句话交互记录：用户最终的诉求、对话中出现的全部编号"
        "（订单、退款、退换货、工单、优惠券、发票、运单等）、客服给出的结果>",
        "后面的话修正前面的话：用户更正的值（说错了、不是 X 是 Y）只写更正后的；"
        "用户撤回、取消或否定的诉求不要写进记录（退货就算了、不是要退款）；"
        "在几个选项中最终选定的，只写选定的那个和它自己的价格。",
        "只写用户明确说过的画像信息；没有就只输出 [记录] 行。",
    )
)
"""The system prompt: the line formats the answer must follow, and the amendment rules
(the answer is checked against the rules' reading of the same turns as well)."""

_TOPIC_KEYS: Final = {
    "快递": "carrier",
    "收货方式": "dropoff",
    "联系时间": "contact_time",
    "送货时间": "delivery_time",
    "发票": "invoice",
    "包装": "packaging",
}
"""The topics of a 嘱咐 line, by the explicit fact key they become (others: a note)."""

_ROLES: Final = {"user": "用户", "assistant": "客服", "system": "系统"}
_FACT_KEYS: Final = {"会员等级": "member_level", "设备型号": "device_model"}
_PREFERENCES: Final[dict[str, tuple[str, dict[str, str] | None]]] = {
    "通知渠道": (
        "notification_channel",
        {"微信": "wechat", "短信": "sms", "邮件": "email", "电话": "phone", "APP": "app_push"},
    ),
    "内容形式": ("content_format", {"文字": "text", "图文": "image_text", "视频": "video"}),
    "预算": ("budget", None),
}
_SCENARIOS: Final = {
    "自用": "self",
    "父母": "parents",
    "孩子": "child",
    "送礼": "gift",
    "办公": "work",
    "通用": None,
    "": None,
}
_LINE = LinearPattern(r"^\[(画像|记录)\]\s*(.*)$")
_FENCE = LinearPattern(r"^```[A-Za-z]*$")


class Malformed(ValueError):
    """An answer that does not follow the prompt's formats; ``reason`` is a code."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _fields(body: str, low: int, high: int) -> list[str]:
    parts = [p.strip() for p in body.split("|")]
    if not low <= len(parts) <= high or not all(parts[-1:]):
        raise Malformed("bad_fields")
    return parts


class _Make:
    """Observations of one answer, stamped with the session's id and time."""

    def __init__(self, summary: SessionSummary) -> None:
        self.summary = summary

    def __call__(
        self,
        k: ObservationKind,
        key: str,
        value: str,
        scenario: str | None = None,
        *,
        explicit: bool = False,
        negated: bool = False,
    ) -> Observation:
        limit = MAX_TEMPORARY_CHARS if k is ObservationKind.TEMPORARY else MAX_VALUE_CHARS
        masked = mask_pii(value)[0]
        if len(masked) > limit:
            raise Malformed("value_too_long")
        s = self.summary
        return Observation(
            k,
            key,
            masked,
            s.session_id,
            s.occurred_at,
            scenario=scenario,
            explicit=explicit,
            negated=negated,
        )


def _temporary(rest: list[str], make: _Make) -> Observation:
    if len(rest) != 1:
        raise Malformed("bad_fields")
    return make(ObservationKind.TEMPORARY, "intent", rest[0])


def _fact(rest: list[str], make: _Make) -> Observation:
    if not rest or rest[0] not in _FACT_KEYS:
        raise Malformed("unknown_key")
    key = _FACT_KEYS[rest[0]]
    if key == "device_model" and len(rest) == 3:
        return make(ObservationKind.FACT, key, rest[2], scenario=mask_pii(rest[1])[0] or None)
    if len(rest) != 2:
        raise Malformed("bad_fields")
    return make(ObservationKind.FACT, key, rest[1])


def _preference(rest: list[str], make: _Make, *, explicit: bool = False) -> Observation:
    if len(rest) != 3 or rest[0] not in _PREFERENCES:
        raise Malformed("unknown_key")
    key, values = _PREFERENCES[rest[0]]
    scenario, value = rest[1], rest[2]
    if values is not None:
        if value not in values:
            raise Malformed("unknown_value")
        return make(ObservationKind.PREFERENCE, key, values[value], explicit=explicit)
    if scenario not in _SCENARIOS:
        raise Malformed("unknown_scenario")
    return make(
        ObservationKind.PREFERENCE, key, value, scenario=_SCENARIOS[scenario], explicit=explicit
    )


def _instructed(rest: list[str], make: _Make) -> Observation:
    """A 指令 line: a preference said as a direct instruction, stable at once."""
    return _preference(rest, make, explicit=True)


def _refusal(rest: list[str], make: _Make) -> Observation:
    """A 拒绝 line: a channel or format the user refuses."""
    if len(rest) != 2 or rest[0] not in _PREFERENCES:
        raise Malformed("unknown_key")
    key, values = _PREFERENCES[rest[0]]
    if values is None or rest[1] not in values:
        raise Malformed("unknown_value")
    return make(ObservationKind.PREFERENCE, key, values[rest[1]], explicit=True, negated=True)


def _instruction(rest: list[str], make: _Make) -> Instruction:
    """A 嘱咐 line: the user's words on a topic no profile field holds."""
    del make  # an instruction is no observation
    if len(rest) != 2:
        raise Malformed("bad_fields")
    words = mask_pii(rest[1])[0]
    if len(words) > MAX_INSTRUCTION_CHARS:
        raise Malformed("value_too_long")
    key = _TOPIC_KEYS.get(rest[0])
    if key is None:
        key = note_key(words)
    return Instruction(key, words)


_READERS: Final[dict[str, Callable[[list[str], _Make], Observation | Instruction]]] = {
    "临时": _temporary,
    "事实": _fact,
    "偏好": _preference,
    "指令": _instructed,
    "拒绝": _refusal,
    "嘱咐": _instruction,
}
"""How each kind of [画像] line is read."""


def _profile_line(body: str, summary: SessionSummary) -> Observation | Instruction:
    parts = _fields(body, 2, 4)
    reader = _READERS.get(parts[0])
    if reader is None:
        raise Malformed("unknown_key")
    return reader(parts[1:], _Make(summary))


def parse_answer(answer: str, summary: SessionSummary) -> Extraction:
    """The extraction an answer holds; :class:`Malformed` for any line out of format.

    The record sentence is masked, and the identifiers of ``summary`` it lacks are
    appended to it.
    """
    observations: list[Observation] = []
    instructions: list[Instruction] = []
    record: list[str] = []
    for raw in answer.splitlines():
        line = raw.strip()
        if not line or _FENCE.fullmatch(line) is not None:
            continue
        m = _LINE.fullmatch(line)
        if m is None:
            raise Malformed("unexpected_line")
        body = (m.group(2) or "").strip()
        if m.group(1) == "记录":
            if body:
                record.append(body)
        else:
            said = _profile_line(body, summary)
            if isinstance(said, Instruction):
                instructions.append(said)
            else:
                observations.append(said)
    if not record:
        raise Malformed("no_record")
    text = mask_pii(" ".join(record))[0]
    ids = [e.text for e in summary.entities if e.type in ID_LABELS]
    missing = list(dict.fromkeys(i for i in ids if i not in text))
    if missing:
        joined = "、".join(missing) if summary.language == "zh" else ", ".join(missing)
        text += f"（编号：{joined}）" if summary.language == "zh" else f" (ids: {joined})"
    return Extraction(tuple(observations), record_text=text, instructions=tuple(instructions))


def checked(
    parsed: Extraction, turns: Sequence[Turn], summary: SessionSummary, rules: Extraction
) -> Extraction:
    """The model's extraction after the amendment rules it was asked to follow, checked
    against the rules' reading of the same turns: a corrected value is replaced by the
    right one wherever the model kept it (record and values), and a value the user
    refused or withdrew is never kept as wanted."""
    texts = [turns[i].text for i in summary.turn_index] if summary.turn_index else []
    pairs = summary.dialogue.pairs(texts) if texts else []
    refused = {(o.slot, o.value) for o in rules.observations if o.negated}
    withdrawn = set(rules.withdrawn)
    observations = tuple(
        replace(o, value=substitute(o.value, pairs))
        for o in parsed.observations
        if o.negated or (o.slot, o.value) not in refused
    )
    return replace(
        parsed,
        observations=observations,
        record_text=None if parsed.record_text is None else substitute(parsed.record_text, pairs),
        instructions=tuple(
            replace(i, text=substitute(i.text, pairs))
            for i in parsed.instructions
            if i.key not in withdrawn
        ),
    )


class ChatExtractor:
    """Extraction by a chat model, falling back to the rules; owns an ``httpx.Client``.

    The constructor does no I/O.
    """

    def __init__(self, config: ChatExtractorConfig) -> None:
        self.config = config
        headers = {"Content-Type": "application/json"}
        if config.api_key is not None:
            headers["Authorization"] = f"Bearer {config.api_key.get_secret_value()}"
        self._url = config.base_url.rstrip("/") + "/chat/completions"
        self._client = httpx.Client(headers=headers, timeout=config.timeout_s)
        self._rules = RuleExtractor(RuleExtractorConfig(max_temporary=config.max_temporary))

    @property
    def name(self) -> str:
        """``openai-<model>``."""
        return f"openai-{self.config.model}"

    def extract(self, turns: Sequence[Turn], summary: SessionSummary) -> Extraction:
        """The model's extraction checked against the rules' reading of the same turns
        (:func:`checked`), or the rules' (``fallback`` set) when it fails."""
        rules = self._rules.extract(turns, summary)
        try:
            answer = self._ask(turns)
            parsed = checked(parse_answer(answer, summary), turns, summary, rules)
        except Malformed as exc:
            reason = exc.reason
        except httpx.TimeoutException:
            reason = "timeout"
        except httpx.HTTPError as exc:
            reason = f"transport_{type(exc).__name__}"
        else:
            return self._with_rules(parsed, rules)
        _log.warning("profile extractor %s fell back to the rules: %s", self.name, reason)
        return replace(rules, fallback=reason)

    def _with_rules(self, parsed: Extraction, rules: Extraction) -> Extraction:
        """The model's observations, plus the rules' address, their slots it left empty and
        their instructions and refusals (a direct instruction is never left to chance);
        the instructions of both, the rules' withdrawals."""
        given = {o.slot for o in parsed.observations if o.kind is not ObservationKind.TEMPORARY}
        temporary = [o for o in parsed.observations if o.kind is ObservationKind.TEMPORARY]
        kept = [o for o in parsed.observations if o.kind is not ObservationKind.TEMPORARY]
        added = [
            o
            for o in rules.observations
            if o.kind is not ObservationKind.TEMPORARY
            and (o.slot not in given or o.explicit or o.negated)
        ]
        keys = {i.key for i in parsed.instructions}
        return Extraction(
            (*kept, *added, *temporary[: self.config.max_temporary]),
            record_text=parsed.record_text,
            source=self.name,
            instructions=(
                *parsed.instructions,
                *(i for i in rules.instructions if i.key not in keys),
            ),
            withdrawn=rules.withdrawn,
            revoked=rules.revoked,
        )

    def _ask(self, turns: Sequence[Turn]) -> str:
        dialogue = "\n".join(
            f"{_ROLES[t.role]}：{mask_pii(t.text)[0]}" for t in turns if t.text.strip()
        )
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": [
                {"role": "system", "content": PROMPT},
                {"role": "user", "content": dialogue},
            ],
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
        }
        response = self._client.post(self._url, json=body)
        if response.status_code >= 400:
            raise Malformed(f"http_{response.status_code}")
        try:
            content = response.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise Malformed("not_a_completion") from None
        if not isinstance(content, str):
            raise Malformed("not_a_completion")
        return content

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def __enter__(self) -> ChatExtractor:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
