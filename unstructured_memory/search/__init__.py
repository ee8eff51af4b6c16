"""Search building blocks shared by the index backends and the evaluations.

Members are imported on first use (BM25 needs numpy).
"""

from typing import TYPE_CHECKING

from unstructured_memory.plugins import lazy_exports

if TYPE_CHECKING:
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
    from unstructured_memory.search.query import build_query

__all__ = [
    "HYBRID_DEFAULT",
    "KEYWORD_ONLY",
    "PRESETS",
    "VECTOR_ONLY",
    "BM25Index",
    "Fusion",
    "SearchConfig",
    "build_query",
    "ranked_fusion",
    "relative_score_fusion",
]

_MODULES = {
    "bm25": ("BM25Index",),
    "fusion": ("ranked_fusion", "relative_score_fusion"),
    "presets": (
        "HYBRID_DEFAULT",
        "KEYWORD_ONLY",
        "PRESETS",
        "VECTOR_ONLY",
        "Fusion",
        "SearchConfig",
    ),
    "query": ("build_query",),
}
__getattr__ = lazy_exports(
    __name__, {n: f"{__name__}.{m}" for m, names in _MODULES.items() for n in names}
)
