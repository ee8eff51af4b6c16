"""Hostile input: every public SDK method raises only typed errors; a failed call writes nothing.

A property suite over every method reachable from :class:`MemoryClient`. Each
example calls a method with valid arguments except one or two (sometimes
none) drawn from hostile values: arbitrary Unicode (NUL, lone surrogates,
huge strings), NaN and infinite floats, huge integers, deep or odd JSON, odd
datetimes (naive, offsets of ±14 h and ±23:59, ``datetime.min`` and ``max``),
wrong types and malformed ids. For every call:

- only :class:`InvalidInput`, :class:`NotFound` or :class:`Conflict` escape
  (never an untyped error, nor a bare ``DualtrackError`` of code ``internal``);
- a call that fails leaves every user table exactly as it was;
- an error never echoes a free-text value: a phone number planted in the
  hostile strings must not come back in its message or details;
- after a call that stored hostile input, ``memories.list``, ``search`` and
  ``export_user`` (and the structured listings) still work for the user:
  no poison rows.

Runs are derandomized, so CI sees the same examples every time; the
``@example`` cases are defects an earlier hypothesis run found.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from policies.lifecycle import LifecyclePolicy
from policies.ttl import MemoryKind
from sdk import Conflict, DualtrackError, InvalidInput, MemoryClient, MemoryInput, NotFound, Turn
from structured_memory.models import Base

USER = "buyer-hostile-001"
MARKER = "13912345678"
"""A phone number planted in hostile free text; no error may repeat it."""

EXPECTED = (InvalidInput, NotFound, Conflict)
LABELS = {"entity_type", "role", "kind"}
"""Enum fields whose errors repeat the unknown label (``check_choice``): no echo check."""

TABLES = [t.name for t in Base.metadata.sorted_tables if t.name != "embedding_space"]

HOSTILE = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
FEW = settings(HOSTILE, max_examples=40)
"""For the calls that analyse and embed text (writes, sessions)."""

PLUS14 = timezone(timedelta(hours=14))
MINUS14 = timezone(timedelta(hours=-14))

# -- hostile values ----------------------------------------------------------------------------

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

_OFFSETS = [UTC, PLUS14, MINUS14, timezone(timedelta(hours=23, minutes=59))]
datetimes = st.one_of(
    st.datetimes(timezones=st.one_of(st.none(), st.sampled_from(_OFFSETS))),
    st.sampled_from(
        [
            datetime.min,
            datetime.max,
            datetime.min.replace(tzinfo=PLUS14),
            datetime.max.replace(tzinfo=MINUS14),
            datetime.min.replace(tzinfo=UTC),
            datetime.max.replace(tzinfo=UTC),
            datetime(1899, 12, 31, 23, 59, tzinfo=UTC),
        ]
    ),
)
"""Datetimes: naive, aware at extreme offsets, the ends of Python's range."""

wrong = st.sampled_from(
    [
        None,
        True,
        0,
        -1,
        2**40,
        2**70,
        math.nan,
        math.inf,
        -math.inf,
        b"\xff\xfe",
        MARKER.encode(),
        bytearray(b"x"),
        object(),
        [],
        ["a", 1],
        {},
        {"a": 1},
        {1, 2},
        uuid.UUID(int=0),
        datetime(2026, 1, 1),
    ]
)
"""Values of the wrong type for almost any parameter."""

floats = st.one_of(st.floats(), st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -0.0]))
ints = st.one_of(st.integers(), st.sampled_from([-1, 0, 2**31 - 1, 2**31, 2**40, 2**63, 2**70]))


def _nested(depth: int) -> Any:
    value: Any = "深"
    for _ in range(depth):
        value = [value]
    return value


_leaf = st.one_of(st.none(), st.booleans(), ints, floats, st.text(_chars, max_size=12))
json_values = st.one_of(
    st.recursive(
        _leaf,
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(st.text(_chars, max_size=8), inner, max_size=4)
        ),
        max_leaves=12,
    ),
    st.sampled_from(
        [_nested(40), _nested(300), _nested(900), {"n": 10**400}, [10**5000], f"{MARKER}\x00"]
    ),
    wrong,
)
"""JSON-ish values: NaN, infinities, NUL and surrogates in keys and strings, deep nesting."""

