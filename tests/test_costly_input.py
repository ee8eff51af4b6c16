"""Costly input: the work one call can cause is bounded.

Each distinct personal value of a text is vaulted (encrypted, blind-indexed, stored: a
few statements), and a user's export decrypts every one; a 64 KiB text of distinct phone
numbers made one write cost seconds. A text, a JSON field, or a call's turns name at most
``MAX_PII_VALUES`` distinct values: more is :class:`InvalidText`, and nothing is stored.
Timings are in ``benchmarks/adversarial.py``.
"""

from __future__ import annotations

import random

import pytest

from policies.errors import InvalidText
from policies.lifecycle import LifecyclePolicy
from policies.pii import MAX_PII_VALUES
from sdk import MemoryClient, Turn

USER = "buyer-costly-01"


def phones(n: int, seed: int = 1) -> list[str]:
    rnd = random.Random(seed)
    return [f"138{rnd.randrange(10**8):08d}" for _ in range(n)]


def nothing_stored(mem: MemoryClient) -> bool:
    return mem.memories.list(USER) == [] and mem.pii.list(USER) == []


def test_a_text_naming_more_values_than_the_cap_is_refused(mem: MemoryClient) -> None:
    mem.profiles.ensure(USER)
    many = " ".join(phones(MAX_PII_VALUES + 1))
    with pytest.raises(InvalidText) as refused:
        mem.write(USER, many, lifecycle_policy=LifecyclePolicy.IMPLICIT)
    assert refused.value.details["field"] == "text"
    assert phones(1)[0] not in refused.value.message
    assert nothing_stored(mem)
    half = phones(MAX_PII_VALUES // 2 + 1)
    with pytest.raises(InvalidText):
        mem.write(
            USER,
            " ".join(half),
            lifecycle_policy=LifecyclePolicy.IMPLICIT,
            metadata={"contacts": phones(MAX_PII_VALUES // 2, seed=2)},
        )
    assert nothing_stored(mem), "the text and its metadata count together"


def test_the_cap_counts_distinct_values(mem: MemoryClient) -> None:
    mem.profiles.ensure(USER)
    at_cap = " ".join(phones(MAX_PII_VALUES - 1)) + (" 13912345678" * 4000)
    mem.write(USER, at_cap, lifecycle_policy=LifecyclePolicy.IMPLICIT)
    assert len(mem.pii.list(USER)) == MAX_PII_VALUES


def test_fact_values_and_profile_attributes_are_capped(mem: MemoryClient) -> None:
    mem.profiles.ensure(USER)
    with pytest.raises(InvalidText):
        mem.facts.put(
            USER,
            "contacts",
            {"phones": phones(MAX_PII_VALUES + 1)},
            lifecycle_policy=LifecyclePolicy.EXPLICIT,
        )
    with pytest.raises(InvalidText):
        mem.profiles.update(
            USER, expected_version=1, attributes={"phones": phones(MAX_PII_VALUES + 1)}
        )
    assert mem.facts.list(USER) == []
    assert mem.pii.list(USER) == []


def test_a_calls_turns_count_together(mem: MemoryClient) -> None:
    mem.profiles.ensure(USER)
    turns = [Turn("user", f"我的手机号是 {p}") for p in phones(MAX_PII_VALUES + 1)]
    with pytest.raises(InvalidText):
        mem.append_turns(USER, "s-1", turns)
    with pytest.raises(InvalidText):
        mem.end_session(USER, "s-1", turns)
    assert nothing_stored(mem)
    mem.end_session(USER, "s-1", turns[:MAX_PII_VALUES])
    assert len(mem.pii.list(USER)) == MAX_PII_VALUES
