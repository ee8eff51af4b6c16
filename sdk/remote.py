"""``RemoteMemoryClient``: the SDK over the REST service (httpx, synchronous).

It offers :class:`~sdk.api.MemoryAPI`, as :class:`~sdk.client.MemoryClient`
does in process: same methods, arguments, results and typed errors. A token
carries one user, so the client asks ``token_provider(user_id)`` for each
call's token and refuses (:class:`TokenUserMismatch`) one whose ``sub`` is
another user; the service verifies every token. An unreachable service
raises :class:`ServiceUnavailable`. Each call is built by its operation
(:mod:`sdk.operations`); this module only sends it::

    with RemoteMemoryClient(url, token_provider=tokens) as mem:
        mem.profiles.ensure("buyer-001")
        hits = mem.search("buyer-001", "退款到账了吗", limit=3)

Generated from :mod:`sdk.remote_async`, whose operation methods come from
:mod:`sdk.api`, by ``scripts/remote_clients.py`` (``make generate``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import httpx

from policies.errors import ConfigurationError
from policies.lifecycle import LifecyclePolicy
from policies.ttl import MemoryKind
from sdk import _remote_base as calls
from sdk import operations as ops
from sdk._remote_base import ActiveRemoteSandbox, Call, TokenProvider
from values.feedback import FeedbackResult
from values.hits import SearchResults
from values.records import BusinessLink, Device, Fact, FragmentRecord, Profile
from values.sessions import SessionRecord, TurnsAppended

if TYPE_CHECKING:
    from contextvars import Token

    from values.context import MemoryContext
    from values.sessions import Turn
__all__ = ["RemoteMemoryClient", "RemoteSandboxSession"]
T = TypeVar("T")


class _Run(Protocol):
    def __call__(self, call: Call[T], /) -> T: ...


class _Profiles:
    """``client.profiles`` over HTTP."""

    def __init__(self, run: _Run) -> None:
        self._run = run

    def get(self, user_id: str) -> Profile:
        """The profile; raises :class:`UserNotFound` if the user has none."""
        return self._run(ops.PROFILES_GET.call(user_id))

    def ensure(self, user_id: str) -> Profile:
        """The profile, created with defaults on first sight of the user."""
        return self._run(ops.PROFILES_ENSURE.call(user_id))

    def update(self, user_id: str, *, expected_version: int, **changes: object) -> Profile:
        """Apply ``changes`` if the version is still ``expected_version``; else raises
        :class:`ConcurrentModificationError` (``details["current_version"]``)."""
        return self._run(
            ops.PROFILES_UPDATE.call(user_id, expected_version=expected_version, **changes)
        )


class _Devices:
    """``client.devices`` over HTTP."""

    def __init__(self, run: _Run) -> None:
        self._run = run

    def register(self, user_id: str, *, device_id: str, os: str, browser: str) -> Device:
        """Record a sign-in from a device (untrusted until verified twice)."""
        return self._run(
            ops.DEVICES_REGISTER.call(user_id, device_id=device_id, os=os, browser=browser)
        )

    def verify(self, user_id: str, fingerprint: str, *, succeeded: bool) -> Device:
        """Count a verification of the device; raises :class:`RecordNotFound` for none."""
        return self._run(
            ops.DEVICES_VERIFY.call(user_id, fingerprint=fingerprint, succeeded=succeeded)
        )

    def list(self, user_id: str) -> list[Device]:
        """The user's devices, most recently active first."""
        return self._run(ops.DEVICES_LIST.call(user_id))

    def remove(self, user_id: str, fingerprint: str) -> bool:
        """Forget a device; whether it existed."""
        return self._run(ops.DEVICES_REMOVE.call(user_id, fingerprint=fingerprint))


class _Links:
    """``client.links`` over HTTP."""

    def __init__(self, run: _Run) -> None:
        self._run = run

    def add(
        self,
        user_id: str,
        *,
        entity_type: str,
        entity_id: str,
        role: str,
        effective_from: datetime | None = None,
        effective_to: datetime | None = None,
    ) -> BusinessLink:
        """Link the user to an entity; ``effective_to=None`` is open-ended."""
        return self._run(
            ops.LINKS_ADD.call(
                user_id,
                entity_type=entity_type,
                entity_id=entity_id,
                role=role,
                effective_from=effective_from,
                effective_to=effective_to,
            )
        )

    def valid_now(self, user_id: str, *, entity_type: str | None = None) -> list[BusinessLink]:
        """Links valid at this moment (of ``entity_type``)."""
        return self._run(ops.LINKS_VALID_NOW.call(user_id, entity_type=entity_type))

    def list(self, user_id: str) -> list[BusinessLink]:
        """Every link, past, present and future."""
        return self._run(ops.LINKS_LIST.call(user_id))

    def end(self, user_id: str, link_id: uuid.UUID, at: datetime | None = None) -> BusinessLink:
        """Close a link at ``at`` (default now); raises :class:`RecordNotFound` for none."""
        return self._run(ops.LINKS_END.call(user_id, link_id=link_id, at=at))

    def remove(self, user_id: str, link_id: uuid.UUID) -> bool:
        """Delete a link; whether it existed."""
        return self._run(ops.LINKS_REMOVE.call(user_id, link_id=link_id))