json_objects = st.one_of(
    st.dictionaries(st.text(_chars, max_size=8), json_values, max_size=4),
    st.sampled_from([{"x": math.nan}, {"\x00": 1}, {"a": f"{MARKER}\x00"}, {"a": [math.inf]}]),
)

hostile_users = st.one_of(st.sampled_from(["ghost-404", "13800000000"]), texts, wrong)
"""Unknown users (valid ids without a profile) and malformed ids."""

SEEDED, SEEDED_STR = "<seeded>", "<seeded as str>"
"""Stand for the id of a record the ``seeded`` fixture made (swapped in by :func:`_real`)."""

seeded_ids = st.sampled_from([SEEDED, SEEDED_STR])
hostile_ids = st.one_of(
    st.uuids(),
    st.uuids().map(str),
    st.sampled_from(["not-a-uuid", "{" + "0" * 32 + "}", "0" * 33, "\x00", "\ud800" * 36]),
    texts,
    wrong,
)


def _real(value: Any, real: uuid.UUID | str) -> Any:
    """``value`` with the seeded placeholders replaced by ``real``."""
    if value == SEEDED:
        return real
    if value == SEEDED_STR:
        return str(real)
    return value


NOTHING = uuid.UUID(int=1)
"""A well-formed id no record has."""


def _doomed(value: Any, nothing: Any = NOTHING) -> Any:
    """What a delete step gets: the hostile id as drawn, but never the seeded record
    (later examples still need it): a well-formed id of nothing instead."""
    return nothing if value in (SEEDED, SEEDED_STR) else value


@st.composite
def calls(
    draw: st.DrawFn, /, **fields: tuple[st.SearchStrategy[Any], st.SearchStrategy[Any]]
) -> Any:
    """Arguments by name, each drawn valid, except one or two (or none) drawn hostile."""
    names = sorted(fields)
    hostile = draw(st.sets(st.sampled_from(names), max_size=draw(st.sampled_from([0, 1, 1, 2]))))
    return {n: draw(fields[n][1] if n in hostile else fields[n][0]) for n in names}


# -- the checks --------------------------------------------------------------------------------


def _snapshot(mem: MemoryClient) -> dict[str, tuple[int, str]]:
    """Row count and content hash of every user table (cheap: the tables are tiny here),
    once the uses earlier searches recorded are written (renewal is deferred)."""
    mem._rt().ledger.renewals.flush()
    union = " UNION ALL ".join(
        f"SELECT '{t}', count(*), md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), ''))"
        f" FROM {t} x"
        for t in TABLES
    )
    with mem.admin.database.transaction() as conn:
        return {r[0]: (int(r[1]), r[2]) for r in conn.execute(text(union))}


def _call(mem: MemoryClient, method: Callable[..., Any], *args: Any, **kwargs: Any) -> bool:
    """Call ``method``; return whether it succeeded. A failure must be typed and write nothing."""
    before = _snapshot(mem)
    error: DualtrackError | None = None
    try:
        method(*args, **kwargs)
    except DualtrackError as exc:
        error = exc
    if error is None:
        return True
    assert isinstance(error, EXPECTED), f"{type(error).__name__} ({error.code}): {error}"
    if error.details.get("field") not in LABELS:
        assert MARKER not in str(error) + repr(error.details), "the error echoes a value"
    assert _snapshot(mem) == before, f"a failed {method.__qualname__} wrote something"
    return False


def _still_readable(mem: MemoryClient) -> None:
    """Everything stored for the user reads back: no poison row."""
    mem.memories.list(USER, limit=1000)
    mem.search(USER, "订单 88231 退款", limit=5)
    mem.search(USER, "refund", occurred_after=datetime(2000, 1, 1, tzinfo=UTC))
    mem.export_user(USER)
    mem.links.valid_now(USER)
    mem.links.valid_at(USER, datetime(2026, 6, 29, tzinfo=UTC))


