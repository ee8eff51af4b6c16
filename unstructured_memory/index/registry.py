"""The one list of index backend names: name -> lazily imported class and its config.

A backend class offers ``from_config(config, *, transaction)``: the pydantic
config validated from settings, and the ledger's transaction factory (used by
backends that read PostgreSQL, ignored by the others).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

from pydantic import BaseModel, ConfigDict, ValidationError

from policies.errors import ConfigurationError
from unstructured_memory.index.base import FragmentIndex
from unstructured_memory.index.pgvector import Transaction
from unstructured_memory.index.weaviate import WeaviateConfig

__all__ = ["DEFAULT_INDEX", "INDEXES", "IndexSpec", "PgVectorConfig", "create_index"]


class PgVectorConfig(BaseModel):
    """The pgvector backend needs nothing beyond the ledger's database."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class IndexSpec:
    """Where a backend lives (``"module:Class"``) and how its config is validated."""

    class_path: str
    config: type[BaseModel]


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
    spec = INDEXES.get(name)
    if spec is None:
        known = ", ".join(sorted(INDEXES))
        raise ConfigurationError(f"unknown index backend {name!r}; known backends: {known}")
    try:
        settings = spec.config.model_validate(dict(config))
    except ValidationError as exc:
        raise ConfigurationError(f"invalid config for index backend {name!r}: {exc}") from exc
    module_name, _, class_name = spec.class_path.partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    return cast(FragmentIndex, cls.from_config(settings, transaction=transaction))
