"""The one list of embedder names: name -> implementation class path and config class.

Implementations are imported only when :func:`create_embedder` asks for them,
so an uninstalled optional extra costs nothing until it is chosen.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from unstructured_memory.embedders.base import Embedder
from unstructured_memory.embedders.hashing import HashingEmbedderConfig
from unstructured_memory.embedders.openai_http import OpenAIEmbedderConfig
from unstructured_memory.embedders.sentence_transformers import (
    SentenceTransformersEmbedderConfig,
)
from unstructured_memory.plugins import PluginSpec, resolve

__all__ = ["DEFAULT_EMBEDDER", "EMBEDDERS", "EmbedderSpec", "create_embedder"]


EmbedderSpec = PluginSpec

EMBEDDERS: Mapping[str, EmbedderSpec] = {
    "hashing": EmbedderSpec(
        "unstructured_memory.embedders.hashing:HashingEmbedder", HashingEmbedderConfig
    ),
    "sentence-transformers": EmbedderSpec(
        "unstructured_memory.embedders.sentence_transformers:SentenceTransformersEmbedder",
        SentenceTransformersEmbedderConfig,
    ),
    "openai": EmbedderSpec(
        "unstructured_memory.embedders.openai_http:OpenAIEmbedder", OpenAIEmbedderConfig
    ),
}

DEFAULT_EMBEDDER = "hashing"
"""The offline embedder used when settings name none."""


def create_embedder(name: str, config: Mapping[str, object]) -> Embedder:
    """Build the embedder registered as ``name`` from a plain ``config`` mapping.

    Raises ``ConfigurationError`` for an unknown name (listing the known ones)
    or a config its pydantic model rejects (with pydantic's message).
    """
    cls, settings = resolve("embedder", name, EMBEDDERS, config)
    return cast(Embedder, cls(settings))
