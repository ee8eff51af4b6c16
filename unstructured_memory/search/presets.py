"""Named search configurations; the SDK, benchmarks and evaluations pick them by name.

The hybrid default was tuned on the LoCoMo tuning split (conv-26, -30, -41,
-42, -43) with the default hashing embedder; see ``benchmarks/locomo_offline.py``.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "HYBRID_DEFAULT",
    "HYBRID_RANKED",
    "KEYWORD_ONLY",
    "PRESETS",
    "VECTOR_ONLY",
    "Fusion",
    "SearchConfig",
]


class Fusion(StrEnum):
    """How a vector and a keyword result list are merged (Weaviate's names)."""

    RELATIVE_SCORE = "relative_score"
    RANKED = "ranked"


class SearchConfig(BaseModel):
    """One hybrid-search recipe: fusion method and weights, candidates, BM25 parameters."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    alpha: float = Field(ge=0.0, le=1.0, description="1 = vector only, 0 = keyword only")
    candidates: int = Field(ge=1, le=10_000, description="top-N taken from each list")
    fusion: Fusion = Fusion.RELATIVE_SCORE
    bm25_k1: float = Field(ge=0.0, le=10.0)
    bm25_b: float = Field(ge=0.0, le=1.0)


HYBRID_DEFAULT = SearchConfig(
    alpha=0.35, candidates=100, fusion=Fusion.RELATIVE_SCORE, bm25_k1=0.6, bm25_b=0.3
)
HYBRID_RANKED = HYBRID_DEFAULT.model_copy(update={"alpha": 0.4, "fusion": Fusion.RANKED})
KEYWORD_ONLY = HYBRID_DEFAULT.model_copy(update={"alpha": 0.0})
VECTOR_ONLY = HYBRID_DEFAULT.model_copy(update={"alpha": 1.0})

PRESETS: dict[str, SearchConfig] = {
    "hybrid": HYBRID_DEFAULT,
    "hybrid_ranked": HYBRID_RANKED,
    "keyword": KEYWORD_ONLY,
    "vector": VECTOR_ONLY,
}
"""Every preset by the name settings and the CLI use."""
