"""``mem.admin``: the operator's surface over a client's runtime.

Work across users and over the stores themselves, not an agent's: the sweep and
the confidence decay, re-tokenising and re-embedding after an upgrade, draining the outbox, health,
the ops statistics (:mod:`sdk.ops`), the token revocation list, the shared rate
limits, and the stores (database, cipher, index) for the commands that migrate,
rotate and repair. The CLI, the service's ops routes and probes, and the dashboard
use it; an agent uses :class:`~sdk.client.MemoryClient`'s own members.

An :class:`Admin` holds no store of its own: it reaches the runtime of the client
that made it, started on first use as the client's is, and closed with it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from policies.errors import DatabaseUnavailable, StoreUnavailable
from policies.scope import UserScope
from sdk.settings import Settings
from structured_memory import migrate
from structured_memory.cross_user import (
    DecayReport,
    SweepReport,
    count_unreadable,
    decay_inferred,
    flag_large_scopes,
    pending_rotation,
    sweep_expired,
    vacuum_user_tables,
)
from structured_memory.repositories.outbox import OutboxLag
from unstructured_memory.embedders.registry import AUTO_EMBEDDER, DEFAULT_EMBEDDER, create_embedder
from unstructured_memory.index.base import LargeScopes

if TYPE_CHECKING:
    from sdk.ops import Ops
    from sdk.reembed import ReembedReport
    from sdk.retokenise import RetokeniseReport
    from sdk.runtime import Runtime
    from sdk.session_path import SessionPath
    from structured_memory.database import Database
    from structured_memory.pii.cipher import PiiCipher
    from structured_memory.repositories.rate_limits import RateLimitStore
    from structured_memory.repositories.tokens import RevokedTokens
    from unstructured_memory.embedders.base import Embedder
    from unstructured_memory.index.base import FragmentIndex
    from unstructured_memory.outbox.worker import DrainReport

__all__ = ["Admin", "Health"]


@dataclass(frozen=True)
class Health:
    """What :meth:`Admin.health` reports."""

    database: bool
    index: str
    index_reachable: bool
    schema_revision: str | None
    schema_head: str
    schema_supported: bool
    """Whether this code serves the database's schema (``migrate.schema_supported``): a
    revision from ``migrate.OLDEST_SUPPORTED`` to the head, or a later release's that
    declares this code compatible."""
    active_key_id: str
    active_key_age_days: int
    active_key_stale: bool
    entries_pending_rotation: int
    entries_unreadable: int
    """PII vault entries rotation or repair found unreadable (tampered, or under a retired
    key); reported, but not a failed check: the rest of the vault works."""
    outbox: OutboxLag

    @property
    def ok(self) -> bool:
        """Database and index up, schema supported, active key within its rotation period."""
        return (
            self.database
            and self.index_reachable
            and self.schema_supported
            and not self.active_key_stale
        )


class Admin:
    """Operator work over a client's runtime (see the module docstring)."""

    def __init__(
        self,
        runtime: Callable[[], Runtime],
        settings: Settings,
        session_path: Callable[[], SessionPath],
    ) -> None:
        self._rt = runtime
        self._settings = settings
        self._session_path = session_path

    @property
    def settings(self) -> Settings:
        """The settings of the client this surface belongs to."""
        return self._settings

    @property
    def database(self) -> Database:
        """The structured-track database (started on first use)."""
        return self._rt().db

    @property
    def cipher(self) -> PiiCipher:
        """The PII cipher over the configured key ring."""
        return self._rt().cipher

    @property
    def index(self) -> FragmentIndex:
        """The configured search index."""
        return self._rt().index

    @property
    def ops(self) -> Ops:
        """Read-only statistics across users for operators (see :mod:`sdk.ops`)."""
        from sdk.ops import Ops

        return Ops(self._rt(), self._settings)

    @property
    def revoked_tokens(self) -> RevokedTokens:
        """The service's token revocation list."""
        from structured_memory.repositories.tokens import RevokedTokens

        return RevokedTokens(self._rt().db)

    @property
    def rate_limits(self) -> RateLimitStore:
        """The rate-limit buckets the service's processes share (keyed by an HMAC under a
        key derived from the ring's blind key, never by a name)."""
        from structured_memory.repositories.rate_limits import RateLimitStore

        rt = self._rt()
        return RateLimitStore(rt.db, rt.cipher.purpose_key(b"dualtrack-rate-limit-v1"))

    def sweep(
        self,
        *,
        now: datetime | None = None,
        batch_size: int = 1000,
        progress: Callable[[int], None] | None = None,
        vacuum: bool = True,
    ) -> SweepReport:
        """Delete every user's expired memories and facts (across users).

        Searches' deferred renewals pending in this process are written first.
        Like a delete, a swept memory also takes the vault entries only it
        referenced and its words in its neighbours' index context. A derived
        index gets the deletes through the outbox. With ``vacuum``, then
        ``VACUUM (ANALYZE)`` every user table (``report.vacuumed``): the dead
        tuples of deletes and sweeps, and the index entries of erased rows. The confidence decay
        (:meth:`decay`) runs with it (``report.decay``). An index that searches large
        users approximately (:class:`~unstructured_memory.index.base.LargeScopes`) gets
        their memories flagged for it (``report.flagged``), before the vacuum.
        """
        rt = self._rt()
        at = now or datetime.now(UTC)
        rt.ledger.renewals.flush()  # this process's deferred renewals land before the sweep
        ended = self._session_path().sweep_idle(at)

        def forgotten(user: str, ids: list[uuid.UUID], vault_ids: list[uuid.UUID]) -> None:
            scope = UserScope(user)
            with rt.db.transaction() as conn:
                rt.writes.forget(conn, scope, ids, vault_ids, at)
            rt.feed.wake()

        report = sweep_expired(
            rt.db,
            at,
            batch_size=batch_size,
            outbox=rt.index.derived,
            progress=progress,
            forgotten=forgotten,
        )
        report = replace(
            report, decay=self.decay(now=at, batch_size=batch_size), sessions_ended=ended
        )
        if isinstance(rt.index, LargeScopes):
            flagged = flag_large_scopes(
                rt.db, threshold=rt.index.ann_threshold, batch_size=batch_size
            )
            report = replace(report, flagged=flagged)
        if not vacuum:
            return report
        return replace(report, vacuumed=tuple(vacuum_user_tables(rt.db)))

    def decay(
        self,
        *,
        now: datetime | None = None,
        batch_size: int = 1000,
        progress: Callable[[int], None] | None = None,
    ) -> DecayReport:
        """Lower the confidence of every user's stale inferences (across users).

        One step of ``new = old * 0.95`` per whole day an IMPLICIT memory went
        unused beyond ``confidence.decay_after_days`` (fragments renewed by at
        least ``decay_min_renew_days``, and facts); below the pending threshold
        it becomes ``pending_confirmation``. Idempotent per day; each decay and
        each change of status is recorded in the audit log. Also run by
        :meth:`sweep`.
        """
        rt = self._rt()
        return decay_inferred(
            rt.db,
            now or datetime.now(UTC),
            self._settings.confidence,
            batch_size=batch_size,
            progress=progress,
        )

    def retokenise(
        self, *, batch_size: int = 500, progress: Callable[[int], None] | None = None
    ) -> RetokeniseReport:
        """Recompute every user's stored keyword terms as this release's write path does
        (after an upgrade that changed them); see :mod:`sdk.retokenise`."""
        from sdk.retokenise import retokenise

        rt = self._rt()
        return retokenise(rt.db, rt.feed, batch_size=batch_size, progress=progress)

    @property
    def embedder(self) -> Embedder:
        """The embedder this client writes and searches with."""
        return self._rt().embedder

    def reembed(
        self, *, batch_size: int = 500, progress: Callable[[int], None] | None = None
    ) -> ReembedReport:
        """Embed every stored memory again with the configured embedder (``auto``: this
        release's default) and make its vectors the deployment's; see :mod:`sdk.reembed`."""
        from sdk.reembed import reembed

        s = self._settings
        name = DEFAULT_EMBEDDER if s.embedder == AUTO_EMBEDDER else s.embedder
        rt = self._rt()
        target = create_embedder(name, s.embedder_config)
        return reembed(rt.db, rt.index, target, batch_size=batch_size, progress=progress)

    def drain_outbox(self, *, deadline_s: float = 30.0) -> DrainReport:
        """Apply pending index operations now (read-your-writes on a derived index)."""
        return self._rt().feed.drain(deadline_s=deadline_s)

    def outbox_lag(self) -> OutboxLag:
        """Pending outbox entries and the age of the oldest."""
        return self._rt().feed.lag(datetime.now(UTC))

    def health(self) -> Health:
        """Database and index reachability, schema revision and whether this code serves
        it, key age, outbox lag."""
        rt = self._rt()
        ring = rt.cipher.ring
        today = datetime.now(UTC).date()
        try:
            rt.db.ping()
            schema = migrate.schema_state(rt.db)
            pending = pending_rotation(rt.db, rt.cipher)
            unreadable = count_unreadable(rt.db)
            lag = self.outbox_lag()
            up = True
        except DatabaseUnavailable:
            schema, pending, unreadable, up = migrate.SchemaState(None, None), -1, -1, False
            lag = OutboxLag(pending=-1, oldest_age_s=0.0, failing=0)
        try:
            rt.index.ping()
            index_up = up
        except StoreUnavailable:
            index_up = False
        return Health(
            database=up,
            index=rt.index.name,
            index_reachable=index_up,
            schema_revision=schema.revision,
            schema_head=migrate.head_revision(),
            schema_supported=schema.supported,
            active_key_id=ring.active.key_id,
            active_key_age_days=ring.active.age_days(today),
            active_key_stale=ring.active_is_stale(today),
            entries_pending_rotation=pending,
            entries_unreadable=unreadable,
            outbox=lag,
        )
