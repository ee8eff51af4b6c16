"""The one place a search query is built: mask, tokenise, embed.

The SDK's search path, the benchmarks and the tests all call
:func:`build_query`, so a query reaches an embedder or an index only in its
masked form: PII found in it (a phone, an e-mail, an ID number) is replaced
by its mask exactly as in a stored memory, and handed back separately for a
lookup through the vault's blind index.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from policies.pii import PiiMatch, mask_pii
from unstructured_memory.embedders.base import Embedder
from unstructured_memory.index.base import SearchFilters, SearchQuery
from unstructured_memory.search.presets import SearchConfig
from unstructured_memory.tokenize import query_terms

__all__ = ["BuiltQuery", "build_query"]


@dataclass(frozen=True, slots=True)
class BuiltQuery:
    """A masked query ready for an index, and the PII values taken out of it.

    ``pii`` holds clear values: it stays in the process, for the blind-index
    lookup, and is never logged or sent anywhere.
    """

    query: SearchQuery
    pii: tuple[PiiMatch, ...]

    @property
    def empty(self) -> bool:
        """Nothing to search with: no keyword and no usable vector."""
        return not self.query.tokens and self.query.config.alpha == 0


def build_query(
    text: str,
    *,
    embedder: Embedder,
    config: SearchConfig,
    limit: int,
    now: datetime,
    filters: SearchFilters | None = None,
) -> BuiltQuery:
    """Mask ``text``, take its keyword terms (:func:`query_terms`: stemmed, stop words
    dropped) and (for ``config.alpha > 0``) embed the masked form.

    A query whose embedding is all zeros (no feature the embedder knows) is
    searched by keywords alone. Raises what the embedder raises.
    """
    masked, pii = mask_pii(text)
    words = tuple(query_terms(masked))
    vector: list[float] = []
    if config.alpha > 0:
        vector = embedder.embed_query(masked)
        if not any(vector):
            config = config.model_copy(update={"alpha": 0.0})
    query = SearchQuery(
        text=masked,
        tokens=words,
        vector=vector,
        embedding_model=embedder.name,
        config=config,
        limit=limit,
        now=now,
        filters=filters or SearchFilters(),
    )
    return BuiltQuery(query, tuple(pii))
