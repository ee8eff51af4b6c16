"""``MemoryAPI``: the user-facing surface both clients offer, declared once.

:class:`~sdk.client.MemoryClient` (in process, over the stores) and
:class:`~sdk.remote.RemoteMemoryClient` (over the REST service) satisfy it
with the same arguments, results and typed errors, so agent code typed
against ``MemoryAPI`` runs on either. In-process-only members (verifiers,
sweeps, the raw sandboxes, the PII vault, health) are not part of it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self

from policies.lifecycle import LifecyclePolicy
from policies.ttl import MemoryKind
from values.feedback import FeedbackResult
from values.hits import SearchResults
from values.records import BusinessLink, Device, Fact, FragmentRecord, Profile
from values.sessions import SessionRecord, TurnsAppended

if TYPE_CHECKING:
    from values.context import MemoryContext
    from values.sessions import Turn

__all__ = [
    "DevicesAPI",
    "FactsAPI",
    "LinksAPI",
    "MemoriesAPI",
    "MemoryAPI",
    "ProfilesAPI",
    "SandboxAPI",
]


class ProfilesAPI(Protocol):
    """``client.profiles``: the only way a user comes to exist is :meth:`ensure`."""

    def get(self, user_id: str) -> Profile:
        """The profile; raises :class:`UserNotFound` if the user has none."""
        ...

    def ensure(self, user_id: str) -> Profile:
        """The profile, created with defaults on first sight of the user."""
        ...

    def update(self, user_id: str, *, expected_version: int, **changes: object) -> Profile:
        """Apply ``changes`` if the version is still ``expected_version``; else raises
        :class:`ConcurrentModificationError` (``details["current_version"]``)."""
        ...


class DevicesAPI(Protocol):
    """``client.devices``: device fingerprints and their trust."""

    def register(self, user_id: str, *, device_id: str, os: str, browser: str) -> Device:
        """Record a sign-in from a device (untrusted until verified twice)."""
        ...

    def verify(self, user_id: str, fingerprint: str, *, succeeded: bool) -> Device:
        """Count a verification of the device; raises :class:`RecordNotFound` for none."""
        ...

    def list(self, user_id: str) -> list[Device]:
        """The user's devices, most recently active first."""
        ...

    def remove(self, user_id: str, fingerprint: str) -> bool:
        """Forget a device; whether it existed."""
        ...


class LinksAPI(Protocol):
    """``client.links``: business links with validity ranges."""

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
        ...

    def valid_now(self, user_id: str, *, entity_type: str | None = None) -> list[BusinessLink]:
        """Links valid at this moment (of ``entity_type``)."""
        ...

    def list(self, user_id: str) -> list[BusinessLink]:
        """Every link, past, present and future."""
        ...

    def end(self, user_id: str, link_id: uuid.UUID, at: datetime | None = None) -> BusinessLink:
        """Close a link at ``at`` (default now); raises :class:`RecordNotFound` for none."""
        ...

    def remove(self, user_id: str, link_id: uuid.UUID) -> bool:
        """Delete a link; whether it existed."""
        ...


class FactsAPI(Protocol):
    """``client.facts``: keyed structured memories with a lifecycle policy."""

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
        ...

    def get(self, user_id: str, key: str) -> Fact | None:
        """The live fact, or ``None``."""
        ...

    def list(self, user_id: str) -> list[Fact]:
        """Every live fact of the user."""
        ...

    def delete(self, user_id: str, key: str) -> bool:
        """Delete a fact; whether it existed."""
        ...


class MemoriesAPI(Protocol):
    """``client.memories``: read and delete single unstructured memories."""

    def get(self, user_id: str, memory_id: uuid.UUID | str) -> FragmentRecord | None:
        """One visible, live memory of the user, or ``None``."""
        ...

    def list(self, user_id: str, *, limit: int = 100, offset: int = 0) -> list[FragmentRecord]:
        """The user's visible, live memories, newest first."""
        ...

    def delete(self, user_id: str, memory_id: uuid.UUID | str) -> bool:
        """Delete one visible memory completely; whether it existed."""
        ...


class SandboxAPI(Protocol):
    """The block of ``with client.sandbox(user_id, session_id) as sb``: inside it, the
    user's reads and writes work in the session's sandbox."""

    @property
    def id(self) -> uuid.UUID:
        """The sandbox the block works in now (it changes with :meth:`fork`)."""
        ...

    def fork(self) -> uuid.UUID:
        """Archive this sandbox and continue in a clean one; the new id."""
        ...

    def merge(self, memory_ids: Iterable[uuid.UUID | str]) -> list[uuid.UUID]:
        """Promote chosen memories of this sandbox into long-term memory; the ids merged.
        Raises :class:`SandboxClosed` if a fork won the race."""
        ...

    def discard(self) -> int:
        """Delete what this sandbox holds that was not merged, and close it; how many."""
        ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


class MemoryAPI(Protocol):
    """What an agent calls, in process or over HTTP. Every call for a user without a
    profile raises :class:`UserNotFound`; bad input raises :class:`InvalidInput`
    subclasses; an unreachable store or service raises :class:`StoreUnavailable`
    subclasses."""

    @property
    def profiles(self) -> ProfilesAPI:
        """Profiles with optimistic locking."""
        ...

    @property
    def devices(self) -> DevicesAPI:
        """Devices and their trust."""
        ...

    @property
    def links(self) -> LinksAPI:
        """Business links."""
        ...

    @property
    def facts(self) -> FactsAPI:
        """Structured facts with lifecycle policies."""
        ...

    @property
    def memories(self) -> MemoriesAPI:
        """Unstructured memories: get, list, delete."""
        ...

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
        ...

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
        """Hybrid search of the user's live memories, best first."""
        ...

    def build_context(
        self, user_id: str, query: str, max_tokens: int = 600, *, records: int = 5
    ) -> MemoryContext:
        """The long-term memory block for the prompt, cut to ``max_tokens``."""
        ...

    def end_session(
        self, user_id: str, session_id: str, transcript: Sequence[Turn]
    ) -> SessionRecord:
        """End the session: its interaction record and profile update, durably."""
        ...

    def append_turns(self, user_id: str, session_id: str, turns: Sequence[Turn]) -> TurnsAppended:
        """Keep a long session's new turns; summarised every N turns."""
        ...

    def sandbox(self, user_id: str, session_id: str) -> SandboxAPI:
        """``with client.sandbox(user_id, session_id) as sb:``: work in the session's sandbox."""
        ...

    def feedback(self, user_id: str, memory_id: uuid.UUID | str, *, action: str) -> FeedbackResult:
        """Report a behaviour event (click, skip, confirm, reject, ignore) on a memory."""
        ...

    def export_user(self, user_id: str) -> dict[str, Any]:
        """Everything stored about the user, as JSON-ready data."""
        ...

    def forget_user(self, user_id: str) -> bool:
        """Erase everything stored about the user; whether there was anything."""
        ...