@dataclass(frozen=True)
class Seeded:
    """Real records of ``USER``, so hostile calls also reach past the id lookups."""

    memory_id: uuid.UUID
    link_id: uuid.UUID
    fact_id: uuid.UUID
    vault_id: uuid.UUID
    fingerprint: str


@pytest.fixture
def seeded(mem: MemoryClient) -> Seeded:
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
    return Seeded(memory_id, link.id, fact.id, ref.id, device.fingerprint)


def _ensure(mem: MemoryClient) -> None:
    """Recreate ``USER`` if an earlier example erased it."""
    mem.profiles.ensure(USER)


USER_FIELD = (st.just(USER), hostile_users)

# -- profiles ----------------------------------------------------------------------------------

profile_changes = st.dictionaries(
    st.sampled_from(["timezone", "language", "notification_preference", "attributes"]),
    st.one_of(
        st.sampled_from(["Asia/Shanghai", "zh-CN", {"wechat": True}]),
        st.fixed_dictionaries({"vip": st.booleans(), "city": st.sampled_from(["杭州", "Berlin"])}),
    ),
    max_size=2,
)
hostile_changes = st.dictionaries(
    st.one_of(
        st.sampled_from(["timezone", "language", "notification_preference", "attributes"]),
        st.sampled_from(["profile_summary", "version", "created_at", MARKER]),
    ),
    st.one_of(texts, wrong, json_values, json_objects),
    min_size=1,
    max_size=3,
)


@HOSTILE
@given(args=calls(user=USER_FIELD))
def test_profiles_get_and_ensure(mem: MemoryClient, args: dict[str, Any]) -> None:
    _ensure(mem)
    _call(mem, mem.profiles.get, args["user"])
    _call(mem, mem.profiles.ensure, args["user"])


@HOSTILE
@given(
    args=calls(
        user=(st.just("new-buyer"), hostile_users), changes=(profile_changes, hostile_changes)
    )
)
@example(args={"user": "new-buyer-1", "changes": {"attributes": {"score": math.nan}}})
@example(args={"user": "new-buyer-2", "changes": {"attributes": {"x": math.inf}}})
@example(args={"user": "new-buyer-3", "changes": {"attributes": {"note": f"{MARKER}\x00"}}})
@example(args={"user": "new-buyer-4", "changes": {"attributes": {"deep": _nested(300)}}})
@example(args={"user": "new-buyer-5", "changes": {"timezone": f"Asia/{MARKER}"}})
@example(args={"user": "new-buyer-6", "changes": {"notification_preference": {1: True}}})
def test_profiles_create(mem: MemoryClient, args: dict[str, Any]) -> None:
    _ensure(mem)
    if _call(mem, mem.profiles.create, args["user"], **args["changes"]):
        mem.export_user(args["user"])
        mem.forget_user(args["user"])


@HOSTILE
@given(
    args=calls(
        user=USER_FIELD,
        version=(st.just("current"), st.one_of(ints, wrong, texts)),
        changes=(profile_changes, hostile_changes),
    )
)
@example(args={"user": USER, "version": 2**40, "changes": {}})
@example(args={"user": USER, "version": True, "changes": {"language": "en"}})
@example(args={"user": USER, "version": "current", "changes": {"attributes": {"x": math.nan}}})
def test_profiles_update(mem: MemoryClient, args: dict[str, Any]) -> None:
    _ensure(mem)
    version = args["version"]
    if version == "current":
        version = mem.profiles.get(USER).version
    if _call(mem, mem.profiles.update, args["user"], expected_version=version, **args["changes"]):
        _still_readable(mem)


