"""Embedders of the unstructured track; pick one by name with :func:`create_embedder`.

Members are imported on first use (the hashing embedder needs numpy, the
OpenAI-compatible one httpx).
"""

from typing import TYPE_CHECKING

from unstructured_memory.plugins import lazy_exports

if TYPE_CHECKING:
    from unstructured_memory.embedders.base import Embedder
    from unstructured_memory.embedders.hashing import HashingEmbedder
    from unstructured_memory.embedders.registry import (
        DEFAULT_EMBEDDER,
        EMBEDDERS,
        HashingEmbedderConfig,
        create_embedder,
    )

__all__ = [
    "DEFAULT_EMBEDDER",
    "EMBEDDERS",
    "Embedder",
    "HashingEmbedder",
    "HashingEmbedderConfig",
    "create_embedder",
]

_MODULES = {
    "base": ("Embedder",),
    "hashing": ("HashingEmbedder",),
    "registry": ("DEFAULT_EMBEDDER", "EMBEDDERS", "HashingEmbedderConfig", "create_embedder"),
}
__getattr__ = lazy_exports(
    __name__, {n: f"{__name__}.{m}" for m, names in _MODULES.items() for n in names}
)
