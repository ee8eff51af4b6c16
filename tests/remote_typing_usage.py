"""Code calling the sync remote client as a user writes it, for ``mypy --strict``: the
client's real signatures reach the caller (``sdk/remote.pyi``; ``sdk.remote`` itself is
derived on import). ``make typecheck`` checks it against the repository and
``tests/test_thin_client.py`` against the client wheel alone. ``assert_type`` fails on
``Any``, and each ``type: ignore`` is reported unused (``--strict``) once the call it
marks type-checks."""

from __future__ import annotations

import uuid
from typing import assert_type

from policies.lifecycle import LifecyclePolicy
from sdk.api import MemoryAPI
from sdk.errors import UserNotFound
from sdk.remote import RemoteMemoryClient, RemoteSandboxSession
from values.hits import SearchResults
from values.records import Fact, Profile


def tokens(user_id: str) -> str:
    """Stands for the agent service's token source."""
    return f"token-of-{user_id}"


def remembers(url: str) -> uuid.UUID:
    with RemoteMemoryClient(url, token_provider=tokens) as mem:
        assert_type(mem, RemoteMemoryClient)
        assert_type(mem.profiles.ensure("buyer-001"), Profile)
        memory_id = mem.write(
            "buyer-001", "以后都用微信通知我", lifecycle_policy=LifecyclePolicy.EXPLICIT
        )
        assert_type(memory_id, uuid.UUID)
        assert_type(mem.search("buyer-001", "退款到账了吗", limit=3), SearchResults)
        assert_type(mem.facts.get("buyer-001", "notify_channel"), Fact | None)
        mem.write("buyer-001", "没有生命周期策略")  # type: ignore[call-arg]
        mem.search("buyer-001", "退款", limt=3)  # type: ignore[call-arg]
        mem.memories.list("buyer-001", limit="3")  # type: ignore[arg-type]
        with mem.sandbox("buyer-001", "session-7") as sb:
            assert_type(sb, RemoteSandboxSession)
            assert_type(sb.fork(), uuid.UUID)
        return memory_id


def as_protocol(mem: RemoteMemoryClient) -> MemoryAPI:
    return mem


def narrowed(obj: object) -> RemoteMemoryClient | None:
    return obj if isinstance(obj, RemoteMemoryClient) else None


def profile_or_none(mem: RemoteMemoryClient, user_id: str) -> Profile | None:
    try:
        return mem.profiles.get(user_id)
    except UserNotFound:
        return None


class AuditedClient(RemoteMemoryClient):
    """A user's subclass: the client is a class to mypy, not a variable."""

    def close(self) -> None:
        super().close()
