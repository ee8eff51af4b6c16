"""The one list of embedder names: name -> implementation class path and config class.

The configs live here; implementations are imported only when
:func:`create_embedder` asks for them, so an uninstalled optional extra (or
numpy, or httpx) costs nothing until it is chosen.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import cast

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from unstructured_memory.embedders.base import Embedder
from unstructured_memory.plugins import PluginSpec, resolve

__all__ = [
    "AUTO_EMBEDDER",
    "DEFAULT_EMBEDDER",
    "EMBEDDERS",
    "EmbedderSpec",
    "HashingEmbedderConfig",
    "OpenAIEmbedderConfig",
    "SentenceTransformersEmbedderConfig",
    "WordVectorsEmbedderConfig",
    "create_embedder",
    "offline_embedder_of",
]


class HashingEmbedderConfig(BaseModel):
    """Settings of :class:`HashingEmbedder`; any non-default value changes its ``name``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dimensions: int = Field(default=1024, ge=16, le=1 << 16, description="vector length")
    word_weight: float = Field(default=1.0, ge=0.0, description="weight of the word family")
    char_weight: float = Field(default=1.0, ge=0.0, description="weight of Latin char n-grams")
    cjk_weight: float = Field(
        default=0.7, ge=0.0, description="weight of CJK char bigrams/trigrams"
    )
    symbol_weight: float = Field(default=0.3, ge=0.0, description="weight of emoji/symbol chars")
    stopword_weight: float = Field(default=0.3, ge=0.0, le=1.0, description="factor for stop words")
    char_ngram_min: int = Field(default=3, ge=1, le=8)
    char_ngram_max: int = Field(default=5, ge=1, le=8)
    stem: bool = Field(default=True, description="light English suffix stemming of word features")


class WordVectorsEmbedderConfig(BaseModel):
    """Settings of :class:`WordVectorsEmbedder`; any non-default value changes its ``name``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    hashing: HashingEmbedderConfig = Field(
        default_factory=HashingEmbedderConfig, description="the hashed part's settings"
    )
    meaning_weight: float = Field(
        default=1.0, ge=0.0, le=10.0, description="weight of the word-vector part"
    )
    common_directions: int = Field(
        default=5, ge=0, le=50, description="shared directions taken out of the meaning part"
    )


class OpenAIEmbedderConfig(BaseModel):
    """Settings of :class:`OpenAIEmbedder`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = Field(description="API root including the version, e.g. .../v1")
    api_key: SecretStr | None = Field(default=None, description="sent as a Bearer token when set")
    model: str = Field(min_length=1, description="e.g. text-embedding-3-small")
    dimensions: int | None = Field(
        default=None, ge=1, description="requested dimension, sent when set"
    )
    batch_size: int = Field(default=32, ge=1, le=2048, description="texts per request")
    timeout_s: float = Field(default=30.0, gt=0.0, description="per-request timeout")
    max_retries: int = Field(default=3, ge=0, le=20, description="retries after the first attempt")
    backoff_s: float = Field(
        default=0.5, ge=0.0, description="first retry delay, doubled each time"
    )
    backoff_max_s: float = Field(default=20.0, ge=0.0, description="upper bound of one retry delay")


class SentenceTransformersEmbedderConfig(BaseModel):
    """Settings of :class:`SentenceTransformersEmbedder`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model_path: Path = Field(description="directory of a saved sentence-transformers model")
    device: str | None = Field(default=None, description='e.g. "cpu", "cuda:0"; None picks one')
    batch_size: int = Field(default=32, ge=1, le=4096)
    normalize: bool = Field(
        default=True, description="L2-normalise outputs; turn off only for self-normalising models"
    )


EmbedderSpec = PluginSpec

EMBEDDERS: Mapping[str, EmbedderSpec] = {
    "hashing": EmbedderSpec(
        "unstructured_memory.embedders.hashing:HashingEmbedder", HashingEmbedderConfig
    ),
    "wordvectors": EmbedderSpec(
        "unstructured_memory.embedders.wordvectors:WordVectorsEmbedder", WordVectorsEmbedderConfig
    ),
    "sentence-transformers": EmbedderSpec(
        "unstructured_memory.embedders.sentence_transformers:SentenceTransformersEmbedder",
        SentenceTransformersEmbedderConfig,
    ),
    "openai": EmbedderSpec(
        "unstructured_memory.embedders.openai_http:OpenAIEmbedder", OpenAIEmbedderConfig
    ),
}

DEFAULT_EMBEDDER = "wordvectors"
"""The offline embedder of a new deployment whose settings name none."""

AUTO_EMBEDDER = "auto"
"""The settings' default: the offline embedder the stored vectors belong to (see
:func:`offline_embedder_of`), :data:`DEFAULT_EMBEDDER` for a deployment with none."""

_OFFLINE_DEFAULTS = {"hashing-v1-1024": "hashing", "wordvectors-v1-1224": "wordvectors"}


def offline_embedder_of(stored_model: str | None) -> str:
    """The registered name of the offline default that made vectors named ``stored_model``
    (``hashing`` for ``hashing-v1-1024``, the default before ``wordvectors``), or
    :data:`DEFAULT_EMBEDDER` for none or any other model (which the embedding-space check
    then reports as a mismatch)."""
    return _OFFLINE_DEFAULTS.get(stored_model or "", DEFAULT_EMBEDDER)


def create_embedder(name: str, config: Mapping[str, object]) -> Embedder:
    """Build the embedder registered as ``name`` from a plain ``config`` mapping.

    Raises ``ConfigurationError`` for an unknown name (listing the known ones)
    or a config its pydantic model rejects (with pydantic's message).
    """
    cls, settings = resolve("embedder", name, EMBEDDERS, config)
    return cast(Embedder, cls(settings))
