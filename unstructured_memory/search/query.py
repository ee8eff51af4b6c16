"""The one place a search query is built: mask, tokenise, embed.

The SDK's search path, the benchmarks and the tests all call
:func:`build_query`, so a query reaches an embedder or an index only in its
masked form: PII found in it (a phone, an e-mail, an ID number) is replaced
by its mask exactly as in a stored memory, and handed back separately for a
lookup through the vault's blind index.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from policies.pii import PiiMatch, mask_pii
from unstructured_memory.embedders.base import Embedder
from unstructured_memory.index.base import SearchFilters, SearchQuery
from unstructured_memory.search.dialogue import parse_turns, turn_weights
from unstructured_memory.search.presets import SearchConfig
from unstructured_memory.tokenize import topic_words, weighted_query_terms

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
    """Mask ``text``, take its weighted keyword terms (:func:`weighted_query_terms`:
    stemmed, stop words dropped, CJK bigrams at :data:`BIGRAM_WEIGHT`) and (for
    ``config.alpha > 0``) embed the masked form.

    A text that reads as a dialogue (:func:`parse_turns`) is searched by its turns:
    each turn's terms weighted by :func:`turn_weights` (a term in several turns keeps
    its largest weight), its vector the weighted sum of the turns' vectors (one
    ``embed_documents`` call), its text the turns without their speakers' labels.

    A query whose embedding is all zeros (no feature the embedder knows) is
    searched by keywords alone. Raises what the embedder raises.
    """
    masked, pii = mask_pii(text)
    turns = parse_turns(masked)
    if turns is None:
        weights = weighted_query_terms(masked)
        texts, turn_w = [masked], [1.0]
        focus = masked
    else:
        turn_w = turn_weights(turns, topics=[frozenset(topic_words(t.text)) for t in turns])
        weights = {}
        for turn, w in zip(turns, turn_w, strict=True):
            for term, tw in weighted_query_terms(turn.text, w).items():
                if tw > weights.get(term, 0.0):
                    weights[term] = tw
        texts = [t.text for t in turns]
        focus = "\n".join(texts)
    vector: list[float] = []
    if config.alpha > 0:
        vector = _embed(embedder, texts, turn_w)
        if not any(vector):
            config = config.model_copy(update={"alpha": 0.0})
    query = SearchQuery(
        text=focus,
        tokens=tuple(weights),
        vector=vector,
        embedding_model=embedder.name,
        config=config,
        limit=limit,
        now=now,
        filters=filters or SearchFilters(),
        weights=tuple(weights.values()),
    )
    return BuiltQuery(query, tuple(pii))


def _embed(embedder: Embedder, texts: list[str], weights: list[float]) -> list[float]:
    """The query's vector: of its one text, or the weighted, re-normalised sum of its
    turns' vectors (turns with nothing but spaces left out)."""
    if len(texts) == 1:
        return embedder.embed_query(texts[0])
    kept = [(t, w) for t, w in zip(texts, weights, strict=True) if t.strip()]
    import numpy as np  # not at ``import sdk`` time

    vectors = np.asarray(embedder.embed_documents([t for t, _ in kept]), dtype=np.float64)
    total = np.asarray([w for _, w in kept], dtype=np.float64) @ vectors
    norm = math.sqrt(float(total @ total))
    summed: list[float] = (total / norm if norm > 0.0 else total).tolist()
    return summed
