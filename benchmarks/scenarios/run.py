"""Replay the scenario suite through the SDK and score the later sessions' contexts.

For each scenario: fresh users (``profiles.ensure``), the system of record reset to the
scenario's states, then each session in order, as an agent would run it: the agent
(``mem.for_agent``) builds its context at the session's start, the turns follow (in a
sandbox when the session works in one, forked where the user started over), its tools'
writes, and the session's end (``end_session``: record, links, profile) or its turns
kept (``append_turns``). Changes of the system of record happen between sessions.
The later session's agent then calls ``build_context(user, query, max_tokens=600)``,
which is scored (:mod:`benchmarks.scenarios.score`); a miss is explained by probing the
stores (a larger budget, more records, the ledger, the profile). Every context built,
earlier ones included, is checked for clear PII and its business items for accuracy.

The profile (its stable values and explicit facts) is then checked against the
scenario's ``profile`` expectation, when it has one.

Usage: ``python -m benchmarks.scenarios [--split all|dev|holdout] [--only ID ...] [--show]
[--show-holdout]``. The misses of holdout scenarios are counted but not listed unless
``--show-holdout`` asks: rules are tuned on the dev split only.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from rich.markup import escape

from benchmarks.common import bench_client, console, fresh_users, print_table, write_result
from benchmarks.scenarios.model import (
    MustItem,
    QuerySpec,
    Scenario,
    SessionSpec,
    TurnSpec,
    WriteSpec,
    alternatives,
    clear_pii_values,
    in_holdout,
    load_scenarios,
)
from benchmarks.scenarios.score import (
    BusinessFact,
    ContextScore,
    ProfileScore,
    asserts,
    business_facts,
    holds,
    leaks,
    score_context,
    score_profile,
)
from benchmarks.scenarios.system_of_record import VERIFIED_TYPES, SystemOfRecord
from policies.lifecycle import LifecyclePolicy
from sdk.client import MemoryClient
from sdk.progress import progress_bar
from values.context import MemoryContext, Section
from values.sessions import Turn

__all__ = [
    "BUDGET",
    "DESIGN",
    "Miss",
    "ScenarioResult",
    "Suite",
    "main",
    "profile_sources",
    "profile_values",
    "replay",
    "run_suite",
    "stale_cause",
    "user_id",
]

BUDGET = 600
"""Tokens of the later session's context."""

RECORDS = 5
"""Records the context asks for (``build_context``'s default)."""

DESIGN = {"continuity": 0.897, "completion": 0.94, "accuracy": 0.991}
"""What the design's source reports in production."""

_ID_LIKE = re.compile(r"[A-Za-z]{0,4}\d{5,}")
"""What an identifier looks like (a miss of one is "identifier not extracted")."""


@dataclass(frozen=True)
class Miss:
    """A must item the later context lacked, or something it leaked, and why."""

    scenario: str
    holdout: bool
    item: str
    cause: str


@dataclass
class ScenarioResult:
    """The outcome of one scenario."""

    scenario: Scenario
    score: ContextScore
    tokens: int
    omitted: int
    facts: list[BusinessFact]
    """Business items of every context built in the scenario (earlier sessions' too)."""
    pii_leaks: list[str]
    """Clear PII found in any context built in the scenario."""
    context_text: str = ""
    misses: list[Miss] = field(default_factory=list)
    seconds: float = 0.0
    profile: ProfileScore | None = None
    """How the profile matched the scenario's expectation (``None``: it has none)."""

    @property
    def holdout(self) -> bool:
        """Whether the scenario is in the holdout quarter."""
        return in_holdout(self.scenario.id)

    @property
    def leaked(self) -> bool:
        """Whether any context of the scenario leaked."""
        return bool(self.score.leaked or self.pii_leaks)

    @property
    def accurate(self) -> bool:
        """The later context asserts nothing stale, and no context of the scenario showed
        a business item the system of record contradicts."""
        return not self.score.stale and all(f.accurate for f in self.facts)


def profile_values(agent: MemoryClient, uid: str) -> list[str]:
    """What the user's profile holds as values, one string each: the enabled notification
    channels, the stable values sessions taught, simple attributes, and the active
    explicit facts (key and value)."""
    return [value for _, value in profile_sources(agent, uid)]


