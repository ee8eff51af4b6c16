"""Hostile input: every public SDK method raises only typed errors, and a failed call writes nothing.

A property suite over every method reachable from :class:`MemoryClient`,
fed arbitrary Unicode (NUL, lone surrogates, huge strings), NaN and infinite
floats, huge integers, nested JSON, odd datetimes (naive, extreme offsets,
``datetime.min`` and ``max``), wrong types and malformed ids. For each call:

- only :class:`InvalidInput`, :class:`NotFound` or :class:`Conflict` may
  escape (never an untyped error, nor a bare ``DualtrackError``);
- a call that fails leaves every user table exactly as it was;
- an error message never echoes a free-text value (a phone number planted
  in the hostile strings must not come back);
- after a hostile write that succeeds, ``memories.list``, ``search`` and
  ``export_user`` still work for the user (no poison rows).

Runs are derandomized so CI sees the same examples every time; the
``@example`` cases are the defects an earlier hypothesis run found.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from policies.lifecycle import LifecyclePolicy
from policies.ttl import MemoryKind
from sdk import (
    Conflict,
    DualtrackError,
    InvalidInput,
    MemoryClient,
    MemoryInput,
    NotFound,
    Turn,
)
from structured_memory.models import Base

USER = "buyer-hostile-001"
MARKER = "13912345678"
"""A phone number planted in hostile free text; no error message may contain it."""

EXPECTED = (InvalidInput, NotFound, Conflict)
LABELS = {"entity_type", "role", "kind"}
"""Enum fields whose errors repeat the unknown label (``check_choice``), exempt from the echo check."""
TABLES = [t.name for t in Base.metadata.sorted_tables if t.name != "embedding_space"]

HOSTILE = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)
FEW = settings(HOSTILE, max_examples=25)

# -- strategies ------------------------------------------------------------------------------

_ODD_CHARS = ["\x00", "\ud800", "\udfff", "\u200b", "\ufeff", "\u202e", "市", "１", "\n", "'"]
_chars = st.one_of(st.characters(), st.sampled_from(_ODD_CHARS))

texts = st.one_of(
    st.text(_chars, max_size=24),
    st.sampled_from(
        [
            "",
            "   ",
            "\x00",
            f"我的手机 {MARKER}\x00",
            f"订单 88231 {MARKER}\ud800",
            f"退款 RF20260629001 {MARKER}\udfff",
            "x" * 70_000,
            "长" * 30_000,
            MARKER + "\u200b" * 300,
        ]
    ),
)
"""Free text: what a caller might put in any string field."""

_OFFSETS = [
    UTC,
    timezone(timedelta(hours=14)),
    timezone(timedelta(hours=-14)),
    timezone(timedelta(hours=23, minutes=59)),
    timezone(timedelta(hours=-23, minutes=-59)),
]
datetimes = st.one_of(
    st.datetimes(timezones=st.one_of(st.none(), st.sampled_from(_OFFSETS))),
    st.sampled_from(
        [
            datetime.min,
            datetime.max,
            datetime.min.replace(tzinfo=timezone(timedelta(hours=14))),
            datetime.max.replace(tzinfo=timezone(timedelta(hours=-14))),
            datetime.min.replace(tzinfo=UTC),
            datetime.max.replace(tzinfo=UTC),
            datetime(1899, 12, 31, 23, 59, tzinfo=UTC),
            datetime(2026, 6, 29, 10, 0, tzinfo=timezone(timedelta(hours=8))),
        ]
    ),
)
"""Datetimes: naive, aware at extreme offsets, the ends of Python's range, ordinary ones."""

wrong = st.sampled_from(
    [
        None,
        True,
        0,
        -1,
        2**31,
        2**40,
        2**70,
        -(2**63),
        1.5,
        math.nan,
        math.inf,
        -math.inf,
        b"\xff\xfe",
        b"13912345678",
        bytearray(b"x"),
        object(),
        [],
        ["a", 1],
        {},
        {"a": 1},
        {1, 2},
        ("t",),
        uuid.UUID(int=0),
        datetime(2026, 1, 1),
    ]
)
"""Values of the wrong type for almost any parameter."""

floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, 1.0, -0.0, 1e308])
)
ints = st.one_of(st.integers(), st.sampled_from([0, -1, 1, 2**31 - 1, 2**31, 2**40, 2**63, 2**70]))

_leaf = st.one_of(
    st.none(), st.booleans(), ints, floats, st.text(_chars, max_size=12), st.just(MARKER)
)
def _nested(depth: int) -> Any:
    value: Any = "深"
    for _ in range(depth):
        value = [value]
    return value


json_values = st.one_of(
    st.recursive(
        _leaf,
        lambda inner: st.lists(inner, max_size=4)
        | st.dictionaries(st.text(_chars, max_size=8), inner, max_size=4),
        max_leaves=12,
    ),
    st.sampled_from([_nested(300), _nested(900), {"n": 10**400}, [10**5000]]),
    wrong,
)
"""JSON-ish values: NaN, infinities, NUL and surrogates in keys and strings, deep nesting."""

json_objects = st.one_of(
    st.dictionaries(st.text(_chars, max_size=8), json_values, max_size=4),
    st.sampled_from([{"x": math.nan}, {"\x00": 1}, {"a": "\x00"}, {"a": [math.inf]}]),
)

anything = st.one_of(texts, wrong, ints, floats, datetimes, json_values)
"""Any hostile value at all."""

user_ids = st.one_of(
    st.just(USER),
    st.just(USER),
    st.just("ghost-404"),
    st.just("13800000000"),
    texts,
    wrong,
)
"""Mostly the real user (so validation past the scope is reached), then unknown and bad ids."""

policies = st.one_of(st.sampled_from(list(LifecyclePolicy)), st.sampled_from(["explicit", "x"]))


def ids(real: uuid.UUID | None) -> st.SearchStrategy[Any]:
    """Record ids: the real one (as UUID and string), random UUIDs, malformed ids, wrong types."""
    real_ids = [] if real is None else [real, str(real), str(real).upper()]
    return st.one_of(
        st.sampled_from(real_ids) if real_ids else st.nothing(),
        st.uuids(),
        st.uuids().map(str),
        st.sampled_from(["not-a-uuid", "{" + "0" * 32 + "}", "0" * 33, "\x00", "\ud800"]),
        texts,
        wrong,
    )


# -- the checks ------------------------------------------------------------------------------


def _snapshot(mem: MemoryClient) -> dict[str, tuple[int, str]]:
    """Row count and content hash of every user table (cheap: the tables are tiny here)."""
    union = " UNION ALL ".join(
        f"SELECT '{t}', count(*), md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), ''))"
        f" FROM {t} x"
        for t in TABLES
    )
    with mem.database.transaction() as conn:
        return {r[0]: (int(r[1]), r[2]) for r in conn.execute(text(union))}


def _call(mem: MemoryClient, method: Callable[..., Any], *args: Any, **kwargs: Any) -> bool:
    """Call ``method``; return whether it succeeded. A failure must be typed and write nothing."""
    before = _snapshot(mem)
    try:
        method(*args, **kwargs)
    except DualtrackError as exc:
        assert isinstance(exc, EXPECTED), f"{type(exc).__name__} ({exc.code}): {exc}"
        if exc.details.get("field") not in LABELS:
            assert MARKER not in str(exc) + repr(exc.details), "the error echoes a value"
        assert _snapshot(mem) == before, f"a failed {method.__qualname__} wrote something"
        return False
    return True


def _still_readable(mem: MemoryClient) -> None:
    """Everything stored for the user reads back: no poison row."""
    mem.memories.list(USER, limit=1000)
    mem.search(USER, "订单 88231 退款", limit=5)
    mem.search(USER, "refund", occurred_after=datetime(2000, 1, 1, tzinfo=UTC))
    mem.export_user(USER)
    mem.links.valid_now(USER)
    mem.facts.list(USER)
    mem.devices.list(USER)


