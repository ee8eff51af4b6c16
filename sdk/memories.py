"""The unstructured-track part of the facade: write, bulk write and hybrid search.

A write masks PII (originals go to the encrypted vault in the same
transaction), tags entities and intent, embeds the masked text and stores one
ledger row; the search index is derived from that row. A search pre-filters
in the index under the user scope, then hydrates the hits from the ledger,
dropping anything expired and renewing IMPLICIT fragments it returns.
"""

from __future__ import annotations

import json
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from policies.errors import IndexUnavailable, InvalidField, InvalidInput
from policies.lifecycle import LifecyclePolicy, require_policy
from policies.scope import UserScope
from policies.ttl import MemoryKind, TTLConfig, expires_at
from policies.validation import check_aware, check_field_length, check_text
from sdk.indexing import DerivedIndex
from structured_memory.database import Database
from structured_memory.embedding_space import claim_embedding_space
from structured_memory.pii.vault import PiiVault
from structured_memory.repositories.fragments import FragmentLedger, FragmentRecord, NewFragment
from unstructured_memory.contextual import combine_tokens, combine_vectors, context_text
from unstructured_memory.embedders.base import Embedder
from unstructured_memory.errors import EmbeddingDimensionMismatch
from unstructured_memory.index.base import FragmentIndex, IndexHit, SearchFilters, SearchQuery
from unstructured_memory.search.presets import PRESETS, SearchConfig
from unstructured_memory.summariser import (
    Entity,
    SessionSummary,
    Turn,
    analyse_text,
    summarise,
)
from unstructured_memory.tokenize import tokens

__all__ = [
    "MAX_QUERY_BYTES",
    "Memories",
    "MemoryHit",
    "MemoryInput",
    "SearchResults",
    "SessionRecord",
]

MAX_QUERY_BYTES = 4096
"""Largest search query accepted, in UTF-8 bytes."""

MAX_METADATA_BYTES = 16 * 1024
MAX_LIMIT = 100


class MemoryInput(BaseModel):
    """One memory for :meth:`Memories.write_many`; ``lifecycle_policy`` is required."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    user_id: str
    text: str
    lifecycle_policy: LifecyclePolicy
    session_id: str | None = None
    occurred_at: datetime | None = None
    metadata: dict[str, Any] | None = None
    kind: MemoryKind = MemoryKind.NOTE
    private: bool = False


@dataclass(frozen=True)
class MemoryHit:
    """A search result: the masked text and what the track knows about it."""

    memory_id: uuid.UUID
    text: str
    score: float
    intent: str
    entities: list[dict[str, Any]]
    occurred_at: datetime
    metadata: dict[str, Any]
    policy: str
    kind: str
    session_id: str | None
    keyword_score: float | None
    vector_score: float | None


@dataclass(frozen=True)
class SessionRecord:
    """What ``end_session`` stored: the record's id and the summary it came from."""

    memory_id: uuid.UUID
    summary: SessionSummary


class SearchResults(list[MemoryHit]):
    """Hits, best first; ``degraded`` is true when a fallback index answered."""

    degraded: bool = False


@dataclass
class _EmbeddingGuard:
    """Checks once per client that the embedder matches the stored vectors."""

    checked: bool = False
    problem: Exception | None = field(default=None)


def _entity_dicts(entities: Iterable[Entity]) -> list[dict[str, Any]]:
    """Entities as the ledger stores them (PII entities carry masked text)."""
    return [{"type": e.type, "text": e.text, "start": e.start, "end": e.end} for e in entities]


