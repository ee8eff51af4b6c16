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
from collections.abc import Sequence
from dataclasses import replace
from types import TracebackType
from typing import Any, Final

import httpx

from policies.linear_re import LinearPattern
from policies.pii import mask_pii
from policies.profile_merge import Observation, ObservationKind
from unstructured_memory.profile.base import Extraction
from unstructured_memory.profile.registry import ChatExtractorConfig, RuleExtractorConfig
from unstructured_memory.profile.rules import MAX_TEMPORARY_CHARS, MAX_VALUE_CHARS, RuleExtractor
from unstructured_memory.summariser.entities import ID_LABELS
from values.sessions import SessionSummary, Turn

__all__ = ["PROMPT", "ChatExtractor", "ChatExtractorConfig", "parse_answer"]

_log = logging.getLogger(__name__)

PROMPT: Final = "\n".join(
    (
        "你是电商客服系统的记忆整理助手。阅读下面的客服对话（个人信息已打码），"
        "只输出下列格式的行，每行一条，不要输出任何其他内容：",
        "[画像] 事实|会员等级|<值>",
        "[画像] 事实|设备型号|<品类>|<型号>  （用户自己拥有的设备，品类如 手机、扫地机）",
        "[画像] 偏好|<键>|<场景>|<值>  （键：通知渠道，值：微信、短信、邮件、电话、APP；"
        "内容形式，值：文字、图文、视频；这两种的场景写 通用。"
        "预算，场景：自用、父母、孩子、送礼、办公、通用，值如 500元、2000-3000元）",
        "[画像] 临时|<内容>  （只在近期有效的打算，如 下周出差，暂时不报销；不要写成偏好）",
        "[记录] <一句话交互记录：用户的诉求、对话中出现的全部编号"
        "（订单、退款、退换货、工单、优惠券、发票、运单等）、客服给出的结果>",
        "只写用户明确说过的画像信息；没有就只输出 [记录] 行。",
    )
)
"""The system prompt: the line formats the answer must follow."""

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


def _profile_line(body: str, summary: SessionSummary) -> Observation:
    parts = _fields(body, 2, 4)
    kind, rest = parts[0], parts[1:]

    def make(k: ObservationKind, key: str, value: str, scenario: str | None = None) -> Observation:
        limit = MAX_TEMPORARY_CHARS if k is ObservationKind.TEMPORARY else MAX_VALUE_CHARS
        masked = mask_pii(value)[0]
        if len(masked) > limit:
            raise Malformed("value_too_long")
        return Observation(
            k, key, masked, summary.session_id, summary.occurred_at, scenario=scenario
        )

    if kind == "临时" and len(rest) == 1:
        return make(ObservationKind.TEMPORARY, "intent", rest[0])
    if kind == "事实" and rest and rest[0] in _FACT_KEYS:
        key = _FACT_KEYS[rest[0]]
        if key == "device_model" and len(rest) == 3:
            return make(ObservationKind.FACT, key, rest[2], scenario=mask_pii(rest[1])[0] or None)
        if len(rest) == 2:
            return make(ObservationKind.FACT, key, rest[1])
        raise Malformed("bad_fields")
    if kind == "偏好" and len(rest) == 3 and rest[0] in _PREFERENCES:
        key, values = _PREFERENCES[rest[0]]
        said, value = rest[1], rest[2]
        if values is not None:
            if value not in values:
                raise Malformed("unknown_value")
            return make(ObservationKind.PREFERENCE, key, values[value])
        if said not in _SCENARIOS:
            raise Malformed("unknown_scenario")
        return make(ObservationKind.PREFERENCE, key, value, scenario=_SCENARIOS[said])
    raise Malformed("unknown_key")


def parse_answer(answer: str, summary: SessionSummary) -> Extraction:
    """The extraction an answer holds; :class:`Malformed` for any line out of format.

    The record sentence is masked, and the identifiers of ``summary`` it lacks are
    appended to it.
    """
    observations: list[Observation] = []
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
            observations.append(_profile_line(body, summary))
    if not record:
        raise Malformed("no_record")
    text = mask_pii(" ".join(record))[0]
    ids = [e.text for e in summary.entities if e.type in ID_LABELS]
    missing = list(dict.fromkeys(i for i in ids if i not in text))
    if missing:
        joined = "、".join(missing) if summary.language == "zh" else ", ".join(missing)
        text += f"（编号：{joined}）" if summary.language == "zh" else f" (ids: {joined})"
    return Extraction(tuple(observations), record_text=text)


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
        """The model's extraction, or the rules' (``fallback`` set) when it fails."""
        rules = self._rules.extract(turns, summary)
        try:
            answer = self._ask(turns)
            parsed = parse_answer(answer, summary)
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
        """The model's observations, plus the rules' address and their slots it left empty."""
        given = {o.slot for o in parsed.observations if o.kind is not ObservationKind.TEMPORARY}
        temporary = [o for o in parsed.observations if o.kind is ObservationKind.TEMPORARY]
        kept = [o for o in parsed.observations if o.kind is not ObservationKind.TEMPORARY]
        added = [
            o
            for o in rules.observations
            if o.kind is not ObservationKind.TEMPORARY and o.slot not in given
        ]
        return Extraction(
            (*kept, *added, *temporary[: self.config.max_temporary]),
            record_text=parsed.record_text,
            source=self.name,
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