class _Facts:
    """``client.facts`` over HTTP."""

    def __init__(self, run: _Run) -> None:
        self._run = run

    def put(
        self,
        user_id: str,
        key: str,
        value: Any,
        *,
        lifecycle_policy: LifecyclePolicy,
        confidence: float = 1.0,
        source: str = "",
    ) -> Fact:
        """Create or replace a fact; ``lifecycle_policy`` is required."""
        return self._run(
            ops.FACTS_PUT.call(
                user_id,
                key=key,
                value=value,
                lifecycle_policy=lifecycle_policy,
                confidence=confidence,
                source=source,
            )
        )

    def get(self, user_id: str, key: str) -> Fact | None:
        """The live fact, or ``None``."""
        return self._run(ops.FACTS_GET.call(user_id, key=key))

    def list(self, user_id: str) -> list[Fact]:
        """Every live fact of the user."""
        return self._run(ops.FACTS_LIST.call(user_id))

    def delete(self, user_id: str, key: str) -> bool:
        """Delete a fact; whether it existed."""
        return self._run(ops.FACTS_DELETE.call(user_id, key=key))


class _Memories:
    """``client.memories`` over HTTP."""

    def __init__(self, run: _Run) -> None:
        self._run = run

    def get(self, user_id: str, memory_id: uuid.UUID | str) -> FragmentRecord | None:
        """One visible, live memory of the user, or ``None``."""
        return self._run(ops.MEMORIES_GET.call(user_id, memory_id=memory_id))

    def list(self, user_id: str, *, limit: int = 100, offset: int = 0) -> list[FragmentRecord]:
        """The user's visible, live memories, newest first."""
        return self._run(ops.MEMORIES_LIST.call(user_id, limit=limit, offset=offset))

    def delete(self, user_id: str, memory_id: uuid.UUID | str) -> bool:
        """Delete one visible memory completely; whether it existed."""
        return self._run(ops.MEMORIES_DELETE.call(user_id, memory_id=memory_id))


class _Operations:
    """The client's own calls; ``_run`` sends one."""

    _run: _Run

    def write(
        self,
        user_id: str,
        text: str,
        *,
        lifecycle_policy: LifecyclePolicy,
        session_id: str | None = None,
        occurred_at: datetime | None = None,
        metadata: dict[str, Any] | None = None,
        kind: MemoryKind = MemoryKind.NOTE,
        private: bool = False,
    ) -> uuid.UUID:
        """Store one memory under a lifecycle policy (required); its id."""
        return self._run(
            ops.WRITE.call(
                user_id,
                text=text,
                lifecycle_policy=lifecycle_policy,
                session_id=session_id,
                occurred_at=occurred_at,
                metadata=metadata,
                kind=kind,
                private=private,
            )
        )

    def search(
        self,
        user_id: str,
        query: str,
        *,
        limit: int = 5,
        alpha: float | None = None,
        preset: str | None = None,
        intents: Iterable[str] | None = None,
        occurred_after: datetime | None = None,
        occurred_before: datetime | None = None,
        session_id: str | None = None,
    ) -> SearchResults:
        """Hybrid search of the user's live memories, best first.

        ``.degraded`` is set when a fallback index answered.
        """
        return self._run(
            ops.SEARCH.call(
                user_id,
                query=query,
                limit=limit,
                alpha=alpha,
                preset=preset,
                intents=intents,
                occurred_after=occurred_after,
                occurred_before=occurred_before,
                session_id=session_id,
            )
        )

    def build_context(
        self, user_id: str, query: str, max_tokens: int = 600, *, records: int = 5
    ) -> MemoryContext:
        """The long-term memory block for the prompt, cut to ``max_tokens``."""
        return self._run(
            ops.BUILD_CONTEXT.call(user_id, query=query, max_tokens=max_tokens, records=records)
        )

    def end_session(
        self, user_id: str, session_id: str, transcript: Sequence[Turn]
    ) -> SessionRecord:
        """End the session: its interaction record and profile update, durably.

        Over HTTP the summary's ``pii`` is empty: clear PII stays in the service.
        """
        return self._run(
            ops.END_SESSION.call(user_id, session_id=session_id, transcript=transcript)
        )

    def append_turns(self, user_id: str, session_id: str, turns: Sequence[Turn]) -> TurnsAppended:
        """Keep a long session's new turns; summarised every N turns."""
        return self._run(ops.APPEND_TURNS.call(user_id, session_id=session_id, turns=turns))

    def feedback(self, user_id: str, memory_id: uuid.UUID | str, *, action: str) -> FeedbackResult:
        """Report a behaviour event (click, skip, confirm, reject, ignore) on a memory."""
        return self._run(ops.FEEDBACK.call(user_id, memory_id=memory_id, action=action))

    def export_user(self, user_id: str) -> dict[str, Any]:
        """Everything stored about the user, as JSON-ready data."""
        return self._run(ops.EXPORT_USER.call(user_id))

    def forget_user(self, user_id: str) -> bool:
        """Erase everything stored about the user; whether there was anything.

        Over HTTP: ``True`` once the service erased (its 204 does not say whether
        anything was stored); the token needs ``memory:erase``.
        """
        return self._run(ops.FORGET_USER.call(user_id))


