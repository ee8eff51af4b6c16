"""The search path of the unstructured track, one named stage after another.

    validate → mask → embed → index → fallback → hydrate → refresh → rerank → hits → verify

- **validate**: the user scope, the query text, limit, preset and filters.
- **mask** and **embed**: :func:`build_query` masks PII in the query exactly
  as in a stored memory, so neither the embedder nor the index ever receives
  it in clear, then tokenises and embeds the masked text.
- **index**: the configured index searches inside the scope's visibility, for
  at least ``DEFAULT_RERANK.depth`` (30) candidates; a
  PII value taken out of the query finds the memories that held it through
  the vault's blind index (never the clear value) and ranks them first.
- **fallback**: while a derived index is unreachable, the ledger's own index
  answers and the results say ``degraded``.
- **hydrate**: the hits are read back from the ledger under the same scope
  (an expired or invisible hit is dropped).
- **refresh**: a hit whose index context holds a turn that has expired since
  (contextual indexing lends a turn's words to the next ones) is re-indexed
  without it at once, and the index asked again, so an expired memory is found
  through no neighbour, before any sweep. This is the only write a search may
  make, once per neighbour of an expired turn; a hit still stale then (its
  derived index unreachable) is dropped.
- **rerank**: the index's candidates re-ordered by their session, speaker and
  own text (:mod:`unstructured_memory.search.rerank`); PII hits stay first.
- **hits**: the records shaped for the caller, best first; those returned are
  marked used, which renews them by their own period (written in a batch
  shortly after: ``structured_memory.renewals``).
- **verify** (``verify=True`` only): the business entities the hits name are
  checked against their systems of record (``sdk.verification``).
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from itertools import islice

from policies.errors import IndexUnavailable, InvalidField
from policies.pii import PiiMatch
from policies.scope import UserScope
from policies.validation import (
    MAX_QUERY_BYTES,
    check_bool,
    check_field_length,
    check_session_id,
    check_text,
    check_timestamp,
)
from sdk.tracing import annotate, span
from structured_memory.pii.vault import PiiVault
from structured_memory.repositories.fragments import FragmentLedger, Hydrated
from unstructured_memory.embedders.base import Embedder
from unstructured_memory.index.base import FragmentIndex, IndexHit, SearchFilters, SearchQuery
from unstructured_memory.search.presets import PRESETS, SearchConfig
from unstructured_memory.search.query import BuiltQuery, build_query
from unstructured_memory.search.rerank import (
    DEFAULT_RERANK,
    SPEAKER_KEY,
    Candidate,
    rerank,
)
from values.hits import MemoryHit, SearchResults
from values.records import FragmentRecord

__all__ = ["MAX_LIMIT", "MAX_QUERY_BYTES", "HitVerifier", "SearchPath", "SearchRequest"]

MAX_LIMIT = 100
"""Most hits one search returns."""

MAX_INTENTS = 32

HitVerifier = Callable[[UserScope, SearchResults], SearchResults]
"""Stage *verify*: attaches to each hit the live state of the business entities it names."""

ContextRefresher = Callable[[UserScope, Sequence[uuid.UUID], datetime], frozenset[uuid.UUID]]
"""Stage *refresh* (``WritePath.refresh_contexts``): re-indexes stale hits; the ids the
index may still hold stale."""


@dataclass(frozen=True)
class SearchRequest:
    """What a caller asks for; validated by :meth:`SearchPath.validate`."""

    user_id: str
    query: str
    limit: int = 5
    alpha: float | None = None
    preset: str | None = None
    intents: Iterable[str] | None = None
    occurred_after: datetime | None = None
    occurred_before: datetime | None = None
    session_id: str | None = None
    verify: bool = False


class SearchPath:
    """Runs the stages above for ``MemoryClient.search``."""

    def __init__(
        self,
        *,
        ledger: FragmentLedger,
        vault: PiiVault,
        index: FragmentIndex,
        fallback: FragmentIndex | None,
        embedder: Embedder,
        preset: str,
        scope_for: Callable[[str], UserScope],
        check_embedding_space: Callable[[], None],
        refresh_contexts: ContextRefresher,
        prefilter_limit: int = 0,
    ) -> None:
        self._ledger = ledger
        self._vault = vault
        self._index = index
        self._fallback = fallback
        self._embedder = embedder
        self._preset = preset
        self._scope = scope_for
        self._check_space = check_embedding_space
        self._refresh = refresh_contexts
        self._prefilter_limit = prefilter_limit

    def rescoped(self, scope_for: Callable[[str], UserScope]) -> SearchPath:
        """The same search path, turning user ids into scopes with ``scope_for``
        (another agent's client shares everything else)."""
        clone = copy.copy(self)
        clone._scope = scope_for
        return clone

    def search(
        self, request: SearchRequest, *, verify_hits: HitVerifier | None = None
    ) -> SearchResults:
        """Hybrid search of the scope's visible, live memories, best first; with
        ``request.verify``, their business entities checked by ``verify_hits``."""
        with span("validate"):
            scope, config, filters = self.validate(request)
        if request.verify and verify_hits is None:
            raise InvalidField("this search path cannot verify", field="verify")
        annotate(preset=request.preset or self._preset, limit=request.limit, verify=request.verify)
        self._check_space()
        now = datetime.now(UTC)
        depth = max(request.limit, DEFAULT_RERANK.depth)
        with span("mask and embed"):
            built = self.mask_and_embed(request.query, config, depth, now, filters)
        results = SearchResults()
        if built.empty and not built.pii:
            self._ledger.require_user(scope)
            return results
        with span("index", pii_values=len(built.pii)):
            hits = [] if built.empty else self.index(scope, built.query, results)
            found = self.pii_hits(scope, built.pii, now, request.limit)
        with span("hydrate", candidates=len(found) + len(hits)):
            hydrated = self.hydrate(scope, found + hits, now)
        if hydrated.stale:
            with span("refresh", stale=len(hydrated.stale)):
                hits, hydrated = self.refresh(
                    scope, built, hydrated, found=found, now=now, results=results
                )
        records = hydrated.records
        with span("rerank"):
            hits = found + self.rerank(built.query, hits, records)
        with span("hits"):
            results = self.hits(hits, records, results, request.limit)
            self._ledger.used(scope, (records[hit.memory_id] for hit in results), now=now)
        annotate(hits=len(results), degraded=results.degraded)
        if not results:
            self._ledger.require_user(scope)  # nothing found: an unknown user is an error
        if request.verify and verify_hits is not None:
            with span("verify"):
                return verify_hits(scope, results)
        return results

    # -- stages ----------------------------------------------------------------------------

    def validate(self, r: SearchRequest) -> tuple[UserScope, SearchConfig, SearchFilters]:
        """Stage *validate*: scope, query, limit, preset and alpha, filters."""
        scope = self._scope(r.user_id)
        check_text(r.query, field="query", max_bytes=MAX_QUERY_BYTES)
        if not isinstance(r.limit, int) or not 1 <= r.limit <= MAX_LIMIT:
            raise InvalidField(f"limit must be an integer in 1..{MAX_LIMIT}", field="limit")
        intents = None
        if r.intents is not None:
            given = (
                list(islice(r.intents, MAX_INTENTS + 1))
                if isinstance(r.intents, Iterable) and not isinstance(r.intents, str | bytes)
                else None
            )
            if given is None or not all(isinstance(i, str) for i in given):
                raise InvalidField("intents must be a list of strings", field="intents")
            intents = frozenset(check_field_length("intents", i, 32) for i in given)
            if len(intents) > MAX_INTENTS:
                raise InvalidField(f"at most {MAX_INTENTS} intents", field="intents")
        if r.session_id is not None:
            check_session_id(r.session_id)
        check_bool(r.verify, "verify")
        filters = SearchFilters(
            intents=intents,
            occurred_after=check_timestamp(r.occurred_after, "occurred_after"),
            occurred_before=check_timestamp(r.occurred_before, "occurred_before"),
            session_id=r.session_id,
        )
        return scope, self._config(r.preset, r.alpha), filters

    def mask_and_embed(
        self, text: str, config: SearchConfig, limit: int, now: datetime, filters: SearchFilters
    ) -> BuiltQuery:
        """Stages *mask* and *embed*: see :func:`build_query`."""
        return build_query(
            text, embedder=self._embedder, config=config, limit=limit, now=now, filters=filters
        )

    def index(self, scope: UserScope, query: SearchQuery, results: SearchResults) -> list[IndexHit]:
        """Stages *index* and *fallback*: the configured index, or its ledger fallback."""
        f = query.filters
        filtered = f.intents is not None or f.occurred_after or f.occurred_before or f.session_id
        if filtered and self._prefilter_limit > 0 and self._fallback is not None:
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
            if self._fallback is None:
                raise
            results.degraded = True
            return self._fallback.search(scope, query)

    def pii_hits(
        self, scope: UserScope, pii: Iterable[PiiMatch], now: datetime, limit: int
    ) -> list[IndexHit]:
        """The memories that held a PII value of the query in any spelling, found by its
        blind index."""
        vault_ids: list[uuid.UUID] = []
        for match in pii:
            vault_ids += [r.id for r in self._vault.find_all(scope, match.kind.value, match.value)]
        ids = self._ledger.referencing_vault(scope, vault_ids, now=now, limit=limit)
        return [IndexHit(i, 1.0) for i in ids]

    def hydrate(self, scope: UserScope, hits: list[IndexHit], now: datetime) -> Hydrated:
        """Stage *hydrate*: the visible, live records of the hits, and the stale ones."""
        return self._ledger.hydrate(
            scope, list(dict.fromkeys(h.fragment_id for h in hits)), now=now
        )

    def refresh(
        self,
        scope: UserScope,
        built: BuiltQuery,
        hydrated: Hydrated,
        *,
        found: list[IndexHit],
        now: datetime,
        results: SearchResults,
    ) -> tuple[list[IndexHit], Hydrated]:
        """Stage *refresh*: re-index the stale hits, then the index's hits and their records
        again, those still stale left out (also those a derived index could not take,
        unless the ledger answered for it)."""
        unsure = self._refresh(scope, sorted(hydrated.stale), now)
        hits = [] if built.empty else self.index(scope, built.query, results)
        again = self.hydrate(scope, found + hits, now)
        dropped = again.stale if results.degraded else again.stale | unsure
        kept = {i: r for i, r in again.records.items() if i not in dropped}
        return [h for h in hits if h.fragment_id in kept], Hydrated(kept, frozenset())

    def rerank(
        self, query: SearchQuery, hits: list[IndexHit], records: dict[uuid.UUID, FragmentRecord]
    ) -> list[IndexHit]:
        """Stage *rerank*: the hydrated hits re-ordered by :func:`rerank` for the
        masked ``query`` and its keyword terms (their scores replaced by the re-ranked
        ones)."""
        candidates = []
        for i, hit in enumerate(hits):
            rec = records.get(hit.fragment_id)
            if rec is not None:
                speaker = rec.metadata.get(SPEAKER_KEY)
                candidates.append(
                    Candidate(
                        i,
                        hit.score,
                        rec.session_id,
                        speaker if isinstance(speaker, str) else None,
                        rec.text,
                    )
                )
        ranked = rerank(
            query.text, candidates, DEFAULT_RERANK, terms=query.tokens, weights=query.weights
        )
        return [replace(hits[i], score=score) for i, score in ranked]

    @staticmethod
    def hits(
        hits: list[IndexHit],
        records: dict[uuid.UUID, FragmentRecord],
        results: SearchResults,
        limit: int,
    ) -> SearchResults:
        """Stage *hits*: records in hit order, each once, at most ``limit``."""
        seen: set[uuid.UUID] = set()
        for hit in hits:
            rec = records.get(hit.fragment_id)
            if rec is None or rec.id in seen or len(results) >= limit:
                continue
            seen.add(rec.id)
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
                    status=rec.status,
                    confidence=rec.confidence,
                )
            )
        return results

    def _config(self, preset: str | None, alpha: float | None) -> SearchConfig:
        name = preset or self._preset
        config = PRESETS.get(name) if isinstance(name, str) else None
        if config is None:
            known = ", ".join(sorted(PRESETS))
            raise InvalidField(f"unknown search preset; known: {known}", field="preset")
        if alpha is not None:
            if not isinstance(alpha, int | float) or not 0.0 <= alpha <= 1.0:
                raise InvalidField("alpha must lie in [0, 1]", field="alpha")
            config = config.model_copy(update={"alpha": float(alpha)})
        return config
