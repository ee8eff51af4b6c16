"""OpenTelemetry spans of the write, search and session-end paths, joined to an incoming
``traceparent`` on the REST service, with no text or PII in any attribute; JSON log lines
with the request and trace ids."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from policies.errors import InvalidField
from policies.lifecycle import LifecyclePolicy
from sdk import MemoryClient, Turn
from sdk.write_path import STAGES
from service import create_app
from service.log_format import JsonFormatter
from service.middleware.metrics import ACCESS_LOGGER
from service.settings import ServiceSettings
from service.tokens import mint

REPO = Path(__file__).resolve().parents[1]
USER = "13912345678"  # a user id may itself be PII: a phone number here
PHONE = "13800138000"
EMAIL = "buyer@example.com"
TEXT = f"我的手机号是 {PHONE}，订单 88231 的退款还没到账，发票请寄到 {EMAIL}"
SESSION = "s-退款-1"
SECRETS = (USER, PHONE, EMAIL, "手机号", "退款", "88231", SESSION)
SERVICE = ServiceSettings(
    jwt_secret="trace-test-secret-0123456789abcdef0123",  # type: ignore[arg-type]
    jwt_audience="dualtrack",
    rate_per_s=1000,
    rate_burst=1000,
)
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


def _exporter() -> InMemorySpanExporter:
    """One in-memory exporter on the process's SDK provider (set once per process)."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


_EXPORTER = _exporter()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


def _named(finished: Sequence[ReadableSpan], name: str) -> ReadableSpan:
    found = [s for s in finished if s.name == name]
    assert len(found) == 1, [s.name for s in finished]
    return found[0]


def _children(finished: Sequence[ReadableSpan], parent: ReadableSpan) -> list[str]:
    assert parent.context is not None
    return [
        s.name
        for s in sorted(finished, key=lambda s: s.start_time or 0)
        if s.parent is not None and s.parent.span_id == parent.context.span_id
    ]


def _assert_clean(finished: Sequence[ReadableSpan]) -> None:
    """No span's name or attribute holds the user id, the text or its PII."""
    assert finished
    for s in finished:
        seen = [s.name, *(f"{k}={v!r}" for k, v in (s.attributes or {}).items())]
        for value in seen:
            for secret in SECRETS:
                assert secret not in value, (s.name, value)


def test_a_write_is_a_span_with_its_stages_as_children(
    mem: MemoryClient, spans: InMemorySpanExporter
) -> None:
    mem.profiles.ensure(USER)
    spans.clear()
    mem.write(USER, TEXT, lifecycle_policy=LifecyclePolicy.SENSITIVE, session_id=SESSION)
    finished = spans.get_finished_spans()
    write = _named(finished, "dualtrack.write")
    assert _children(finished, write) == list(STAGES)
    assert write.attributes is not None
    assert write.attributes["dualtrack.items"] == 1
    assert tuple(write.attributes["dualtrack.policies"]) == ("sensitive",)  # type: ignore[arg-type]
    assert write.attributes["dualtrack.agent_id"] == mem.agent_id
    _assert_clean(finished)


def test_a_search_and_a_session_end_are_spans_of_their_stages(
    mem: MemoryClient, spans: InMemorySpanExporter
) -> None:
    agent = mem.for_agent("refund-agent")
    mem.profiles.ensure(USER)
    agent.write(USER, TEXT, lifecycle_policy=LifecyclePolicy.SENSITIVE)
    spans.clear()
    hits = agent.search(USER, f"{PHONE} 的退款到账了吗", limit=3)
    finished = spans.get_finished_spans()
    search = _named(finished, "dualtrack.search")
    stages = _children(finished, search)
    assert stages[:4] == ["validate", "mask and embed", "index", "hydrate"]
    assert stages[-2:] == ["rerank", "hits"]
    attributes = search.attributes or {}
    assert attributes["dualtrack.agent_id"] == "refund-agent"
    assert attributes["dualtrack.hits"] == len(hits) >= 1
    _assert_clean(finished)

    spans.clear()
    agent.end_session(
        USER,
        SESSION,
        [Turn(role="user", text=TEXT), Turn(role="assistant", text="好的，已为您登记退款")],
    )
    finished = spans.get_finished_spans()
    end = _named(finished, "dualtrack.end_session")
    stages = _children(finished, end)
    assert stages[:2] == ["summarise", "extract"]
    assert [s for s in stages if s in STAGES] == [s for s in STAGES if s in stages]
    assert {"vault", "ledger", "audit"} <= set(stages)
    assert (end.attributes or {})["dualtrack.turns"] == 2
    _assert_clean(finished)


@pytest.fixture
def api(mem: MemoryClient) -> Iterator[TestClient]:
    with TestClient(create_app(service=SERVICE, client=mem)) as client:
        yield client


def _auth() -> dict[str, str]:
    tok = mint(SERVICE, sub=USER, agent="refund-agent", scopes=["memory:read", "memory:write"])
    return {"Authorization": f"Bearer {tok}"}


