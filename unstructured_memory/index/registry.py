"""The one list of index backend names: name -> lazily imported class and its config.

A backend class offers ``from_config(config, *, transaction)``: the pydantic
config validated from settings, and the ledger's transaction factory (used by
backends that read PostgreSQL, ignored by the others).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from pydantic import BaseModel, ConfigDict

from unstructured_memory.index.base import FragmentIndex
from unstructured_memory.index.pgvector import Transaction
from unstructured_memory.index.weaviate import WeaviateConfig
from unstructured_memory.plugins import PluginSpec, resolve

__all__ = ["DEFAULT_INDEX", "INDEXES", "IndexSpec", "PgVectorConfig", "create_index"]


class PgVectorConfig(BaseModel):
    """The pgvector backend needs nothing beyond the ledger's database."""

    model_config = ConfigDict(extra="forbid", frozen=True)


IndexSpec = PluginSpec

INDEXES: Mapping[str, IndexSpec] = {
    "pgvector": IndexSpec("unstructured_memory.index.pgvector:PgVectorIndex", PgVectorConfig),
    "weaviate": IndexSpec("unstructured_memory.index.weaviate:WeaviateIndex", WeaviateConfig),
}

DEFAULT_INDEX = "pgvector"


def create_index(
    name: str, config: Mapping[str, object], *, transaction: Transaction
) -> FragmentIndex:
    """Build the backend registered as ``name``.

    Raises :class:`ConfigurationError` for an unknown name (listing the known
    ones) or a config its pydantic model rejects.
    """
    cls, settings = resolve("index backend", name, INDEXES, config)
    return cast(FragmentIndex, cls.from_config(settings, transaction=transaction))
