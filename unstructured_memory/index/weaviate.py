"""The Weaviate backend: one tenant per user in a ``UserMemory`` collection.

A derived index: objects are copies of ledger rows delivered by the outbox,
keyed by ``uuid5(fragment id)`` so re-delivery overwrites instead of
duplicating. Vectors are self-provided (every hybrid query passes
``vector=``). Keyword search runs BM25 over ``index_text``, the jieba tokens
joined by spaces in a ``whitespace`` property (or over ``text_gse``, the
masked text tokenised by Weaviate's ``gse_ch``, chosen by configuration).

Isolation is layered: the tenant is a hash of the user id, and every query
also filters ``user_id`` inside the tenant. Erasure removes the tenant. Users
idle for a while can be set INACTIVE (cold); a query or write re-activates
them (``auto_tenant_activation``). Expiry: ``expires_at`` is filtered in every
query, and the server's native object TTL deletes expired objects when
enabled; the ledger stays authoritative either way. On a Weaviate cluster the
collection is created with ``replication_factor`` copies of each tenant, and
every read and write carries ``consistency_level`` (QUORUM by default).

The client retries unreachable gRPC calls for about a minute on its own, so a
circuit breaker probes ``/v1/.well-known/ready`` (milliseconds when the server
is down) after any failure or idle period and fails fast with
:class:`IndexUnavailable` while the server stays down.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import importlib
import logging
import threading
import time
import uuid
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from policies.errors import IndexUnavailable
from policies.scope import UserScope
from unstructured_memory.index.base import (
    Connect,
    Delete,
    DropUser,
    IndexedFragment,
    IndexHit,
    IndexOp,
    LedgerVisibility,
    SearchQuery,
    Upsert,
)
from unstructured_memory.index.registry import WeaviateConfig
from unstructured_memory.search.presets import Fusion

__all__ = ["ABSENT", "NEVER", "TENANT_NAMING", "WeaviateIndex", "object_uuid", "tenant_name"]

_log = logging.getLogger(__name__)

T = TypeVar("T")

_NAMESPACE = uuid.UUID("6f1c9a1e-3a57-5d0e-9c39-64d75a1c7a01")


def tenant_name(user_id: str, key: bytes) -> str:
    """The tenant of a user: ``u`` + 40 hex of HMAC-SHA256 under ``key``.

    Keyed, so that where user ids are phone numbers nobody who can list tenants
    recovers them by hashing the candidates; tenant names allow no ``.:@``.
    """
    return "u" + hmac.new(key, user_id.encode("utf-8"), hashlib.sha256).hexdigest()[:40]


TENANT_NAMING = "dualtrack tenants: u + hmac-sha256(tenant key, user id) v1"
"""The description a collection is created with; a collection without it names its
tenants the old, unkeyed way and is refused until ``dualtrack reindex`` rebuilds it."""


def object_uuid(fragment_id: uuid.UUID) -> uuid.UUID:
    """The Weaviate object id of a fragment: UUIDv5, stable across deliveries."""
    return uuid.uuid5(_NAMESPACE, str(fragment_id))


ABSENT = "-"
"""Stored for an absent session, sandbox or agent id (null-state indexes cost files)."""

NEVER = datetime(2200, 1, 1, tzinfo=UTC)
"""Stored as ``expires_at`` of a memory that never expires (Weaviate dates end in 2262)."""

TENANT_HANDLES = 1_024
"""Tenant handles kept per index (the most recently used): building one costs more than a
search, as each makes the client's batch wrapper and its thread pool."""


def _properties(f: IndexedFragment, keyword_property: str) -> dict[str, Any]:
    return {
        "fragment_id": str(f.id),
        "user_id": f.user_id,
        "text": f.text,
        keyword_property: f.index_text if keyword_property == "index_text" else f.text,
        "intent": f.intent,
        "entities": [e for e in f.entities if e] or [ABSENT],
        "occurred_at": f.occurred_at,
        "expires_at": f.expires_at or NEVER,
        "private": f.private,
        "session_id": f.session_id or ABSENT,
        "sandbox_id": ABSENT if f.sandbox_id is None else str(f.sandbox_id),
        "agent_id": f.agent_id or ABSENT,
    }


