"""Embedders of the unstructured track; pick one by name with :func:`create_embedder`."""

from unstructured_memory.embedders.base import Embedder
from unstructured_memory.embedders.hashing import HashingEmbedder, HashingEmbedderConfig
from unstructured_memory.embedders.registry import DEFAULT_EMBEDDER, EMBEDDERS, create_embedder

__all__ = [
    "DEFAULT_EMBEDDER",
    "EMBEDDERS",
    "Embedder",
    "HashingEmbedder",
    "HashingEmbedderConfig",
    "create_embedder",
]