def profile_sources(agent: MemoryClient, uid: str) -> list[tuple[str, str]]:
    """:func:`profile_values`, each with where it stands: ``channel``, ``attribute``,
    ``learned`` (a stable value sessions taught) or ``explicit fact``."""
    profile = agent.profiles.get(uid)
    values = [("channel", c) for c, on in profile.notification_preference.items() if on]
    for key, value in profile.attributes.items():
        if key != "learned":
            values.append(("attribute", json.dumps(value, ensure_ascii=False)))
    learned = profile.attributes.get("learned")
    for part in ("facts", "preferences"):
        entries = learned.get(part) if isinstance(learned, dict) else None
        for entry in (entries or {}).values():
            values.append(("learned", json.dumps(entry.get("value"), ensure_ascii=False)))
    values += [
        ("explicit fact", json.dumps(f.value, ensure_ascii=False))
        for f in agent.facts.list(uid)
        if f.policy == LifecyclePolicy.EXPLICIT.value and f.status == "active"
    ]
    return values


def user_id(scenario: Scenario, alias: str) -> str:
    """The user id of a scenario's user in the run."""
    return f"scn-{scenario.id}-{alias}"


def _turns(turns: Sequence[TurnSpec], start: datetime) -> list[Turn]:
    return [Turn(t.role, t.text, start + timedelta(minutes=i)) for i, t in enumerate(turns)]


def _write(agent: MemoryClient, uid: str, session_id: str, w: WriteSpec) -> None:
    """Perform one of the agent's tool writes (the model checks each kind has its fields)."""
    if w.kind == "memory":
        agent.write(
            uid,
            str(w.text),
            lifecycle_policy=LifecyclePolicy(w.policy),
            session_id=session_id,
            private=w.private,
        )
    elif w.kind == "fact":
        agent.facts.put(uid, str(w.key), w.value, lifecycle_policy=LifecyclePolicy(w.policy))
    elif w.kind == "pii_fact":
        ref = agent.pii.store(uid, str(w.pii_kind), str(w.value))
        agent.facts.put(
            uid,
            str(w.key),
            {"vault_id": str(ref.id), "kind": ref.kind},
            lifecycle_policy=LifecyclePolicy.SENSITIVE,
        )
    else:
        agent.links.add(
            uid, entity_type=str(w.entity_type), entity_id=str(w.entity_id), role="owner"
        )


@contextmanager
def _sandboxed(
    agent: MemoryClient, uid: str, session_id: str, turns: list[Turn], *, fork: int | None
) -> Iterator[None]:
    """Within the session's sandbox: the user's turns kept there as they come, the sandbox
    forked before turn ``fork``; what it holds is discarded on leaving (a session's end
    records its turns in long-term memory, outside the sandbox)."""
    with agent.sandbox(uid, session_id) as sb:
        for i, turn in enumerate(turns):
            if i == fork:
                sb.fork()
            if turn.role == "user":
                agent.write(
                    uid,
                    turn.text,
                    lifecycle_policy=LifecyclePolicy.IMPLICIT,
                    session_id=session_id,
                    occurred_at=turn.time,
                )
        if fork == len(turns):
            sb.fork()
        yield
        sb.discard()


@dataclass(frozen=True)
class _Probe:
    """Where a missing must item might be: a larger budget, more records, the ledger,
    the profile, the entities of stored memories, the business items shown."""

    large: str
    wide: str
    stored: list[str]
    profile: str
    entities: list[str]
    business: dict[str, str]
    """The status of each business item shown, by ``type:id``."""