@dataclass(frozen=True)
class Seeded:
    """Real records of ``USER``, so hostile calls also reach past the id lookups."""

    memory_id: uuid.UUID
    link_id: uuid.UUID
    fact_id: uuid.UUID
    vault_id: uuid.UUID
    fingerprint: str


@pytest.fixture
def seeded(mem: MemoryClient) -> Iterator[Seeded]:
    mem.profiles.ensure(USER)
    memory_id = mem.write(
        USER,
        f"订单 88231 退款 RF20260629001，联系手机 {MARKER}",
        lifecycle_policy=LifecyclePolicy.IMPLICIT,
        session_id="s-hostile",
    )
    link = mem.links.add(USER, entity_type="order", entity_id="88231", role="owner")
    fact = mem.facts.put(USER, "售后偏好", "退款优先", lifecycle_policy=LifecyclePolicy.EXPLICIT)
    ref = mem.pii.store(USER, "phone", MARKER)
    device = mem.devices.register(USER, device_id="IMEI-1", os="iOS 17", browser="微信")
    yield Seeded(memory_id, link.id, fact.id, ref.id, device.fingerprint)


def _ensure(mem: MemoryClient) -> None:
    mem.profiles.ensure(USER)


# -- profiles ----------------------------------------------------------------------------------

_PROFILE_FIELDS = ["timezone", "language", "notification_preference", "attributes"]
profile_changes = st.dictionaries(
    st.one_of(st.sampled_from(_PROFILE_FIELDS + ["profile_summary"]), st.text(max_size=6)),
    st.one_of(anything, json_objects, st.sampled_from(["Asia/Shanghai", "zh-CN"])),
    max_size=3,
)


@HOSTILE
@given(user=user_ids)
def test_profiles_get_and_ensure(mem: MemoryClient, user: Any) -> None:
    _ensure(mem)
    _call(mem, mem.profiles.get, user)
    _call(mem, mem.profiles.ensure, user)


@HOSTILE
@given(user=user_ids, changes=profile_changes)
@example(user=USER, changes={"attributes": {"score": math.nan}})
@example(user=USER, changes={"attributes": {"x": math.inf}})
@example(user=USER, changes={"attributes": {"note": "a\x00b"}})
@example(user="new-buyer-1", changes={"attributes": {"n": -math.inf}})
def test_profiles_create(mem: MemoryClient, user: Any, changes: dict[str, Any]) -> None:
    _ensure(mem)
    if _call(mem, mem.profiles.create, user, **changes):
        mem.profiles.get(user)


@HOSTILE
@given(user=user_ids, version=st.one_of(ints, wrong, texts), changes=profile_changes)
@example(user=USER, version=2**40, changes={})
@example(user=USER, version=1, changes={"attributes": {"x": math.nan}})
@example(user=USER, version=True, changes={"language": "en"})
def test_profiles_update(
    mem: MemoryClient, user: Any, version: Any, changes: dict[str, Any]
) -> None:
    _ensure(mem)
    if _call(mem, mem.profiles.update, user, expected_version=version, **changes):
        _still_readable(mem)


@FEW
@given(
    user=user_ids,
    returned=st.one_of(
        profile_changes, wrong, st.dictionaries(st.one_of(ints, floats, st.none()), anything, max_size=2)
    ),
    options=st.dictionaries(
        st.sampled_from(["max_attempts", "base_delay_s", "max_delay_s", "bogus"]),
        st.one_of(ints, floats, wrong),
        max_size=2,
    ),
)
@example(user=USER, returned=7, options={})
@example(user=USER, returned={}, options={"max_attempts": "x"})
@example(user=USER, returned={}, options={"base_delay_s": 1e9})
def test_profiles_update_with_retry(
    mem: MemoryClient, user: Any, returned: Any, options: dict[str, Any]
) -> None:
    _ensure(mem)
    if _call(mem, mem.profiles.update_with_retry, user, lambda _p: returned, **options):
        _still_readable(mem)