class RemoteSandboxSession:
    """The block of ``with client.sandbox(user_id, session_id) as sb`` (per thread)."""

    def __init__(self, run: _Run, user_id: str, session_id: str) -> None:
        self._run = run
        self.user_id = user_id
        self.session_id = session_id
        self._open = ops.SANDBOX_OPEN.call(user_id, session_id=session_id)
        self._active: ActiveRemoteSandbox | None = None
        self._token: Token[ActiveRemoteSandbox | None] | None = None

    @property
    def id(self) -> uuid.UUID:
        """The sandbox the block works in now (it changes with :meth:`fork`)."""
        if self._active is None:
            raise RuntimeError("use the sandbox inside its with block")
        return self._active.sandbox_id

    def fork(self) -> uuid.UUID:
        """忘了刚才说的，重新来: archive this sandbox, continue in a clean one."""
        call = ops.SANDBOX_FORK.call(self.user_id, session_id=self.session_id)
        new = self._run(call).id
        assert self._active is not None
        self._active.sandbox_id = new
        return new

    def merge(self, memory_ids: Iterable[uuid.UUID | str]) -> list[uuid.UUID]:
        """Promote chosen memories of this sandbox into long-term memory."""
        call = ops.SANDBOX_MERGE.call(
            self.user_id, session_id=self.session_id, sandbox_id=self.id, memory_ids=memory_ids
        )
        return self._run(call)

    def discard(self) -> int:
        """Delete what this sandbox holds that was not merged, and close it."""
        call = ops.SANDBOX_DISCARD.call(
            self.user_id, session_id=self.session_id, sandbox_id=self.id
        )
        return self._run(call)

    def __enter__(self) -> RemoteSandboxSession:
        opened = self._run(self._open)
        self._active = ActiveRemoteSandbox(self.user_id, opened.session_id, opened.id)
        self._token = calls.enter_sandbox(self._active)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._token is not None:
            calls.leave_sandbox(self._token)
            self._token = None


class RemoteMemoryClient(_Operations):
    """The SDK over HTTP for asyncio: ``base_url`` of the service, or an ``http`` client
    of your own (never closed by this one)."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        token_provider: TokenProvider,
        http: httpx.Client | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        if (base_url is None) == (http is None):
            raise ConfigurationError("give exactly one of base_url and http")
        self._token_provider = token_provider
        self._owned = http is None
        self._http = http or httpx.Client(base_url=base_url or "", timeout=timeout_s)
        self._run = self._send
        self.profiles = _Profiles(self._send)
        self.devices = _Devices(self._send)
        self.links = _Links(self._send)
        self.facts = _Facts(self._send)
        self.memories = _Memories(self._send)

    def _send(self, call: Call[T]) -> T:
        r = calls.request(call, self._token_provider)
        try:
            response = self._http.request(
                r.method, r.path, headers=r.headers, json=r.json, params=r.params
            )
        except httpx.HTTPError as exc:
            raise calls.unreachable(exc) from exc
        return calls.result(call, response)

    def sandbox(self, user_id: str, session_id: str) -> RemoteSandboxSession:
        """``with client.sandbox(user_id, session_id) as sb:``."""
        return RemoteSandboxSession(self._send, user_id, session_id)

    def close(self) -> None:
        """Close the HTTP client this one made (an injected one stays open)."""
        if self._owned:
            self._http.close()

    def __enter__(self) -> RemoteMemoryClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