@HOSTILE
@given(
    args=calls(
        user=USER_FIELD,
        returned=(
            profile_changes,
            st.one_of(hostile_changes, wrong, st.dictionaries(st.one_of(ints, st.none()), texts)),
        ),
        max_attempts=(st.just(50), st.one_of(ints, floats, wrong)),
        base_delay_s=(st.just(0.001), st.one_of(ints, floats, wrong)),
    )
)
@example(args={"user": USER, "returned": 7, "max_attempts": 50, "base_delay_s": 0.001})
@example(args={"user": USER, "returned": {}, "max_attempts": "x", "base_delay_s": 0.001})
@example(args={"user": USER, "returned": {}, "max_attempts": 50, "base_delay_s": 1e9})
@example(args={"user": USER, "returned": {1: "x", None: 2}, "max_attempts": 5, "base_delay_s": 0})
def test_profiles_update_with_retry(mem: MemoryClient, args: dict[str, Any]) -> None:
    _ensure(mem)
    returned = args["returned"]
    if _call(
        mem,
        mem.profiles.update_with_retry,
        args["user"],
        lambda _profile: returned,
        max_attempts=args["max_attempts"],
        base_delay_s=args["base_delay_s"],
    ):
        _still_readable(mem)
    _call(mem, mem.profiles.update_with_retry, USER, returned)  # not a function


# -- devices -----------------------------------------------------------------------------------


@HOSTILE
@given(
    args=calls(
        user=USER_FIELD,
        device_id=(st.sampled_from(["IMEI-2", "设备-3"]), st.one_of(texts, wrong)),
        os=(st.just("Android 14"), st.one_of(texts, wrong)),
        browser=(st.just("Chrome"), st.one_of(texts, wrong)),
    )
)
def test_devices_register(mem: MemoryClient, args: dict[str, Any]) -> None:
    _ensure(mem)
    a = args
    if _call(
        mem,
        mem.devices.register,
        a["user"],
        device_id=a["device_id"],
        os=a["os"],
        browser=a["browser"],
    ):
        mem.devices.list(USER)
        mem.export_user(USER)


_fingerprints = st.one_of(
    st.sampled_from(["0" * 64, "\x00" * 64, "\ud800" * 64, "g" * 64, "0" * 65, MARKER * 6]),
    texts,
    wrong,
)


@HOSTILE
@given(
    args=calls(
        user=USER_FIELD,
        fingerprint=(seeded_ids, _fingerprints),
        succeeded=(st.booleans(), wrong),
    )
)
@example(args={"user": USER, "fingerprint": "\x00" + "0" * 63, "succeeded": True})
@example(args={"user": USER, "fingerprint": "\ud800", "succeeded": True})
@example(args={"user": USER, "fingerprint": SEEDED, "succeeded": "yes"})
def test_devices_by_fingerprint(mem: MemoryClient, seeded: Seeded, args: dict[str, Any]) -> None:
    _ensure(mem)
    user, fp = args["user"], _real(args["fingerprint"], seeded.fingerprint)
    if args["fingerprint"] == SEEDED_STR:
        fp = seeded.fingerprint.upper()
    _call(mem, mem.devices.verify, user, fp, succeeded=args["succeeded"])
    _call(mem, mem.devices.revoke_trust, user, fp)
    _call(mem, mem.devices.list, user)
    _call(mem, mem.devices.remove, user, _doomed(args["fingerprint"], "0" * 64))


# -- links -------------------------------------------------------------------------------------

hostile_times = st.one_of(datetimes, wrong)
ordinary_starts = st.sampled_from([None, datetime(2026, 1, 1, tzinfo=timezone(timedelta(hours=8)))])
ordinary_ends = st.sampled_from([None, datetime(2027, 1, 1, tzinfo=UTC)])


@HOSTILE
@given(
    args=calls(
        user=USER_FIELD,
        entity_type=(
            st.sampled_from(["order", "supplier", "warehouse", "contract"]),
            st.one_of(texts, wrong),
        ),
        entity_id=(st.sampled_from(["88231", "RF20260629001"]), st.one_of(texts, wrong)),
        role=(st.sampled_from(["admin", "viewer", "approver", "owner"]), st.one_of(texts, wrong)),
        start=(ordinary_starts, hostile_times),
        end=(ordinary_ends, hostile_times),
    )
)
@example(
    args={
        "user": USER,
        "entity_type": "order",
        "entity_id": "88231",
        "role": "owner",
        "start": datetime.min.replace(tzinfo=PLUS14),
        "end": None,
    }
)
@example(
    args={
        "user": USER,
        "entity_type": "order",
        "entity_id": "88231",
        "role": "owner",
        "start": None,
        "end": datetime.max.replace(tzinfo=MINUS14),
    }
)
@example(
    args={
        "user": USER,
        "entity_type": "order",
        "entity_id": "88231",
        "role": "owner",
        "start": 7,
        "end": None,
    }
)
def test_links_add(mem: MemoryClient, args: dict[str, Any]) -> None:
    _ensure(mem)
    a = args
    added = _call(
        mem,
        mem.links.add,
        a["user"],
        entity_type=a["entity_type"],
        entity_id=a["entity_id"],
        role=a["role"],
        effective_from=a["start"],
        effective_to=a["end"],
    )
    if added:
        _still_readable(mem)


