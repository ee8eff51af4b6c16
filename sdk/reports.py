"""Operator reports: the ops dashboard's statistics and the service's probes.

``mem.admin.ops`` builds them and ``GET /v1/ops/...``, ``/readyz`` and
``/healthz`` answer with them: counts, ages and booleans only, never a
memory's text.
"""

from __future__ import annotations

from datetime import date, datetime

from pydantic import BaseModel

__all__ = [
    "ActivityDay",
    "ActivityReport",
    "ConfidenceBucket",
    "ConfidenceReport",
    "DecayForecast",
    "ExpiryDay",
    "ExpiryReport",
    "ForecastDay",
    "HealthReport",
    "KeyAge",
    "KeysReport",
    "OutboxReport",
    "PendingOut",
    "PolicyTTL",
    "ReadinessReport",
    "TenantsReport",
    "VerifierDay",
    "VerifiersReport",
]


class ExpiryDay(BaseModel):
    """Live memories (every user's) expiring on one UTC day, by policy and by track."""

    day: date
    by_policy: dict[str, int]
    fragments: int
    facts: int
    total: int


class PolicyTTL(BaseModel):
    """How long memories of one policy live (``policies.ttl``), for some kinds and users."""

    policy: str
    kinds: list[str] | None
    """The memory kinds this lifetime applies to; ``None``: every kind."""
    frequent_user: bool | None
    """Only for a frequent user's memories (``true``), only for the others' (``false``),
    or for both (``null``)."""
    days: int | None
    """Days until it expires; ``None``: never."""
    renewed_on_use: bool


class ExpiryReport(BaseModel):
    """``GET /v1/ops/expiry``: memories expiring per day, today to ``horizon_days`` ahead,
    the lifetime of each policy and the live memories that never expire."""

    as_of: datetime
    horizon_days: int
    policies: list[str]
    days: list[ExpiryDay]
    total: int
    ttl: list[PolicyTTL]
    never_expiring: dict[str, int]
    """Memories without an expiry, by policy (every policy listed)."""
    never_expiring_total: int


class ConfidenceBucket(BaseModel):
    """Live memories whose confidence is in ``[lower, upper)`` (the last bucket closed)."""

    lower: float
    upper: float
    by_status: dict[str, int]
    fragments: int
    facts: int
    total: int


class PendingOut(BaseModel):
    """The pending-confirmation queue: counts and the longest wait (no texts)."""

    fragments: int
    facts: int
    total: int
    oldest_since: datetime | None
    oldest_age_s: float | None


class ForecastDay(BaseModel):
    """Memories whose decay is expected to cross the pending threshold on one UTC day."""

    day: date
    fragments: int
    facts: int
    total: int


class DecayForecast(BaseModel):
    """Inferred memories the daily decay is expected to take below ``pending_below`` from
    today to ``horizon_days`` ahead if nobody uses them (a step already due counts today)."""

    horizon_days: int
    days: list[ForecastDay]
    fragments: int
    facts: int
    total: int


class ConfidenceReport(BaseModel):
    """``GET /v1/ops/confidence``: the confidence histogram, the pending queue and the
    decay forecast."""

    as_of: datetime
    pending_below: float
    statuses: list[str]
    buckets: list[ConfidenceBucket]
    total: int
    pending: PendingOut
    forecast: DecayForecast


class ActivityDay(BaseModel):
    """What the lifecycle did on one UTC day: confidence decays, memories swept, renewals
    (memories whose latest use fell on that day)."""

    day: date
    decays: int
    sweeps: int
    renewals: int


class ActivityReport(BaseModel):
    """``GET /v1/ops/activity``: decays, sweeps and renewals per day, oldest first."""

    as_of: datetime
    days: list[ActivityDay]
    decays: int
    sweeps: int
    renewals: int


class OutboxReport(BaseModel):
    """``GET /v1/ops/outbox``: how far a derived index is behind the ledger."""

    index: str
    derived: bool
    pending: int
    oldest_age_s: float
    failing: int


class TenantsReport(BaseModel):
    """``GET /v1/ops/tenants``: an index's tenants hot (active), cold (inactive) and
    offloaded; ``applicable`` is false for an index without tenants."""

    index: str
    applicable: bool
    reachable: bool | None
    hot: int
    cold: int
    offloaded: int
    total: int
    by_status: dict[str, int]
    cold_after_days: int
    note: str | None = None


class KeyAge(BaseModel):
    """One PII ring key and its age."""

    key_id: str
    age_days: int
    active: bool


class KeysReport(BaseModel):
    """``GET /v1/ops/keys``: the active PII key's age against its rotation period."""

    active_key_id: str
    active_key_age_days: int
    rotation_days: int
    days_left: int
    stale: bool
    entries_pending_rotation: int
    entries_unreadable: int
    keys: list[KeyAge]


class VerifierDay(BaseModel):
    """Verification changes recorded on one UTC day, by outcome."""

    day: date
    by_outcome: dict[str, int]
    total: int


class VerifiersReport(BaseModel):
    """``GET /v1/ops/verifiers``: business links by their latest check (``ok``,
    ``failing``, ``unchecked``) and the verification changes audited per day by outcome
    (``verified``, ``unknown``, ``verifier_timeout``, ``verifier_unavailable``)."""

    as_of: datetime
    links: dict[str, int]
    outcomes: dict[str, int]
    days: list[VerifierDay]


class ReadinessReport(BaseModel):
    """``GET /readyz``: PostgreSQL answers and its schema is one this code serves."""

    ready: bool
    database: bool
    schema_revision: str | None
    schema_head: str
    schema_supported: bool


class HealthReport(BaseModel):
    """``GET /healthz``: every dependency, in numbers and booleans only."""

    status: str
    """``ok``, ``degraded`` (the index, the outbox or the key needs attention) or ``down``
    (the database does not answer, or its schema is not served)."""
    database: bool
    schema_supported: bool
    index: str
    index_reachable: bool
    outbox_pending: int
    outbox_oldest_age_s: float
    outbox_failing: int
    key_age_days: int
    key_rotation_days: int
    key_stale: bool