class WeaviateIndex:
    """``FragmentIndex`` over a Weaviate server (multi-tenant, self-provided vectors)."""

    name = "weaviate"
    derived = True

    def __init__(self, config: WeaviateConfig, *, tenant_key: bytes) -> None:
        self.config = config
        self._tenant_key = tenant_key
        self._client: Any = None
        self._lock = threading.Lock()
        self._down_since: float | None = None
        self._last_ok = 0.0
        self._ready_collection = False
        self._handle: tuple[Any, Any] | None = None  # (client, its collection handle)
        self._tenants: tuple[Any, OrderedDict[str, Any]] | None = None  # (collection, handles)
        self._tenants_lock = threading.Lock()

    @classmethod
    def from_config(
        cls,
        config: WeaviateConfig,
        *,
        connect: Connect,
        visible: LedgerVisibility,
        tenant_key: bytes,
    ) -> WeaviateIndex:
        """The registry's constructor; Weaviate does not read PostgreSQL (it renders
        visibility as its own filter, :func:`_filters`)."""
        return cls(config, tenant_key=tenant_key)

    def tenant(self, user_id: str) -> str:
        """The name of the user's tenant (see :func:`tenant_name`)."""
        return tenant_name(user_id, self._tenant_key)

    # -- connection and circuit breaker ------------------------------------------------

    def _connect(self) -> Any:
        with warnings.catch_warnings():
            # authlib, imported by the client, installs an "always" filter for its
            # deprecation warnings when imported: import it first, then silence them.
            with contextlib.suppress(ImportError):
                importlib.import_module("authlib.deprecate")
            warnings.simplefilter("ignore", DeprecationWarning)
            import weaviate
        from weaviate.classes.init import AdditionalConfig, Timeout

        c = self.config
        return weaviate.connect_to_local(
            host=c.host,
            port=c.port,
            grpc_port=c.grpc_port,
            skip_init_checks=True,
            additional_config=AdditionalConfig(
                timeout=Timeout(init=min(c.timeout_s, 5.0), query=c.timeout_s, insert=c.timeout_s)
            ),
        )

    def _call(self, what: str, fn: Callable[[Any], T], *, collection: bool = True) -> T:
        """Run ``fn(collection)`` behind the circuit breaker; translate failures.

        With ``collection=False``, ``fn`` gets the client instead (to drop a
        collection that must not be checked first)."""
        from weaviate.exceptions import WeaviateBaseError

        now = time.monotonic()
        if self._down_since is not None and now - self._down_since < self.config.down_retry_s:
            raise IndexUnavailable(f"Weaviate is down (since {now - self._down_since:.1f}s)")
        client: Any = None
        try:
            with self._lock:
                if self._client is None:
                    self._client = self._connect()
                client = self._client
            idle = now - self._last_ok > self.config.probe_after_idle_s
            if (self._down_since is not None or idle) and not client.is_ready():
                client = None  # known to be down: no second probe
                raise IndexUnavailable("Weaviate is not ready")
            result = fn(self._collection(client) if collection else client)
        except IndexUnavailable:
            self._trip(client)
            raise
        except (WeaviateBaseError, OSError) as exc:
            self._trip(client)
            raise IndexUnavailable(f"Weaviate {what} failed: {type(exc).__name__}") from exc
        self._down_since = None
        self._last_ok = time.monotonic()
        return result

    def _trip(self, client: Any) -> None:
        """Open the breaker after a failure unless the server still passes its readiness
        probe: a batch it refuses (a vector of another length, a node gone read-only on a
        full disk) is for the outbox to retry and must not send searches to the ledger."""
        with contextlib.suppress(Exception):
            if client is not None and client.is_ready():
                return
        self._down_since = time.monotonic()

    def _collection(self, client: Any) -> Any:
        if not self._ready_collection:
            name = self.config.collection
            if not client.collections.exists(name):
                self._create(client)
            else:
                existing = client.collections.use(name).config.get()
                if existing.description != TENANT_NAMING:
                    raise IndexUnavailable(
                        f"collection {name} names tenants the unkeyed way of earlier releases; "
                        "run `dualtrack reindex` to rebuild it (searches use the ledger meanwhile)"
                    )
                if existing.replication_config.factor != self.config.replication_factor:
                    _log.warning(
                        "collection %s keeps replication factor %d (configured: %d); "
                        "`dualtrack reindex` recreates it with the configured one",
                        name,
                        existing.replication_config.factor,
                        self.config.replication_factor,
                    )
            self._ready_collection = True
        handle = self._handle
        if handle is None or handle[0] is not client:
            from weaviate.classes.config import ConsistencyLevel

            # Every read and write goes through this handle (with_tenant keeps the level);
            # it is built once per client, not per call.
            handle = (
                client,
                client.collections.use(self.config.collection).with_consistency_level(
                    ConsistencyLevel(self.config.consistency_level)
                ),
            )
            self._handle = handle
        return handle[1]

    def _create(self, client: Any) -> None:
        from weaviate.classes.config import Configure
        from weaviate.exceptions import UnexpectedStatusCodeError

        c = self.config
        options: dict[str, Any] = {}
        if c.native_ttl:
            options["object_ttl_config"] = Configure.ObjectTTL.delete_by_date_property(
                "expires_at", filter_expired_objects=True
            )
        try:
            self._create_with(client, options)
        except UnexpectedStatusCodeError as exc:
            if not options:
                raise
            _log.warning(
                "Weaviate refused the native object TTL (%s); expiry stays with the ledger "
                "filter. Start the server with OBJECTS_TTL_DELETE_SCHEDULE to enable it.",
                exc.message[:200],
            )
            self._create_with(client, {})

    def _create_with(self, client: Any, options: dict[str, Any]) -> None:
        from weaviate.classes.config import (
            Configure,
            DataType,
            Property,
            ReplicationDeletionStrategy,
            StopwordsPreset,
            Tokenization,
        )

        # Every indexed property costs each tenant its own LSM buckets and files; with one
        # tenant per user the open-file limit is reached at ~600 active users when every
        # property is filterable, searchable and null-indexed. So each property gets only
        # the index its queries use, absent values are sentinels instead of null-state
        # buckets, and only the configured keyword property is stored searchable.
        def filterable(name: str, data_type: Any = DataType.TEXT) -> Any:
            textual = data_type in (DataType.TEXT, DataType.TEXT_ARRAY)
            tokenization = Tokenization.FIELD if textual else None
            return Property(
                name=name,
                data_type=data_type,
                tokenization=tokenization,
                index_filterable=True,
                index_searchable=False,
            )

        def stored(name: str) -> Any:
            return Property(
                name=name, data_type=DataType.TEXT, index_filterable=False, index_searchable=False
            )

        c = self.config
        tokenization = (
            Tokenization.WHITESPACE if c.keyword_property == "index_text" else Tokenization.GSE_CH
        )
        client.collections.create(
            c.collection,
            description=TENANT_NAMING,
            vector_config=Configure.Vectors.self_provided(),
            multi_tenancy_config=Configure.multi_tenancy(
                enabled=True, auto_tenant_creation=True, auto_tenant_activation=True
            ),
            # Above one copy Weaviate (>= 1.38) runs async replication, which repairs a node
            # that missed writes while down; a delete wins over a stale copy (an erased
            # memory must not come back).
            replication_config=Configure.replication(
                factor=c.replication_factor,
                deletion_strategy=ReplicationDeletionStrategy.DELETE_ON_CONFLICT,
            ),
            inverted_index_config=Configure.inverted_index(
                bm25_k1=c.bm25_k1, bm25_b=c.bm25_b, stopwords_preset=StopwordsPreset.NONE
            ),
            properties=[
                stored("fragment_id"),
                stored("text"),
                filterable("user_id"),
                filterable("session_id"),
                filterable("sandbox_id"),
                filterable("agent_id"),
                filterable("intent"),
                filterable("entities", DataType.TEXT_ARRAY),
                filterable("occurred_at", DataType.DATE),
                filterable("expires_at", DataType.DATE),
                filterable("private", DataType.BOOL),
                Property(
                    name=c.keyword_property,
                    data_type=DataType.TEXT,
                    tokenization=tokenization,
                    index_filterable=False,
                    index_searchable=True,
                ),
            ],
            **options,
        )

    def ping(self) -> None:
        """Raise :class:`IndexUnavailable` unless the server answers and the collection exists."""
        self._last_ok = 0.0  # force the readiness probe
        self._call("ping", lambda collection: None)

    def _scoped(self, collection: Any, tenant: str) -> Any:
        """``collection.with_tenant(tenant)``, kept for the last :data:`TENANT_HANDLES`
        tenants of this collection handle."""
        with self._tenants_lock:
            if self._tenants is None or self._tenants[0] is not collection:
                self._tenants = (collection, OrderedDict())
            handles = self._tenants[1]
            scoped = handles.get(tenant)
            if scoped is None:
                scoped = handles[tenant] = collection.with_tenant(tenant)
                if len(handles) > TENANT_HANDLES:
                    handles.popitem(last=False)
            else:
                handles.move_to_end(tenant)
            return scoped

    def setup(self, model: str, dimensions: int) -> None:
        """Create the collection if it is missing (the vectors' model is not recorded here)."""
        self._call("setup", lambda collection: None)

    def reset(self) -> None:
        """Drop the whole collection (``dualtrack reindex`` rebuilds it from the ledger)."""

        def drop(client: Any) -> None:
            client.collections.delete(self.config.collection)
            self._ready_collection = False
            self._handle = None

        self._call("reset", drop, collection=False)

    def close(self) -> None:
        """Close the client's connections."""
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    # -- FragmentIndex ---------------------------------------------------------------------

    def apply(self, ops: Sequence[IndexOp]) -> None:
        """Upsert (batch, overwrite), delete and drop tenants, grouped by tenant, in order."""
        if ops:
            self._call("apply", lambda collection: self._apply(collection, ops))

    def _apply(self, collection: Any, ops: Sequence[IndexOp]) -> None:
        from weaviate.classes.data import DataObject
        from weaviate.classes.query import Filter

        for group in _runs(ops):
            first = group[0]
            if isinstance(first, DropUser):
                collection.tenants.remove([self.tenant(first.scope.user_id)])
                continue
            by_tenant: dict[str, list[IndexOp]] = defaultdict(list)
            for op in group:
                by_tenant[self.tenant(op.scope.user_id)].append(op)
            for tenant, tenant_ops in by_tenant.items():
                scoped = self._scoped(collection, tenant)
                if isinstance(first, Upsert):
                    objects = [
                        DataObject(
                            properties=_properties(op.fragment, self.config.keyword_property),
                            uuid=object_uuid(op.fragment.id),
                            vector=list(op.fragment.vector),
                        )
                        for op in tenant_ops
                        if isinstance(op, Upsert)
                    ]
                    result = scoped.data.insert_many(objects)
                    if result.errors:
                        sample = next(iter(result.errors.values()))
                        raise IndexUnavailable(
                            f"Weaviate refused {len(result.errors)} objects: {sample.message}"
                        )
                else:
                    ids = [
                        object_uuid(op.fragment_id) for op in tenant_ops if isinstance(op, Delete)
                    ]
                    if self._tenant_exists(collection, tenant):
                        scoped.data.delete_many(where=Filter.by_id().contains_any(ids))

    @staticmethod
    def _tenant_exists(collection: Any, tenant: str) -> bool:
        return bool(collection.tenants.exists(tenant))

    def search(self, scope: UserScope, query: SearchQuery) -> list[IndexHit]:
        """Hybrid (or BM25 for ``alpha == 0``) search inside the user's tenant."""
        return self._call("search", lambda collection: self._search(collection, scope, query))

    def _search(self, collection: Any, scope: UserScope, query: SearchQuery) -> list[IndexHit]:
        """A user without a tenant has no memories: Weaviate's "tenant not found" means []
        (cheaper than asking whether the tenant exists before every search)."""
        from weaviate.exceptions import WeaviateQueryError

        try:
            return self._query(collection, self.tenant(scope.user_id), scope, query)
        except WeaviateQueryError as exc:
            if "tenant not found" in str(exc):
                return []
            raise

    def _query(
        self, collection: Any, tenant: str, scope: UserScope, query: SearchQuery
    ) -> list[IndexHit]:
        from weaviate.classes.query import HybridFusion, MetadataQuery

        keyword_prop = self.config.keyword_property
        keyword_query = _weighted_keywords(query) if keyword_prop == "index_text" else query.text
        if query.filters.candidate_ids is not None and not query.filters.candidate_ids:
            return []
        scoped = self._scoped(collection, tenant)
        filters = _filters(scope, query)
        metadata = MetadataQuery(score=True)
        if query.config.alpha == 0:
            if not keyword_query.strip():
                return []
            response = scoped.query.bm25(
                query=keyword_query,
                query_properties=[keyword_prop],
                limit=query.limit,
                filters=filters,
                return_metadata=metadata,
                return_properties=["fragment_id"],
            )
        else:
            fusion = (
                HybridFusion.RELATIVE_SCORE
                if query.config.fusion is Fusion.RELATIVE_SCORE
                else HybridFusion.RANKED
            )
            response = scoped.query.hybrid(
                query=keyword_query or None,
                vector=list(query.vector),
                alpha=query.config.alpha,
                fusion_type=fusion,
                query_properties=[keyword_prop],
                limit=query.limit,
                filters=filters,
                return_metadata=metadata,
                return_properties=["fragment_id"],
            )
        return [
            IndexHit(uuid.UUID(o.properties["fragment_id"]), float(o.metadata.score or 0.0))
            for o in response.objects
        ]

    # -- hot and cold users ------------------------------------------------------------------

    def set_cold(self, user_ids: Iterable[str]) -> int:
        """Set the tenants of ``user_ids`` INACTIVE; returns how many existed."""
        names = [self.tenant(u) for u in user_ids]
        if not names:
            return 0

        def deactivate(collection: Any) -> int:
            from weaviate.classes.tenants import Tenant, TenantActivityStatus

            existing = collection.tenants.get_by_names(names)
            if existing:
                collection.tenants.update(
                    [
                        Tenant(name=n, activity_status=TenantActivityStatus.INACTIVE)
                        for n in existing
                    ]
                )
            return len(existing)

        return self._call("set_cold", deactivate)

    def tenant_status(self, user_id: str) -> str | None:
        """The activity status of the user's tenant (``ACTIVE``, ``INACTIVE``) or ``None``."""

        def status(collection: Any) -> str | None:
            found = collection.tenants.get_by_names([self.tenant(user_id)])
            tenant = found.get(self.tenant(user_id))
            return None if tenant is None else str(tenant.activity_status.value)

        return self._call("tenant_status", status)

    def tenant_activity(self) -> dict[str, int]:
        """How many tenants are in each activity status (Weaviate's tenant listing)."""

        def by_status(collection: Any) -> dict[str, int]:
            counts: dict[str, int] = {}
            for tenant in collection.tenants.get().values():
                status = str(tenant.activity_status.value)
                counts[status] = counts.get(status, 0) + 1
            return counts

        return self._call("tenant_activity", by_status)

    def count(self, user_id: str) -> int:
        """How many objects the user's tenant holds (expired-but-unswept ones included)."""

        def total(collection: Any) -> int:
            tenant = self.tenant(user_id)
            if not self._tenant_exists(collection, tenant):
                return 0
            agg = self._scoped(collection, tenant).aggregate.over_all(total_count=True)
            return int(agg.total_count or 0)

        return self._call("count", total)

    def fragment_ids(self, user_id: str) -> set[uuid.UUID]:
        """Every fragment id the user's tenant holds (for drills and audits)."""

        def ids(collection: Any) -> set[uuid.UUID]:
            tenant = self.tenant(user_id)
            if not self._tenant_exists(collection, tenant):
                return set()
            scoped = self._scoped(collection, tenant)
            return {
                uuid.UUID(o.properties["fragment_id"])
                for o in scoped.iterator(return_properties=["fragment_id"])
            }

        return self._call("fragment_ids", ids)