class _Run:
    """One scenario's replay: its users, its system of record and the contexts built."""

    def __init__(
        self, mem: MemoryClient, sor: SystemOfRecord, scenario: Scenario, pii: Sequence[str]
    ) -> None:
        self.mem, self.sor, self.scenario, self.pii = mem, sor, scenario, pii
        self.uids = {alias: user_id(scenario, alias) for alias in scenario.users}
        self.facts: list[BusinessFact] = []
        self.pii_leaks: list[str] = []

    def context(
        self,
        agent: MemoryClient,
        uid: str,
        query: str,
        *,
        max_tokens: int = BUDGET,
        records: int = RECORDS,
    ) -> MemoryContext:
        """Build a context as the agent would; check it for clear PII and, at the scored
        budget, its business items against the system of record."""
        ctx = agent.build_context(uid, query, max_tokens=max_tokens, records=records)
        self.pii_leaks += [x for x in leaks(ctx.text, (), self.pii) if x.startswith("pii")]
        if (max_tokens, records) == (BUDGET, RECORDS):
            self.facts += business_facts(ctx, self.sor.state)
        return ctx

    def setup(self) -> None:
        """Fresh users with the profiles the platform knows; the system of record reset."""
        fresh_users(self.mem, self.uids.values())
        for alias, spec in self.scenario.users.items():
            uid = self.uids[alias]
            profile = self.mem.profiles.get(uid)
            changes: dict[str, Any] = {"language": spec.language}
            if spec.name:
                changes["attributes"] = {"name": spec.name}
            self.mem.profiles.update(uid, expected_version=profile.version, **changes)
        self.sor.reset(self.scenario.system_of_record)

    def session(self, s: SessionSpec) -> None:
        """Replay one earlier session."""
        self.sor.apply(s.sor_before)
        agent = self.mem.for_agent(s.agent)
        uid = self.uids[s.user]
        turns = _turns(s.turns, datetime.now(UTC) - timedelta(days=s.days_ago))
        opening = next((t.text for t in turns if t.role == "user"), turns[0].text)
        self.context(agent, uid, opening)  # the agent's context at the session's start
        if s.sandboxed:
            with _sandboxed(agent, uid, s.session_id, turns, fork=s.fork_after):
                pass
        for w in s.writes:
            _write(agent, uid, s.session_id, w)
        kept = turns[s.fork_after or 0 :]
        if s.end:
            agent.end_session(uid, s.session_id, kept)
        elif not s.sandboxed:
            agent.append_turns(uid, s.session_id, kept)

    def later(self, q: QuerySpec) -> tuple[MemoryContext, ContextScore, list[Miss]]:
        """The later session's context, its score and the misses explained."""
        self.sor.apply(q.sor_before)
        agent = self.mem.for_agent(q.agent)
        uid = self.uids[q.user]
        turns = _turns(q.turns, datetime.now(UTC) - timedelta(minutes=len(q.turns) + 1))
        with (
            _sandboxed(agent, uid, q.session_id, turns, fork=q.fork_after)
            if q.sandboxed
            else nullcontext()
        ):
            ctx = self.context(agent, uid, q.text)
            score = score_context(
                ctx,
                self.scenario.remembered_must(),
                q.must_not,
                self.pii,
                self.sor.state,
                stale=q.stale,
            )
            probe = self.probe(agent, uid, q.text, ctx) if score.missing else None
        held = in_holdout(self.scenario.id)
        misses = [
            Miss(self.scenario.id, held, _label(item), self.cause(item, probe))
            for item in score.missing
            if probe is not None
        ]
        misses += [
            Miss(self.scenario.id, held, leak, self.leak_cause(leak)) for leak in score.leaked
        ]
        misses += [
            Miss(self.scenario.id, held, item, stale_cause(ctx, item)) for item in score.stale
        ]
        return ctx, score, misses

    def profile(self, q: QuerySpec) -> tuple[ProfileScore | None, list[Miss]]:
        """The profile scored against the scenario's expectation, and its misses."""
        if q.profile is None:
            return None, []
        agent = self.mem.for_agent(q.agent)
        uid = self.uids[q.user]
        sources = profile_sources(agent, uid)
        score = score_profile([v for _, v in sources], q.profile.holds, q.profile.lacks)
        held = in_holdout(self.scenario.id)
        export = agent.export_user(uid) if score.missing else {}
        misses = [
            Miss(self.scenario.id, held, _label(i), _lacking(export, i)) for i in score.missing
        ]
        misses += [
            Miss(
                self.scenario.id,
                held,
                i,
                "profile holds it as "
                + ", ".join(sorted({where for where, v in sources if asserts(v, i)})),
            )
            for i in score.wrong
        ]
        return score, misses

    def probe(self, agent: MemoryClient, uid: str, query: str, ctx: MemoryContext) -> _Probe:
        """Look for what the context lacks (in the same sandbox view as the context)."""
        stored = agent.memories.list(uid, limit=1000)
        return _Probe(
            large=self.context(agent, uid, query, max_tokens=32_000).text,
            wide=self.context(agent, uid, query, max_tokens=32_000, records=50).text,
            stored=[m.text for m in stored],
            profile=json.dumps(agent.export_user(uid)["profile"], ensure_ascii=False, default=str),
            entities=[json.dumps(m.entities, ensure_ascii=False) for m in stored],
            business={
                i.ref: i.status
                for i in ctx.items
                if i.section is Section.BUSINESS and i.ref is not None
            },
        )

    def cause(self, item: MustItem, probe: _Probe) -> str:
        """Why a must item is missing from the context."""
        if holds(probe.large, item):
            return "cut by budget"
        for entity in self.scenario.system_of_record:
            now = self.sor.state(entity.entity_type, entity.entity_id)
            if now is not None and now in alternatives(item):
                status = probe.business.get(f"{entity.entity_type}:{entity.entity_id}")
                return "business link missing" if status is None else f"verifier {status}"
        found = [
            ("record not retrieved (ranked below the top 5)", [probe.wide]),
            ("record not retrieved", probe.stored),
            ("profile value not shown", [probe.profile]),
            ("kept as an entity, not in any text", probe.entities),
        ]
        for cause, texts in found:
            if any(holds(t, item) for t in texts):
                return cause
        if any(_ID_LIKE.fullmatch(alt) for alt in alternatives(item)):
            return "identifier not extracted"
        return "not extracted"

    def leak_cause(self, leak: str) -> str:
        """Where a leaked item came from."""
        kind, _, item = leak.partition(":")
        if kind != "must_not":
            return "PII in clear"
        sc = self.scenario
        sources = [
            (
                "another user's content",
                [
                    t
                    for a in sc.users
                    if a != sc.query.user
                    for t in sc.texts_of(a, before_fork=False)
                ],
            ),
            ("forgotten (forked) content", sc.texts_of(sc.query.user, before_fork=True)),
            ("another agent's private memory", sc.private_texts(sc.query.agent)),
        ]
        for cause, texts in sources:
            if any(holds(t, item) for t in texts):
                return cause
        return "must-not item"