def _check_metadata(metadata: dict[str, Any] | None) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict) or not all(isinstance(k, str) for k in metadata):
        raise InvalidField("metadata must be a JSON object with string keys", field="metadata")
    try:
        encoded = json.dumps(metadata, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise InvalidField(f"metadata is not JSON: {exc}", field="metadata") from None
    check_text(encoded, field="metadata", max_bytes=MAX_METADATA_BYTES)
    return metadata


class Memories:
    """Writes and searches unstructured memories for the client's agent."""

    def __init__(
        self,
        *,
        db: Database,
        ledger: FragmentLedger,
        vault: PiiVault,
        index: FragmentIndex,
        embedder: Embedder,
        ttl: TTLConfig,
        preset: str,
        scope_for: Callable[[str], UserScope],
        derived: DerivedIndex | None = None,
        prefilter_limit: int = 0,
        context_turns: int = 2,
    ) -> None:
        self._db = db
        self._ledger = ledger
        self._vault = vault
        self._index = index
        self._embedder = embedder
        self._ttl = ttl
        self._preset = preset
        self._scope = scope_for
        self._guard = _EmbeddingGuard()
        self._derived = derived
        self._prefilter_limit = prefilter_limit
        self._context_turns = context_turns

    def _check_embedding_space(self) -> None:
        if not self._guard.checked:
            model, dims = claim_embedding_space(
                self._db, self._embedder.name, self._embedder.dimensions
            )
            if (model, dims) != (self._embedder.name, self._embedder.dimensions):
                self._guard.problem = EmbeddingDimensionMismatch(
                    stored=dims, configured=self._embedder.dimensions, embedder=self._embedder.name
                )
                self._guard.problem.details["stored_model"] = model
            self._guard.checked = True
            # a derived index creates its collection on first contact: an outage
            # at start must not block writes, which go to the ledger and the outbox
            setup = None if self._index.derived else getattr(self._index, "setup", None)
            if setup is not None and self._guard.problem is None:
                setup(self._embedder.name, self._embedder.dimensions)
        if self._guard.problem is not None:
            raise self._guard.problem

    def _prepare(self, item: MemoryInput, now: datetime) -> tuple[NewFragment, list[Any]]:
        scope = self._scope(item.user_id)
        policy = require_policy(item.lifecycle_policy)
        if item.private and scope.agent_id is None:
            raise InvalidField("a private memory needs a client with an agent_id", field="private")
        text = check_text(item.text)
        session = (
            None
            if item.session_id is None
            else check_field_length("session_id", item.session_id, 128)
        )
        occurred = check_aware(item.occurred_at, "occurred_at") or now
        metadata = dict(_check_metadata(item.metadata))
        analysis = analyse_text(text)
        words = tokens(analysis.masked_text)
        fragment = NewFragment(
            user_id=scope.user_id,
            agent_id=scope.agent_id,
            private=item.private,
            session_id=session,
            kind=item.kind.value,
            policy=policy,
            text=analysis.masked_text,
            index_text=" ".join(words),
            token_count=len(words),
            intent=analysis.intent.value,
            occurred_at=occurred,
            expires_at=None,
            embedding=(),
            embedding_model=self._embedder.name,
            entities=_entity_dicts(analysis.entities),
            metadata=metadata,
        )
        return fragment, list(analysis.pii)

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
        """Store one memory and return its id; see :meth:`write_many` for the rules."""
        item = MemoryInput(
            user_id=self._scope(user_id).user_id,
            text=check_text(text),
            lifecycle_policy=require_policy(lifecycle_policy),
            session_id=session_id,
            occurred_at=occurred_at,
            metadata=metadata,
            kind=kind,
            private=private,
        )
        return self.write_many([item], progress=False)[0]

    def write_many(
        self, items: Iterable[MemoryInput], *, batch_size: int = 256, progress: bool = True
    ) -> list[uuid.UUID]:
        """Store many memories, a transaction per batch, with a progress bar.

        Every item is validated and analysed before its batch is written, so a
        bad item fails its batch whole (earlier batches stay written); the
        error names the item's position. PII found in a text is masked in the
        stored text and kept encrypted in the vault, referenced from the
        fragment's ``metadata["pii"]``.
        """
        self._check_embedding_space()
        pending = list(items)
        ids: list[uuid.UUID] = []
        sessions: dict[tuple[str, str], deque[str]] = {}
        with _ProgressBar(progress, len(pending)) as advance:
            for start in range(0, len(pending), batch_size):
                batch = pending[start : start + batch_size]
                ids += self._write_batch(batch, start, sessions)
                advance(len(batch))
        return ids

    def _write_batch(
        self,
        batch: Sequence[MemoryInput],
        offset: int,
        sessions: dict[tuple[str, str], deque[str]],
    ) -> list[uuid.UUID]:
        now = datetime.now(UTC)
        prepared = []
        for position, item in enumerate(batch, start=offset):
            try:
                prepared.append(self._prepare(item, now))
            except InvalidInput as exc:
                exc.details.setdefault("item", position)
                raise
        contexts = [self._context(fragment, sessions) for fragment, _ in prepared]
        return self._store(prepared, now, contexts)

    def _context(
        self, fragment: NewFragment, sessions: dict[tuple[str, str], deque[str]]
    ) -> str | None:
        """The session context of a fragment (contextual indexing), ``None`` outside sessions.

        Previous turns come from earlier items of the same call, or from the
        ledger for the first item of a session in the call.
        """
        if fragment.session_id is None or self._context_turns == 0:
            return None
        key = (fragment.user_id, fragment.session_id)
        previous = sessions.get(key)
        if previous is None:
            earlier = self._ledger.recent_texts(
                self._scope(fragment.user_id),
                fragment.session_id,
                until=fragment.occurred_at,
                limit=self._context_turns,
            )
            previous = sessions[key] = deque(earlier, maxlen=self._context_turns)
        context = context_text(fragment.occurred_at, list(previous))
        previous.append(fragment.text)
        return context

    def end_session(
        self, user_id: str, session_id: str, transcript: Sequence[Turn]
    ) -> SessionRecord:
        """Summarise a finished session into one interaction record and store it.

        The record is the summariser's one-sentence narrative (rules + NER, no
        LLM), kind ``interaction_record`` (kept 90 days), policy IMPLICIT since
        it is inferred; PII found in the user's turns goes to the vault.
        """
        self._check_embedding_space()
        scope = self._scope(user_id)
        session = check_field_length("session_id", session_id, 128)
        summary = summarise(scope.user_id, session, list(transcript))
        words = tokens(summary.summary_text)
        fragment = NewFragment(
            user_id=scope.user_id,
            agent_id=scope.agent_id,
            session_id=session,
            kind=MemoryKind.INTERACTION_RECORD.value,
            policy=LifecyclePolicy.IMPLICIT,
            text=summary.summary_text,
            index_text=" ".join(words),
            token_count=len(words),
            intent=summary.intent.value,
            occurred_at=summary.occurred_at,
            expires_at=None,
            embedding=(),
            embedding_model=self._embedder.name,
            entities=_entity_dicts(summary.entities),
            metadata={
                "source": "end_session",
                "language": summary.language,
                "intent_confidence": summary.intent_confidence,
                "turns": len(transcript),
            },
        )
        (memory_id,) = self._store([(fragment, list(summary.pii))], datetime.now(UTC), [None])
        return SessionRecord(memory_id=memory_id, summary=summary)

    def _store(
        self,
        prepared: Sequence[tuple[NewFragment, list[Any]]],
        now: datetime,
        contexts: Sequence[str | None],
    ) -> list[uuid.UUID]:
        """Embed (with contexts), vault the PII and insert the fragments in one transaction."""
        with_context = [c for c in contexts if c is not None]
        embedded = self._embedder.embed_documents([f.text for f, _ in prepared] + with_context)
        context_vectors = iter(embedded[len(prepared) :])
        frequent = self._frequent_users({f.user_id for f, _ in prepared}, now)
        fragments = []
        with self._db.transaction() as conn:
            self._ledger.ensure_profiles({f.user_id for f, _ in prepared}, join=conn)
            for (fragment, pii), own_vector, context in zip(
                prepared, embedded[: len(prepared)], contexts, strict=True
            ):
                scope = self._scope(fragment.user_id)
                refs = [self._vault.store(scope, m.kind.value, m.value, join=conn) for m in pii]
                metadata = fragment.metadata
                if refs:
                    vaulted = [{"vault_id": str(r.id), "kind": r.kind} for r in refs]
                    metadata = {**metadata, "pii": vaulted}
                words, vector = fragment.index_text.split(), own_vector
                if context is not None:
                    vector = combine_vectors(own_vector, next(context_vectors))
                    words = combine_tokens(words, tokens(context))
                ttl_end = expires_at(
                    fragment.policy,
                    now,
                    kind=MemoryKind(fragment.kind),
                    frequent_user=fragment.user_id in frequent,
                    config=self._ttl,
                )
                fragments.append(
                    replace(
                        fragment,
                        embedding=vector,
                        index_text=" ".join(words),
                        token_count=len(words),
                        expires_at=ttl_end,
                        metadata=metadata,
                    )
                )
            ids = self._ledger.insert(fragments, join=conn)
            if self._derived is not None:
                self._derived.outbox.enqueue(
                    [("upsert", f.user_id, f.id) for f in fragments], join=conn
                )
        if self._derived is not None:
            self._derived.worker.wake()
        return ids

    def _frequent_users(self, users: set[str], now: datetime) -> set[str]:
        since = now - timedelta(days=30)
        threshold = self._ttl.frequent_user_sessions
        return {
            u
            for u in users
            if self._ledger.count_sessions_since(self._scope(u), since) >= threshold
        }

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

        ``alpha`` (0 keyword only … 1 vector only) overrides the preset's.
        Raises :class:`InvalidText` for an empty or oversized query and
        :class:`InvalidField` for a bad limit, alpha, preset or filter.
        """
        scope = self._scope(user_id)
        text = check_text(query, field="query", max_bytes=MAX_QUERY_BYTES)
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidField(f"limit must be in 1..{MAX_LIMIT}", field="limit")
        config = self._config(preset, alpha)
        self._check_embedding_space()
        words = tuple(tokens(text))
        vector: list[float] = []
        if config.alpha > 0:
            vector = self._embedder.embed_query(text)
            if not any(vector):
                config = config.model_copy(update={"alpha": 0.0})
        if not words and config.alpha == 0:
            return SearchResults()
        now = datetime.now(UTC)
        filters = SearchFilters(
            intents=None if intents is None else frozenset(intents),
            occurred_after=occurred_after,
            occurred_before=occurred_before,
            session_id=session_id,
            agent_id=scope.agent_id,
        )
        search = SearchQuery(
            text=text,
            tokens=words,
            vector=vector,
            embedding_model=self._embedder.name,
            config=config,
            limit=limit,
            now=now,
            filters=filters,
        )
        results = SearchResults()
        hits = self._search_index(scope, search, results)
        records = self._ledger.hydrate(
            scope,
            [h.fragment_id for h in hits],
            now=now,
            implicit_ttl=timedelta(days=self._ttl.implicit_days),
        )
        for hit in hits:
            rec = records.get(hit.fragment_id)
            if rec is not None:
                results.append(
                    MemoryHit(
                        memory_id=rec.id,
                        text=rec.text,
                        score=hit.score,
                        intent=rec.intent,
                        entities=rec.entities,
                        occurred_at=rec.occurred_at,
                        metadata=rec.metadata,
                        policy=rec.policy,
                        kind=rec.kind,
                        session_id=rec.session_id,
                        keyword_score=hit.keyword_score,
                        vector_score=hit.vector_score,
                    )
                )
        return results

    def _search_index(
        self, scope: UserScope, query: SearchQuery, results: SearchResults
    ) -> list[IndexHit]:
        """Search the configured index; a derived one is pre-filtered by the ledger when
        filters are set, and replaced by the ledger's own search while unreachable."""
        if self._derived is None:
            return self._index.search(scope, query)
        f = query.filters
        filtered = f.intents is not None or f.occurred_after or f.occurred_before or f.session_id
        if filtered and self._prefilter_limit > 0:
            candidates = self._ledger.candidate_ids(
                scope,
                now=query.now,
                intents=f.intents,
                occurred_after=f.occurred_after,
                occurred_before=f.occurred_before,
                session_id=f.session_id,
                limit=self._prefilter_limit + 1,
            )
            if len(candidates) <= self._prefilter_limit:
                query = replace(query, filters=replace(f, candidate_ids=frozenset(candidates)))
        try:
            return self._index.search(scope, query)
        except IndexUnavailable:
            results.degraded = True
            return self._derived.fallback.search(scope, query)

    def get(self, user_id: str, memory_id: uuid.UUID) -> FragmentRecord | None:
        """One live memory of the user, or ``None`` (reading it does not renew its TTL)."""
        return self._ledger.get(self._scope(user_id), memory_id, now=datetime.now(UTC))

    def list(self, user_id: str, *, limit: int = 100, offset: int = 0) -> list[FragmentRecord]:
        """The user's live memories, newest first."""
        if not 1 <= limit <= 1000:
            raise InvalidField("limit must be in 1..1000", field="limit")
        return self._ledger.list(
            self._scope(user_id), now=datetime.now(UTC), limit=limit, offset=offset
        )

    def delete(self, user_id: str, memory_id: uuid.UUID) -> bool:
        """Delete one memory (and, through the outbox, its index copy)."""
        scope = self._scope(user_id)
        with self._db.transaction() as conn:
            existed = self._ledger.delete(scope, memory_id, join=conn)
            if existed and self._derived is not None:
                self._derived.outbox.enqueue([("delete", scope.user_id, memory_id)], join=conn)
        if existed and self._derived is not None:
            self._derived.worker.wake()
        return existed

    def _config(self, preset: str | None, alpha: float | None) -> SearchConfig:
        name = preset or self._preset
        config = PRESETS.get(name)
        if config is None:
            known = ", ".join(sorted(PRESETS))
            raise InvalidField(f"unknown search preset {name!r}; known: {known}", field="preset")
        if alpha is not None:
            if not 0.0 <= alpha <= 1.0:
                raise InvalidField("alpha must lie in [0, 1]", field="alpha")
            config = config.model_copy(update={"alpha": alpha})
        return config


class _ProgressBar:
    """A Rich progress bar when asked for, else a no-op advance callable."""

    def __init__(self, enabled: bool, total: int) -> None:
        self._bar = (
            Progress(
                TextColumn("writing memories"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
            )
            if enabled and total > 0
            else None
        )
        self._total = total

    def __enter__(self) -> Callable[[int], None]:
        if self._bar is None:
            return lambda n: None
        self._bar.__enter__()
        task = self._bar.add_task("write", total=self._total)
        bar = self._bar
        return lambda n: bar.advance(task, n)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
