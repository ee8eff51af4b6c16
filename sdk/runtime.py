"""What a started client owns: the engine, repositories, index, feed and both paths.

Built on first use by :class:`MemoryClient` (constructors do no I/O), from
``Settings`` passed down explicitly.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta

from policies.errors import DatabaseUnavailable, IndexUnavailable, SchemaMismatch
from policies.scope import UserScope
from sandbox.repository import SandboxRepository
from sdk.feed import IndexFeed, build_feed
from sdk.memories import Memories
from sdk.search_path import SearchPath
from sdk.settings import Settings
from sdk.write_path import WritePath
from structured_memory import migrate
from structured_memory.cross_user.erasure_vacuum import ErasureVacuum
from structured_memory.database import Database
from structured_memory.embedded import start_embedded_server
from structured_memory.embedding_space import claim_embedding_space, stored_embedding_space
from structured_memory.pii.cipher import PiiCipher
from structured_memory.pii.keyring import KeyRing, derive_key
from structured_memory.pii.vault import PiiVault
from structured_memory.renewals import Renewals
from structured_memory.repositories.business_link import BusinessLinkRepository
from structured_memory.repositories.device import DeviceRepository
from structured_memory.repositories.facts import FactRepository
from structured_memory.repositories.fragments import FragmentLedger, visible_in_ledger
from structured_memory.repositories.profile import ProfileRepository
from unstructured_memory.embedders.base import Embedder
from unstructured_memory.embedders.registry import (
    AUTO_EMBEDDER,
    DEFAULT_EMBEDDER,
    create_embedder,
    offline_embedder_of,
)
from unstructured_memory.errors import EmbeddingDimensionMismatch
from unstructured_memory.index.base import FragmentIndex
from unstructured_memory.index.registry import create_fallback, create_index

__all__ = ["Runtime", "build_embedder", "open_database"]

_log = logging.getLogger(__name__)

TENANT_KEY_PURPOSE = b"dualtrack-index-tenant-v1"
"""HKDF purpose of the key naming users in an index, split from the blind-index key
(which rotation never changes, so tenant names are stable across rotations)."""


class EmbeddingGuard:
    """Checks once per client that the embedder matches the stored vectors, then sets
    up the index for them; a mismatch is raised on every later write and search."""

    def __init__(self, db: Database, embedder: Embedder, index: FragmentIndex) -> None:
        self._db = db
        self._embedder = embedder
        self._index = index
        self._lock = threading.Lock()
        self._checked = False
        self._problem: EmbeddingDimensionMismatch | None = None

    def __call__(self) -> None:
        if not self._checked:
            with self._lock:
                if not self._checked:
                    self._check()
        if self._problem is not None:
            raise self._problem

    def _check(self) -> None:
        e = self._embedder
        model, dims = claim_embedding_space(self._db, e.name, e.dimensions)
        if (model, dims) != (e.name, e.dimensions):
            self._problem = EmbeddingDimensionMismatch(
                stored=dims, configured=e.dimensions, embedder=e.name
            )
            self._problem.details["stored_model"] = model
        else:
            try:
                self._index.setup(e.name, e.dimensions)
            except IndexUnavailable:
                # writes go to the ledger and the feed; the index sets itself up on contact
                _log.warning("search index unreachable at start; it will be set up later")
        self._checked = True


def build_embedder(db: Database, settings: Settings) -> Embedder:
    """The settings' embedder; for ``auto`` (the default) the offline one the stored vectors
    belong to, or the default of a new deployment (see ``docs/operations/migrations.md``)."""
    if settings.embedder != AUTO_EMBEDDER:
        return create_embedder(settings.embedder, settings.embedder_config)
    stored = stored_embedding_space(db)
    name = offline_embedder_of(stored[0] if stored else None)
    if name != DEFAULT_EMBEDDER:
        _log.warning(
            "the stored vectors are %s's; this release's default embedder is %s: "
            "`dualtrack reembed` with DUALTRACK_EMBEDDER=%s moves them",
            name,
            DEFAULT_EMBEDDER,
            DEFAULT_EMBEDDER,
        )
    return create_embedder(name, settings.embedder_config)


def open_database(settings: Settings) -> Database:
    """The configured database (the embedded server started or joined), not migrated."""
    dsn = settings.dsn() or start_embedded_server(settings.resolved_data_dir())
    return Database.from_dsn(
        dsn, pool_size=settings.pool_size, statement_timeout_ms=settings.statement_timeout_ms
    )


@dataclass(frozen=True)
class Runtime:
    """Everything a started client uses."""

    db: Database
    cipher: PiiCipher
    profiles: ProfileRepository
    devices: DeviceRepository
    links: BusinessLinkRepository
    facts: FactRepository
    vault: PiiVault
    ledger: FragmentLedger
    index: FragmentIndex
    feed: IndexFeed
    memories: Memories
    writes: WritePath
    sandboxes: SandboxRepository
    searches: SearchPath
    erasure_vacuum: ErasureVacuum
    embedder: Embedder

    @classmethod
    def build(
        cls, settings: Settings, ring: KeyRing, scope_for: Callable[[str], UserScope]
    ) -> Runtime:
        """Start (or join) the database, migrate if configured, check the schema is one
        this code serves (:class:`SchemaMismatch` if not), wire everything."""
        s = settings
        db = open_database(s)
        try:
            migrate.prepare(db, auto_migrate=s.auto_migrate)
        except (DatabaseUnavailable, SchemaMismatch):
            db.dispose()
            raise
        cipher = PiiCipher(ring)
        vault = PiiVault(db, cipher)
        renewals = Renewals(db, interval_s=s.renewal_flush_s)
        ledger = FragmentLedger(db, renewals)
        tenant_key = derive_key(ring.blind.secret, TENANT_KEY_PURPOSE)
        index = create_index(
            s.index,
            s.index_config,
            connect=db.reading,
            visible=visible_in_ledger,
            tenant_key=tenant_key,
        )
        feed = build_feed(
            db, index, max_delay_s=s.outbox_max_delay_s, background=s.outbox_worker == "thread"
        )
        feed.start()
        renewals.start()
        embedder = build_embedder(db, s)
        guard = EmbeddingGuard(db, embedder, index)
        sandboxes = SandboxRepository(timedelta(hours=s.sandbox_hours), s.ttl)
        writes = WritePath(
            db=db,
            ledger=ledger,
            vault=vault,
            embedder=embedder,
            feed=feed,
            ttl=s.ttl,
            sandboxes=sandboxes,
            scope_for=scope_for,
            check_embedding_space=guard,
            context_turns=s.context_turns,
        )
        return cls(
            db=db,
            cipher=cipher,
            profiles=ProfileRepository(db, vault=vault),
            devices=DeviceRepository(db, cipher),
            links=BusinessLinkRepository(db),
            facts=FactRepository(
                db, s.ttl, vault=vault, renewals=renewals, confidence=s.confidence
            ),
            vault=vault,
            ledger=ledger,
            index=index,
            feed=feed,
            memories=Memories(db, ledger, feed, writes, scope_for),
            writes=writes,
            sandboxes=sandboxes,
            searches=SearchPath(
                ledger=ledger,
                vault=vault,
                index=index,
                fallback=create_fallback(
                    s.index, connect=db.reading, visible=visible_in_ledger, tenant_key=tenant_key
                ),
                embedder=embedder,
                preset=s.search_preset,
                scope_for=scope_for,
                check_embedding_space=guard,
                refresh_contexts=writes.refresh_contexts,
                prefilter_limit=s.prefilter_limit,
            ),
            erasure_vacuum=ErasureVacuum(db, timeout_s=s.erasure_vacuum_timeout_s),
            embedder=embedder,
        )

    def rescoped(self, scope_for: Callable[[str], UserScope]) -> Runtime:
        """The same runtime for another agent's client: shared stores, its own scopes."""
        writes = self.writes.rescoped(scope_for)
        return replace(
            self,
            writes=writes,
            memories=Memories(self.db, self.ledger, self.feed, writes, scope_for),
            searches=self.searches.rescoped(scope_for),
        )

    def close(self) -> None:
        """Stop background delivery, write pending renewals, close the index client,
        release connections."""
        self.feed.stop()
        self.ledger.renewals.close()
        self.index.close()
        self.db.dispose()
