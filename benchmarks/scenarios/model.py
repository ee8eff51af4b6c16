"""The scenario format: scripted multi-session conversations and what the later session's
context must and must not contain, loaded from the YAML files under ``data/``.

A file holds a list of scenarios. Each one has an ``id``, a ``language``, ``tags``,
the ``users`` it involves (``main`` is the one served in the later session; others
are look-alikes), the ``system_of_record`` states its business entities start in,
the ``sessions`` replayed in order and the later session's ``query``::

    - id: zh-refund-arrives
      language: zh
      tags: [refund, sor-change, two-agents]
      system_of_record: [{entity_type: refund, entity_id: RF20260629001, state: 退款处理中}]
      sessions:
        - agent: refund-agent
          session_id: s1
          days_ago: 2
          turns:
            - {role: user, text: 订单 88231 的扫地机不回充了，要退款}
            - {role: assistant, text: 已提交退款，退款编号 RF20260629001}
      query:
        agent: shopping-agent
        session_id: s2
        sor_before: [{entity_type: refund, entity_id: RF20260629001, state: 已到账}]
        text: 退款到账了吗
        must: [RF20260629001, 已到账, 88231]
        must_not: []
        stale: []
        profile: {holds: [], lacks: []}

A session ``end``s through ``end_session`` (the default) or keeps its turns with
``append_turns`` (``end: false``); ``writes`` are what the agent's tools stored
during it (a memory, a fact, a PII value as a SENSITIVE fact, a business link); a
``sandbox`` session writes each user turn into its sandbox, and ``fork_after: n``
forks it before turn ``n`` ("忘了刚才说的，重新来"), so only the turns from ``n`` on
reach ``end_session``. ``sor_before`` changes the system of record before a session
(a state, ``state: null`` for an entity it no longer knows, ``outage`` for a whole
entity type that stops answering). A must item is a string, or a list of strings any
one of which will do; matching ignores case and white space.

``must_not`` items are leaks: another user's, another agent's private or forgotten
(forked) content, never in the served user's kept words. ``stale`` items are the
opposite case: words the user did say, but then corrected, retracted or negated, or
that stopped being true (a wrong order number, a rejected option, a channel they said
not to use); a context holding one asserts something false. ``profile`` states what
the user's profile must hold afterwards (``holds``: must items matched against its
stable values and explicit facts) and what it must not (``lacks``: a retracted,
negated or temporary value).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from policies.business import BusinessEntityType
from policies.pii import find_pii

__all__ = [
    "DATA",
    "MustItem",
    "ProfileSpec",
    "QuerySpec",
    "Scenario",
    "SessionSpec",
    "SorChange",
    "SorState",
    "TurnSpec",
    "UserSpec",
    "WriteSpec",
    "alternatives",
    "clear_pii_values",
    "in_holdout",
    "load_scenarios",
    "normalise",
]

DATA = Path(__file__).parent / "data"
"""Where the scenario files live."""

MustItem = str | list[str]
"""A string the context must hold, or alternatives of which it must hold one."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TurnSpec(_Model):
    """One turn of a conversation."""

    role: Literal["user", "assistant"]
    text: str = Field(min_length=1)


class WriteSpec(_Model):
    """What an agent's tool stored during a session.

    ``memory``: ``mem.write(text, policy, private)``; ``fact``: ``mem.facts.put(key,
    value)`` (EXPLICIT); ``pii_fact``: ``mem.pii.store(pii_kind, value)`` then a
    SENSITIVE fact ``key`` holding the vault reference; ``link``: ``mem.links.add``.
    """

    kind: Literal["memory", "fact", "pii_fact", "link"]
    text: str | None = None
    policy: Literal["explicit", "implicit"] = "explicit"
    private: bool = False
    key: str | None = None
    value: Any = None
    pii_kind: Literal["phone", "email", "id_card", "bank_card", "address"] | None = None
    entity_type: BusinessEntityType | None = None
    entity_id: str | None = None

    @model_validator(mode="after")
    def _complete(self) -> WriteSpec:
        needed = {
            "memory": ("text",),
            "fact": ("key", "value"),
            "pii_fact": ("key", "value", "pii_kind"),
            "link": ("entity_type", "entity_id"),
        }[self.kind]
        missing = [name for name in needed if getattr(self, name) is None]
        if missing:
            raise ValueError(f"a {self.kind} write needs {', '.join(missing)}")
        return self


