"""The long-term memory block an agent places right after its system prompt.

``mem.build_context(user_id, query, max_tokens=600)`` assembles, in order of
priority: the profile (always), the user's facts (those written, then what
sessions taught: an address, a device, a budget per scenario), business items
(orders, refunds, tickets: asked of their verifiers just now, a state that
could not be checked flagged as the last known one, never shown as current),
the records most relevant to the query (hybrid search, within the current
sandbox if any), and pending memories as questions to ask, never as facts.
Items are added in that order while they fit the token budget
(:func:`policies.tokens.count_tokens`, CJK counted per character); what does
not fit is counted in ``omitted``. Records are leads: the block says so and
tells the agent to confirm live state with its tools. Texts are the masked
forms the tracks store; a SENSITIVE fact shows its masked value and its vault
reference, never the clear value.

The block's types (:class:`MemoryContext`, :class:`ContextItem`, :class:`Section`)
are ``values.context``'s, re-exported here for one release.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from policies.births import BIRTH, PREGNANCY
from policies.errors import InvalidField
from policies.linear_re import LinearPattern
from policies.pii import PiiKind, mask_pii, mask_value
from policies.profile_merge import DISOWNED
from policies.superseded import (
    MARKER_EN,
    MARKER_ZH,
    refused_words,
    superseded_words,
    unsay,
)
from policies.temporary import TEMPORARY_NOTE, lapsed
from policies.tokens import count_tokens
from structured_memory.pii.fields import is_masked_leaf, is_reference
from structured_memory.repositories.learned_profile import CHANNEL_SLOT, LEARNED_KEY
from unstructured_memory.profile.rules import NOTE_PREFIX
from unstructured_memory.summariser.acts import negated
from unstructured_memory.summariser.topics import (
    CHANNEL,
    CHANNEL_CODES,
    CITY_ZH,
    DIET_NAMES,
    TOPICS,
    mentions,
)
from unstructured_memory.summariser.vehicles import vehicle_names
from values.context import ContextItem, MemoryContext, Section
from values.hits import MemoryHit
from values.records import Fact, Profile
from values.verification import Verification, VerificationStatus

__all__ = [
    "ContextItem",
    "MemoryContext",
    "Section",
    "assemble",
    "fit",
    "learned_items",
    "render",
    "replaced",
    "unsaid",
]

PENDING = "pending_confirmation"


@dataclass(frozen=True)
class _Words:
    header: str
    titles: dict[Section, str]
    profile: str
    channels: str
    never_verified: str
    unverified: str
    unknown: str
    verified: str
    question: str
    sensitive: str
    scenario: str
    link_types: dict[str, str] = field(default_factory=dict)
    learned: dict[str, str] = field(default_factory=dict)
    """Labels of the slots sessions teach (``policies.profile_merge``), by key."""
    scenarios: dict[str, str] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)
    """Words for coded values (a content format)."""
    note: str = "note"
    """The label of an instruction kept in the user's words (``note:…`` facts)."""
    disowned: str = "user's correction"
    """The label of a slot of words the user disowned that no other slot held."""
    superseded: str = MARKER_EN
    """What a record shows in place of a value the user has since replaced."""

    def fact_label(self, key: str) -> str:
        """How a fact's key is shown: a topic's label, ``note`` for a note, else the key."""
        if key.startswith(NOTE_PREFIX):
            return self.note
        return self.learned.get(key, key)


