"""The ``FragmentIndex`` protocol: the search side of the unstructured track.

An index is derived from the fragment ledger in PostgreSQL and can be rebuilt
from it at any time. Its surface is two methods: ``apply`` takes typed
operation records (what the outbox delivers), ``search`` takes a typed query
and the user scope it is confined to. Expiry is decided by the ledger: a hit
for an expired fragment is dropped when results are hydrated, so an index may
lag behind expiry without ever returning an expired memory.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from sqlalchemy import Connection

from policies.scope import UserScope
from unstructured_memory.search.presets import SearchConfig

__all__ = [
    "ColdTenants",
    "Connect",
    "Delete",
    "DropUser",
    "FragmentIndex",
    "IndexHit",
    "IndexOp",
    "IndexedFragment",
    "LargeScopes",
    "LedgerVisibility",
    "Resettable",
    "SearchFilters",
    "SearchQuery",
    "TenantListing",
    "Upsert",
]

Connect = Callable[[], AbstractContextManager[Connection]]
"""Opens a connection to the ledger's database (what a backend reading PostgreSQL gets):
``Database.reading``, in autocommit mode, since an index only reads the ledger."""

LedgerVisibility = Callable[[UserScope, datetime], tuple[str, dict[str, Any]]]
"""What a scope may see of the ledger at ``now``, as a SQL condition over
``memory_fragment`` (columns qualified by the table's name) and its bind parameters.
The runtime hands a backend reading PostgreSQL the structured track's rendering
(``structured_memory.repositories.fragments.visible_in_ledger``), so the visibility
rule has one SQL rendering and this track imports none of the other's."""


@dataclass(frozen=True, slots=True)
class IndexedFragment:
    """What an index stores of one ledger row (the text is already PII-masked)."""

    id: uuid.UUID
    user_id: str
    text: str
    index_text: str
    vector: Sequence[float]
    embedding_model: str
    intent: str
    occurred_at: datetime
    expires_at: datetime | None
    session_id: str | None = None
    sandbox_id: uuid.UUID | None = None
    agent_id: str | None = None
    private: bool = False
    entities: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Upsert:
    """Insert or replace one fragment (idempotent by fragment id)."""

    scope: UserScope
    fragment: IndexedFragment


@dataclass(frozen=True, slots=True)
class Delete:
    """Remove one fragment; removing an absent fragment is not an error."""

    scope: UserScope
    fragment_id: uuid.UUID


@dataclass(frozen=True, slots=True)
class DropUser:
    """Remove everything the index holds for a user (erasure)."""

    scope: UserScope


IndexOp = Upsert | Delete | DropUser


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """Restrictions a caller asks for, applied inside the scope's visibility.

    Who may see what (user, agent-private, sandbox, live) comes from the
    :class:`UserScope` and the query's ``now``, never from here.
    ``candidate_ids`` restricts ranking to ids a ledger pre-filter produced.
    """

    intents: frozenset[str] | None = None
    occurred_after: datetime | None = None
    occurred_before: datetime | None = None
    session_id: str | None = None
    candidate_ids: frozenset[uuid.UUID] | None = None


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """A hybrid query: text and its tokens for keywords, a vector for similarity."""

    text: str
    tokens: tuple[str, ...]
    vector: Sequence[float]
    embedding_model: str
    config: SearchConfig
    limit: int
    now: datetime
    filters: SearchFilters = field(default_factory=SearchFilters)
    weights: tuple[float, ...] = ()
    """Each token's weight in the keyword leg, aligned with ``tokens`` (empty: all 1):
    a bigram weighs less than a word, an assistant's turn less than the user's."""

    def keyword_terms(self, cap: int) -> list[tuple[str, float]]:
        """The distinct tokens and their weights (a token given twice keeps its larger
        weight), heaviest first (ties in the given order), at most ``cap``."""
        weights: dict[str, float] = {}
        for i, token in enumerate(self.tokens):
            if token:
                w = self.weights[i] if i < len(self.weights) else 1.0
                if w > weights.get(token, 0.0):
                    weights[token] = w
        order = {t: i for i, t in enumerate(weights)}
        return sorted(weights.items(), key=lambda tw: (-tw[1], order[tw[0]]))[:cap]


@dataclass(frozen=True, slots=True)
class IndexHit:
    """One ranked result: the fused score and, where computed, each leg's raw score."""

    fragment_id: uuid.UUID
    score: float
    keyword_score: float | None = None
    vector_score: float | None = None


class FragmentIndex(Protocol):
    """A search index over fragments, always queried inside one user scope.

    Every backend renders the scope's visibility (``policies.scope``) into its
    own filter: the user, agent-private rows, the sandbox and live status.
    """

    @property
    def name(self) -> str:
        """The backend's registry name (``pgvector``, ``weaviate``)."""
        ...

    @property
    def derived(self) -> bool:
        """Whether the index is a copy fed through the outbox (``False``: it reads
        the ledger itself, so ``apply`` has nothing to copy)."""
        ...

    def setup(self, model: str, dimensions: int) -> None:
        """Create what the index needs for vectors of ``model`` (idempotent).

        Raises :class:`IndexUnavailable` when the backend cannot be reached.
        """
        ...

    def ping(self) -> None:
        """Return when the backend answers; raise :class:`IndexUnavailable` otherwise."""
        ...

    def close(self) -> None:
        """Release the backend's connections (the index may be used again after)."""
        ...

    def apply(self, ops: Sequence[IndexOp]) -> None:
        """Apply upserts and deletes, idempotently and in order.

        Raises :class:`IndexUnavailable` when the backend cannot be reached;
        the caller (the outbox worker) retries later.
        """
        ...

    def search(self, scope: UserScope, query: SearchQuery) -> list[IndexHit]:
        """The best ``query.limit`` hits visible in ``scope``, best first.

        Never returns another user's fragments, another agent's private ones,
        another sandbox's or expired ones. Raises :class:`IndexUnavailable`
        when the backend cannot be reached and :class:`EmbeddingDimensionMismatch`
        when the query vector does not fit the stored vectors.
        """
        ...


@runtime_checkable
class ColdTenants(Protocol):
    """An index that can offload idle users (Weaviate's inactive tenants)."""

    def set_cold(self, user_ids: Iterable[str]) -> int:
        """Offload the users' data; returns how many had any. A later use reloads it."""
        ...


@runtime_checkable
class Resettable(Protocol):
    """An index that can be dropped whole and rebuilt from the ledger."""

    def reset(self) -> None:
        """Drop everything the index holds (``dualtrack reindex`` refills it)."""
        ...


@runtime_checkable
class LargeScopes(Protocol):
    """An index that searches a large user's memories approximately only among the rows
    flagged ``ann`` (the rest exactly): the sweep flags the rows of every user holding
    more than ``ann_threshold`` memories (``cross_user.flag_large_scopes``)."""

    @property
    def ann_threshold(self) -> int:
        """The most memories a user may hold before the sweep flags them."""
        ...


@runtime_checkable
class TenantListing(Protocol):
    """An index with a tenant per user that can count its tenants by activity status."""

    def tenant_activity(self) -> dict[str, int]:
        """How many tenants are in each activity status (``ACTIVE``, ``INACTIVE``,
        ``OFFLOADED``, ...). Raises :class:`IndexUnavailable` when the backend cannot
        be reached."""
        ...
