"""How what a session said about the user merges into the profile: pure rules, no I/O.

An extractor turns a session into :class:`Observation` values of three kinds:

- **facts** (address, device model, member level): objective; the newest
  observation wins (by ``observed_at``; a tie goes to the later one given), so
  sessions merged out of order still end on the newest value; a **negated**
  fact (the user took the topic back: "之前说的饮食要求作废") clears every slot
  of its key said before it;
- **preferences** (notification channel, content format, budget per scenario):
  never overturned by one passing mention. A value that is not the stable one is a
  *candidate*; it counts the distinct sessions that mentioned it and becomes
  the stable value once ``1 + confirmations`` sessions did (default
  ``confirmations=2``: the first mention and two more sessions), with no
  mention of the stable value in between (a reaffirmed stable value drops the
  competing candidates). Several mentions in one session count once; the last
  value a session gives for a slot is the one it said. An **explicit**
  preference (a direct instruction: "以后都用微信通知我") is stable at once and
  drops the slot's candidates; a **negated** one ("别再发邮件了") is a value the
  user refuses: it leaves the slot if it held it, is never a candidate, and is
  reported in :attr:`Merged.refused`;
- **temporary intents** ("下周出差，暂时不报销"): never enter the profile;
  :func:`merge` hands them back for the caller to keep as IMPLICIT fragments.

A preference's *slot* is its key, plus its scenario when it has one
(``budget@self``, ``budget@parents``): scenario-specific preferences coexist.
Merging the same observations twice changes nothing the second time.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Final

from policies.births import ENDS_PREGNANCY, PREGNANCY

__all__ = [
    "DEFAULT_CONFIRMATIONS",
    "DISOWNED",
    "FORMERLY_KEPT",
    "MAX_CANDIDATES_PER_SLOT",
    "PREVIOUS",
    "REFERENCE",
    "Candidate",
    "Change",
    "ChangeKind",
    "Merged",
    "Observation",
    "ObservationKind",
    "ProfileState",
    "Stable",
    "merge",
    "slot_of",
]

DEFAULT_CONFIRMATIONS: Final = 2
"""Sessions after the first that must repeat a preference before it becomes stable."""

MAX_CANDIDATES_PER_SLOT: Final = 5
"""Candidates kept per slot; the least recently mentioned beyond it are dropped."""

FORMERLY_KEPT: Final = 3
"""Former values a slot remembers (:attr:`Stable.formerly`)."""


class ObservationKind(StrEnum):
    """What an observation is, which decides how it merges."""

    FACT = "fact"
    PREFERENCE = "preference"
    TEMPORARY = "temporary"


def slot_of(key: str, scenario: str | None) -> str:
    """Where a value lives in the profile: ``key`` or ``key@scenario``."""
    return key if scenario is None else f"{key}@{scenario}"


@dataclass(frozen=True, slots=True)
class Observation:
    """One thing a session said about the user; ``value`` holds no clear PII.

    ``ref`` is the vault id of the clear value when the value is masked PII
    (an address); ``clear`` carries that clear value from the extractor to the
    vault and is never shown, compared or merged. ``explicit``: said as a
    direct instruction; ``negated``: a value the user refuses. ``replaces`` (a
    fact) is a value the user corrected into this one: the slot holding it is
    the slot this observation fills; :data:`PREVIOUS`, whatever the user had
    before (a device switched to).
    """

    kind: ObservationKind
    key: str
    value: str
    session_id: str
    observed_at: datetime
    scenario: str | None = None
    ref: str | None = None
    clear: str | None = field(default=None, repr=False, compare=False)
    explicit: bool = False
    negated: bool = False
    replaces: str | None = None

    @property
    def slot(self) -> str:
        """The profile slot this observation speaks about."""
        return slot_of(self.key, self.scenario)


@dataclass(frozen=True, slots=True)
class Stable:
    """A value the profile holds: a fact, or a confirmed preference.

    ``sessions`` counts the distinct sessions that established it (1 for a fact,
    the confirming sessions for a preference); ``session_id`` and ``observed_at``
    are those of the latest mention; ``formerly`` the values the slot held before,
    newest first (at most :data:`FORMERLY_KEPT`, none holding PII): what earlier
    records may still name (:mod:`policies.superseded`).
    """

    value: str
    observed_at: datetime
    session_id: str
    ref: str | None = None
    sessions: int = 1
    formerly: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Candidate:
    """A preference value said in ``sessions`` (distinct, in order), not yet stable."""

    slot: str
    value: str
    sessions: tuple[str, ...]
    first_seen: datetime
    last_seen: datetime


@dataclass(frozen=True)
class ProfileState:
    """What the profile knows: stable facts and preferences by slot, and candidates."""

    facts: Mapping[str, Stable] = field(default_factory=dict)
    preferences: Mapping[str, Stable] = field(default_factory=dict)
    candidates: Mapping[tuple[str, str], Candidate] = field(default_factory=dict)
    """Keyed by (slot, value)."""


class ChangeKind(StrEnum):
    """What a merge did to a slot."""

    FACT_SET = "fact_set"
    FACT_CLEARED = "fact_cleared"
    PREFERENCE_SET = "preference_set"
    PREFERENCE_CLEARED = "preference_cleared"
    CANDIDATE = "candidate"


@dataclass(frozen=True, slots=True)
class Change:
    """One effect of a merge (for the caller's audit entry: slots and kinds, no values)."""

    slot: str
    kind: ChangeKind


@dataclass(frozen=True)
class Merged:
    """The state after a merge, what changed, the temporary intents left out, and the
    ``(slot, value)`` pairs the user refused."""

    state: ProfileState
    changes: tuple[Change, ...]
    temporary: tuple[Observation, ...]
    refused: tuple[tuple[str, str], ...] = ()


PREVIOUS: Final = "~previous"
"""``replaces`` of a device the user switched to (换成了 vivo X100 Pro, switched to a
ThinkPad): it takes the slot of the device they had, the one slot of its key or the one
said without its product (a charger for it), which remembers the old one."""

DISOWNED: Final = "disowned"
"""The key of a fact observation saying the user disowned what they told an earlier session
("上回说我家是地暖 我搞错了 我家是暖气片"): ``replaces`` holds the words disowned (地暖),
``value`` what holds instead. Every fact and stable preference whose value holds those words
takes ``value`` and keeps the words as its former value; with none, a slot of its own
(``disowned:<digest>``) does, so that earlier records show the words as replaced."""

_ONE_PER_SCENARIO: Final = frozenset({"device_model"})
"""Fact keys whose scenario is the thing they belong to (one device per product): a value
said without its scenario finds the slot it belongs to."""


def _fact_slot(facts: Mapping[str, Stable], o: Observation) -> str:
    """Where a fact goes: the slot of the value it corrects; for a value said without its
    scenario (a device model without its product), the one slot of its key, or the one
    whose value shares its first word; else its own slot."""
    key_slots = [s for s in facts if s == o.key or s.startswith(f"{o.key}@")]
    if o.key not in _ONE_PER_SCENARIO:
        return o.slot
    if o.replaces == PREVIOUS and o.slot not in facts:
        return _previous_slot(facts, o, key_slots)
    if o.replaces is not None:
        wrong = o.replaces.casefold()
        for s in key_slots:
            if facts[s].value.casefold() == wrong:
                return s
    if o.scenario is None and o.slot not in facts:
        if len(key_slots) == 1:
            return key_slots[0]
        head = o.value.split()[0].casefold() if o.value.split() else ""
        alike = [s for s in key_slots if facts[s].value.casefold().startswith(head)]
        if head and len(alike) == 1:
            return alike[0]
    return o.slot


def _previous_slot(facts: Mapping[str, Stable], o: Observation, key_slots: list[str]) -> str:
    """The slot of the device one switched to replaces (:data:`PREVIOUS`): the one slot of its
    key, or the one said without its product, or its own."""
    if len(key_slots) == 1:
        return key_slots[0]
    return o.key if o.key in facts else o.slot


REFERENCE: Final = "~"
"""Opens the scenario of a fact said of someone by a word that does not name them: ``~he``,
``~she``, ``~it`` (a pet), ``~name:Pretzel``. The merge gives it to the one slot it can mean
among the user's family members and pets (:func:`_referent`), or drops it; said in the
session that named them, it adds to their words, said later, it replaces them."""

_REFERABLE: Final = ("family", "pet")
_HE: Final = frozenset(
    {"儿子", "老公", "爸爸", "爷爷", "外公", "公公", "son", "husband", "dad", "grandpa"}
)
_SHE: Final = frozenset(
    {"女儿", "老婆", "妈妈", "奶奶", "外婆", "婆婆", "daughter", "wife", "mom", "grandma"}
)


def _referent(facts: Mapping[str, Stable], reference: str) -> str | None:
    """The one family or pet slot ``reference`` (a scenario after :data:`REFERENCE`) can
    mean: ``he``/``she`` a family member of that sex, ``it`` a pet, ``name:X`` the member
    or pet whose words name X after their first word; ``None`` for none or several."""
    slots = [s for s in facts if s.partition("@")[0] in _REFERABLE]
    if reference.startswith("name:"):
        name = reference.removeprefix("name:")
        found = [s for s in slots if f" {name}" in facts[s].value]
    elif reference == "it":
        found = [s for s in slots if s.partition("@")[0] == "pet"]
    else:
        sex = _HE if reference == "he" else _SHE if reference == "she" else frozenset()
        found = [s for s in slots if s.partition("@")[0] == "family" and s.partition("@")[2] in sex]
    return found[0] if len(found) == 1 else None


def _clear_facts(facts: dict[str, Stable], o: Observation) -> Change | None:
    """A withdrawn topic: every slot of its key said before ``o`` leaves the profile."""
    gone = [
        s
        for s, v in facts.items()
        if (s == o.key or s.startswith(f"{o.key}@")) and v.observed_at <= o.observed_at
    ]
    for s in gone:
        del facts[s]
    return Change(o.key, ChangeKind.FACT_CLEARED) if gone else None


def _flat(text: str) -> str:
    return "".join(text.split()).casefold()


def _holds_words(value: str, words: str) -> bool:
    """Whether ``value`` holds ``words``, case and spaces aside; Latin words whole (dog is not
    in hotdog)."""
    if not words.isascii():
        return _flat(words) in _flat(value)
    text, wanted = " ".join(value.split()).casefold(), " ".join(words.split()).casefold()
    at = text.find(wanted)
    while at >= 0:
        end = at + len(wanted)
        before = text[at - 1] if at else " "
        after = text[end] if end < len(text) else " "
        if not (before.isascii() and before.isalnum()) and not (
            after.isascii() and after.isalnum()
        ):
            return True
        at = text.find(wanted, at + 1)
    return False


def _disown(parts: Sequence[dict[str, Stable]], o: Observation) -> list[Change]:
    """A :data:`DISOWNED` observation: every slot of ``parts`` said before it whose value holds
    the disowned words takes its value, the words kept as the former value; else a slot of
    its own."""
    words = o.replaces or ""
    wanted = _flat(words)
    if not wanted:
        return []
    changes = []
    for part, kind in zip(parts, (ChangeKind.FACT_SET, ChangeKind.PREFERENCE_SET), strict=False):
        for slot, held in list(part.items()):
            if _holds_words(held.value, words) and held.observed_at <= o.observed_at:
                formerly = tuple(dict.fromkeys((words, *_formerly(held, o.value))))
                part[slot] = Stable(
                    o.value, o.observed_at, o.session_id, formerly=formerly[:FORMERLY_KEPT]
                )
                changes.append(Change(slot, kind))
    if not changes:
        digest = hashlib.sha256(wanted.encode()).hexdigest()[:8]
        slot = f"{DISOWNED}:{digest}"
        parts[0][slot] = Stable(o.value, o.observed_at, o.session_id, formerly=(words,))
        changes.append(Change(slot, ChangeKind.FACT_SET))
    return changes


def _merge_fact(facts: dict[str, Stable], o: Observation) -> Change | None:
    if o.negated:
        return _clear_facts(facts, o)
    if o.scenario is not None and o.scenario.startswith(REFERENCE):
        return _merge_referred(facts, o)
    return _set_fact(facts, o)


def _merge_referred(facts: dict[str, Stable], o: Observation) -> Change | None:
    """A fact said of someone by a word that does not name them (:data:`REFERENCE`)."""
    meant = _referent(facts, (o.scenario or "").removeprefix(REFERENCE))
    if meant is None:
        return None
    key, _, scenario = meant.partition("@")
    o = replace(o, key=key, scenario=scenario or None)
    known = facts[meant]
    if known.session_id != o.session_id:
        return _set_fact(facts, o)
    if o.value in known.value:  # one more trait of whom the session named, said already
        return None
    join = "，" if any("\u4e00" <= ch <= "\u9fff" for ch in known.value) else ", "
    value = f"{known.value}{join}{o.value}"
    facts[meant] = replace(
        known, value=value, formerly=tuple(v for v in known.formerly if v != value)
    )
    return Change(meant, ChangeKind.FACT_SET)


def _expecting(facts: Mapping[str, Stable], o: Observation) -> str | None:
    """For a birth (:data:`~policies.births.ENDS_PREGNANCY`), the slot of its key that says
    the user is expecting: the birth takes it, the pregnancy its former value."""
    if o.replaces != ENDS_PREGNANCY:
        return None
    key_slots = [s for s in facts if s == o.key or s.startswith(f"{o.key}@")]
    expecting = [s for s in key_slots if PREGNANCY.search(facts[s].value) is not None]
    return expecting[-1] if expecting else None


def _set_fact(facts: dict[str, Stable], o: Observation) -> Change | None:
    """An objective fact: the newest value of its slot wins."""
    slot = _expecting(facts, o) or _fact_slot(facts, o)
    if slot != o.slot:
        o = replace(o, key=slot.partition("@")[0], scenario=slot.partition("@")[2] or None)
    current = facts.get(o.slot)
    if current is not None and o.observed_at < current.observed_at:
        return None
    if current is not None and (current.value, current.ref) == (o.value, o.ref):
        facts[o.slot] = replace(current, observed_at=o.observed_at, session_id=o.session_id)
        return None
    if (
        current is not None
        and current.session_id == o.session_id
        and o.observed_at <= current.observed_at
        and o.value in current.value
    ):
        return None  # the same session merged again: its words are already there
    facts[o.slot] = Stable(
        o.value, o.observed_at, o.session_id, o.ref, formerly=_formerly(current, o.value)
    )
    return Change(o.slot, ChangeKind.FACT_SET)


def _formerly(current: Stable | None, value: str) -> tuple[str, ...]:
    """What a slot held before it takes ``value``: ``current``'s value (unless it holds PII
    or is ``value`` again) before what it held itself, each once, newest first."""
    if current is None:
        return ()
    was = (current.value,) if current.ref is None else ()
    kept = dict.fromkeys(v for v in (*was, *current.formerly) if v.casefold() != value.casefold())
    return tuple(kept)[:FORMERLY_KEPT]


def _drop_slot(candidates: dict[tuple[str, str], Candidate], slot: str) -> None:
    for key in [k for k in candidates if k[0] == slot]:
        del candidates[key]


def _merge_instruction(
    preferences: dict[str, Stable],
    candidates: dict[tuple[str, str], Candidate],
    o: Observation,
) -> Change | None:
    """An explicit preference is stable at once; a refused one leaves its slot."""
    stable = preferences.get(o.slot)
    same = stable is not None and stable.value == o.value
    if o.negated:
        candidates.pop((o.slot, o.value), None)
        if not same:
            return None
        del preferences[o.slot]
        return Change(o.slot, ChangeKind.PREFERENCE_CLEARED)
    _drop_slot(candidates, o.slot)
    if stable is not None and same:
        preferences[o.slot] = replace(
            stable, observed_at=max(stable.observed_at, o.observed_at), session_id=o.session_id
        )
        return None
    preferences[o.slot] = Stable(
        o.value, o.observed_at, o.session_id, formerly=_formerly(stable, o.value)
    )
    return Change(o.slot, ChangeKind.PREFERENCE_SET)


def _merge_preference(
    preferences: dict[str, Stable],
    candidates: dict[tuple[str, str], Candidate],
    o: Observation,
    confirmations: int,
) -> Change | None:
    if o.negated or o.explicit:
        return _merge_instruction(preferences, candidates, o)
    stable = preferences.get(o.slot)
    if stable is not None and stable.value == o.value:
        preferences[o.slot] = replace(
            stable, observed_at=max(stable.observed_at, o.observed_at), session_id=o.session_id
        )
        _drop_slot(candidates, o.slot)
        return None
    key = (o.slot, o.value)
    found = candidates.get(key)
    if found is None:
        found = Candidate(o.slot, o.value, (), o.observed_at, o.observed_at)
    sessions = found.sessions if o.session_id in found.sessions else (*found.sessions, o.session_id)
    if len(sessions) >= 1 + confirmations:
        preferences[o.slot] = Stable(
            o.value,
            max(found.last_seen, o.observed_at),
            o.session_id,
            sessions=len(sessions),
            formerly=_formerly(stable, o.value),
        )
        _drop_slot(candidates, o.slot)
        return Change(o.slot, ChangeKind.PREFERENCE_SET)
    updated = replace(found, sessions=sessions, last_seen=max(found.last_seen, o.observed_at))
    if updated == candidates.get(key):
        return None
    rivals = sorted(
        (c for k, c in {**candidates, key: updated}.items() if c.slot == o.slot),
        key=lambda c: (c.last_seen, c.value),
        reverse=True,
    )
    if updated in rivals[MAX_CANDIDATES_PER_SLOT:]:
        return None  # older than every kept candidate: not kept, so nothing changes
    candidates[key] = updated
    for stale in rivals[MAX_CANDIDATES_PER_SLOT:]:
        del candidates[(stale.slot, stale.value)]
    return Change(o.slot, ChangeKind.CANDIDATE)


def _said(observations: Iterable[Observation]) -> list[Observation]:
    """Observations in order, reduced to what each says last: of the facts, the newest per
    slot (a tie goes to the later one); of the preferences, each session's last value per
    slot. Each stands where its slot (and session) was first spoken about. A refusal is
    kept as said, and a session's value it refuses later is no longer that session's."""
    out: list[Observation] = []
    at: dict[tuple[str, str, str], int] = {}
    for o in observations:
        if o.kind is ObservationKind.TEMPORARY:
            out.append(o)
            continue
        if o.negated:
            key = (o.kind.value, o.session_id, o.slot)
            if key in at and out[at[key]].value == o.value:
                out[at[key]] = o
            else:
                out.append(o)
            continue
        session = o.session_id if o.kind is ObservationKind.PREFERENCE else ""
        key = (o.kind.value, session, o.slot)
        if key not in at:
            at[key] = len(out)
            out.append(o)
        elif o.kind is ObservationKind.PREFERENCE or o.observed_at >= out[at[key]].observed_at:
            said = out[at[key]]
            if o.kind is ObservationKind.PREFERENCE and said.explicit and not o.explicit:
                continue  # a passing mention later in the session does not undo an instruction
            out[at[key]] = o
    return out


def merge(
    state: ProfileState,
    observations: Iterable[Observation],
    *,
    confirmations: int = DEFAULT_CONFIRMATIONS,
) -> Merged:
    """Merge ``observations`` (in the order they were said) into ``state``.

    ``confirmations`` (``>= 0``) is how many sessions after the first must
    repeat a preference before it replaces (or fills) its slot; 0 takes every
    preference at once. Raises ``ValueError`` for a negative count.
    """
    if confirmations < 0:
        raise ValueError("confirmations must be >= 0")
    facts = dict(state.facts)
    preferences = dict(state.preferences)
    candidates = dict(state.candidates)
    changes: list[Change] = []
    temporary: list[Observation] = []
    refused: list[tuple[str, str]] = []
    for o in _said(observations):
        change: Change | None
        if o.kind is ObservationKind.TEMPORARY:
            temporary.append(o)
            continue
        if o.kind is ObservationKind.FACT and o.key == DISOWNED:
            changes += _disown((facts, preferences), o)
            continue
        if o.negated and (o.slot, o.value) not in refused:
            refused.append((o.slot, o.value))
        if o.kind is ObservationKind.FACT:
            change = _merge_fact(facts, o)
        else:
            change = _merge_preference(preferences, candidates, o, confirmations)
        if change is not None:
            changes.append(change)
    _drop_restated(state.facts, facts, changes)
    _drop_left_behind(state.facts, facts, changes)
    final = ProfileState(facts=facts, preferences=preferences, candidates=candidates)
    return Merged(final, _net(state, final, changes), tuple(temporary), tuple(refused))


_WORDS: Final = 4
"""Shortest value that is the user's words rather than a code (what :func:`_drop_restated`
compares)."""


def _drop_restated(
    before: Mapping[str, Stable], facts: dict[str, Stable], changes: list[Change]
) -> None:
    """A fact replaced by another value takes with it the other slots that held the very
    same words ("我老公对虾过敏" kept as the diet and as the husband): what the user
    restated differently no longer stands anywhere."""
    gone = {
        was.value.casefold(): slot.partition("@")[0]
        for slot, was in before.items()
        if len(was.value) >= _WORDS
        and (now := facts.get(slot)) is not None
        and now.value.casefold() != was.value.casefold()
    }
    for slot, value in list(facts.items()):
        key = gone.get(value.value.casefold())
        # another key's slot, untouched by this merge, holding the old words
        if key is not None and key != slot.partition("@")[0] and before.get(slot) == value:
            del facts[slot]
            changes.append(Change(slot.partition("@")[0], ChangeKind.FACT_CLEARED))


_MOVED: Final = "city"
"""The fact key of where the user lives: when it changes, the home said with it goes."""
_OF_THE_HOME: Final = frozenset({"address", "home"})
"""Fact keys of the home itself (its address, its floor or lift, its gate code)."""


def _drop_left_behind(
    before: Mapping[str, Stable], facts: dict[str, Stable], changes: list[Change]
) -> None:
    """The user moved (their city replaced by another, said in a later session): the
    address and the notes of the home said in the session of the old city are of the old
    home ("我住南京鼓楼区，六楼没电梯"), so they leave the profile; what other sessions said
    stays (nothing ties it to the old city)."""
    was, now = before.get(_MOVED), facts.get(_MOVED)
    if was is None or now is None or now.session_id == was.session_id:
        return
    if now.value.casefold() == was.value.casefold():
        return
    for slot, value in list(facts.items()):
        key = slot.partition("@")[0]
        if key in _OF_THE_HOME and value.session_id == was.session_id and before.get(slot) == value:
            del facts[slot]
            changes.append(Change(key, ChangeKind.FACT_CLEARED))


def _net(
    before: ProfileState, after: ProfileState, changes: Sequence[Change]
) -> tuple[Change, ...]:
    """The changes that survive the whole merge, each once: a candidate recorded and then
    dropped (its preference was confirmed later in the same merge) is no change."""

    def slot_state(state: ProfileState, change: Change) -> object:
        if change.kind is ChangeKind.FACT_SET:
            fact = state.facts.get(change.slot)
            return None if fact is None else (fact.value, fact.ref)
        if change.kind is ChangeKind.FACT_CLEARED:
            return sorted(s for s in state.facts if s.partition("@")[0] == change.slot)
        if change.kind in (ChangeKind.PREFERENCE_SET, ChangeKind.PREFERENCE_CLEARED):
            pref = state.preferences.get(change.slot)
            return None if pref is None else pref.value
        return {k: c for k, c in state.candidates.items() if k[0] == change.slot}

    kept = dict.fromkeys(c for c in changes if slot_state(before, c) != slot_state(after, c))
    return tuple(kept)
