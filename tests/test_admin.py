"""Split by audience: ``MemoryClient`` keeps the agent's API and its lifecycle, operator
work is ``mem.admin``'s, an :class:`~sdk.admin.Admin` over the same runtime."""

from __future__ import annotations

from policies.lifecycle import LifecyclePolicy
from sdk import Admin, Health
from sdk.api import MemoryAPI
from sdk.client import MemoryClient

OPERATOR = frozenset(
    {
        "cipher",
        "database",
        "decay",
        "drain_outbox",
        "health",
        "index",
        "ops",
        "outbox_lag",
        "rate_limits",
        "retokenise",
        "revoked_tokens",
        "sweep",
    }
)


def _public(cls: type) -> set[str]:
    return {n for n in dir(cls) if not n.startswith("_")}


def test_the_client_keeps_the_agents_api_and_the_operator_work_is_the_admins() -> None:
    members = _public(MemoryClient)
    assert len(members) <= 25
    assert not members & OPERATOR
    assert _public(MemoryAPI) <= members
    assert _public(Admin) >= OPERATOR


def test_the_admin_works_over_the_clients_runtime(mem: MemoryClient) -> None:
    mem.profiles.ensure("buyer-001")
    mem.write("buyer-001", "退款到原卡", lifecycle_policy=LifecyclePolicy.EXPLICIT)
    admin = mem.admin
    assert admin.database is mem.admin.database
    assert admin.settings is mem.settings
    assert admin.outbox_lag().pending >= 0
    health = admin.health()
    assert isinstance(health, Health)
    assert health.database
    child = mem.for_agent("after-sales")
    assert child.admin.database is admin.database