# -- devices -----------------------------------------------------------------------------------


@HOSTILE
@given(user=user_ids, device_id=st.one_of(texts, wrong), os=texts, browser=st.one_of(texts, wrong))
def test_devices_register(
    mem: MemoryClient, user: Any, device_id: Any, os: Any, browser: Any
) -> None:
    _ensure(mem)
    if _call(mem, mem.devices.register, user, device_id=device_id, os=os, browser=browser):
        _still_readable(mem)


@HOSTILE
@given(
    data=st.data(),
    user=user_ids,
    succeeded=st.one_of(st.booleans(), wrong),
)
@example(data=None, user=USER, succeeded=True)
def test_devices_by_fingerprint(
    mem: MemoryClient, seeded: Seeded, data: Any, user: Any, succeeded: Any
) -> None:
    _ensure(mem)
    fps = st.one_of(
        st.just(seeded.fingerprint),
        st.sampled_from(["0" * 64, "\x00" * 64, "\ud800", "F" * 64, "0" * 65]),
        texts,
        wrong,
    )
    fp = "\x00" + "0" * 63 if data is None else data.draw(fps)
    _call(mem, mem.devices.verify, user, fp, succeeded=succeeded)
    _call(mem, mem.devices.revoke_trust, user, fp)
    _call(mem, mem.devices.list, user)
    _call(mem, mem.devices.remove, user, fp)


# -- links -------------------------------------------------------------------------------------

entity_types = st.one_of(st.sampled_from(["order", "supplier", "warehouse", "contract"]), texts)
roles = st.one_of(st.sampled_from(["admin", "viewer", "approver", "owner", "buyer"]), texts, wrong)


@HOSTILE
@given(
    user=user_ids,
    entity_type=entity_types,
    entity_id=st.one_of(texts, wrong, st.just("88231")),
    role=roles,
    start=st.one_of(st.none(), datetimes, wrong),
    end=st.one_of(st.none(), datetimes, wrong),
)
@example(
    user=USER,
    entity_type="order",
    entity_id="88231",
    role="owner",
    start=datetime.min.replace(tzinfo=timezone(timedelta(hours=14))),
    end=None,
)
@example(
    user=USER,
    entity_type="order",
    entity_id="88231",
    role="owner",
    start=None,
    end=datetime.max.replace(tzinfo=timezone(timedelta(hours=-14))),
)
@example(user=USER, entity_type="order", entity_id="88231", role="owner", start=7, end=None)
def test_links_add(
    mem: MemoryClient,
    user: Any,
    entity_type: Any,
    entity_id: Any,
    role: Any,
    start: Any,
    end: Any,
) -> None:
    _ensure(mem)
    added = _call(
        mem,
        mem.links.add,
        user,
        entity_type=entity_type,
        entity_id=entity_id,
        role=role,
        effective_from=start,
        effective_to=end,
    )
    if added:
        _still_readable(mem)


@HOSTILE
@given(
    data=st.data(),
    user=user_ids,
    when=st.one_of(st.none(), datetimes, wrong),
    entity_type=st.one_of(st.none(), entity_types, wrong),
)
@example(data=None, user=USER, when=datetime.max.replace(tzinfo=UTC), entity_type=None)
def test_links_by_id_and_time(
    mem: MemoryClient, seeded: Seeded, data: Any, user: Any, when: Any, entity_type: Any
) -> None:
    _ensure(mem)
    link_id = "not-a-uuid" if data is None else data.draw(ids(seeded.link_id))
    _call(mem, mem.links.valid_now, user, entity_type=entity_type)
    _call(mem, mem.links.valid_at, user, when)
    _call(mem, mem.links.list, user)
    if _call(mem, mem.links.end, user, link_id, when):
        _still_readable(mem)
    _call(mem, mem.links.remove, user, link_id)


