"""``mem.admin.ops``: read-only statistics across users, for operators.

What the ops dashboard and ``/metrics`` show: memories expiring per day by
policy, the confidence histogram and the pending-confirmation queue, decays,
sweeps and renewals per day, the outbox lag, the index's hot and cold tenants,
the PII key's age against its rotation period and the business verifiers'
outcomes. Counts, days and ids of keys only: never a memory's text, a user id
or PII. The queries run in ``structured_memory.cross_user`` (marked cross-user
work); callers check the ops role (the service's ``ops`` scope).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING

from policies.audit import AuditAction
from policies.confidence import MemoryStatus
from policies.errors import DatabaseUnavailable, InvalidField, StoreUnavailable
from policies.lifecycle import LifecyclePolicy
from policies.ttl import Lifetime, MemoryKind, TTLConfig, lifetime
from policies.validation import check_timestamp
from sdk.reports import (
    ActivityDay,
    ActivityReport,
    ConfidenceBucket,
    ConfidenceReport,
    DecayForecast,
    ExpiryDay,
    ExpiryReport,
    ForecastDay,
    KeyAge,
    KeysReport,
    OutboxReport,
    PendingOut,
    PolicyTTL,
    ReadinessReport,
    TenantsReport,
    VerifierDay,
    VerifiersReport,
)
from structured_memory import migrate
from structured_memory.cross_user import (
    SWEPT,
    DayCount,
    confidence_levels,
    count_unreadable,
    daily_audit_counts,
    decay_forecast,
    expiring_per_day,
    never_expiring,
    pending_confirmations,
    pending_rotation,
    renewals_per_day,
    verification_states,
)
from structured_memory.pii.keyring import MAX_KEY_AGE_DAYS
from unstructured_memory.index.base import TenantListing

if TYPE_CHECKING:
    from sdk.runtime import Runtime
    from sdk.settings import Settings

__all__ = ["MAX_WINDOW_DAYS", "Gauges", "Ops", "TenantCounts"]

MAX_WINDOW_DAYS = 366
"""The longest window (days ahead or back) a statistic may span."""

_HOT = frozenset({"ACTIVE", "HOT"})
_COLD = frozenset({"INACTIVE", "COLD"})


@dataclass(frozen=True)
class TenantCounts:
    """Tenants per activity status, folded into hot, cold and offloaded."""

    hot: int
    cold: int
    offloaded: int

    @classmethod
    def of(cls, by_status: dict[str, int]) -> TenantCounts:
        """Fold Weaviate's statuses: ``ACTIVE``/``HOT`` are hot, ``INACTIVE``/``COLD``
        cold, the rest (``OFFLOADED``, ``FROZEN``, moving between) offloaded."""
        hot = sum(n for s, n in by_status.items() if s in _HOT)
        cold = sum(n for s, n in by_status.items() if s in _COLD)
        return cls(hot=hot, cold=cold, offloaded=sum(by_status.values()) - hot - cold)


@dataclass(frozen=True)
class Gauges:
    """The cheap numbers ``/metrics`` reads at each scrape (no full histogram)."""

    outbox_pending: int
    outbox_oldest_age_s: float
    outbox_failing: int
    pending_fragments: int
    pending_facts: int
    decays_24h: dict[str, int]
    """Confidence decays in the last 24 hours, by track."""
    sweeps_24h: dict[str, int]
    """Memories the sweep deleted in the last 24 hours, by track."""
    verifications_24h: dict[str, int]
    """Verification changes in the last 24 hours, by outcome."""
    links: dict[str, int]
    """Business links by their latest verification (``ok``, ``failing``, ``unchecked``)."""
    key_age_days: int
    key_rotation_days: int


def _by_key(counts: Iterable[DayCount]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in counts:
        out[c.key] = out.get(c.key, 0) + c.count
    return dict(sorted(out.items()))


def _window(days: int, field: str) -> int:
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_WINDOW_DAYS:
        raise InvalidField(f"{field} must be an integer in 1..{MAX_WINDOW_DAYS}", field=field)
    return days


def _now(now: datetime | None) -> datetime:
    if now is None:
        return datetime.now(UTC)
    if not isinstance(now, datetime):
        raise InvalidField("now must be a datetime", field="now")
    check_timestamp(now, "now")  # aware, and within the years the stores accept
    return now.astimezone(UTC)


def _days(first: date, count: int) -> list[date]:
    return [first + timedelta(days=i) for i in range(count)]


def _per_day(counts: Iterable[DayCount]) -> dict[date, int]:
    out: dict[date, int] = {}
    for c in counts:
        out[c.day] = out.get(c.day, 0) + c.count
    return out


def _ttl_rules(config: TTLConfig) -> list[PolicyTTL]:
    """The lifetime of every policy (``policies.ttl.lifetime``), kinds and users of one
    lifetime folded into one entry: EXPLICIT, SENSITIVE and BUSINESS one each (never)."""
    kinds = [k.value for k in MemoryKind]
    rules: list[PolicyTTL] = []
    for policy in LifecyclePolicy:
        groups: dict[Lifetime, dict[bool, list[str]]] = {}
        for kind in MemoryKind:
            for frequent in (False, True):
                life = lifetime(policy, kind, frequent_user=frequent, config=config)
                groups.setdefault(life, {}).setdefault(frequent, []).append(kind.value)
        for life, by_user in groups.items():
            both = len(by_user) == 2 and by_user[False] == by_user[True]
            entries: list[tuple[bool | None, list[str]]] = (
                [(None, by_user[False])] if both else list(by_user.items())
            )
            for users, named in entries:
                rules.append(
                    PolicyTTL(
                        policy=policy.value,
                        kinds=None if named == kinds else named,
                        frequent_user=users,
                        days=life.days,
                        renewed_on_use=life.renewable,
                    )
                )
    return rules


class Ops:
    """Statistics across every user (ops work); each method is one read-only round."""

    def __init__(self, runtime: Runtime, settings: Settings) -> None:
        self._rt = runtime
        self._settings = settings

    def expiry(self, *, days: int = 30, now: datetime | None = None) -> ExpiryReport:
        """Live fragments and facts expiring per UTC day, from today to ``days`` days
        ahead (``days + 1`` entries, zeros included), by policy and by track; the
        lifetime of each policy and the memories that never expire, by policy."""
        days, at = _window(days, "days"), _now(now)
        policies = [p.value for p in LifecyclePolicy]
        per_day = {
            d: ExpiryDay(day=d, by_policy=dict.fromkeys(policies, 0), fragments=0, facts=0, total=0)
            for d in _days(at.date(), days + 1)
        }
        for c in expiring_per_day(self._rt.db, at, days):
            entry = per_day.get(c.day)
            if entry is None:
                continue
            entry.by_policy[c.policy] = entry.by_policy.get(c.policy, 0) + c.count
            if c.track == "fact":
                entry.facts += c.count
            else:
                entry.fragments += c.count
            entry.total += c.count
        listed = list(per_day.values())
        kept = dict.fromkeys(policies, 0)
        for never in never_expiring(self._rt.db):
            kept[never.policy] = kept.get(never.policy, 0) + never.count
        return ExpiryReport(
            as_of=at,
            horizon_days=days,
            policies=policies,
            days=listed,
            total=sum(d.total for d in listed),
            ttl=_ttl_rules(self._settings.ttl),
            never_expiring=kept,
            never_expiring_total=sum(kept.values()),
        )

    def confidence(
        self, *, buckets: int = 10, forecast_days: int = 7, now: datetime | None = None
    ) -> ConfidenceReport:
        """The confidence of live, not retired memories in ``buckets`` equal buckets over
        ``[0, 1]`` by status, the pending-confirmation queue, and the decay forecast: the
        inferred memories expected to fall below the threshold per UTC day, from today to
        ``forecast_days`` ahead (``forecast_days + 1`` entries), if nobody uses them."""
        if isinstance(buckets, bool) or not isinstance(buckets, int) or not 2 <= buckets <= 100:
            raise InvalidField("buckets must be an integer in 2..100", field="buckets")
        forecast_days, at = _window(forecast_days, "forecast_days"), _now(now)
        statuses = [s.value for s in MemoryStatus if s is not MemoryStatus.RETIRED]
        rows = [
            ConfidenceBucket(
                lower=round(i / buckets, 6),
                upper=round((i + 1) / buckets, 6),
                by_status=dict.fromkeys(statuses, 0),
                fragments=0,
                facts=0,
                total=0,
            )
            for i in range(buckets)
        ]
        for c in confidence_levels(self._rt.db, at, buckets):
            row = rows[min(c.bucket, buckets - 1)]
            row.by_status[c.status] = row.by_status.get(c.status, 0) + c.count
            if c.track == "fact":
                row.facts += c.count
            else:
                row.fragments += c.count
            row.total += c.count
        queue = pending_confirmations(self._rt.db, at)
        oldest = queue.oldest_since
        return ConfidenceReport(
            forecast=self._forecast(at, forecast_days),
            as_of=at,
            pending_below=self._settings.confidence.pending_below,
            statuses=statuses,
            buckets=rows,
            total=sum(r.total for r in rows),
            pending=PendingOut(
                fragments=queue.fragments,
                facts=queue.facts,
                total=queue.fragments + queue.facts,
                oldest_since=oldest,
                oldest_age_s=None if oldest is None else max(0.0, (at - oldest).total_seconds()),
            ),
        )

    def _forecast(self, at: datetime, days: int) -> DecayForecast:
        per_day = {
            d: ForecastDay(day=d, fragments=0, facts=0, total=0) for d in _days(at.date(), days + 1)
        }
        for c in decay_forecast(self._rt.db, at, days, self._settings.confidence):
            entry = per_day[c.day]
            if c.key == "fact":
                entry.facts += c.count
            else:
                entry.fragments += c.count
            entry.total += c.count
        listed = list(per_day.values())
        return DecayForecast(
            horizon_days=days,
            days=listed,
            fragments=sum(d.fragments for d in listed),
            facts=sum(d.facts for d in listed),
            total=sum(d.total for d in listed),
        )

    def activity(self, *, days: int = 30, now: datetime | None = None) -> ActivityReport:
        """Per UTC day over the last ``days`` days (today included, oldest first): the
        confidence decays and the sweep's deletions (from the audit log), and renewals
        (memories used since written, on the day of their latest use)."""
        days, at = _window(days, "days"), _now(now)
        first = at.date() - timedelta(days=days - 1)
        since = datetime(first.year, first.month, first.day, tzinfo=UTC)
        db = self._rt.db
        decays = _per_day(daily_audit_counts(db, since, AuditAction.DECAY, by="kind"))
        sweeps = _per_day(
            daily_audit_counts(
                db, since, AuditAction.DELETE, by="kind", matching_details=dict(SWEPT)
            )
        )
        renewals = _per_day(renewals_per_day(db, since))
        listed = [
            ActivityDay(
                day=d,
                decays=decays.get(d, 0),
                sweeps=sweeps.get(d, 0),
                renewals=renewals.get(d, 0),
            )
            for d in _days(first, days)
        ]
        return ActivityReport(
            as_of=at,
            days=listed,
            decays=sum(d.decays for d in listed),
            sweeps=sum(d.sweeps for d in listed),
            renewals=sum(d.renewals for d in listed),
        )

    def outbox(self) -> OutboxReport:
        """Pending index operations, the oldest one's age and how many failed once."""
        lag = self._rt.feed.lag(datetime.now(UTC))
        return OutboxReport(
            index=self._rt.index.name,
            derived=self._rt.index.derived,
            pending=lag.pending,
            oldest_age_s=lag.oldest_age_s,
            failing=lag.failing,
        )

    def tenants(self) -> TenantsReport:
        """The index's tenants by activity (Weaviate: one per user, cold ones offloaded
        from memory). Not applicable to an index without tenants; ``reachable`` is false
        when the index does not answer (no error: the dashboard shows it)."""
        index = self._rt.index
        report = TenantsReport(
            index=index.name,
            applicable=isinstance(index, TenantListing),
            reachable=None,
            hot=0,
            cold=0,
            offloaded=0,
            total=0,
            by_status={},
            cold_after_days=self._settings.cold_after_days,
        )
        if not isinstance(index, TenantListing):
            report.note = f"the {index.name} index has no tenants"
            return report
        try:
            by_status = index.tenant_activity()
        except StoreUnavailable:
            report.reachable = False
            report.note = f"the {index.name} index does not answer"
            return report
        counts = TenantCounts.of(by_status)
        report.reachable = True
        report.by_status = dict(sorted(by_status.items()))
        report.hot, report.cold, report.offloaded = counts.hot, counts.cold, counts.offloaded
        report.total = sum(by_status.values())
        return report

    def keys(self, *, today: date | None = None) -> KeysReport:
        """The active PII ring key's age against the rotation period, the entries still
        to re-wrap and those found unreadable, and every ring key's age."""
        if today is not None and (not isinstance(today, date) or isinstance(today, datetime)):
            raise InvalidField("today must be a date", field="today")
        ring = self._rt.cipher.ring
        day = today or datetime.now(UTC).date()
        active = ring.active
        age = active.age_days(day)
        return KeysReport(
            active_key_id=active.key_id,
            active_key_age_days=age,
            rotation_days=MAX_KEY_AGE_DAYS,
            days_left=MAX_KEY_AGE_DAYS - age,
            stale=ring.active_is_stale(day),
            entries_pending_rotation=pending_rotation(self._rt.db, self._rt.cipher),
            entries_unreadable=count_unreadable(self._rt.db),
            keys=[
                KeyAge(key_id=k.key_id, age_days=k.age_days(day), active=k is active)
                for k in ring.keys
            ],
        )

    def verifiers(self, *, days: int = 30, now: datetime | None = None) -> VerifiersReport:
        """Business links by their latest verification, and the verification changes the
        audit log recorded per UTC day over the last ``days`` days, by outcome."""
        days, at = _window(days, "days"), _now(now)
        first = at.date() - timedelta(days=days - 1)
        since = datetime(first.year, first.month, first.day, tzinfo=UTC)
        counts = daily_audit_counts(
            self._rt.db, since, AuditAction.VERIFICATION_CHANGE, by="outcome"
        )
        outcomes: dict[str, int] = {}
        by_day: dict[date, dict[str, int]] = {}
        for c in counts:
            outcomes[c.key] = outcomes.get(c.key, 0) + c.count
            day = by_day.setdefault(c.day, {})
            day[c.key] = day.get(c.key, 0) + c.count
        return VerifiersReport(
            as_of=at,
            links=verification_states(self._rt.db),
            outcomes=dict(sorted(outcomes.items())),
            days=[
                VerifierDay(
                    day=d, by_outcome=by_day.get(d, {}), total=sum(by_day.get(d, {}).values())
                )
                for d in _days(first, days)
            ],
        )

    def gauges(self, *, now: datetime | None = None) -> Gauges:
        """The outbox lag, the pending queue, the last 24 hours' decays, sweeps and
        verification changes, links by verification and the key's age: what a
        Prometheus scrape reads (indexed or small queries only)."""
        at = _now(now)
        since = at - timedelta(days=1)
        db = self._rt.db
        lag = self._rt.feed.lag(at)
        queue = pending_confirmations(db, at)
        sweeps = daily_audit_counts(
            db, since, AuditAction.DELETE, by="kind", matching_details=dict(SWEPT)
        )
        return Gauges(
            outbox_pending=lag.pending,
            outbox_oldest_age_s=lag.oldest_age_s,
            outbox_failing=lag.failing,
            pending_fragments=queue.fragments,
            pending_facts=queue.facts,
            decays_24h=_by_key(daily_audit_counts(db, since, AuditAction.DECAY, by="kind")),
            sweeps_24h=_by_key(sweeps),
            verifications_24h=_by_key(
                daily_audit_counts(db, since, AuditAction.VERIFICATION_CHANGE, by="outcome")
            ),
            links=verification_states(db),
            key_age_days=self._rt.cipher.ring.active.age_days(at.date()),
            key_rotation_days=MAX_KEY_AGE_DAYS,
        )

    def readiness(self) -> ReadinessReport:
        """Whether this process can serve: PostgreSQL answers and its schema is in the
        supported range. The search index is not consulted (an outage degrades searches
        to the ledger; it must not take the process out of rotation)."""
        db = self._rt.db
        head = migrate.head_revision()
        try:
            db.ping()
            state = migrate.schema_state(db)
        except DatabaseUnavailable:
            return ReadinessReport(
                ready=False,
                database=False,
                schema_revision=None,
                schema_head=head,
                schema_supported=False,
            )
        return ReadinessReport(
            ready=state.supported,
            database=True,
            schema_revision=state.revision,
            schema_head=head,
            schema_supported=state.supported,
        )
