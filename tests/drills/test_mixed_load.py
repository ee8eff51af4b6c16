"""Drill: a mixed concurrent load over overlapping users stays typed and consistent.

Issue 8 ("Lock mode and order"): a 15 s mix of ``write_many`` over overlapping users,
``search`` and ``forget_user`` gave deadlocks surfacing as an untyped
``OperationalError``. This runs the mix of ``benchmarks.mixed_load`` (also
``facts.put``, ``pii.store`` and ``memories.delete``; erased users are created again
with ``profiles.ensure``) for a few seconds. The bound is on the loop, never asserted:
timings and rates are the benchmark's. Asserted: only :class:`DualtrackError`
subclasses escape (``UserNotFound`` for a user erased a moment ago is expected;
``TransientFailure`` is allowed, counted and printed), and afterwards every vault id a
fragment or fact references exists for its user, no row outlives its profile, and no
(user, kind, blind index) has two vault rows.
"""

from __future__ import annotations

from benchmarks.mixed_load import (
    USERS,
    counting_retries,
    invariant_violations,
    run_mix,
)
from sdk.client import MemoryClient


def test_a_mixed_load_raises_only_typed_errors_and_leaves_consistent_stores(
    mem: MemoryClient,
) -> None:
    for user in USERS:
        mem.profiles.ensure(user)
    with counting_retries() as retries:
        tally = run_mix(mem, seconds=6.0, threads=6)

    for op, outcomes in sorted(tally.outcomes.items()):
        print(f"{op:16} {dict(outcomes)}")
    print(f"transient_failure: {tally.count('transient_failure')}, SDK retries: {retries.retries}")
    assert tally.untyped == [], "\n\n".join(tally.untyped[:3])
    assert tally.outcomes["write_many"]["ok"] > 0, "the mix wrote nothing: the drill proves nothing"
    violations = invariant_violations(mem)
    assert violations == dict.fromkeys(violations, 0)
