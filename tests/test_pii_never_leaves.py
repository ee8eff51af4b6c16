"""No PII in clear leaves the process in a query or a memory.

The SDK runs with the OpenAI-compatible embedder against the local stand-in
server of ``test_openai_embedder``: every request body it receives is
recorded. A memory and a query holding a phone and an e-mail are written and
searched; no body may contain either value, and the query still finds the
memory through the vault's blind index.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from policies.lifecycle import LifecyclePolicy
from sdk import MemoryClient, Settings
from tests.conftest import key_line
from tests.test_openai_embedder import FakeServer, server  # noqa: F401  (fixture)

PHONE, EMAIL = "13912345678", "zhang.wei@example.com"


def test_no_request_body_holds_the_phone_or_email(
    server: FakeServer,  # noqa: F811
    fresh_dsn: str,
    data_dir: Path,
) -> None:
    # a database of its own: its embedding space is the stand-in's, not the session's
    settings = Settings(
        postgres_dsn=fresh_dsn,  # type: ignore[arg-type]
        data_dir=data_dir,
        pii_keys=key_line("k-test-1", 7),  # type: ignore[arg-type]
        embedder="openai",
        embedder_config={"base_url": server.url, "model": "text-embedding-v3", "api_key": "sk"},
    )
    with MemoryClient(settings, agent_id="refund-agent") as mem:
        mem.profiles.ensure("buyer-001")
        mid = mem.write(
            "buyer-001",
            f"请把订单 88231 的发票发到 {EMAIL}，有问题打我手机 {PHONE}",
            lifecycle_policy=LifecyclePolicy.SENSITIVE,
            session_id="s-1",
        )
        hits = mem.search("buyer-001", f"手机号 {PHONE} 绑定的订单到哪了", limit=3)
        by_email = mem.search("buyer-001", f"{EMAIL} 的发票", limit=3)

    bodies = [json.dumps(r, ensure_ascii=False) for r in server.requests]
    assert len(bodies) >= 3, "the write and both searches reached the embedder"
    for body in bodies:
        assert PHONE not in body
        assert EMAIL not in body
    assert any("139****5678" in b for b in bodies), "the masked form was embedded"
    assert mid in [h.memory_id for h in hits], "the phone finds its memory (blind index)"
    assert mid in [h.memory_id for h in by_email]


def test_reprs_hold_no_pii_or_secret(mem: MemoryClient, settings: Settings) -> None:
    from sdk import Turn

    mem.profiles.ensure("buyer-001")
    record = mem.end_session(
        "buyer-001",
        "s-0629",
        [Turn(role="user", text=f"订单 88231 退款，手机 {PHONE}，邮箱 {EMAIL}")],
    )
    assert record.summary.pii, "the clear values were handed to the vault"
    shown = repr(record)
    assert PHONE not in shown
    assert EMAIL not in shown
    keyed = settings.model_copy(
        update={"embedder_config": {"base_url": "http://127.0.0.1:1/v1", "api_key": "sk-secret"}}
    )
    assert "sk-secret" not in repr(keyed)


def test_the_embedded_servers_log_holds_no_failing_values(
    mem: MemoryClient, data_dir: Path, dsn: str
) -> None:
    """A failing statement's values (a phone in a refused row) never reach the server log."""
    import time

    from sqlalchemy import text

    from sdk import InvalidInput

    if "host=" not in dsn or str(data_dir) not in dsn:
        pytest.skip("an external PostgreSQL: its logging is the operator's")
    with mem.admin.database.transaction() as conn:
        deadline = time.monotonic() + 10
        while conn.execute(text("SHOW log_error_verbosity")).scalar_one() != "terse":
            assert time.monotonic() < deadline, "the quiet log settings were not applied"
            time.sleep(0.1)
    mem.profiles.ensure("buyer-001")
    with pytest.raises(InvalidInput), mem.admin.database.transaction() as conn:
        conn.execute(
            text(
                "INSERT INTO user_business_link (user_id, entity_type, entity_id, role) "
                f"VALUES ('buyer-001', 'spaceship', '{PHONE}', 'owner')"
            )
        )
    log = (data_dir / "pg" / "log").read_text(encoding="utf-8", errors="replace")
    assert "violates check constraint" in log, "the error itself is logged"
    assert PHONE not in log
