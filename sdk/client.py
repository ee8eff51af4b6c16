"""``MemoryClient``: the one facade agents call.

Constructing a client does no I/O. The first use (or ``start()`` / ``with``)
starts the embedded PostgreSQL server when no DSN is set, builds the engine,
runs pending migrations when ``auto_migrate`` is on, and loads the PII key
ring. ``close()`` (or leaving the ``with`` block) releases the engine; the
embedded server stops when the last process using its data dir exits.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

from policies.errors import DatabaseUnavailable, StoreUnavailable
from policies.lifecycle import LifecyclePolicy
from policies.scope import UserScope
from policies.ttl import MemoryKind
from sdk.indexing import DerivedIndex
from sdk.memories import Memories, MemoryInput, SearchResults, SessionRecord
from sdk.settings import Settings
from sdk.structured import Devices, Facts, Links, Pii, Profiles
from structured_memory import migrate
from structured_memory.cross_user import pending_rotation
from structured_memory.database import Database
from structured_memory.embedded import start_embedded_server
from structured_memory.pii.cipher import PiiCipher
from structured_memory.pii.keyring import KeyRing
from structured_memory.pii.vault import PiiVault
from structured_memory.repositories.business_link import BusinessLinkRepository
from structured_memory.repositories.device import DeviceRepository
from structured_memory.repositories.facts import FactRepository
from structured_memory.repositories.fragments import FragmentLedger, FragmentRecord
from structured_memory.repositories.outbox import OutboxLag
from structured_memory.repositories.profile import ProfileRepository
from unstructured_memory.embedders.registry import create_embedder
from unstructured_memory.index.base import FragmentIndex
from unstructured_memory.index.registry import create_index
from unstructured_memory.outbox.worker import DrainReport
from unstructured_memory.summariser import Turn

__all__ = ["Health", "MemoryClient"]


@dataclass(frozen=True)
class Health:
    """What ``MemoryClient.health()`` reports."""

    database: bool
    index: str
    index_reachable: bool
    schema_revision: str | None
    schema_head: str
    active_key_id: str
    active_key_age_days: int
    active_key_stale: bool
    entries_pending_rotation: int
    outbox: OutboxLag

    @property
    def ok(self) -> bool:
        """Database and index up, schema current, active key within its rotation period."""
        return (
            self.database
            and self.index_reachable
            and self.schema_revision == self.schema_head
            and not self.active_key_stale
        )


@dataclass(frozen=True)
class _Runtime:
    db: Database
    cipher: PiiCipher
    profiles: ProfileRepository
    devices: DeviceRepository
    links: BusinessLinkRepository
    facts: FactRepository
    vault: PiiVault
    memories: Memories
    index: FragmentIndex
    derived: DerivedIndex | None


class MemoryClient:
    """Entry point of the SDK; a context manager owning its engine."""

    def __init__(self, settings: Settings, *, agent_id: str | None = None) -> None:
        self.settings = settings
        self.agent_id = agent_id
        self._runtime: _Runtime | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_env(cls, *, agent_id: str | None = None, **overrides: Any) -> MemoryClient:
        """A client configured from ``DUALTRACK_*`` variables (plus ``overrides``).

        With no settings at all it uses the embedded PostgreSQL under
        ``.dualtrack/`` and a generated development PII key.
        """
        return cls(Settings.from_env(**overrides), agent_id=agent_id)

    def start(self) -> MemoryClient:
        """Connect (starting the embedded server if needed) and migrate; idempotent."""
        self._rt()
        return self

    def _rt(self) -> _Runtime:
        if self._runtime is None:
            with self._lock:
                if self._runtime is None:
                    self._runtime = self._build_runtime()
        return self._runtime

    def _build_runtime(self) -> _Runtime:
        s = self.settings
        data_dir = s.resolved_data_dir()
        ring = self._key_ring()
        dsn = s.dsn() or start_embedded_server(data_dir)
        db = Database.from_dsn(
            dsn, pool_size=s.pool_size, statement_timeout_ms=s.statement_timeout_ms
        )
        try:
            if s.auto_migrate and not migrate.is_current(db):
                migrate.upgrade(db)
        except DatabaseUnavailable:
            db.dispose()
            raise
        cipher = PiiCipher(ring)
        vault = PiiVault(db, cipher)
        index = create_index(s.index, s.index_config, transaction=db.transaction)
        derived = (
            DerivedIndex.build(db, index, max_delay_s=s.outbox_max_delay_s)
            if index.derived
            else None
        )
        if derived is not None and s.outbox_worker == "thread":
            derived.worker.start()
        memories = Memories(
            db=db,
            ledger=FragmentLedger(db),
            vault=vault,
            index=index,
            embedder=create_embedder(s.embedder, s.embedder_config),
            ttl=s.ttl,
            preset=s.search_preset,
            scope_for=self.scope,
            derived=derived,
            prefilter_limit=s.prefilter_limit,
            context_turns=s.context_turns,
        )
        return _Runtime(
            db=db,
            cipher=cipher,
            profiles=ProfileRepository(db),
            devices=DeviceRepository(db),
            links=BusinessLinkRepository(db),
            facts=FactRepository(db, s.ttl),
            vault=vault,
            memories=memories,
            index=index,
            derived=derived,
        )

    def _key_ring(self) -> KeyRing:
        s = self.settings
        if s.pii_keys is not None:
            return KeyRing.parse(s.pii_keys.get_secret_value())
        path = s.pii_key_file or s.resolved_data_dir() / "pii.keys"
        return KeyRing.load_or_create(path)

    def scope(self, user_id: str) -> UserScope:
        """The validated scope for ``user_id``, carrying this client's agent id."""
        return UserScope(user_id, self.agent_id)

    @property
    def database(self) -> Database:
        """The structured-track database (started on first use)."""
        return self._rt().db

    @property
    def cipher(self) -> PiiCipher:
        """The PII cipher over the configured key ring."""
        return self._rt().cipher

    @property
    def profiles(self) -> Profiles:
        """Profiles with optimistic locking."""
        return Profiles(self._rt().profiles, self.scope)

    @property
    def devices(self) -> Devices:
        """Devices and their trust."""
        return Devices(self._rt().devices, self.scope)

    @property
    def links(self) -> Links:
        """Business links."""
        return Links(self._rt().links, self.scope)

    @property
    def facts(self) -> Facts:
        """Structured facts with lifecycle policies."""
        return Facts(self._rt().facts, self.scope)

    @property
    def pii(self) -> Pii:
        """The encrypted PII vault."""
        return Pii(self._rt().vault, self.scope)

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
        """Store one memory under a lifecycle policy (required) and return its id.

        PII in ``text`` is masked in the stored text and kept encrypted in the
        vault. ``private`` hides the memory from other agents.
        """
        return self._rt().memories.write(
            user_id,
            text,
            lifecycle_policy=lifecycle_policy,
            session_id=session_id,
            occurred_at=occurred_at,
            metadata=metadata,
            kind=kind,
            private=private,
        )

    def write_many(
        self, items: Iterable[MemoryInput], *, batch_size: int = 256, progress: bool = True
    ) -> list[uuid.UUID]:
        """Bulk import, one transaction per batch, with a progress bar."""
        return self._rt().memories.write_many(items, batch_size=batch_size, progress=progress)

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
        """Hybrid BM25 + vector search of the user's live memories, best first."""
        return self._rt().memories.search(
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

    def end_session(
        self, user_id: str, session_id: str, transcript: Sequence[Turn]
    ) -> SessionRecord:
        """Summarise the session (rules + NER) into an interaction record and store it."""
        return self._rt().memories.end_session(user_id, session_id, transcript)

    @property
    def memories(self) -> Memories:
        """Unstructured memories: ``get``, ``list``, ``delete`` besides write and search."""
        return self._rt().memories

    def export_user(self, user_id: str) -> dict[str, Any]:
        """Everything stored about the user, as JSON-ready data (PII decrypted for the user).

        Raises :class:`UserNotFound` if the user has no profile.
        """
        rt = self._rt()
        scope = self.scope(user_id)
        profile = rt.profiles.get(scope)
        memories: list[FragmentRecord] = []
        while batch := rt.memories.list(user_id, limit=1000, offset=len(memories)):
            memories += batch
        return {
            "user_id": scope.user_id,
            "exported_at": datetime.now(UTC).isoformat(),
            "profile": profile.model_dump(mode="json"),
            "devices": [d.model_dump(mode="json") for d in rt.devices.list(scope)],
            "links": [link.model_dump(mode="json") for link in rt.links.list(scope)],
            "facts": [f.model_dump(mode="json") for f in rt.facts.list(scope)],
            "pii": [
                {"id": str(ref.id), "kind": ref.kind, "value": rt.vault.reveal(scope, ref.id)}
                for ref in rt.vault.list(scope)
            ],
            "memories": [m.model_dump(mode="json") for m in memories],
        }

    def forget_user(self, user_id: str) -> bool:
        """Erase everything stored about the user, in one transaction.

        With a derived index, the same transaction queues the removal of the
        user's tenant, which the outbox worker applies.
        """
        rt = self._rt()
        scope = self.scope(user_id)
        with rt.db.transaction() as conn:
            existed = rt.profiles.delete_user(scope, join=conn)
            if rt.derived is not None:
                rt.derived.outbox.enqueue([("drop_user", scope.user_id, None)], join=conn)
        if rt.derived is not None:
            rt.derived.worker.wake()
        return existed

    @property
    def index(self) -> FragmentIndex:
        """The configured search index."""
        return self._rt().index

    @property
    def derived(self) -> DerivedIndex | None:
        """Outbox, worker and fallback of a derived index (``None`` for pgvector)."""
        return self._rt().derived

    def drain_outbox(self, *, deadline_s: float = 30.0) -> DrainReport:
        """Apply pending index operations now (read-your-writes on a derived index)."""
        derived = self._rt().derived
        return DrainReport(0, 0) if derived is None else derived.worker.drain(deadline_s=deadline_s)

    def outbox_lag(self) -> OutboxLag:
        """Pending outbox entries and the age of the oldest."""
        derived = self._rt().derived
        if derived is None:
            return OutboxLag(pending=0, oldest_age_s=0.0, failing=0)
        return derived.outbox.lag(datetime.now(UTC))

    def health(self) -> Health:
        """Database and index reachability, schema revision, key age, outbox lag."""
        rt = self._rt()
        ring = rt.cipher.ring
        today = datetime.now(UTC).date()
        try:
            rt.db.ping()
            revision = migrate.current_revision(rt.db)
            pending = pending_rotation(rt.db, rt.cipher)
            lag = self.outbox_lag()
            up = True
        except DatabaseUnavailable:
            revision, pending, up = None, -1, False
            lag = OutboxLag(pending=-1, oldest_age_s=0.0, failing=0)
        try:
            ping = getattr(rt.index, "ping", None)
            if ping is not None:
                ping()
            index_up = up
        except StoreUnavailable:
            index_up = False
        return Health(
            database=up,
            index=rt.index.name,
            index_reachable=index_up,
            schema_revision=revision,
            schema_head=migrate.head_revision(),
            active_key_id=ring.active.key_id,
            active_key_age_days=ring.active.age_days(today),
            active_key_stale=ring.active_is_stale(today),
            entries_pending_rotation=pending,
            outbox=lag,
        )

    def close(self) -> None:
        """Stop the outbox thread, close the index client, release the engine's connections."""
        with self._lock:
            rt = self._runtime
            if rt is not None:
                if rt.derived is not None:
                    rt.derived.worker.stop()
                close_index = getattr(rt.index, "close", None)
                if close_index is not None:
                    close_index()
                rt.db.dispose()
                self._runtime = None

    def __enter__(self) -> MemoryClient:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
