"""The one list of embedder names: name -> implementation class path and config class.

Implementations are imported only when :func:`create_embedder` asks for them,
so an uninstalled optional extra costs nothing until it is chosen.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

from pydantic import BaseModel, ValidationError

from policies.errors import ConfigurationError
from unstructured_memory.embedders.base import Embedder
from unstructured_memory.embedders.hashing import HashingEmbedderConfig
from unstructured_memory.embedders.openai_http import OpenAIEmbedderConfig
from unstructured_memory.embedders.sentence_transformers import (
    SentenceTransformersEmbedderConfig,
)

__all__ = ["DEFAULT_EMBEDDER", "EMBEDDERS", "EmbedderSpec", "create_embedder"]


@dataclass(frozen=True)
class EmbedderSpec:
    """Where an embedder lives (``"module:Class"``) and how its config is validated."""

    class_path: str
    config: type[BaseModel]


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
    spec = EMBEDDERS.get(name)
    if spec is None:
        known = ", ".join(sorted(EMBEDDERS))
        raise ConfigurationError(f"unknown embedder {name!r}; known embedders: {known}")
    try:
        settings = spec.config.model_validate(dict(config))
    except ValidationError as exc:
        raise ConfigurationError(f"invalid config for embedder {name!r}: {exc}") from exc
    module_name, _, class_name = spec.class_path.partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    return cast(Embedder, cls(settings))