# -- facts -------------------------------------------------------------------------------------

keys = st.one_of(st.just("售后偏好"), texts, wrong)


@HOSTILE
@given(
    user=user_ids,
    key=keys,
    value=json_values,
    policy=policies,
    confidence=st.one_of(floats, wrong),
    source=st.one_of(texts, wrong),
)
@example(
    user=USER,
    key="k",
    value={"x": math.nan},
    policy=LifecyclePolicy.EXPLICIT,
    confidence=1.0,
    source="",
)
@example(
    user=USER, key="k", value="a\x00b", policy=LifecyclePolicy.EXPLICIT, confidence=1.0, source=""
)
@example(
    user=USER,
    key="k\x00",
    value=1,
    policy=LifecyclePolicy.IMPLICIT,
    confidence="high",
    source="",
)
def test_facts_put(
    mem: MemoryClient,
    user: Any,
    key: Any,
    value: Any,
    policy: Any,
    confidence: Any,
    source: Any,
) -> None:
    _ensure(mem)
    put = _call(
        mem,
        mem.facts.put,
        user,
        key,
        value,
        lifecycle_policy=policy,
        confidence=confidence,
        source=source,
    )
    if put:
        _still_readable(mem)


@HOSTILE
@given(
    data=st.data(),
    user=user_ids,
    key=keys,
    action=st.one_of(st.sampled_from(["click", "ignore"]), texts, wrong),
)
@example(data=None, user=USER, key="\ud800", action=["click"])
def test_facts_by_key_and_id(
    mem: MemoryClient, seeded: Seeded, data: Any, user: Any, key: Any, action: Any
) -> None:
    _ensure(mem)
    fact_id = "not-a-uuid" if data is None else data.draw(ids(seeded.fact_id))
    _call(mem, mem.facts.get, user, key)
    _call(mem, mem.facts.list, user)
    _call(mem, mem.facts.feedback, user, fact_id, action)
    _call(mem, mem.facts.delete, user, key)


# -- pii ---------------------------------------------------------------------------------------

pii_kinds = st.one_of(st.sampled_from(["phone", "email", "id_card", "bank_card", "address"]), wrong)


@HOSTILE
@given(data=st.data(), user=user_ids, kind=pii_kinds, value=st.one_of(texts, wrong))
@example(data=None, user=USER, kind="phone", value="139\x0012345678")
@example(data=None, user=USER, kind="phone", value="139\ud80012345678")
def test_pii(
    mem: MemoryClient, seeded: Seeded, data: Any, user: Any, kind: Any, value: Any
) -> None:
    _ensure(mem)
    entry_id = "not-a-uuid" if data is None else data.draw(ids(seeded.vault_id))
    if _call(mem, mem.pii.store, user, kind, value):
        _still_readable(mem)
    _call(mem, mem.pii.find, user, kind, value)
    _call(mem, mem.pii.reveal, user, entry_id)
    _call(mem, mem.pii.list, user)
    _call(mem, mem.pii.delete, user, entry_id)


# -- the unstructured track --------------------------------------------------------------------

kinds = st.one_of(st.sampled_from(list(MemoryKind)), st.sampled_from(["bogus", "note"]), wrong)