def _lacking(export: dict[str, Any], item: MustItem) -> str:
    """Why the profile lacks an expected value (``export``: the user's export): it waits as
    a candidate, it stands only in records, or it was kept nowhere."""
    candidates = json.dumps(export["profile"]["candidates"], ensure_ascii=False)
    if holds(candidates, item):
        return "profile lacks it (a candidate only)"
    if any(holds(m["text"], item) for m in export["memories"]):
        return "profile lacks it (in records only)"
    return "profile lacks it (not kept)"


def stale_cause(ctx: MemoryContext, item: str) -> str:
    """Which sections of the context assert a stale item."""
    where = sorted({i.section.value for i in ctx.items if asserts(i.text, item)})
    return "stale asserted" + (f" in {', '.join(where)}" if where else "")


def _label(item: MustItem) -> str:
    return " | ".join(alternatives(item))


def replay(
    mem: MemoryClient, sor: SystemOfRecord, scenario: Scenario, pii: Sequence[str]
) -> ScenarioResult:
    """Replay one scenario with ``mem`` (whose verifiers must be ``sor``) and score it."""
    started = time.perf_counter()
    run = _Run(mem, sor, scenario, pii)
    run.setup()
    for s in scenario.sessions:
        run.session(s)
    ctx, score, misses = run.later(scenario.query)
    profile, profile_misses = run.profile(scenario.query)
    result = ScenarioResult(
        scenario=scenario,
        score=score,
        tokens=ctx.tokens,
        omitted=ctx.omitted,
        facts=run.facts,
        pii_leaks=run.pii_leaks,
        context_text=ctx.text,
        misses=misses + profile_misses,
        profile=profile,
    )
    result.misses += [
        Miss(scenario.id, result.holdout, leak, "PII in clear (earlier context)")
        for leak in run.pii_leaks
        if leak not in result.score.leaked
    ]
    result.seconds = time.perf_counter() - started
    for uid in run.uids.values():
        mem.forget_user(uid)
    return result


def register(mem: MemoryClient, sor: SystemOfRecord) -> None:
    """Make ``sor`` the verifier of every business type the scenarios use."""
    for entity_type in VERIFIED_TYPES:
        mem.register_verifier(entity_type, sor)