@HOSTILE
@given(
    args=calls(
        user=USER_FIELD,
        link_id=(seeded_ids, hostile_ids),
        when=(st.sampled_from([None, datetime(2030, 1, 1, tzinfo=UTC)]), hostile_times),
        entity_type=(st.sampled_from([None, "order"]), st.one_of(texts, wrong)),
    )
)
@example(
    args={
        "user": USER,
        "link_id": SEEDED,
        "when": datetime.max.replace(tzinfo=UTC),
        "entity_type": None,
    }
)
@example(args={"user": USER, "link_id": "not-a-uuid", "when": None, "entity_type": None})
@example(args={"user": USER, "link_id": True, "when": None, "entity_type": None})
def test_links_by_id_and_time(mem: MemoryClient, seeded: Seeded, args: dict[str, Any]) -> None:
    _ensure(mem)
    user, link_id, when = args["user"], _real(args["link_id"], seeded.link_id), args["when"]
    _call(mem, mem.links.valid_now, user, entity_type=args["entity_type"])
    _call(mem, mem.links.valid_at, user, when)
    _call(mem, mem.links.list, user)
    if _call(mem, mem.links.end, user, link_id, when):
        _still_readable(mem)
    _call(mem, mem.links.remove, user, _doomed(args["link_id"]))


# -- facts -------------------------------------------------------------------------------------

fact_values = st.one_of(
    st.sampled_from(["退款优先", 3, 0.5, None, ["微信", "短信"]]),
    st.fixed_dictionaries({"订单": st.just(88231), "ok": st.booleans()}),
)


@HOSTILE
@given(
    args=calls(
        user=USER_FIELD,
        key=(st.sampled_from(["售后偏好", "contact"]), st.one_of(texts, wrong)),
        value=(fact_values, json_values),
        policy=(
            st.sampled_from([LifecyclePolicy.EXPLICIT, LifecyclePolicy.IMPLICIT, "explicit"]),
            st.one_of(st.sampled_from(["forever", LifecyclePolicy.SENSITIVE]), wrong),
        ),
        confidence=(st.sampled_from([1.0, 0.31, 0, 1]), st.one_of(floats, wrong)),
        source=(st.sampled_from(["", "客服"]), st.one_of(texts, wrong)),
    )
)
@example(
    args={
        "user": USER,
        "key": "k",
        "value": {"x": math.nan},
        "policy": LifecyclePolicy.EXPLICIT,
        "confidence": 1.0,
        "source": "",
    }
)
@example(
    args={
        "user": USER,
        "key": "k",
        "value": f"{MARKER}\x00",
        "policy": LifecyclePolicy.EXPLICIT,
        "confidence": 1.0,
        "source": "",
    }
)
@example(
    args={
        "user": USER,
        "key": "k",
        "value": _nested(300),
        "policy": LifecyclePolicy.EXPLICIT,
        "confidence": 1.0,
        "source": "",
    }
)
@example(
    args={
        "user": USER,
        "key": "k\x00",
        "value": 1,
        "policy": LifecyclePolicy.IMPLICIT,
        "confidence": None,
        "source": "",
    }
)
def test_facts_put(mem: MemoryClient, args: dict[str, Any]) -> None:
    _ensure(mem)
    a = args
    put = _call(
        mem,
        mem.facts.put,
        a["user"],
        a["key"],
        a["value"],
        lifecycle_policy=a["policy"],
        confidence=a["confidence"],
        source=a["source"],
    )
    if put:
        mem.facts.list(USER)
        mem.export_user(USER)