@HOSTILE
@given(
    user=user_ids,
    body=st.one_of(texts, wrong, st.just("订单 88231 退款 RF20260629001")),
    policy=policies,
    session_id=st.one_of(st.none(), texts, wrong),
    occurred_at=st.one_of(st.none(), datetimes, wrong),
    metadata=st.one_of(st.none(), json_objects, wrong),
    kind=kinds,
    private=st.one_of(st.booleans(), wrong),
)
@example(
    user=USER,
    body="订单 88231",
    policy=LifecyclePolicy.EXPLICIT,
    session_id=None,
    occurred_at=datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=14))),
    metadata=None,
    kind=MemoryKind.NOTE,
    private=False,
)
@example(
    user=USER,
    body="订单 88231",
    policy=LifecyclePolicy.EXPLICIT,
    session_id=None,
    occurred_at=datetime.max.replace(tzinfo=timezone(timedelta(hours=-14))),
    metadata=None,
    kind=MemoryKind.NOTE,
    private=False,
)
@example(
    user=USER,
    body="订单 88231",
    policy=LifecyclePolicy.EXPLICIT,
    session_id=None,
    occurred_at=None,
    metadata={"score": math.nan, "note": "a\x00b"},
    kind=MemoryKind.NOTE,
    private=False,
)
@example(
    user=USER,
    body="订单 88231",
    policy=LifecyclePolicy.EXPLICIT,
    session_id=None,
    occurred_at=None,
    metadata=None,
    kind="bogus",
    private=False,
)
def test_write(
    mem: MemoryClient,
    user: Any,
    body: Any,
    policy: Any,
    session_id: Any,
    occurred_at: Any,
    metadata: Any,
    kind: Any,
    private: Any,
) -> None:
    _ensure(mem)
    written = _call(
        mem,
        mem.write,
        user,
        body,
        lifecycle_policy=policy,
        session_id=session_id,
        occurred_at=occurred_at,
        metadata=metadata,
        kind=kind,
        private=private,
    )
    if written:
        _still_readable(mem)


def _memory_input(
    user: Any, body: Any, session_id: Any, occurred_at: Any, metadata: Any
) -> MemoryInput | None:
    """A ``MemoryInput`` carrying hostile values that its own type checks admit."""
    try:
        return MemoryInput(
            user_id=user,
            text=body,
            lifecycle_policy=LifecyclePolicy.IMPLICIT,
            session_id=session_id,
            occurred_at=occurred_at,
            metadata=metadata,
        )
    except ValueError:  # pydantic refused it before the SDK saw it
        return None


@FEW
@given(
    items=st.one_of(
        st.lists(
            st.builds(
                _memory_input,
                user_ids,
                st.one_of(texts, st.just("退款 RF20260629001")),
                st.one_of(st.none(), texts),
                st.one_of(st.none(), datetimes),
                st.one_of(st.none(), json_objects),
            ),
            max_size=3,
        ),
        wrong,
        st.lists(anything, max_size=2),
    ),
    batch_size=st.one_of(st.just(256), ints, wrong),
    progress=st.one_of(st.booleans(), wrong),
)
@example(items=7, batch_size=256, progress=False)
@example(items=[{"user_id": USER}], batch_size=256, progress=False)
def test_write_many(mem: MemoryClient, items: Any, batch_size: Any, progress: Any) -> None:
    _ensure(mem)
    if isinstance(items, list):
        items = [i for i in items if i is not None or not items]
    if _call(mem, mem.write_many, items, batch_size=batch_size, progress=progress):
        _still_readable(mem)


@HOSTILE
@given(
    user=user_ids,
    query=st.one_of(texts, wrong, st.just("退款到账了吗")),
    limit=st.one_of(st.just(5), ints, wrong),
    alpha=st.one_of(st.none(), floats, wrong),
    preset=st.one_of(st.none(), texts, wrong),
    intents=st.one_of(st.none(), st.lists(st.one_of(texts, wrong), max_size=3), wrong),
    after=st.one_of(st.none(), datetimes, wrong),
    before=st.one_of(st.none(), datetimes, wrong),
    session_id=st.one_of(st.none(), texts, wrong),
)
@example(
    user=USER,
    query="退款",
    limit=5,
    alpha=None,
    preset=None,
    intents=None,
    after=None,
    before=None,
    session_id="s\x00",
)
@example(
    user=USER,
    query="退款",
    limit=5,
    alpha=None,
    preset=None,
    intents=["refund\ud800"],
    after=None,
    before=None,
    session_id=None,
)
@example(
    user=USER,
    query=b"\xe9\x80\x80\xe6\xac\xbe",
    limit=5,
    alpha=None,
    preset=None,
    intents=7,
    after=None,
    before=None,
    session_id=None,
)
def test_search(
    mem: MemoryClient,
    seeded: Seeded,
    user: Any,
    query: Any,
    limit: Any,
    alpha: Any,
    preset: Any,
    intents: Any,
    after: Any,
    before: Any,
    session_id: Any,
) -> None:
    _ensure(mem)
    _call(
        mem,
        mem.search,
        user,
        query,
        limit=limit,
        alpha=alpha,
        preset=preset,
        intents=intents,
        occurred_after=after,
        occurred_before=before,
        session_id=session_id,
    )