def _runs(ops: Sequence[IndexOp]) -> list[list[IndexOp]]:
    """Consecutive operations of the same kind, order preserved (a drop stands alone)."""
    runs: list[list[IndexOp]] = []
    for op in ops:
        if runs and type(runs[-1][0]) is type(op) and not isinstance(op, DropUser):
            runs[-1].append(op)
        else:
            runs.append([op])
    return runs


def _filters(scope: UserScope, query: SearchQuery) -> Any:
    """The scope's visibility (user inside the tenant as defence in depth, agent-private,
    sandbox; see ``policies.scope``), live status, then the query's filters."""
    from weaviate.classes.query import Filter

    f = query.filters
    visible = Filter.by_property("private").equal(False)
    if scope.agent_id is not None:
        visible = visible | Filter.by_property("agent_id").equal(scope.agent_id)
    parts = [
        Filter.by_property("user_id").equal(scope.user_id),
        Filter.by_property("expires_at").greater_than(query.now),
        visible,
    ]
    if scope.sandbox_id is None:
        parts.append(Filter.by_property("sandbox_id").equal(ABSENT))
    else:
        parts.append(Filter.by_property("sandbox_id").contains_any([ABSENT, str(scope.sandbox_id)]))
    if f.intents is not None:
        parts.append(Filter.by_property("intent").contains_any(sorted(f.intents) or [""]))
    if f.occurred_after is not None:
        parts.append(Filter.by_property("occurred_at").greater_or_equal(f.occurred_after))
    if f.occurred_before is not None:
        parts.append(Filter.by_property("occurred_at").less_than(f.occurred_before))
    if f.session_id is not None:
        parts.append(Filter.by_property("session_id").equal(f.session_id))
    if f.candidate_ids is not None:
        parts.append(Filter.by_id().contains_any([object_uuid(i) for i in f.candidate_ids]))
    return Filter.all_of(parts)


WEAVIATE_TERM_REPEATS = 3
"""A term of weight 1 is given this many times in Weaviate's BM25 query (which scores a
term given n times n times over), a lighter one proportionally fewer, at least once."""


def _weighted_keywords(query: SearchQuery) -> str:
    """The query's keyword terms for BM25 over ``index_text``: each distinct term repeated
    by its weight (:data:`WEAVIATE_TERM_REPEATS` for weight 1); unweighted, each once."""
    terms = query.keyword_terms(len(query.tokens))
    if not query.weights:
        return " ".join(t for t, _ in terms)
    return " ".join(" ".join([t] * max(1, round(WEAVIATE_TERM_REPEATS * w))) for t, w in terms)
