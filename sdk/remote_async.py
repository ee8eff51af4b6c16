"""``AsyncRemoteMemoryClient``: :class:`~sdk.remote.RemoteMemoryClient` for asyncio
(``httpx.AsyncClient``): the same calls, awaited, with the same results and errors.

Requests are built in :mod:`sdk._remote_base`; this module only sends them::

    async with AsyncRemoteMemoryClient(url, token_provider=tokens) as mem:
        await mem.profiles.ensure("buyer-001")
        async with mem.sandbox("buyer-001", "s-1") as sb:
            await mem.write("buyer-001", "订单 88231 要退款", lifecycle_policy=IMPLICIT)
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Iterable, Sequence
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import httpx

from policies.errors import ConfigurationError
from policies.lifecycle import LifecyclePolicy
from policies.ttl import MemoryKind
from sdk import _remote_base as calls
from sdk._remote_base import ActiveRemoteSandbox, Call, TokenProvider
from values.feedback import FeedbackResult
from values.hits import SearchResults
from values.records import BusinessLink, Device, Fact, FragmentRecord, Profile
from values.sessions import SessionRecord, TurnsAppended

if TYPE_CHECKING:
    from contextvars import Token

    from values.context import MemoryContext
    from values.sessions import Turn

__all__ = ["AsyncRemoteMemoryClient", "AsyncRemoteSandboxSession"]

T = TypeVar("T")


class _Run(Protocol):
    def __call__(self, call: Call[T], /) -> Awaitable[T]: ...


class _Profiles:
    def __init__(self, run: _Run) -> None:
        self._run = run

    async def get(self, user_id: str) -> Profile:
        """The profile; :class:`UserNotFound` if the user has none."""
        return await self._run(calls.profile_get(user_id))

    async def ensure(self, user_id: str) -> Profile:
        """The profile, created with defaults on first sight of the user."""
        return await self._run(calls.profile_ensure(user_id))

    async def update(self, user_id: str, *, expected_version: int, **changes: object) -> Profile:
        """Apply ``changes`` if the version is still ``expected_version``, else
        :class:`ConcurrentModificationError` with ``details["current_version"]``."""
        return await self._run(calls.profile_update(user_id, expected_version, changes))


class _Devices:
    def __init__(self, run: _Run) -> None:
        self._run = run

    async def register(self, user_id: str, *, device_id: str, os: str, browser: str) -> Device:
        """Record a sign-in from a device (untrusted until verified twice)."""
        return await self._run(calls.device_register(user_id, device_id, os, browser))

    async def verify(self, user_id: str, fingerprint: str, *, succeeded: bool) -> Device:
        """Count a verification of the device; trusted after the second success."""
        return await self._run(calls.device_verify(user_id, fingerprint, succeeded))

    async def list(self, user_id: str) -> list[Device]:
        """The user's devices, most recently active first."""
        return await self._run(calls.device_list(user_id))

    async def remove(self, user_id: str, fingerprint: str) -> bool:
        """Forget a device; whether it existed."""
        return await self._run(calls.device_remove(user_id, fingerprint))


