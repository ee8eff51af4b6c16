"""``dualtrack retokenise``: rows written before keyword terms were stemmed, and before
Chinese text added its character bigrams and concept terms, are brought up to date,
exactly as the write path now computes them, and only those.

A row of an earlier release is made by writing the same memories for a twin user with
stemming, bigrams and concepts switched off (that release's write path: ``keyword_terms``
was ``tokens``), then copying the twin's ``index_text`` and ``token_count`` onto the row
with SQL.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from policies.lifecycle import LifecyclePolicy
from policies.scope import UserScope
from sdk import MemoryClient, MemoryInput, Turn, cli
from sdk.feed import OutboxFeed
from sdk.retokenise import retokenise
from service.cli import app
from structured_memory.repositories.fragment_terms import (
    TermsChange,
    replace_terms,
    stored_terms,
)
from unstructured_memory import tokenize

EN, ZH = "buyer-en-001", "buyer-zh-001"
DAY = datetime(2023, 5, 8, 10, 0, tzinfo=UTC)
IMPLICIT, EXPLICIT = LifecyclePolicy.IMPLICIT, LifecyclePolicy.EXPLICIT


def _write(mem: MemoryClient, suffix: str = "") -> list[uuid.UUID]:
    """English turns of a session (contexts), an English memory alone, Chinese turns, and
    a session's record (a session, no context)."""
    en, zh = EN + suffix, ZH + suffix
    for user in (en, zh):
        mem.profiles.ensure(user)
    turns = [
        "We went camping with the kids last weekend",
        "They loved painting the rocks by the lake",
        "5 years already!",
    ]
    ids = mem.write_many(
        [
            *(
                MemoryInput(
                    user_id=en,
                    text=t,
                    lifecycle_policy=IMPLICIT,
                    session_id="s-camp",
                    occurred_at=DAY + timedelta(minutes=i),
                )
                for i, t in enumerate(turns)
            ),
            MemoryInput(
                user_id=en, text="Refunds are announced by emails", lifecycle_policy=EXPLICIT
            ),
            MemoryInput(
                user_id=zh,
                text="订单 88231 的扫地机不回充，申请退款 RF20260629001",
                lifecycle_policy=IMPLICIT,
                session_id="s-zh",
                occurred_at=DAY,
            ),
            MemoryInput(
                user_id=zh,
                text="客服说退款预计 1-3 个工作日到账",
                lifecycle_policy=IMPLICIT,
                session_id="s-zh",
                occurred_at=DAY + timedelta(minutes=1),
            ),
        ],
        progress=False,
    )
    record = mem.end_session(
        en,
        "s-travel",
        [
            Turn(role="user", text="I'm travelling next week and checking the shipments"),
            Turn(role="assistant", text="Noted, the packages are waiting at the warehouse"),
        ],
    )
    ids = [*ids, record.memory_id]
    with mem.admin.database.transaction() as conn:  # the temporary intents noted at session end
        notes = conn.execute(
            text(
                "SELECT id FROM memory_fragment WHERE user_id = :u AND NOT id = ANY(:ids) "
                "ORDER BY text"
            ),
            {"u": en, "ids": ids},
        ).scalars()
        return [*ids, *notes]


def _terms(mem: MemoryClient, ids: list[uuid.UUID]) -> list[tuple[str, int, int]]:
    """Each row's ``index_text``, ``token_count`` and ``xmin`` (changes when written), once
    the renewals of earlier searches have landed (else their write moves ``xmin`` later)."""
    mem._rt().ledger.renewals.flush()
    with mem.admin.database.transaction() as conn:
        rows = {
            r.id: (r.index_text, r.token_count, int(r.xmin))
            for r in conn.execute(
                text(
                    "SELECT id, index_text, token_count, xmin::text::bigint AS xmin "
                    "FROM memory_fragment WHERE id = ANY(:ids)"
                ),
                {"ids": ids},
            )
        }
    return [rows[i] for i in ids]


