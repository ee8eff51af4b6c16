"""Errors of the unstructured track, grafted onto the tree in :mod:`policies.errors`::

    DualtrackError
    ├── EmbedderError                    (502) malformed embedding response
    ├── ConfigurationError
    │   └── EmbeddingDimensionMismatch   (500) stored d1 != embedder d2
    └── StoreUnavailable
        └── EmbedderUnavailable          (503) endpoint down after retries

Each class has a stable ``code``; the service maps it to ``http_status``.
"""

from __future__ import annotations

from policies.errors import ConfigurationError, DualtrackError, StoreUnavailable

__all__ = ["EmbedderError", "EmbedderUnavailable", "EmbeddingDimensionMismatch"]


class EmbedderUnavailable(StoreUnavailable):
    """The embedding endpoint refused, failed or timed out on every retry."""

    code = "embedder_unavailable"


class EmbedderError(DualtrackError):
    """The embedder answered with something unusable: bad JSON, wrong count or dimension."""

    code = "embedder_error"
    http_status = 502


class EmbeddingDimensionMismatch(ConfigurationError):
    """Stored vectors and the configured embedder disagree on the dimension."""

    code = "embedding_dimension_mismatch"

    def __init__(self, *, stored: int, configured: int, embedder: str) -> None:
        super().__init__(
            f"stored vectors have dimension {stored} but the configured embedder "
            f"{embedder!r} produces {configured}; configure the embedder the stored "
            f"vectors belong to, or move them to this one with `dualtrack reembed`",
            stored=stored,
            configured=configured,
            embedder=embedder,
        )
        self.stored = stored
        self.configured = configured
        self.embedder = embedder