@HOSTILE
@given(
    args=calls(
        user=USER_FIELD,
        key=(st.just("售后偏好"), st.one_of(texts, wrong)),
        fact_id=(seeded_ids, hostile_ids),
        action=(st.sampled_from(["click", "ignore"]), st.one_of(texts, wrong)),
    )
)
@example(args={"user": USER, "key": "\ud800", "fact_id": SEEDED, "action": ["click"]})
@example(args={"user": USER, "key": "k\x00", "fact_id": "not-a-uuid", "action": MARKER})
def test_facts_by_key_and_id(mem: MemoryClient, seeded: Seeded, args: dict[str, Any]) -> None:
    _ensure(mem)
    user, key = args["user"], args["key"]
    _call(mem, mem.facts.get, user, key)
    _call(mem, mem.facts.list, user)
    _call(mem, mem.facts.feedback, user, _real(args["fact_id"], seeded.fact_id), args["action"])
    _call(
        mem, mem.facts.delete, user, "旧偏好" if key == "售后偏好" else key
    )  # keep the seeded fact


# -- pii ---------------------------------------------------------------------------------------

pii_kinds = st.sampled_from(["phone", "email", "id_card", "bank_card", "address"])
pii_values = st.sampled_from([MARKER, "a@b.com", "浙江省杭州市西湖区文三路 90 号"])


@HOSTILE
@given(
    args=calls(
        user=USER_FIELD,
        kind=(pii_kinds, st.one_of(texts, wrong)),
        value=(pii_values, st.one_of(texts, wrong)),
    )
)
@example(args={"user": USER, "kind": "phone", "value": f"{MARKER}\ud800"})
def test_pii_store_and_list(mem: MemoryClient, args: dict[str, Any]) -> None:
    _ensure(mem)
    if _call(mem, mem.pii.store, args["user"], args["kind"], args["value"]):
        _still_readable(mem)
    _call(mem, mem.pii.list, args["user"])


@HOSTILE
@given(
    args=calls(
        user=USER_FIELD,
        kind=(pii_kinds, st.one_of(texts, wrong)),
        value=(pii_values, st.one_of(texts, wrong)),
        entry_id=(seeded_ids, hostile_ids),
    )
)
@example(args={"user": USER, "kind": "phone", "value": "139\x0012345678", "entry_id": SEEDED})
@example(args={"user": USER, "kind": "phone", "value": MARKER, "entry_id": "\ud800"})
@example(args={"user": USER, "kind": "phone", "value": None, "entry_id": SEEDED})
@example(args={"user": USER, "kind": "phone", "value": MARKER, "entry_id": True})
@example(args={"user": USER, "kind": "phone", "value": MARKER, "entry_id": "\x00"})
def test_pii_lookups(mem: MemoryClient, seeded: Seeded, args: dict[str, Any]) -> None:
    _ensure(mem)
    user, entry_id = args["user"], _real(args["entry_id"], seeded.vault_id)
    _call(mem, mem.pii.find, user, args["kind"], args["value"])
    _call(mem, mem.pii.reveal, user, entry_id)
    _call(mem, mem.pii.delete, user, _doomed(args["entry_id"]))


# -- the unstructured track --------------------------------------------------------------------

bodies = st.sampled_from(
    [
        "订单 88231 退款 RF20260629001",
        f"我的手机是 {MARKER}，邮箱 a@b.com",
        "Refund for order 88231 please",
    ]
)
ordinary_times = st.sampled_from(
    [None, datetime(2026, 6, 29, 10, 0, tzinfo=timezone(timedelta(hours=8)))]
)


def _write_example(**changes: Any) -> dict[str, Any]:
    base = {
        "user": USER,
        "body": "订单 88231",
        "policy": LifecyclePolicy.EXPLICIT,
        "session_id": None,
        "occurred_at": None,
        "metadata": None,
        "kind": MemoryKind.NOTE,
        "private": False,
    }
    return base | changes


