"""Fields kept and shown in clear refuse personal data, on every entry point.

Session ids, a device's ``os`` and ``browser`` and a fact's ``source`` refuse what
the PII masker finds (``InvalidField``, nothing written); a link's ``entity_id``
is read with its ``entity_type`` as the cue: an order, refund or ticket number
may have the shape of a phone or bank card number, never of an e-mail, an ID
card or an address; a supplier, warehouse or contract id may hold none. The
REST service and the MCP server share these checks; the remote client makes
them before anything is sent.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from policies.errors import InvalidField
from policies.lifecycle import LifecyclePolicy
from sdk import MemoryClient
from sdk import operations as ops
from sdk.settings import Settings
from service import create_app
from tests.test_mcp import call, error_code, mcp_url  # noqa: F401  (fixture)
from tests.test_mcp import token as mcp_token
from tests.test_service import SECRET, SERVICE, auth, token
from values.sessions import Turn

USER = "buyer-001"
PII_SESSIONS = ["wx-13987654321", "zhang.wei@example.com", "11010519491231002X"]
TURNS = [Turn("user", "订单 88231 什么时候发货")]
IMPLICIT = LifecyclePolicy.IMPLICIT


def _stored_rows(mem: MemoryClient) -> int:
    with mem.admin.database.transaction() as conn:
        return int(
            conn.execute(
                text(
                    "SELECT (SELECT count(*) FROM memory_fragment) + "
                    "(SELECT count(*) FROM session_watermark) + "
                    "(SELECT count(*) FROM user_device) + (SELECT count(*) FROM memory_fact) + "
                    "(SELECT count(*) FROM user_business_link)"
                )
            ).scalar_one()
        )


SESSION_CALLS: dict[str, Callable[[MemoryClient, str], Any]] = {
    "write": lambda m, s: m.write(USER, "订单 88231", lifecycle_policy=IMPLICIT, session_id=s),
    "append_turns": lambda m, s: m.append_turns(USER, s, TURNS),
    "end_session": lambda m, s: m.end_session(USER, s, TURNS),
    "sandbox": lambda m, s: m.sandboxes.open(USER, s),
    "search": lambda m, s: m.search(USER, "发货", session_id=s),
}


@pytest.mark.parametrize("session_id", PII_SESSIONS)
@pytest.mark.parametrize("name", sorted(SESSION_CALLS))
def test_a_session_id_holding_pii_is_refused(mem: MemoryClient, name: str, session_id: str) -> None:
    mem.profiles.ensure(USER)
    with pytest.raises(InvalidField) as refused:
        SESSION_CALLS[name](mem, session_id)
    assert refused.value.details["field"] == "session_id"
    assert session_id not in str(refused.value)
    assert _stored_rows(mem) == 0


def test_plain_session_ids_are_kept(mem: MemoryClient) -> None:
    mem.profiles.ensure(USER)
    for session_id in ("wx-session-88231", "s-1", "2f0c6a52-8a3b-4d6e-9c1f-0a2b3c4d5e6f"):
        mem.write(USER, "订单 88231", lifecycle_policy=IMPLICIT, session_id=session_id)
        assert mem.end_session(USER, session_id, TURNS).summary.session_id == session_id


def test_device_os_browser_and_fact_source_holding_pii_are_refused(mem: MemoryClient) -> None:
    mem.profiles.ensure(USER)
    for fields in ({"os": "13812345678", "browser": "x"}, {"os": "iOS", "browser": "a@b.com"}):
        with pytest.raises(InvalidField) as refused:
            mem.devices.register(USER, device_id="IMEI-1", **fields)
        assert refused.value.details["field"] in fields
    with pytest.raises(InvalidField) as refused:
        mem.facts.put(USER, "k", 1, lifecycle_policy=IMPLICIT, source="客服 13812345678")
    assert refused.value.details["field"] == "source"
    assert _stored_rows(mem) == 0
    mem.devices.register(USER, device_id="IMEI-1", os="Android 14", browser="微信 8.0.47")
    mem.facts.put(USER, "k", 1, lifecycle_policy=IMPLICIT, source="session-end")


LUHN_19 = "6222021234567890128"  # 19 digits passing the Luhn check: a bank card's shape


@pytest.mark.parametrize(
    ("entity_type", "entity_id"),
    [
        ("order", "13812345678"),
        ("order", "+86 138-1234-5678"),
        ("refund", LUHN_19),
        ("ticket", "TK-20260629-001"),
        ("work_order", "13912345678"),
        ("supplier", "SUP-88231"),
        ("contract", "HT2026-0042"),
    ],
)
def test_ids_of_their_type_are_linked(mem: MemoryClient, entity_type: str, entity_id: str) -> None:
    mem.profiles.ensure(USER)
    link = mem.links.add(USER, entity_type=entity_type, entity_id=entity_id, role="owner")
    assert link.entity_id == entity_id


@pytest.mark.parametrize(
    ("entity_type", "entity_id"),
    [
        ("order", "zhang.wei@example.com"),
        ("order", "11010519491231002X"),
        ("refund", "北京市朝阳区建国路88号"),
        ("supplier", "13812345678"),
        ("warehouse", "zhang.wei@example.com"),
        ("contract", LUHN_19),
        ("contract", "11010519491231002X"),
    ],
)
def test_an_entity_id_holding_pii_for_its_type_is_refused(
    mem: MemoryClient, entity_type: str, entity_id: str
) -> None:
    mem.profiles.ensure(USER)
    with pytest.raises(InvalidField) as refused:
        mem.links.add(USER, entity_type=entity_type, entity_id=entity_id, role="owner")
    assert refused.value.details["field"] == "entity_id"
    assert entity_id not in str(refused.value)
    assert _stored_rows(mem) == 0


def test_rest_refuses_them_with_400(mem: MemoryClient) -> None:
    headers = auth(token())
    with TestClient(create_app(service=SERVICE, client=mem)) as api:
        api.put("/v1/profile", headers=headers)
        turns = {"transcript": [{"role": "user", "text": "订单 88231 什么时候发货"}]}
        answers = [
            api.post("/v1/sessions/zhang.wei%40example.com/end", headers=headers, json=turns),
            api.post("/v1/sessions/wx-13987654321/turns", headers=headers, json={"turns": []}),
            api.post("/v1/sessions/wx-13987654321/sandbox", headers=headers),
            api.post(
                "/v1/memories",
                headers=headers,
                json={"text": "hi", "lifecycle_policy": "implicit", "session_id": "a@b.com"},
            ),
            api.post(
                "/v1/devices",
                headers=headers,
                json={"device_id": "d", "os": "a@b.com", "browser": "x"},
            ),
            api.put(
                "/v1/facts/k",
                headers=headers,
                json={"value": 1, "lifecycle_policy": "implicit", "source": "a@b.com"},
            ),
            api.post(
                "/v1/links",
                headers=headers,
                json={"entity_type": "order", "entity_id": "a@b.com", "role": "owner"},
            ),
        ]
    assert [(a.status_code, a.json()["error"]["code"]) for a in answers] == [
        (400, "invalid_field")
    ] * len(answers)
    assert all("a@b.com" not in a.text and "13987654321" not in a.text for a in answers)
    assert _stored_rows(mem) == 0


def test_mcp_refuses_them_as_tool_errors(mem: MemoryClient, mcp_url: str) -> None:  # noqa: F811
    mem.profiles.ensure(USER)
    transcript = [{"role": "user", "text": "订单 88231 什么时候发货"}]
    ended = call(
        mcp_url, mcp_token(), "end_session", {"session_id": "a@b.com", "transcript": transcript}
    )
    assert error_code(ended) == "invalid_field"
    remembered = call(
        mcp_url,
        mcp_token(),
        "remember",
        {"text": "hi", "lifecycle_policy": "implicit", "session_id": "wx-13987654321"},
    )
    assert error_code(remembered) == "invalid_field"
    assert _stored_rows(mem) == 0


def test_the_remote_client_refuses_them_before_sending() -> None:
    builders: list[Callable[[], Any]] = [
        lambda: ops.END_SESSION.call(USER, session_id="a@b.com", transcript=TURNS),
        lambda: ops.APPEND_TURNS.call(USER, session_id="wx-13987654321", turns=TURNS),
        lambda: ops.SANDBOX_OPEN.call(USER, session_id="a@b.com"),
        lambda: ops.DEVICES_REGISTER.call(USER, device_id="d", os="13812345678", browser="x"),
        lambda: ops.FACTS_PUT.call(
            USER, key="k", value=1, lifecycle_policy=IMPLICIT, confidence=1.0, source="a@b.com"
        ),
        lambda: ops.LINKS_ADD.call(
            USER,
            entity_type="order",
            entity_id="a@b.com",
            role="owner",
            effective_from=None,
            effective_to=None,
        ),
    ]
    for build in builders:
        with pytest.raises(InvalidField):
            build()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_the_access_log_prints_route_templates_not_paths(
    settings: Settings, mem: MemoryClient, tmp_path: Path
) -> None:
    """``dualtrack serve`` logs each request under its route template: a session id or a
    fact key in the path (refused or not) never reaches the log."""
    assert settings.postgres_dsn is not None
    assert settings.pii_keys is not None
    port = _free_port()
    env = {
        **os.environ,
        "DUALTRACK_POSTGRES_DSN": settings.postgres_dsn.get_secret_value(),
        "DUALTRACK_PII_KEYS": settings.pii_keys.get_secret_value(),
        "DUALTRACK_DATA_DIR": str(tmp_path),
        "DUALTRACK_JWT_SECRET": SECRET,
        "DUALTRACK_JWT_AUDIENCE": "dualtrack",
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        headers = auth(token())
        httpx.put(f"{base}/v1/profile", headers=headers, timeout=10)
        turns = {"transcript": [{"role": "user", "text": "订单 88231 什么时候发货"}]}
        refused = httpx.post(
            f"{base}/v1/sessions/zhang.wei%40example.com/end", headers=headers, json=turns
        )
        assert refused.status_code == 400
        httpx.get(f"{base}/v1/facts/order-13987654321", headers=headers, timeout=10)
    finally:
        server.terminate()
        output, _ = server.communicate(timeout=60)
    assert "zhang.wei" not in output
    assert "13987654321" not in output
    assert '"POST /v1/sessions/{session_id}/end HTTP/1.1" 400' in output
    assert '"GET /v1/facts/{key} HTTP/1.1" 404' in output


def test_a_session_end_links_no_id_its_type_refuses(mem: MemoryClient) -> None:
    mem.profiles.ensure(USER)
    said = [Turn("user", "订单号 11010519491231002X 和订单号 13812345678 都没发货")]
    mem.end_session(USER, "s-1", said)
    linked = {(link.entity_type, link.entity_id) for link in mem.links.list(USER)}
    assert linked == {("order", "13812345678")}