class _Links:
    def __init__(self, run: _Run) -> None:
        self._run = run

    async def add(
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
        call = calls.link_add(
            user_id,
            entity_type=entity_type,
            entity_id=entity_id,
            role=role,
            effective_from=effective_from,
            effective_to=effective_to,
        )
        return await self._run(call)

    async def valid_now(
        self, user_id: str, *, entity_type: str | None = None
    ) -> list[BusinessLink]:
        """Links valid at this moment (of ``entity_type``)."""
        return await self._run(calls.link_list(user_id, valid_now=True, entity_type=entity_type))

    async def list(self, user_id: str) -> list[BusinessLink]:
        """Every link, past, present and future."""
        return await self._run(calls.link_list(user_id, valid_now=False))

    async def end(
        self, user_id: str, link_id: uuid.UUID, at: datetime | None = None
    ) -> BusinessLink:
        """Close a link at ``at`` (default now)."""
        return await self._run(calls.link_end(user_id, link_id, at))

    async def remove(self, user_id: str, link_id: uuid.UUID) -> bool:
        """Delete a link; whether it existed."""
        return await self._run(calls.link_remove(user_id, link_id))


class _Facts:
    def __init__(self, run: _Run) -> None:
        self._run = run

    async def put(
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
        call = calls.fact_put(
            user_id,
            key,
            value,
            lifecycle_policy=lifecycle_policy,
            confidence=confidence,
            source=source,
        )
        return await self._run(call)

    async def get(self, user_id: str, key: str) -> Fact | None:
        """The live fact, or ``None``."""
        return await self._run(calls.fact_get(user_id, key))

    async def list(self, user_id: str) -> list[Fact]:
        """Every live fact of the user."""
        return await self._run(calls.fact_list(user_id))

    async def delete(self, user_id: str, key: str) -> bool:
        """Delete a fact; whether it existed."""
        return await self._run(calls.fact_delete(user_id, key))


class _Memories:
    def __init__(self, run: _Run) -> None:
        self._run = run

    async def get(self, user_id: str, memory_id: uuid.UUID | str) -> FragmentRecord | None:
        """One visible, live memory of the user, or ``None``."""
        return await self._run(calls.memory_get(user_id, memory_id))

    async def list(
        self, user_id: str, *, limit: int = 100, offset: int = 0
    ) -> list[FragmentRecord]:
        """The user's visible, live memories, newest first."""
        return await self._run(calls.memory_list(user_id, limit, offset))

    async def delete(self, user_id: str, memory_id: uuid.UUID | str) -> bool:
        """Delete one visible memory completely; whether it existed."""
        return await self._run(calls.memory_delete(user_id, memory_id))


class AsyncRemoteSandboxSession:
    """The block of ``async with client.sandbox(user_id, session_id) as sb`` (per task)."""

    def __init__(self, run: _Run, user_id: str, session_id: str) -> None:
        self._run = run
        self.user_id = user_id
        self.session_id = session_id
        self._open = calls.sandbox_open(user_id, session_id)  # checks the session id now
        self._active: ActiveRemoteSandbox | None = None
        self._token: Token[ActiveRemoteSandbox | None] | None = None

    @property
    def id(self) -> uuid.UUID:
        """The sandbox the block works in now (it changes with :meth:`fork`)."""
        if self._active is None:
            raise RuntimeError("use the sandbox inside its async with block")
        return self._active.sandbox_id

    async def fork(self) -> uuid.UUID:
        """忘了刚才说的，重新来: archive this sandbox, continue in a clean one."""
        new = (await self._run(calls.sandbox_fork(self.user_id, self.session_id))).id
        assert self._active is not None
        self._active.sandbox_id = new
        return new

    async def merge(self, memory_ids: Iterable[uuid.UUID | str]) -> list[uuid.UUID]:
        """Promote chosen memories of this sandbox into long-term memory."""
        call = calls.sandbox_merge(self.user_id, self.session_id, self.id, memory_ids)
        return await self._run(call)

    async def discard(self) -> int:
        """Delete what this sandbox holds that was not merged, and close it."""
        return await self._run(calls.sandbox_discard(self.user_id, self.session_id, self.id))

    async def __aenter__(self) -> AsyncRemoteSandboxSession:
        opened = await self._run(self._open)
        self._active = ActiveRemoteSandbox(self.user_id, opened.session_id, opened.id)
        self._token = calls.enter_sandbox(self._active)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._token is not None:
            calls.leave_sandbox(self._token)
            self._token = None


class AsyncRemoteMemoryClient:
    """The SDK over HTTP for asyncio: ``base_url`` of the service, or an ``http`` client
    of your own (never closed by this one)."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        token_provider: TokenProvider,
        http: httpx.AsyncClient | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        if (base_url is None) == (http is None):
            raise ConfigurationError("give exactly one of base_url and http")
        self._token_provider = token_provider
        self._owned = http is None
        self._http = http or httpx.AsyncClient(base_url=base_url or "", timeout=timeout_s)
        self.profiles = _Profiles(self._send)
        self.devices = _Devices(self._send)
        self.links = _Links(self._send)
        self.facts = _Facts(self._send)
        self.memories = _Memories(self._send)

    async def _send(self, call: Call[T]) -> T:
        r = calls.request(call, self._token_provider)
        try:
            response = await self._http.request(
                r.method, r.path, headers=r.headers, json=r.json, params=r.params
            )
        except httpx.HTTPError as exc:
            raise calls.unreachable(exc) from exc
        return calls.result(call, response)

    async def write(
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
        return await self._send(
            calls.write(
                user_id,
                text,
                lifecycle_policy=lifecycle_policy,
                session_id=session_id,
                occurred_at=occurred_at,
                metadata=metadata,
                kind=kind,
                private=private,
            )
        )

    async def search(
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
        """Hybrid search of the user's live memories, best first (``.degraded`` set)."""
        return await self._send(
            calls.search(
                user_id,
                query,
                limit=limit,
                alpha=alpha,
                preset=preset,
                intents=intents,
                occurred_after=occurred_after,
                occurred_before=occurred_before,
                session_id=session_id,
            )
        )

    async def build_context(
        self, user_id: str, query: str, max_tokens: int = 600, *, records: int = 5
    ) -> MemoryContext:
        """The long-term memory block for the prompt, cut to ``max_tokens``."""
        return await self._send(calls.build_context(user_id, query, max_tokens, records))

    async def end_session(
        self, user_id: str, session_id: str, transcript: Sequence[Turn]
    ) -> SessionRecord:
        """End the session; its record (the summary's ``pii`` stays server-side)."""
        return await self._send(calls.end_session(user_id, session_id, transcript))

    async def append_turns(
        self, user_id: str, session_id: str, turns: Sequence[Turn]
    ) -> TurnsAppended:
        """Keep a long session's new turns; summarised every N turns."""
        return await self._send(calls.append_turns(user_id, session_id, turns))

    def sandbox(self, user_id: str, session_id: str) -> AsyncRemoteSandboxSession:
        """``async with client.sandbox(user_id, session_id) as sb:``."""
        return AsyncRemoteSandboxSession(self._send, user_id, session_id)

    async def feedback(
        self, user_id: str, memory_id: uuid.UUID | str, *, action: str
    ) -> FeedbackResult:
        """Report a behaviour event (click, skip, confirm, reject, ignore) on a memory."""
        return await self._send(calls.feedback(user_id, memory_id, action))

    async def export_user(self, user_id: str) -> dict[str, Any]:
        """Everything stored about the user, as the service exports it."""
        return await self._send(calls.export_user(user_id))

    async def forget_user(self, user_id: str) -> bool:
        """Erase everything stored about the user (the token needs ``memory:erase``).

        ``True`` once the service erased: its 204 does not say whether anything was stored.
        """
        return await self._send(calls.forget_user(user_id))

    async def aclose(self) -> None:
        """Close the HTTP client this one made (an injected one stays open)."""
        if self._owned:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncRemoteMemoryClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