@FEW
@given(
    args=calls(
        user=USER_FIELD,
        body=(bodies, st.one_of(texts, wrong)),
        policy=(st.sampled_from(list(LifecyclePolicy)), st.one_of(st.just("forever"), wrong)),
        session_id=(st.sampled_from([None, "s-1"]), st.one_of(texts, wrong)),
        occurred_at=(ordinary_times, hostile_times),
        metadata=(st.sampled_from([None, {"channel": "app"}]), st.one_of(json_objects, wrong)),
        kind=(st.sampled_from(list(MemoryKind)), st.one_of(st.just("bogus"), texts, wrong)),
        private=(st.booleans(), wrong),
    )
)
@example(args=_write_example(occurred_at=datetime(1, 1, 1, tzinfo=PLUS14)))
@example(args=_write_example(occurred_at=datetime.max.replace(tzinfo=MINUS14)))
@example(args=_write_example(metadata={"score": math.nan, "note": f"{MARKER}\x00"}))
@example(args=_write_example(metadata={"deep": _nested(300)}))
@example(args=_write_example(kind="bogus"))
def test_write(mem: MemoryClient, args: dict[str, Any]) -> None:
    _ensure(mem)
    a = args
    written = _call(
        mem,
        mem.write,
        a["user"],
        a["body"],
        lifecycle_policy=a["policy"],
        session_id=a["session_id"],
        occurred_at=a["occurred_at"],
        metadata=a["metadata"],
        kind=a["kind"],
        private=a["private"],
    )
    if written:
        _still_readable(mem)


def _memory_input(user: Any, body: Any, when: Any, metadata: Any) -> Any:
    """A ``MemoryInput`` carrying what its own type checks admit (or the refused dict)."""
    fields = {
        "user_id": user,
        "text": body,
        "lifecycle_policy": LifecyclePolicy.IMPLICIT,
        "occurred_at": when,
        "metadata": metadata,
    }
    try:
        return MemoryInput(**fields)
    except ValueError:  # pydantic refused it before the SDK saw it: hand over the dict
        return fields


_items = st.builds(
    _memory_input,
    st.one_of(st.just(USER), hostile_users),
    st.one_of(bodies, texts),
    st.one_of(ordinary_times, datetimes),
    st.one_of(st.none(), json_objects),
)


@FEW
@given(
    args=calls(
        items=(
            st.lists(
                st.builds(_memory_input, st.just(USER), bodies, ordinary_times, st.none()),
                max_size=3,
            ),
            st.one_of(st.lists(_items, min_size=1, max_size=3), wrong),
        ),
        batch_size=(st.sampled_from([1, 256]), st.one_of(ints, wrong)),
    )
)
@example(args={"items": 7, "batch_size": 256})
@example(args={"items": [{"user_id": USER}], "batch_size": 256})
@example(
    args={"items": [_memory_input(USER, "订单 88231", None, {"d": _nested(300)})], "batch_size": 1}
)
def test_write_many(mem: MemoryClient, args: dict[str, Any]) -> None:
    _ensure(mem)
    if _call(mem, mem.write_many, args["items"], batch_size=args["batch_size"], progress=False):
        _still_readable(mem)


def _search_example(**changes: Any) -> dict[str, Any]:
    base = {
        "user": USER,
        "query": "退款",
        "limit": 5,
        "alpha": None,
        "preset": None,
        "intents": None,
        "after": None,
        "before": None,
        "session_id": None,
    }
    return base | changes