_ZH = _Words(
    header=(
        "【用户长期记忆】以下是该用户的历史信息，仅作线索：订单、退款等实时状态请先用工具核实；"
        "「待确认」的内容请向用户询问，不要当作事实。"
    ),
    titles={
        Section.PROFILE: "画像",
        Section.FACT: "偏好与事实",
        Section.BUSINESS: "业务",
        Section.RECORD: "相关记录",
        Section.QUESTION: "待确认（请询问用户）",
    },
    profile="语言 {language}；时区 {timezone}；通知渠道 {channels}",
    channels="无",
    never_verified="状态未核实，请用工具查询",
    unverified="此刻无法核实，这是上次记录的状态，请用工具查询",
    unknown="业务系统中查不到，请向用户确认编号",
    verified="已核实",
    question="之前记录到「{text}」，现在还是这样吗？",
    sensitive="{masked}（已加密，引用 {ref}）",
    scenario="{label}（{scenario}）",
    link_types={
        "order": "订单",
        "refund": "退款",
        "ticket": "工单",
        "return": "退货",
        "exchange": "换货",
        "work_order": "工单",
        "contract": "合同",
        "supplier": "供应商",
        "warehouse": "仓库",
    },
    learned={
        "address": "收货地址",
        "device_model": "设备",
        "member_level": "会员等级",
        "content_format": "内容形式",
        "budget": "预算",
        **{t.key: t.zh for t in TOPICS if t.key not in ("content_format",)},
    },
    note="用户嘱咐",
    disowned="用户更正",
    superseded=MARKER_ZH,
    scenarios={
        "self": "自用",
        "parents": "给父母",
        "child": "给孩子",
        "gift": "送礼",
        "work": "办公",
    },
    values={"image_text": "图文", "text": "文字", "video": "视频"},
)

_EN = _Words(
    header=(
        "[Long-term memory of this user] History, to use as leads only: confirm live state "
        "(orders, refunds) with your tools; ask the user about items marked to confirm."
    ),
    titles={
        Section.PROFILE: "Profile",
        Section.FACT: "Preferences and facts",
        Section.BUSINESS: "Business",
        Section.RECORD: "Relevant records",
        Section.QUESTION: "To confirm (ask the user)",
    },
    profile="language {language}; time zone {timezone}; notify by {channels}",
    channels="none",
    never_verified="not verified: check with your tools",
    unverified="could not be checked now; last known state, check with your tools",
    unknown="the system of record does not know it; confirm the number with the user",
    verified="verified",
    question='Earlier we noted "{text}". Is that still right?',
    sensitive="{masked} (encrypted, ref {ref})",
    scenario="{label} ({scenario})",
    learned={
        "address": "address",
        "device_model": "device",
        "member_level": "membership",
        "content_format": "content format",
        "budget": "budget",
        **{t.key: t.en for t in TOPICS if t.key not in ("content_format",)},
    },
    note="user's instruction",
    disowned="user's correction",
    scenarios={
        "self": "for themselves",
        "parents": "for parents",
        "child": "for a child",
        "gift": "as a gift",
        "work": "for work",
    },
    values={"image_text": "pictures and text"},
)


def _words(profile: Profile) -> _Words:
    return _EN if profile.language.lower().startswith("en") else _ZH


def _clean(value: Any) -> str:
    """A value as one masked line (PII masked again, as defence in depth)."""
    text = value if isinstance(value, str) else str(value)
    return mask_pii(" ".join(text.split()))[0]


def profile_item(profile: Profile) -> ContextItem:
    """The profile line (language, time zone, channels, simple attributes)."""
    w = _words(profile)
    channels = [c for c, on in sorted(profile.notification_preference.items()) if on]
    line = w.profile.format(
        language=profile.language,
        timezone=profile.timezone,
        channels="、".join(channels) if channels else w.channels,
    )
    extra = [
        f"{k} {_display(v)}"
        for k, v in sorted(profile.attributes.items())
        if not k.endswith("_pii") and (is_masked_leaf(v) or _scalar(v))
    ]
    if profile.profile_summary:
        extra.append(_clean(profile.profile_summary))
    return ContextItem(Section.PROFILE, "；".join([line, *extra]), ref=profile.user_id)


def fact_items(
    profile: Profile, facts: Sequence[Fact], reveal: Callable[[uuid.UUID], str]
) -> list[ContextItem]:
    """Active facts as lines; pending ones as questions; SENSITIVE ones masked; a value the
    user has replaced since (a learned slot's former value) or refused in a newer fact now
    in force (以后别再放 3B 了 against an older 家里没人就放 3B 邻居家) shown as replaced, as
    records show it (:func:`replaced`, :func:`~policies.superseded.refused_words`)."""
    w = _words(profile)
    former, channels = _superseded(profile)
    said = [
        (f.updated_at, f.value) for f in facts if f.status != PENDING and isinstance(f.value, str)
    ]
    out = []
    for f in facts:
        value = f.value
        if isinstance(value, dict) and set(value) == {"vault_id", "kind"}:
            ref = str(value["vault_id"])
            masked = mask_value(PiiKind(value["kind"]), reveal(uuid.UUID(ref)))
            shown = w.sensitive.format(masked=masked, ref=ref)
        else:
            shown = _display(value)
            newer = [v for at, v in said if at > f.updated_at]
            words = [*former, *(x for v in newer for x in refused_words(v, shown, _governed))]
            shown = unsaid(shown, words, channels, w.superseded)
        line = f"{_clean(w.fact_label(f.key))}：{shown}"
        if f.status == PENDING:
            out.append(
                ContextItem(Section.QUESTION, w.question.format(text=line), str(f.id), PENDING)
            )
        else:
            out.append(ContextItem(Section.FACT, line, str(f.id), f.status))
    return out