def run_suite(mem: MemoryClient, scenarios: Sequence[Scenario], *, progress: bool = True) -> Suite:
    """Replay ``scenarios`` in order (fresh users each) and collect the results."""
    sor = SystemOfRecord()
    register(mem, sor)
    pii = clear_pii_values(scenarios)
    results = []
    with progress_bar("scenarios", len(scenarios), enabled=progress, console=console) as advance:
        for scenario in scenarios:
            results.append(replay(mem, sor, scenario, pii))
            advance(1)
    return Suite(results, len(pii))


@dataclass
class Suite:
    """The results of a run and their summaries."""

    results: list[ScenarioResult]
    pii_values: int

    def metrics(self, results: Sequence[ScenarioResult] | None = None) -> dict[str, Any]:
        """Continuity, completion, accuracy and leakage over ``results`` (default: all)."""
        rs = self.results if results is None else list(results)
        facts = [f for r in rs for f in r.facts]
        profiled = [r.profile for r in rs if r.profile is not None]
        n = len(rs)
        asking = [r for r in rs if r.scenario.remembered_must()]  # the others ask nothing
        k = len(asking)
        return {
            "scenarios": n,
            "continuity": sum(r.score.continuity for r in asking) / k if k else float("nan"),
            "completion": sum(r.score.complete for r in asking) / k if k else float("nan"),
            "accuracy": sum(r.accurate for r in rs) / n if n else float("nan"),
            "stale_contexts": sum(bool(r.score.stale) for r in rs),
            "profile_correct": (
                sum(p.correct for p in profiled) / len(profiled) if profiled else float("nan")
            ),
            "profiles_scored": len(profiled),
            "business_accuracy": (
                sum(f.accurate for f in facts) / len(facts) if facts else float("nan")
            ),
            "business_facts": len(facts),
            "facts_by_verdict": dict(Counter(f.verdict for f in facts)),
            "must_not_leaks": sum(
                any(x.startswith("must_not") for x in r.score.leaked) for r in rs
            ),
            "pii_leaks": sum(bool(r.pii_leaks) for r in rs),
            "leaking_scenarios": sum(r.leaked for r in rs),
            "must_items": sum(len(r.scenario.remembered_must()) for r in rs),
            "must_items_asked_by_query": sum(
                len(r.scenario.query.must) - len(r.scenario.remembered_must()) for r in rs
            ),
            "must_items_found": sum(len(r.score.found) for r in rs),
            "mean_tokens": sum(r.tokens for r in rs) / n if n else float("nan"),
            "contexts_cut": sum(r.omitted > 0 for r in rs),
        }

    def splits(self) -> dict[str, list[ScenarioResult]]:
        """The results of the whole suite, of the tuned quarters and of the holdout, each
        also per language (``holdout-en``)."""
        out: dict[str, list[ScenarioResult]] = {}
        for split, chosen in (
            ("all", self.results),
            ("dev", [r for r in self.results if not r.holdout]),
            ("holdout", [r for r in self.results if r.holdout]),
        ):
            out[split] = chosen
            for lang in ("zh", "en"):
                out[f"{split}-{lang}"] = [r for r in chosen if r.scenario.language == lang]
        return out

    def by_tag(self) -> dict[str, dict[str, Any]]:
        """Continuity and completion per tag."""
        tags = sorted({t for r in self.results for t in r.scenario.tags})
        return {t: self.metrics([r for r in self.results if t in r.scenario.tags]) for t in tags}

    def misses(self) -> list[Miss]:
        """Every miss, by scenario."""
        return [m for r in self.results for m in r.misses]


def _pct(value: float) -> str:
    return "-" if math.isnan(value) else f"{100 * value:.1f} %"