def _turn(role: Any, body: Any, when: Any) -> Turn | None:
    try:
        return Turn(role=role, text=body, time=when)
    except InvalidInput:  # Turn checks its role itself
        return None


turns = st.builds(
    _turn,
    st.sampled_from(["user", "assistant", "system"]),
    st.one_of(texts, wrong, st.just(f"我的手机是 {MARKER}，订单 88231 还没退款")),
    st.one_of(st.none(), datetimes, wrong),
)


@FEW
@given(
    user=user_ids,
    session_id=st.one_of(st.just("s-1"), texts, wrong),
    transcript=st.one_of(st.lists(turns, max_size=3), wrong, st.lists(anything, max_size=2)),
)
@example(
    user=USER,
    session_id="s-1",
    transcript=[Turn("user", "订单 88231 退款", datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=14))))],
)
@example(
    user=USER,
    session_id="s-1",
    transcript=[Turn("user", "订单 88231 退款", 7)],  # type: ignore[arg-type]
)
def test_end_session(mem: MemoryClient, user: Any, session_id: Any, transcript: Any) -> None:
    _ensure(mem)
    if isinstance(transcript, list):
        transcript = [t for t in transcript if t is not None]
    if _call(mem, mem.end_session, user, session_id, transcript):
        _still_readable(mem)


@HOSTILE
@given(
    data=st.data(),
    user=user_ids,
    limit=st.one_of(st.just(10), ints, wrong),
    offset=st.one_of(st.just(0), ints, wrong),
)
@example(data=None, user=USER, limit=10, offset=0)
def test_memories(
    mem: MemoryClient, seeded: Seeded, data: Any, user: Any, limit: Any, offset: Any
) -> None:
    _ensure(mem)
    memory_id = "not-a-uuid" if data is None else data.draw(ids(seeded.memory_id))
    _call(mem, mem.memories.get, user, memory_id)
    _call(mem, mem.memories.list, user, limit=limit, offset=offset)
    _call(mem, mem.memories.delete, user, memory_id)


@FEW
@given(user=user_ids)
def test_export_and_forget(mem: MemoryClient, seeded: Seeded, user: Any) -> None:
    _ensure(mem)
    _call(mem, mem.export_user, user)
    _call(mem, mem.forget_user, user)
    _call(mem, mem.scope, user)


def test_every_public_method_is_covered(mem: MemoryClient) -> None:
    """A new public method on a facade needs a hostile test here too."""
    covered = {
        "profiles": {"get", "ensure", "create", "update", "update_with_retry"},
        "devices": {"register", "verify", "revoke_trust", "list", "remove"},
        "links": {"add", "valid_now", "valid_at", "list", "end", "remove"},
        "facts": {"put", "get", "list", "feedback", "delete"},
        "pii": {"store", "reveal", "find", "list", "delete"},
        "memories": {"get", "list", "delete"},
    }
    for facade, names in covered.items():
        public = {n for n in dir(getattr(mem, facade)) if not n.startswith("_")}
        assert public == names, facade
    client_calls = {"write", "write_many", "search", "end_session", "export_user", "forget_user"}
    assert client_calls <= {n for n in dir(mem) if not n.startswith("_")}
