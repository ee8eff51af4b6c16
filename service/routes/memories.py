"""``/v1/memories`` and ``/v1/search``: write, read, list, delete, search the token's user."""

from __future__ import annotations

from typing import Any

from fastapi import Request

from sdk.wire import WriteRequest
from service.metrics import metrics_of
from service.operations import operation_router
from values.hits import SearchResults

__all__ = ["router"]


def _written(request: Request, body: WriteRequest, _: Any) -> None:
    metrics_of(request).writes.labels(body.lifecycle_policy.value).inc()


def _searched(request: Request, _: Any, hits: SearchResults) -> None:
    metrics_of(request).searches.labels(str(hits.degraded).lower()).inc()


router = operation_router("memories", observe={"write": _written, "search": _searched})