@HOSTILE
@given(
    args=calls(
        user=USER_FIELD,
        query=(st.sampled_from(["退款到账了吗", MARKER, "order 88231"]), st.one_of(texts, wrong)),
        limit=(st.sampled_from([1, 5, 100]), st.one_of(ints, wrong)),
        alpha=(st.sampled_from([None, 0.0, 0.5, 1]), st.one_of(floats, wrong)),
        preset=(st.just(None), st.one_of(texts, wrong)),
        intents=(
            st.sampled_from([None, ["refund_status"]]),
            st.one_of(st.lists(st.one_of(texts, wrong), max_size=3), wrong),
        ),
        after=(st.sampled_from([None, datetime(2020, 1, 1, tzinfo=UTC)]), hostile_times),
        before=(st.sampled_from([None, datetime(2100, 1, 1, tzinfo=UTC)]), hostile_times),
        session_id=(st.sampled_from([None, "s-hostile"]), st.one_of(texts, wrong)),
    )
)
@example(args=_search_example(session_id="s\x00"))
@example(args=_search_example(intents=["refund\ud800"]))
@example(args=_search_example(intents=7))
@example(args=_search_example(query="退款".encode()))
@example(args=_search_example(after=datetime.min.replace(tzinfo=PLUS14)))
def test_search(mem: MemoryClient, seeded: Seeded, args: dict[str, Any]) -> None:
    _ensure(mem)
    a = args
    _call(
        mem,
        mem.search,
        a["user"],
        a["query"],
        limit=a["limit"],
        alpha=a["alpha"],
        preset=a["preset"],
        intents=a["intents"],
        occurred_after=a["after"],
        occurred_before=a["before"],
        session_id=a["session_id"],
    )


def _turn(role: str, body: Any, when: Any) -> Turn:
    return Turn(role=role, text=body, time=when)  # type: ignore[arg-type]


_good_turns = st.lists(
    st.builds(_turn, st.sampled_from(["user", "assistant"]), bodies, ordinary_times),
    min_size=1,
    max_size=3,
).filter(lambda turns: any(t.role == "user" for t in turns))
_hostile_turns = st.one_of(
    st.lists(
        st.builds(
            _turn,
            st.sampled_from(["user", "assistant", "system"]),
            st.one_of(bodies, texts, wrong),
            st.one_of(ordinary_times, hostile_times),
        ),
        max_size=3,
    ),
    st.lists(st.one_of(texts, wrong), min_size=1, max_size=2),
    wrong,
)


@FEW
@given(
    args=calls(
        user=USER_FIELD,
        session_id=(st.sampled_from(["s-1", "会话-2"]), st.one_of(texts, wrong)),
        transcript=(_good_turns, _hostile_turns),
    )
)
@example(
    args={
        "user": USER,
        "session_id": "s-1",
        "transcript": [_turn("user", "订单 88231 退款", datetime(1, 1, 1, tzinfo=PLUS14))],
    }
)
@example(
    args={"user": USER, "session_id": "s-1", "transcript": [_turn("user", "订单 88231 退款", 7)]}
)
@example(args={"user": USER, "session_id": "s-1", "transcript": 7})
def test_end_session(mem: MemoryClient, args: dict[str, Any]) -> None:
    _ensure(mem)
    if _call(mem, mem.end_session, args["user"], args["session_id"], args["transcript"]):
        _still_readable(mem)


@HOSTILE
@given(
    args=calls(
        user=USER_FIELD,
        memory_id=(seeded_ids, hostile_ids),
        limit=(st.sampled_from([1, 10, 1000]), st.one_of(ints, wrong)),
        offset=(st.sampled_from([0, 1]), st.one_of(ints, wrong)),
    )
)
@example(args={"user": USER, "memory_id": "not-a-uuid", "limit": 10, "offset": 0})
def test_memories(mem: MemoryClient, seeded: Seeded, args: dict[str, Any]) -> None:
    _ensure(mem)
    user, memory_id = args["user"], _real(args["memory_id"], seeded.memory_id)
    _call(mem, mem.memories.get, user, memory_id)
    _call(mem, mem.memories.list, user, limit=args["limit"], offset=args["offset"])
    _call(mem, mem.memories.delete, user, _doomed(args["memory_id"]))


@HOSTILE
@given(args=calls(user=USER_FIELD))
def test_export_forget_and_scope(mem: MemoryClient, seeded: Seeded, args: dict[str, Any]) -> None:
    _ensure(mem)
    user = args["user"]
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
    calls_covered = {"write", "write_many", "search", "end_session", "export_user", "forget_user"}
    assert calls_covered <= {n for n in dir(mem) if not n.startswith("_")}