class SorState(_Model):
    """The state of one entity in the simulated system of record."""

    entity_type: str
    entity_id: str
    state: str


class SorChange(_Model):
    """A change of the system of record outside any conversation: a new ``state`` of an
    entity (``null``: it no longer knows the entity), or an ``outage`` of a whole type."""

    entity_type: str
    entity_id: str | None = None
    state: str | None = None
    outage: bool | None = None

    @model_validator(mode="after")
    def _one_change(self) -> SorChange:
        if (self.entity_id is None) == (self.outage is None):
            raise ValueError("a change names an entity_id (with its state) or an outage")
        return self


class UserSpec(_Model):
    """A user of the scenario: the profile the platform already knows."""

    language: str = "zh-CN"
    name: str | None = None


class SessionSpec(_Model):
    """One earlier session, replayed through the SDK."""

    user: str = "main"
    agent: str
    session_id: str
    days_ago: float = Field(default=1.0, gt=0, le=60)
    turns: list[TurnSpec] = Field(min_length=1)
    end: bool = True
    writes: list[WriteSpec] = []
    sandbox: bool = False
    fork_after: int | None = Field(default=None, ge=0)
    sor_before: list[SorChange] = []

    @model_validator(mode="after")
    def _fork_in_range(self) -> SessionSpec:
        if self.fork_after is not None and self.fork_after > len(self.turns):
            raise ValueError("fork_after is past the last turn")
        return self

    @property
    def sandboxed(self) -> bool:
        """Whether the session works in a sandbox (always when it forks)."""
        return self.sandbox or self.fork_after is not None


class ProfileSpec(_Model):
    """What the profile (its stable values and explicit facts) holds after the sessions."""

    holds: list[MustItem] = []
    lacks: list[str] = []

    @model_validator(mode="after")
    def _some(self) -> ProfileSpec:
        if not self.holds and not self.lacks:
            raise ValueError("a profile expectation holds or lacks something")
        return self


class QuerySpec(_Model):
    """The later session: its turns so far (kept in its sandbox), the query its agent
    builds the context for, and what that context must and must not contain."""

    user: str = "main"
    agent: str
    session_id: str
    text: str = Field(min_length=1)
    turns: list[TurnSpec] = []
    fork_after: int | None = Field(default=None, ge=0)
    sor_before: list[SorChange] = []
    must: list[MustItem] = Field(min_length=1)
    must_not: list[str] = []
    stale: list[str] = []
    profile: ProfileSpec | None = None

    @property
    def sandboxed(self) -> bool:
        """Whether the later session works in a sandbox (when it has turns of its own)."""
        return bool(self.turns) or self.fork_after is not None