_SHOWN_IN_PROFILE = frozenset({"notification_channel"})
"""Learned slots the profile line already shows (a stable channel is the profile's)."""


def learned_items(profile: Profile) -> list[ContextItem]:
    """What sessions taught (``attributes["learned"]``: stable facts such as an address,
    a device or a member level, and stable preferences such as a budget per scenario)
    as lines of facts; a value holding PII shows its masked form only."""
    w = _words(profile)
    out: list[ContextItem] = []
    for slot, entry in _learned_entries(profile):
        key, _, scenario = slot.partition("@")
        label = w.disowned if key.startswith(f"{DISOWNED}:") else w.learned.get(key, key)
        if scenario:
            label = w.scenario.format(label=label, scenario=w.scenarios.get(scenario, scenario))
        value = entry["value"]
        shown = _display(w.values.get(value, value) if isinstance(value, str) else value)
        out.append(ContextItem(Section.FACT, f"{_clean(label)}：{shown}", f"learned:{slot}"))
    return out


def _learned_entries(
    profile: Profile, *, all_slots: bool = False
) -> list[tuple[str, dict[str, Any]]]:
    """The learned slots the fact lines show (``attributes["learned"]``, facts then
    preferences, each by slot; the profile line's slots left out unless ``all_slots``),
    with their entries."""
    learned = profile.attributes.get(LEARNED_KEY)
    out = []
    for part in ("facts", "preferences"):
        entries = learned.get(part) if isinstance(learned, dict) else None
        for slot, entry in sorted(entries.items() if isinstance(entries, dict) else ()):
            key = str(slot).partition("@")[0]
            shown = all_slots or key not in _SHOWN_IN_PROFILE
            if shown and isinstance(entry, dict) and "value" in entry:
                out.append((str(slot), entry))
    return out


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def _display(value: Any) -> str:
    """A stored JSON value as one masked line: a masked leaf shows its masked text, a
    vault reference only that it is encrypted; no vault id or clear value leaks."""
    if is_masked_leaf(value):
        return _clean(value["masked"])
    if is_reference(value):
        return "[encrypted]"
    if isinstance(value, dict):
        return "，".join(f"{_clean(k)} {_display(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "，".join(_display(v) for v in value)
    return _clean(value)


def business_items(profile: Profile, checks: Sequence[Verification]) -> list[ContextItem]:
    """Business entities with the state their system of record gave just now; a state
    that could not be checked is shown as the last known one, flagged, never as current."""
    w = _words(profile)
    out = []
    for v in checks:
        name = w.link_types.get(v.entity_type, v.entity_type)
        if v.current and v.state is not None:
            at = f" {v.as_of:%Y-%m-%d %H:%M}" if v.as_of else ""
            text = f"{name} {v.entity_id}：{_clean(v.state)}（{w.verified}{at}）"
        elif v.status is VerificationStatus.UNKNOWN:
            text = f"{name} {v.entity_id}（{w.unknown}）"
        elif v.previous_state is not None:
            text = f"{name} {v.entity_id}：{_clean(v.previous_state)}（{w.unverified}）"
        else:
            text = f"{name} {v.entity_id}（{w.never_verified}）"
        out.append(ContextItem(Section.BUSINESS, text, f"{v.entity_type}:{v.entity_id}", v.status))
    return out


_NAMED: Final = frozenset({"city", "device_model"})
"""Learned slots whose value is a place or a thing: a longer former value is replaced by
the names it holds (:func:`~policies.superseded.superseded_words`)."""
_CITY: Final = LinearPattern(rf"(?:{CITY_ZH})(?:[\u4e00-\u9fff]{{1,5}}?(?:新区|区|县))?")
"""A city of residence and its district (南京鼓楼区)."""
_CITY_NAME: Final = LinearPattern(rf"(?:{CITY_ZH})")
_DIET: Final = LinearPattern(DIET_NAMES)
_AS_SAID: Final = LinearPattern(r"[（(](?P<said>[^（）()]{2,24})[）)]")
"""The words an amount was said in, after its value (5000元（五千以内）, $800 (under 800))."""


def _superseded(profile: Profile) -> tuple[tuple[str, ...], frozenset[str]]:
    """What the learned slots held before their current values: the words naming those
    values, and the former notification channels (:func:`replaced`)."""
    slots = []
    for slot, entry in _learned_entries(profile, all_slots=True):
        now = entry["value"]
        now = now.get("masked") if isinstance(now, dict) else now
        slots.append((slot, now, tuple(entry.get("formerly", ()))))
    return replaced(slots)


def replaced(
    slots: Iterable[tuple[str, Any, Sequence[Any]]],
) -> tuple[tuple[str, ...], frozenset[str]]:
    """Of ``slots`` (a learned slot, its value now, the values it held before), the words
    that name a former value and not the current one
    (:func:`~policies.superseded.superseded_words`; of a city, the cities and districts it
    names too; of a diet, its names; of a car, its names without maker or year; of a
    budget, the words it was said in; of a pregnancy a birth ended, its words), unless the
    current one states them too, not only to deny them; and the notification channels the
    user was reached by before (codes)."""
    words: list[str] = []
    channels: set[str] = set()
    for slot, now, formerly in slots:
        key = slot.partition("@")[0]
        if key == CHANNEL_SLOT:
            channels |= {c for c in formerly if isinstance(c, str) and c != now}
            continue
        for former in formerly:
            if not (isinstance(former, str) and isinstance(now, str)):
                continue
            said = list(superseded_words(former, "", names=key in _NAMED))
            if key == "city":
                said += _cities(former)
            if key == "diet":
                said += [former[a:b] for a, b in _DIET.spans(former)]
            if key == "vehicle":
                said += vehicle_names(former)
            if key == "family" and BIRTH.search(now) is not None:  # expecting no more
                said += [former[a:b] for a, b in PREGNANCY.spans(former)]
            if key == "budget":  # as said: 5000元（五千以内）
                said += [m.group("said") or "" for m in _AS_SAID.finditer(former)]
            words += [w for w in said if not _affirmed(now, w)]
    return tuple(dict.fromkeys(words)), frozenset(channels)


_DENIED_BEFORE: Final = LinearPattern(r"(?:不是|并非|并不是)\s*$")
"""A denial right before a word (不是地暖: what a disowned statement's value says)."""


def _affirmed(now: str, word: str) -> bool:
    """Whether ``now`` states ``word`` (case and spaces aside) somewhere no negation governs
    and no denial stands right before ("not just vegetarian", 不住南京了, 不是地暖 deny it)."""
    if "".join(word.split()).casefold() not in "".join(now.split()).casefold():
        return False
    low, wanted = now.lower(), word.lower()
    at = low.find(wanted) if len(low) == len(now) else -1
    if at < 0:
        return True  # held, spaced or cased otherwise: taken as stated
    while at >= 0:
        denied = _DENIED_BEFORE.search(now[max(0, at - 4) : at]) is not None
        if not denied and not _governed(now, at, at + len(wanted)):
            return True
        at = low.find(wanted, at + 1)
    return False


def _cities(former: str) -> list[str]:
    """The cities a former city value names, each with its district and alone (南京鼓楼区,
    南京)."""
    out = []
    for a, b in _CITY.spans(former):
        named = former[a:b]
        city = _CITY_NAME.match(named)
        for word in (named, "" if city is None else named[: city.end()]):
            if word and word not in out:
                out.append(word)
    return out


def unsaid(text: str, words: Sequence[str], channels: frozenset[str], marker: str) -> str:
    """``text`` with ``words`` (:func:`replaced`) and each channel of ``channels`` named as
    the way to reach the user (微信通知我, email me) shown as replaced; a channel refused
    there stays as said (别再发微信了)."""
    if channels:
        spans = [
            (m.start, m.end)
            for m in mentions(text, CHANNEL, CHANNEL_CODES)
            if m.code in channels and not _governed(text, m.start, m.end)
        ]
        for a, b in sorted(spans, reverse=True):
            text = f"{text[:a]}{marker}{text[b:]}"
    return unsay(text, words, marker) if words else text


def record_items(
    profile: Profile, hits: Sequence[MemoryHit], facts: Sequence[Fact] = ()
) -> list[ContextItem]:
    """Search hits as dated lines; pending ones as questions. A value the user has since
    replaced (a learned slot's former value) or refused in an instruction now in force (a
    fact's words: ``以后别再往星河大厦送了``) is shown as updated (:mod:`policies.superseded`);
    a temporary intent whose time is over is left out (:mod:`policies.temporary`)."""
    w = _words(profile)
    former, channels = _superseded(profile)
    said = [f.value for f in facts if f.status != PENDING and isinstance(f.value, str)]
    now = datetime.now(UTC)
    out = []
    for h in hits:
        if h.metadata.get("note") == TEMPORARY_NOTE and lapsed(h.text, h.occurred_at, now):
            continue
        text = _clean(h.text)
        words = [*former, *(x for s in said for x in refused_words(s, text, _governed))]
        text = unsaid(text, words, channels, w.superseded)
        if h.status == PENDING:
            out.append(
                ContextItem(
                    Section.QUESTION, w.question.format(text=text), str(h.memory_id), PENDING
                )
            )
        else:
            out.append(
                ContextItem(Section.RECORD, f"[{h.occurred_at:%Y-%m-%d}] {text}", str(h.memory_id))
            )
    return out


def _governed(text: str, at: int, end: int | None) -> bool:
    """Whether a negation governs ``text[at:end]`` (the acts' :func:`negated`)."""
    return negated(text, at, "en" if text.isascii() else "zh", end)


def render(header: str, titles: dict[Section, str], items: Sequence[ContextItem]) -> str:
    """The block: the header, then each non-empty section with its title, in order."""
    lines = [header]
    for section in Section:
        chosen = [i for i in items if i.section is section]
        if not chosen:
            continue
        if section is Section.PROFILE:
            lines.append(f"{titles[section]}：{chosen[0].text}")
            continue
        lines.append(f"{titles[section]}：")
        lines += [f"- {i.text}" for i in chosen]
    return "\n".join(lines)


def fit(
    header: str, titles: dict[Section, str], items: Sequence[ContextItem], budget: int
) -> tuple[str, list[ContextItem], int]:
    """The largest prefix-by-priority of ``items`` whose rendering fits ``budget`` tokens.

    Items are taken in order of priority (sections in :class:`Section` order,
    then as given); one that does not fit is left out and counted, and smaller
    ones after it may still fit. Raises :class:`InvalidField` when not even the
    header fits.
    """
    minimum = count_tokens(render(header, titles, []))
    if budget < minimum:
        raise InvalidField(f"max_tokens must be at least {minimum}", field="max_tokens")
    ordered = sorted(items, key=lambda i: list(Section).index(i.section))
    chosen: list[ContextItem] = []
    omitted = 0
    for item in ordered:
        trial = [*chosen, item]
        if count_tokens(render(header, titles, trial)) <= budget:
            chosen = trial
        else:
            omitted += 1
    return render(header, titles, chosen), chosen, omitted


def assemble(
    profile: Profile,
    facts: Sequence[Fact],
    checks: Sequence[Verification],
    hits: Sequence[MemoryHit],
    *,
    reveal: Callable[[uuid.UUID], str],
    max_tokens: int,
    degraded: bool = False,
) -> MemoryContext:
    """Build the context from what the tracks returned for one user."""
    if not isinstance(max_tokens, int) or not 1 <= max_tokens <= 32_000:
        raise InvalidField("max_tokens must be an integer in 1..32000", field="max_tokens")
    w = _words(profile)
    items = [
        profile_item(profile),
        *fact_items(profile, facts, reveal),
        *learned_items(profile),
        *business_items(profile, checks),
        *record_items(profile, hits, facts),
    ]
    text, chosen, omitted = fit(w.header, w.titles, items, max_tokens)
    return MemoryContext(text, count_tokens(text), chosen, omitted, degraded)
