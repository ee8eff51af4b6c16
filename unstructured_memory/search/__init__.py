"""Search building blocks shared by the index backends and the evaluations."""

from unstructured_memory.search.bm25 import BM25Index
from unstructured_memory.search.fusion import ranked_fusion, relative_score_fusion
from unstructured_memory.search.presets import (
    HYBRID_DEFAULT,
    KEYWORD_ONLY,
    PRESETS,
    VECTOR_ONLY,
    Fusion,
    SearchConfig,
)

__all__ = [
    "HYBRID_DEFAULT",
    "KEYWORD_ONLY",
    "PRESETS",
    "VECTOR_ONLY",
    "BM25Index",
    "Fusion",
    "SearchConfig",
    "ranked_fusion",
    "relative_score_fusion",
]