def test_a_rest_write_joins_the_callers_traceparent(
    api: TestClient, spans: InMemorySpanExporter
) -> None:
    api.put("/v1/profile", headers=_auth())
    spans.clear()
    answer = api.post(
        "/v1/memories",
        headers={**_auth(), "traceparent": TRACEPARENT, "X-Request-Id": "req-7f3a_a"},
        json={"text": TEXT, "lifecycle_policy": "sensitive", "session_id": SESSION},
    )
    assert answer.status_code == 201, answer.text
    assert answer.headers["X-Request-Id"] == "req-7f3a_a"
    finished = spans.get_finished_spans()
    server = _named(finished, "POST /v1/memories")
    assert server.context is not None
    assert server.parent is not None
    assert f"{server.context.trace_id:032x}" == TRACE_ID
    assert f"{server.parent.span_id:016x}" == PARENT_ID
    assert server.kind is trace.SpanKind.SERVER
    assert (server.attributes or {})["http.response.status_code"] == 201
    write = _named(finished, "dualtrack.write")
    assert write.parent is not None
    assert write.parent.span_id == server.context.span_id
    assert _children(finished, write) == list(STAGES)
    _assert_clean(finished)
    assert (server.attributes or {})["dualtrack.request_id"] == "req-7f3a_a"


def test_a_request_without_a_traceparent_is_a_root_span_with_a_new_request_id(
    api: TestClient, spans: InMemorySpanExporter
) -> None:
    given = f"order 88231 {PHONE}"  # not a plain token: replaced, never echoed
    answer = api.get("/v1/profile", headers={**_auth(), "X-Request-Id": given})
    request_id = answer.headers["X-Request-Id"]
    assert request_id != given
    assert len(request_id) == 32
    server = _named(spans.get_finished_spans(), "GET /v1/profile")
    assert server.parent is None


def test_a_requests_json_log_line_has_its_request_and_trace_ids_and_no_pii(
    api: TestClient, spans: InMemorySpanExporter
) -> None:
    api.put("/v1/profile", headers=_auth())
    lines = io.StringIO()
    handler = logging.StreamHandler(lines)
    handler.setFormatter(JsonFormatter())
    access = logging.getLogger(ACCESS_LOGGER)
    access.addHandler(handler)
    level = access.level
    access.setLevel(logging.INFO)
    try:
        api.post(
            "/v1/memories",
            headers={**_auth(), "traceparent": TRACEPARENT, "X-Request-Id": "req-7"},
            json={"text": TEXT, "lifecycle_policy": "sensitive", "session_id": SESSION},
        )
    finally:
        access.removeHandler(handler)
        access.setLevel(level)
    [line] = lines.getvalue().splitlines()
    record = json.loads(line)
    assert record["request_id"] == "req-7"
    assert record["trace_id"] == TRACE_ID
    assert record["logger"] == ACCESS_LOGGER
    assert "POST /v1/memories" in record["message"]
    for secret in SECRETS:
        assert secret not in line


def test_without_opentelemetry_the_spans_are_no_ops() -> None:
    script = (
        "import sys; sys.modules['opentelemetry'] = None\n"
        "from sdk import tracing\n"
        "with tracing.span('dualtrack.write', items=1) as s:\n"
        "    tracing.annotate(hits=2)\n"
        "    tracing.stage_spans({'vault': 0.1}, ['vault'], 1)\n"
        "with tracing.incoming('GET /healthz', {'traceparent': 'x'}) as server:\n"
        "    print(s, server, tracing.trace_ids())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "None None (None, None)"


def test_the_json_log_setting_gives_every_uvicorn_formatter_the_json_one() -> None:
    from uvicorn.config import LOGGING_CONFIG

    from service.commands import _log_config

    assert _log_config(LOGGING_CONFIG, ACCESS_LOGGER)["formatters"] == LOGGING_CONFIG["formatters"]
    config = _log_config(LOGGING_CONFIG, ACCESS_LOGGER, "json")
    assert set(config["formatters"]) == set(LOGGING_CONFIG["formatters"])
    assert all(f == {"()": JsonFormatter} for f in config["formatters"].values())
    assert config["loggers"][ACCESS_LOGGER]["handlers"] == ["access"]
    assert ServiceSettings().log_format == "text"


def test_a_failed_stage_records_its_error_code_and_never_its_message(
    mem: MemoryClient, spans: InMemorySpanExporter
) -> None:
    mem.profiles.ensure(USER)
    spans.clear()
    with pytest.raises(InvalidField):
        mem.search(USER, TEXT, limit=0)
    finished = spans.get_finished_spans()
    for name in ("validate", "dualtrack.search"):
        failed = _named(finished, name)
        assert failed.status.status_code is StatusCode.ERROR
        assert failed.status.description is None
        assert (failed.attributes or {})["error.type"] == InvalidField.code
    assert [e.name for s in finished for e in s.events] == []  # no exception event
    _assert_clean(finished)