class Scenario(_Model):
    """One scripted multi-session scenario."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{2,60}$")
    language: Literal["zh", "en"]
    title: str
    tags: list[str] = Field(min_length=1)
    users: dict[str, UserSpec] = {"main": UserSpec()}
    system_of_record: list[SorState] = []
    sessions: list[SessionSpec] = Field(min_length=1)
    query: QuerySpec

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        aliases = {self.query.user, *(s.user for s in self.sessions)}
        if "main" not in self.users or not aliases <= set(self.users):
            raise ValueError(f"{self.id}: every session's user must be declared in users")
        own = normalise(" ".join(self.texts_of(self.query.user, before_fork=False)))
        for item in self.query.must_not:
            if normalise(item) in own:
                raise ValueError(f"{self.id}: must_not item {item!r} is in the user's own text")
        q = self.query
        wanted = [*q.must, *(q.profile.holds if q.profile else [])]
        for alt in (a for item in wanted for a in alternatives(item)):
            if find_pii(alt):
                raise ValueError(f"{self.id}: a must item holds clear PII (use its masked form)")
        for item in q.stale:
            if not item.strip():
                raise ValueError(f"{self.id}: an empty stale item")
            if any(normalise(item) in normalise(a) for w in q.must for a in alternatives(w)):
                raise ValueError(f"{self.id}: stale item {item!r} is inside a must item")
        if self.query.fork_after is not None and self.query.fork_after > len(self.query.turns):
            raise ValueError(f"{self.id}: the query's fork_after is past its last turn")
        return self

    def remembered_must(self) -> list[MustItem]:
        """The must items the memory can hold: an item whose every alternative the query
        text says and no earlier turn or write does (an order number first named in the
        later question) asks nothing of the memory and is left out of the score."""
        q = self.query
        asked = normalise(q.text)
        before = [t.text for s in self.sessions for t in s.turns] + [t.text for t in q.turns]
        before += [str(w.text or w.value or w.entity_id) for s in self.sessions for w in s.writes]
        earlier = normalise(" ".join(before))
        return [
            item
            for item in q.must
            if not all(
                normalise(a) in asked and normalise(a) not in earlier for a in alternatives(item)
            )
        ]

    def texts_of(self, user: str, *, before_fork: bool) -> list[str]:
        """The texts ``user`` kept (``before_fork=False``) or forgot by forking
        (``before_fork=True``), over every session and the query."""
        out: list[str] = []
        parts: list[tuple[str, Sequence[TurnSpec], int | None, Sequence[WriteSpec]]] = [
            (s.user, s.turns, s.fork_after, s.writes) for s in self.sessions
        ]
        parts.append((self.query.user, self.query.turns, self.query.fork_after, []))
        for who, turns, fork, writes in parts:
            if who != user:
                continue
            cut = fork or 0
            chosen = turns[:cut] if before_fork else turns[cut:]
            out += [t.text for t in chosen]
            if not before_fork:  # what the agents stored about the user, private notes aside
                out += [str(w.text or w.value or w.entity_id) for w in writes if not w.private]
        return out

    def private_texts(self, agent: str) -> list[str]:
        """Texts of private memories written by agents other than ``agent``."""
        return [
            w.text or ""
            for s in self.sessions
            if s.agent != agent
            for w in s.writes
            if w.kind == "memory" and w.private
        ]

    def texts(self) -> list[str]:
        """Every text of the scenario (turns, writes, the query)."""
        out = [t.text for s in self.sessions for t in s.turns]
        out += [w.text or str(w.value or "") for s in self.sessions for w in s.writes]
        out += [t.text for t in self.query.turns]
        return [*out, self.query.text]


def normalise(text: str) -> str:
    """``text`` without white space, case-folded: how must items are matched."""
    return re.sub(r"\s+", "", text).casefold()


def alternatives(item: MustItem) -> list[str]:
    """The strings of a must item (one, or its alternatives)."""
    return [item] if isinstance(item, str) else list(item)


def in_holdout(scenario_id: str) -> bool:
    """Whether a scenario is in the holdout quarter: the SHA-256 of its id falls in the
    first quarter of the hash range (deterministic, about one scenario in four; never
    tuned on)."""
    return int(hashlib.sha256(scenario_id.encode()).hexdigest(), 16) < 2**254


def clear_pii_values(scenarios: Iterable[Scenario]) -> list[str]:
    """Every clear PII value the scenarios use (detected in their texts), once each."""
    values: dict[str, None] = {}
    for scenario in scenarios:
        for text in scenario.texts():
            for match in find_pii(text):
                values[match.value] = None
    return list(values)


def load_scenarios(paths: Iterable[Path] | None = None) -> list[Scenario]:
    """The scenarios of ``paths`` (default: every ``*.yaml`` under :data:`DATA`), in file
    order; ``ValueError`` for a malformed file, a duplicate id, or a business entity id
    used by two scenarios."""
    files = sorted(DATA.glob("*.yaml")) if paths is None else list(paths)
    scenarios: list[Scenario] = []
    for path in files:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        if not isinstance(raw, list):
            raise ValueError(f"{path.name}: expected a list of scenarios")
        for position, item in enumerate(raw):
            try:
                scenarios.append(Scenario.model_validate(item))
            except ValidationError as exc:
                raise ValueError(f"{path.name}, scenario {position}: {exc}") from None
    ids = Counter(s.id for s in scenarios)
    if twice := [i for i, n in ids.items() if n > 1]:
        raise ValueError(f"duplicate scenario ids: {', '.join(twice)}")
    owners: dict[tuple[str, str], str] = {}
    for scenario in scenarios:
        for state in scenario.system_of_record:
            key = (state.entity_type, state.entity_id)
            if owners.setdefault(key, scenario.id) != scenario.id:
                raise ValueError(f"{scenario.id}: entity {key} is also used by {owners[key]}")
    return scenarios