def report(suite: Suite, *, name: str, elapsed_s: float, show_holdout: bool = False) -> None:
    """Print the tables and write ``benchmarks/results/<name>.json``; holdout misses are
    listed only with ``show_holdout`` (the file has them all)."""
    splits = {k: suite.metrics(v) for k, v in suite.splits().items() if v}
    print_table(
        f"Scenario suite ({BUDGET}-token contexts, {RECORDS} records)",
        [
            "split",
            "scenarios",
            "continuity",
            "completion",
            "accuracy",
            "profile correct",
            "business (items)",
            "leaking",
        ],
        [
            [
                split,
                m["scenarios"],
                _pct(m["continuity"]),
                _pct(m["completion"]),
                _pct(m["accuracy"]),
                f"{_pct(m['profile_correct'])} ({m['profiles_scored']})",
                f"{_pct(m['business_accuracy'])} ({m['business_facts']})",
                m["leaking_scenarios"],
            ]
            for split, m in splits.items()
        ]
        + [
            [
                "design (production)",
                "-",
                _pct(DESIGN["continuity"]),
                _pct(DESIGN["completion"]),
                _pct(DESIGN["accuracy"]),
                "-",
                "-",
                "0",
            ]
        ],
    )
    print_table(
        "By tag",
        ["tag", "scenarios", "continuity", "completion"],
        [
            [t, m["scenarios"], _pct(m["continuity"]), _pct(m["completion"])]
            for t, m in suite.by_tag().items()
        ],
    )
    misses = suite.misses()
    causes = Counter(m.cause for m in misses)
    held = Counter(m.cause for m in misses if m.holdout)
    print_table(
        "Misses by cause",
        ["cause", "all", "holdout"],
        [[c, n, held.get(c, 0)] for c, n in causes.most_common()] or [["none", 0, 0]],
    )
    listed = [m for m in misses if show_holdout or not m.holdout]
    if listed:
        print_table(
            "Misses" + ("" if show_holdout else " (dev; holdout misses counted above only)"),
            ["scenario", "split", "item", "cause"],
            [
                [m.scenario, "holdout" if m.holdout else "dev", escape(m.item), m.cause]
                for m in listed
            ],
        )
    write_result(
        name,
        {
            "budget_tokens": BUDGET,
            "records": RECORDS,
            "design": DESIGN,
            "elapsed_s": round(elapsed_s, 1),
            "pii_values_checked": suite.pii_values,
            "metrics": splits,
            "by_tag": suite.by_tag(),
            "misses_by_cause": dict(causes.most_common()),
            "misses": [m.__dict__ for m in misses],
            "scenarios": [
                {
                    "id": r.scenario.id,
                    "holdout": r.holdout,
                    "tags": r.scenario.tags,
                    "continuity": r.score.continuity,
                    "complete": r.score.complete,
                    "missing": [_label(i) for i in r.score.missing],
                    "leaked": r.score.leaked + r.pii_leaks,
                    "accurate": r.accurate,
                    "stale": r.score.stale,
                    "profile_correct": None if r.profile is None else r.profile.correct,
                    "tokens": r.tokens,
                    "omitted": r.omitted,
                    "seconds": round(r.seconds, 2),
                }
                for r in suite.results
            ],
        },
    )


def main(argv: Sequence[str] | None = None) -> Suite:
    """Run the suite and report it. ``--quick`` (from ``make bench``) changes nothing: the
    whole suite takes well under a minute. A partial run (``--split``, ``--only``) writes
    a result file of its own, never ``scenarios.json``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scenarios")
    parser.add_argument("--quick", action="store_true", help="accepted; the suite runs whole")
    parser.add_argument("--split", choices=["all", "dev", "holdout"], default="all")
    parser.add_argument("--only", nargs="*", default=None, help="scenario ids to run")
    parser.add_argument("--show", action="store_true", help="print each later context")
    parser.add_argument(
        "--show-holdout", action="store_true", help="list holdout misses too (not for tuning)"
    )
    args = parser.parse_args(argv)
    scenarios = load_scenarios()
    name = "scenarios"
    if args.split != "all":
        scenarios = [s for s in scenarios if in_holdout(s.id) == (args.split == "holdout")]
        name += f"-{args.split}"
    if args.only:
        scenarios = [s for s in scenarios if s.id in set(args.only)]
        name += "-only"
    started = time.perf_counter()
    with bench_client("scenarios") as mem:
        suite = run_suite(mem, scenarios)
    if args.show:
        for r in suite.results:
            if r.holdout and not args.show_holdout:
                continue
            console.rule(r.scenario.id)
            console.print(r.context_text, markup=False)
    report(
        suite, name=name, elapsed_s=time.perf_counter() - started, show_holdout=args.show_holdout
    )
    return suite
