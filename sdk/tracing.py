"""OpenTelemetry spans of the write, search and session-end paths (extra ``otel``).

The only module that imports OpenTelemetry. Without its API every function
here is a no-op; with the API but no SDK tracer provider configured, spans are
OpenTelemetry's own non-recording ones. Attributes are ids of agents, counts,
policies and stage names only: never a text, never a user id (which may itself
be personal data), never a session id.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

try:
    from opentelemetry import trace as _trace
    from opentelemetry.propagate import extract as _extract
except ImportError:  # pragma: no cover - the API ships with fastapi and mcp today
    _trace = None  # type: ignore[assignment]

__all__ = ["Attribute", "annotate", "incoming", "span", "stage_spans", "trace_ids"]

Attribute = str | int | bool | float | Sequence[str]
"""An attribute value: an id of an agent, a count, a flag, names."""

_PREFIX = "dualtrack."


@contextmanager
def _failure(current: Any) -> Iterator[None]:
    """An exception leaving the block marks ``current`` failed with its type and our error
    code (``error.type``), never its message."""
    try:
        yield
    except Exception as exc:
        current.set_status(_trace.StatusCode.ERROR)
        current.set_attribute("error.type", str(getattr(exc, "code", type(exc).__qualname__)))
        raise


def _attributes(values: Mapping[str, Attribute | None]) -> dict[str, Any]:
    return {_PREFIX + k: v for k, v in values.items() if v is not None}


@contextmanager
def span(name: str, **attributes: Attribute | None) -> Iterator[Any]:
    """A span ``name`` as the current one until the block ends (a child of the current
    span); ``None`` attributes are left out. Yields the span (``None`` without the API)."""
    if _trace is None:  # pragma: no cover
        yield None
        return
    with (
        _trace.get_tracer("dualtrack").start_as_current_span(
            name,
            attributes=_attributes(attributes),
            record_exception=False,  # its message may quote the input: _failure records less
            set_status_on_exception=False,
        ) as current,
        _failure(current),
    ):
        yield current


def annotate(**attributes: Attribute | None) -> None:
    """Add ``attributes`` (``None`` ones left out) to the current span."""
    if _trace is not None:
        _trace.get_current_span().set_attributes(_attributes(attributes))


def stage_spans(spent: Mapping[str, float], order: Sequence[str], fragments: int) -> None:
    """Child spans of the current span for the stages timed in ``spent`` (seconds), laid
    end to end in ``order`` and ending now: each lasts its stage's measured time, summed
    over a batch's items (which interleave), so the offsets are not wall-clock ones."""
    if _trace is None or not _trace.get_current_span().is_recording():
        return
    tracer = _trace.get_tracer("dualtrack")
    durations = [(s, int(spent[s] * 1e9)) for s in order if s in spent]
    start = time.time_ns() - sum(d for _, d in durations)
    for stage, duration in durations:
        child = tracer.start_span(
            stage,
            start_time=start,
            attributes=_attributes({"stage": stage, "fragments": fragments}),
        )
        start += duration
        child.end(end_time=start)


@contextmanager
def incoming(name: str, headers: Mapping[str, str]) -> Iterator[Any]:
    """A server span ``name`` joined to the W3C ``traceparent`` of ``headers`` (a root
    span without one), current until the block ends; yields it (``None`` without the API)."""
    if _trace is None:  # pragma: no cover
        yield None
        return
    parent = _extract(dict(headers))
    with (
        _trace.get_tracer("dualtrack").start_as_current_span(
            name,
            context=parent,
            kind=_trace.SpanKind.SERVER,
            record_exception=False,
            set_status_on_exception=False,
        ) as current,
        _failure(current),
    ):
        yield current


def trace_ids() -> tuple[str | None, str | None]:
    """The current trace and span ids in hex, or ``(None, None)`` outside a valid span."""
    if _trace is None:  # pragma: no cover
        return None, None
    context = _trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None, None
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"
