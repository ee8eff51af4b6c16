"""The cross-session scenario suite (benchmarks/scenarios): its data loads, a fixed subset
replays through the SDK without leaking, and the scorer fails what it should fail."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from benchmarks.scenarios.model import (
    Scenario,
    alternatives,
    clear_pii_values,
    in_holdout,
    load_scenarios,
)
from benchmarks.scenarios.run import Suite, run_suite, stale_cause
from benchmarks.scenarios.score import (
    asserts,
    business_facts,
    leaks,
    score_context,
    score_profile,
)
from sdk import MemoryClient, Settings
from values.context import ContextItem, MemoryContext, Section

SUBSET = (
    "zh-refund-arrives-overnight",  # a refund arrives between sessions (verifier)
    "zh-restart-wrong-order-number",  # 忘了刚才说的，重新来 (sandbox fork)
    "zh-pii-phone-saved-by-agent",  # a vaulted phone needed later (masked + reference)
    "zh-agents-private-note-hidden",  # two agents, a private note
    "zh-lookalike-same-name-refunds",  # two users named 张伟 with near-identical orders
    "en-refund-service-down",  # an outage: the last state, flagged
)


@pytest.fixture(scope="module")
def scenarios() -> list[Scenario]:
    return load_scenarios()


@pytest.fixture
def suite(mem: MemoryClient, settings: Settings, scenarios: list[Scenario]) -> Iterator[Suite]:
    """The subset replayed by a client of its own (its verifiers stay its own); ``mem``
    empties the tables afterwards."""
    chosen = [s for s in scenarios if s.id in SUBSET]
    assert len(chosen) == len(SUBSET)
    with MemoryClient(settings, agent_id="scenarios") as own:
        yield run_suite(own, chosen, progress=False)


def test_the_data_is_a_suite(scenarios: list[Scenario]) -> None:
    assert len(scenarios) >= 300
    assert sum(s.language == "en" for s in scenarios) >= 80
    held = [s for s in scenarios if in_holdout(s.id)]
    assert 0.15 < len(held) / len(scenarios) < 0.35, "about a quarter, by a hash of the id"
    assert len(held) >= 75
    assert sum(s.language == "en" for s in held) >= 20
    assert sum(s.query.profile is not None for s in scenarios) >= 100
    assert sum(bool(s.query.stale) for s in scenarios) >= 80
    assert in_holdout("zh-pii-phone-saved-by-agent") == in_holdout("zh-pii-phone-saved-by-agent")
    assert "13912345678" in clear_pii_values(scenarios)


def test_must_items_are_masked_and_must_not_items_are_not_the_users_own(
    scenarios: list[Scenario],
) -> None:
    raw = scenarios[0].model_dump()
    raw["query"]["must_not"] = [raw["sessions"][0]["turns"][0]["text"][:6]]
    with pytest.raises(ValueError, match="must_not"):
        Scenario.model_validate(raw)
    raw = scenarios[0].model_dump()
    raw["query"]["must"] = ["13912345678"]
    with pytest.raises(ValueError, match="masked form"):
        Scenario.model_validate(raw)


def test_a_link_of_an_unknown_entity_type_is_refused_at_load(scenarios: list[Scenario]) -> None:
    raw = scenarios[0].model_dump()
    raw["sessions"][0]["writes"] = [
        {"kind": "link", "entity_type": "complaint", "entity_id": "TS-48261"}
    ]
    with pytest.raises(ValueError, match="entity_type"):
        Scenario.model_validate(raw)


def test_the_subset_replays_without_leaking(suite: Suite) -> None:
    m = suite.metrics()
    assert m["scenarios"] == len(SUBSET)
    assert m["must_not_leaks"] == 0
    assert m["pii_leaks"] == 0
    assert m["business_facts"] > 0
    assert m["accuracy"] == 1.0, "a state is verified just now or flagged, never stale"
    assert not [x for r in suite.results for x in r.score.leaked]


def _context(*lines: tuple[Section, str, str | None]) -> MemoryContext:
    items = [ContextItem(section, text, ref) for section, text, ref in lines]
    return MemoryContext("\n".join(i.text for i in items), 0, items)


def test_the_scorer_fails_what_it_should() -> None:
    truth = {("refund", "RF20260629001"): "已到账"}

    def state(entity_type: str, entity_id: str) -> str | None:
        return truth.get((entity_type, entity_id))

    ctx = _context(
        (
            Section.BUSINESS,
            "退款 RF20260629001：退款处理中（已核实 2026-11-30 10:00）",
            "refund:RF20260629001",
        ),
        (Section.RECORD, "[2026-11-29] 用户因订单 88231 的扫地机无法回充申请退款", None),
    )
    score = score_context(ctx, ["88231", "RF20260629001", "S10 Pro"], [], [], state)
    assert score.continuity
    assert not score.complete, "a must item is missing"
    assert score.missing == ["S10 Pro"]
    assert [f.accurate for f in score.facts] == [False], "a stale state shown as verified"

    flagged = _context(
        (
            Section.BUSINESS,
            "退款 RF20260629001：退款处理中（此刻无法核实，这是上次记录的状态，请用工具查询）",
            "refund:RF20260629001",
        )
    )
    assert [f.accurate for f in business_facts(flagged, state)] == [True]

    assert leaks("订单 88213 已签收", ["88213"], []) == ["must_not:88213"]
    assert leaks("联系电话 139 1234 5678", [], ["13912345678"])[0] == "pii:0"
    assert leaks("联系电话 139****5678（已加密）", [], ["13912345678"]) == []
    assert any(x.startswith("pii-unmasked") for x in leaks("备用 13800138000", [], []))
    alternatives = score_context(ctx, [["S10 Pro", "88231"]], [], [], state)
    assert alternatives.complete, "one of a must item's alternatives is enough"


def test_stale_items_and_profile_expectations_are_scored() -> None:
    ctx = _context(
        (Section.PROFILE, "语言 zh-CN；时区 Asia/Shanghai；通知渠道 phone", None),
        (Section.RECORD, "[2026-11-29] 用户查询订单 5530271 的物流进度", None),
    )
    score = score_context(ctx, ["5530271"], [], [], lambda t, i: None, stale=["5530217"])
    assert score.complete
    assert score.accurate, "the corrected number is not asserted"
    wrong = _context((Section.RECORD, "[2026-11-29] 用户查询订单 5530217、5530271", None))
    score = score_context(wrong, ["5530271"], [], [], lambda t, i: None, stale=["5530217"])
    assert score.complete
    assert not score.accurate
    assert score.stale == ["5530217"]

    negated = _context((Section.RECORD, "[2026-11-29] 用户要求别再发邮件，撤回了投诉", None))
    score = score_context(negated, ["撤回"], [], [], lambda t, i: None, stale=["邮件", "投诉"])
    assert score.accurate, "a negated or withdrawn word asserts nothing"
    assert asserts("别再发邮件了，邮件太多", "邮件"), "a second, plain occurrence does"

    values = ["phone", '"大件都走德邦"', '"别用中通"']
    assert score_profile(values, [["德邦", "deppon"]], ["email", "中通"]).correct
    missing = score_profile(values, ["丰巢"], [])
    assert missing.missing == ["丰巢"]
    assert not missing.correct
    wrong_profile = score_profile([*values, "email"], [], ["email"])
    assert wrong_profile.wrong == ["email"]
    assert not wrong_profile.correct


def test_stale_items_may_be_the_users_words_but_never_inside_a_must_item(
    scenarios: list[Scenario],
) -> None:
    raw = scenarios[0].model_dump()
    said = raw["sessions"][0]["turns"][0]["text"][:6]
    raw["query"]["stale"] = [said]
    assert Scenario.model_validate(raw).query.stale == [said]
    raw["query"]["stale"] = [alternatives(raw["query"]["must"][0])[0]]
    with pytest.raises(ValueError, match="stale"):
        Scenario.model_validate(raw)
    raw = scenarios[0].model_dump()
    raw["query"]["profile"] = {"holds": [], "lacks": []}
    with pytest.raises(ValueError, match="holds or lacks"):
        Scenario.model_validate(raw)


def test_a_must_item_only_the_later_question_names_asks_nothing_of_the_memory(
    scenarios: list[Scenario],
) -> None:
    raw = scenarios[0].model_dump()
    said = raw["sessions"][0]["turns"][0]["text"]
    raw["query"]["text"] = f"订单 7780001 呢？{said}"
    raw["query"]["must"] = ["7780001", said, ["7780001", "别的说法"]]
    kept = Scenario.model_validate(raw).remembered_must()
    assert kept == [said, ["7780001", "别的说法"]]  # said before; an alternative not asked
    raw["sessions"][0]["turns"][0]["text"] = f"{said} 订单 7780001"
    assert Scenario.model_validate(raw).remembered_must() == raw["query"]["must"]


def test_a_stale_miss_names_the_sections_that_assert_it() -> None:
    ctx = _context(
        (Section.FACT, "- 尺码：80C", None),
        (Section.RECORD, "- [2026-11-14] 用户申请换货：75B 穿着勒", None),
        (Section.RECORD, "- [2026-11-20] 用户说不要 75B 了", None),
    )
    assert stale_cause(ctx, "75B") == "stale asserted in record"
    assert stale_cause(ctx, "80C") == "stale asserted in fact"
    assert stale_cause(ctx, "70A") == "stale asserted"