@pytest.fixture
def upgraded(
    mem: MemoryClient, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[uuid.UUID], list[tuple[str, int, int]], list[tuple[str, int, int]]]:
    """Rows as this release writes them, then turned into the previous release's rows:
    their ids, this release's terms, and the old terms now stored."""
    ids = _write(mem)
    current = _terms(mem, ids)
    with monkeypatch.context() as patch:
        patch.setattr(tokenize, "stem", lambda word: word)
        patch.setattr(tokenize, "cjk_bigrams", lambda text: [])
        patch.setattr(tokenize, "_concept_terms", lambda words: [])
        twins = _write(mem, "-old")
    with mem.admin.database.transaction() as conn:
        conn.execute(
            text(
                "UPDATE memory_fragment AS f SET index_text = o.index_text, "
                "token_count = o.token_count "
                "FROM unnest(CAST(:ids AS uuid[]), CAST(:twins AS uuid[])) AS p(id, twin) "
                "JOIN memory_fragment AS o ON o.id = p.twin "
                "WHERE f.id = p.id AND f.user_id IN (:en, :zh)"
            ),
            {"ids": ids, "twins": twins, "en": EN, "zh": ZH},
        )
    for user in (EN + "-old", ZH + "-old"):
        mem.forget_user(user)
    return ids, current, _terms(mem, ids)


def _keyword_hit(mem: MemoryClient, query: str, memory_id: uuid.UUID, user: str = EN) -> bool:
    hits = mem.search(user, query, limit=10, preset="keyword")
    return any(h.memory_id == memory_id and (h.keyword_score or 0) > 0 for h in hits)


def test_retokenise_brings_old_rows_up_to_date(upgraded: Any, mem: MemoryClient) -> None:
    ids, current, old = upgraded
    camping, painting, five_years, refunds, _, _, record, *notes = ids
    assert notes, "session end noted a temporary intent"
    stale = [i for i, (c, o) in enumerate(zip(current, old, strict=True)) if c[:2] != o[:2]]
    assert {ids[i] for i in stale} >= {camping, painting, five_years, refunds, record, *notes}
    assert "camping" in old[0][0].split()
    assert not _keyword_hit(mem, "camp", camping), "the old terms miss an inflected word"
    robot = ids[4]
    assert old[4][0] == "订单 88231 的 扫地机 不 回充 申请 退款 rf20260629001 08 may 2023"
    # an old row is still found by its words, not yet by a piece of one (扫地 of 扫地机)
    assert _keyword_hit(mem, "退款", robot, ZH)
    assert not _keyword_hit(mem, "扫地", robot, ZH)

    report = mem.admin.retokenise(batch_size=2)  # batches smaller than a user's rows

    assert report.changed == len(stale)
    after = _terms(mem, ids)
    assert [a[:2] for a in after] == [c[:2] for c in current], "as the write path computes now"
    assert after[4][0].startswith("订单 88231 的 扫地机 不 回充 申请 退款 rf20260629001 ~订单 ")
    assert {"~扫地", "~退款"} <= set(after[4][0].split())
    assert after[4][0].endswith(" 08 may 2023")
    assert _keyword_hit(mem, "扫地", robot, ZH)
    # context terms are kept: the turns before "5 years already!" lend it "camp" and "paint"
    assert {"camp", "paint", "kid", "2023"} <= set(after[2][0].split())
    assert _keyword_hit(mem, "camp", camping)
    assert _keyword_hit(mem, "camps", five_years)
    assert _keyword_hit(mem, "refund email", refunds)
    settled = _terms(mem, ids)

    again = mem.admin.retokenise()
    assert (again.users, again.examined, again.changed) == (2, len(ids), 0)
    assert _terms(mem, ids) == settled, "a second run writes nothing"


