"""Prometheus metrics of one app, in a registry of its own (never the global default).

Counters are incremented where the event happens (request latency in
:class:`service.middleware.metrics.RequestMetrics`, writes and searches in
the memory routes); the store's numbers (outbox lag, pending confirmations,
the last 24 hours' decays, sweeps and verification changes, links by
verification, the PII key's age) are read through ``mem.admin.ops`` at
each scrape. A scrape while PostgreSQL is down still answers, with
``dualtrack_store_up 0`` and without those numbers.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from fastapi import Request
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from policies.errors import DualtrackError
from sdk.client import MemoryClient

__all__ = ["LATENCY_BUCKETS", "ServiceMetrics", "metrics_of"]

_log = logging.getLogger(__name__)

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Request latency buckets, in seconds."""


class _StoreGauges(Collector):
    """Reads ``mem.admin.ops.gauges()`` at each scrape."""

    def __init__(self, mem: MemoryClient) -> None:
        self._mem = mem

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("dualtrack_store_up", "Whether the store's numbers were read.")
        try:
            g = self._mem.admin.ops.gauges()
        except DualtrackError as exc:
            _log.warning("metrics: the store's numbers are unavailable (%s)", exc.code)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield _gauge(
            "dualtrack_outbox_pending",
            "Index operations not applied yet.",
            [],
            [([], g.outbox_pending)],
        )
        yield _gauge(
            "dualtrack_outbox_oldest_age_seconds",
            "Age of the oldest pending index operation.",
            [],
            [([], g.outbox_oldest_age_s)],
        )
        yield _gauge(
            "dualtrack_outbox_failing",
            "Pending index operations that failed at least once.",
            [],
            [([], g.outbox_failing)],
        )
        yield _gauge(
            "dualtrack_pending_confirmations",
            "Live memories waiting for their user's confirmation.",
            ["track"],
            [(["fragment"], g.pending_fragments), (["fact"], g.pending_facts)],
        )
        yield _gauge(
            "dualtrack_decays_last_24h",
            "Confidence decays recorded in the last 24 hours.",
            ["track"],
            [([k], v) for k, v in g.decays_24h.items()],
        )
        yield _gauge(
            "dualtrack_swept_last_24h",
            "Expired memories the sweep deleted in the last 24 hours.",
            ["track"],
            [([k], v) for k, v in g.sweeps_24h.items()],
        )
        yield _gauge(
            "dualtrack_verification_changes_last_24h",
            "Business verification changes recorded in the last 24 hours, by outcome.",
            ["outcome"],
            [([k], v) for k, v in g.verifications_24h.items()],
        )
        yield _gauge(
            "dualtrack_business_links",
            "Business links by the outcome of their latest verification.",
            ["verification"],
            [([k], v) for k, v in g.links.items()],
        )
        yield _gauge(
            "dualtrack_pii_key_age_days",
            "Age of the active PII ring key.",
            [],
            [([], g.key_age_days)],
        )
        yield _gauge(
            "dualtrack_pii_key_rotation_days",
            "The rotation period of PII ring keys.",
            [],
            [([], g.key_rotation_days)],
        )


def _gauge(
    name: str, doc: str, labels: list[str], values: list[tuple[list[str], float]]
) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=labels)
    for label_values, value in values:
        family.add_metric(label_values, value)
    return family


class ServiceMetrics:
    """The app's registry, its counters and histogram, and the store's gauges."""

    def __init__(self, mem: MemoryClient) -> None:
        self.registry = CollectorRegistry()
        self.request_seconds = Histogram(
            "dualtrack_http_request_duration_seconds",
            "Request latency by method, route template and status.",
            ["method", "route", "status"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.writes = Counter(
            "dualtrack_memory_writes",
            "Memories written through the API, by lifecycle policy.",
            ["policy"],
            registry=self.registry,
        )
        self.searches = Counter(
            "dualtrack_searches",
            "Searches through the API; degraded: a fallback index answered.",
            ["degraded"],
            registry=self.registry,
        )
        self.registry.register(_StoreGauges(mem))

    def render(self) -> bytes:
        """The registry in Prometheus' text format."""
        return generate_latest(self.registry)


def metrics_of(request: Request) -> ServiceMetrics:
    """The metrics of the app serving ``request``."""
    metrics: ServiceMetrics = request.app.state.metrics
    return metrics
