"""Log lines as JSON objects (``DUALTRACK_LOG_FORMAT=json``), each with its request and
trace ids.

One object per line: ``time`` (UTC, ISO 8601), ``level``, ``logger``, ``message``,
``request_id`` (``service.middleware.request_context``), ``trace_id`` and ``span_id``
(the current OpenTelemetry span, see ``sdk.tracing``), and ``exception`` when there is
one. What our code logs names no user and holds no text of theirs; the access line
names the route template, not the path.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from sdk.tracing import trace_ids
from service.middleware.request_context import REQUEST_ID

__all__ = ["JsonFormatter", "json_log_config"]


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON object (see the module)."""

    def format(self, record: logging.LogRecord) -> str:
        trace_id, span_id = trace_ids()
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": REQUEST_ID.get(),
            "trace_id": trace_id,
            "span_id": span_id,
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


def json_log_config(base: dict[str, Any]) -> dict[str, Any]:
    """``base`` (a ``logging.config.dictConfig`` dict, uvicorn's) with every formatter
    replaced by :class:`JsonFormatter`."""
    formatters = {name: {"()": JsonFormatter} for name in base.get("formatters", {})}
    return {**base, "formatters": formatters}