def test_rows_written_by_this_release_are_current(mem: MemoryClient) -> None:
    ids = _write(mem)
    before = _terms(mem, ids)
    report = mem.admin.retokenise()
    assert (report.users, report.examined, report.changed) == (2, len(ids), 0)
    assert _terms(mem, ids) == before


def test_a_session_written_in_another_time_zone_is_current(mem: MemoryClient) -> None:
    """The context's date is the UTC date, at write time as on re-indexing: 01:30 in
    Beijing on 9 May is 8 May in UTC."""
    user = "buyer-tz-01"
    mem.profiles.ensure(user)
    beijing = timezone(timedelta(hours=8))
    at = datetime(2026, 5, 9, 1, 30, tzinfo=beijing)
    ids = [
        mem.write(
            user,
            f"订单 88231 第 {i} 次问物流",
            lifecycle_policy=LifecyclePolicy.EXPLICIT,
            session_id="s-tz",
            occurred_at=at + timedelta(minutes=i),
        )
        for i in range(2)
    ]
    report = mem.admin.retokenise()
    assert (report.examined, report.changed) == (len(ids), 0)
    terms = _terms_text(mem, ids[1])
    assert "may" in terms
    assert "08" in terms


def _terms_text(mem: MemoryClient, memory_id: uuid.UUID) -> list[str]:
    with mem.admin.database.transaction() as conn:
        row = conn.execute(
            text("SELECT index_text FROM memory_fragment WHERE id = :i"), {"i": memory_id}
        ).scalar_one()
    return str(row).split(" ")


def test_changed_rows_are_queued_for_a_derived_index(upgraded: Any, mem: MemoryClient) -> None:
    ids, current, old = upgraded
    feed = OutboxFeed(mem.admin.database, mem.admin.index, max_delay_s=1.0, background=False)
    report = retokenise(mem.admin.database, feed)
    assert report.changed > 0
    with mem.admin.database.transaction() as conn:
        queued = conn.execute(
            text(
                "SELECT op, user_id, fragment_id FROM fragment_outbox WHERE user_id IN (:en, :zh)"
            ),
            {"en": EN, "zh": ZH},
        ).all()
    changed = {i for i, c, o in zip(ids, current, old, strict=True) if c[:2] != o[:2]}
    assert {r.fragment_id for r in queued} == changed
    assert {(r.op, r.user_id) for r in queued} == {("upsert", EN), ("upsert", ZH)}


def test_a_row_reindexed_meanwhile_is_not_overwritten(mem: MemoryClient) -> None:
    """A neighbour re-indexed after its context turn was forgotten keeps its new terms."""
    ids = _write(mem)
    camping, painting = ids[0], ids[1]
    scope = UserScope(EN)
    with mem.admin.database.transaction() as conn:
        read = next(r for r in stored_terms(conn, scope, after=None, limit=100) if r.id == painting)
    assert read.context_ids == [camping]
    assert mem.memories.delete(EN, camping)  # forgetting re-indexes "painting" without it
    stale = TermsChange(read, read.index_text + " camp", read.token_count + 1)
    with mem.admin.database.transaction() as conn:
        assert replace_terms(conn, scope, [stale]) == []
    assert "camp" not in _terms(mem, [painting])[0][0].split()


def test_retokenise_command(
    upgraded: Any, mem: MemoryClient, cli_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids, current, old = upgraded
    monkeypatch.setattr(cli.console, "width", 200)
    stale = sum(c[:2] != o[:2] for c, o in zip(current, old, strict=True))
    first = CliRunner().invoke(app, ["retokenise", "--batch-size", "3"])
    assert first.exit_code == 0, first.output
    assert f"examined {len(ids)} fragments of 2 users; {stale} changed" in first.output
    second = CliRunner().invoke(app, ["retokenise"])
    assert second.exit_code == 0, second.output
    assert "; 0 changed" in second.output
    assert [t[:2] for t in _terms(mem, ids)] == [c[:2] for c in current]
