"""The one list of index backend names: name -> lazily imported class, config, fallback.

A backend class offers ``from_config(config, *, connect, visible, tenant_key)``:
the pydantic config validated from settings, the ledger's connection factory and
the rendering of a scope's visibility over the ledger (used by backends that read
PostgreSQL, ignored by the others) and the secret that
keys the names a backend gives users (Weaviate tenants), so that no name in the
index reveals a user id. A backend module is
imported only when it is configured. A derived backend names the backend that
answers from the ledger while it is unreachable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from unstructured_memory.index.base import Connect, FragmentIndex, LedgerVisibility
from unstructured_memory.plugins import PluginSpec, resolve
from unstructured_memory.search.presets import HYBRID_DEFAULT

__all__ = [
    "DEFAULT_INDEX",
    "INDEXES",
    "IndexSpec",
    "PgVectorConfig",
    "WeaviateConfig",
    "create_fallback",
    "create_index",
]


class PgVectorConfig(BaseModel):
    """The pgvector backend needs nothing beyond the ledger's database."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class WeaviateConfig(BaseModel):
    """Where the Weaviate server is and how the collection is shaped."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=1, le=65535)
    grpc_port: int = Field(default=50051, ge=1, le=65535)
    collection: str = Field(default="UserMemory", pattern=r"^[A-Z][A-Za-z0-9_]{0,63}$")
    keyword_property: Literal["index_text", "text_gse"] = "index_text"
    native_ttl: bool = Field(
        default=True, description="Let the server delete objects past expires_at."
    )
    timeout_s: float = Field(default=10.0, gt=0)
    probe_after_idle_s: float = Field(default=2.0, ge=0)
    down_retry_s: float = Field(default=1.0, ge=0)
    bm25_k1: float = HYBRID_DEFAULT.bm25_k1
    bm25_b: float = HYBRID_DEFAULT.bm25_b
    replication_factor: int = Field(
        default=1,
        ge=1,
        description="Copies of each tenant on a Weaviate cluster, set when the collection is "
        "created; above 1 with async replication (a returning node is repaired) and "
        "deletes winning conflicts (an erased memory never comes back).",
    )
    consistency_level: Literal["ONE", "QUORUM", "ALL"] = Field(
        default="QUORUM",
        description="Replicas that must answer each read and acknowledge each write; "
        "QUORUM on both sides keeps reads seeing every acknowledged write with one of "
        "three nodes down.",
    )


@dataclass(frozen=True)
class IndexSpec(PluginSpec):
    """A backend's class path and config, and for a derived one the fallback's name."""

    fallback: str | None = None


INDEXES: Mapping[str, IndexSpec] = {
    "pgvector": IndexSpec("unstructured_memory.index.pgvector:PgVectorIndex", PgVectorConfig),
    "weaviate": IndexSpec(
        "unstructured_memory.index.weaviate:WeaviateIndex", WeaviateConfig, fallback="pgvector"
    ),
}

DEFAULT_INDEX = "pgvector"


def create_index(
    name: str,
    config: Mapping[str, object],
    *,
    connect: Connect,
    visible: LedgerVisibility,
    tenant_key: bytes,
) -> FragmentIndex:
    """Build the backend registered as ``name``.

    Raises :class:`ConfigurationError` for an unknown name (listing the known
    ones) or a config its pydantic model rejects.
    """
    cls, settings = resolve("index backend", name, INDEXES, config)
    index = cls.from_config(settings, connect=connect, visible=visible, tenant_key=tenant_key)
    return cast(FragmentIndex, index)


def create_fallback(
    name: str, *, connect: Connect, visible: LedgerVisibility, tenant_key: bytes
) -> FragmentIndex | None:
    """The ledger-backed index answering while backend ``name`` is down (``None``: none)."""
    spec = INDEXES.get(name)
    if spec is None or spec.fallback is None:
        return None
    return create_index(spec.fallback, {}, connect=connect, visible=visible, tenant_key=tenant_key)
