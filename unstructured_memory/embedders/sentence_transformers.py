"""Embeddings from a sentence-transformers model on local disk (optional extra).

Install with ``pip install 'dualtrack-memory[sentence-transformers]'``. The
model is read from ``model_path`` only: the Hugging Face hub is switched to
offline mode and ``local_files_only=True`` is passed, so nothing is ever
downloaded. The constructor checks the path and that the package is installed
(``ConfigurationError`` otherwise); the model is loaded on first use.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from typing import Any

from policies.errors import ConfigurationError
from unstructured_memory.embedders.base import ensure_texts
from unstructured_memory.embedders.registry import SentenceTransformersEmbedderConfig

__all__ = ["SentenceTransformersEmbedder", "SentenceTransformersEmbedderConfig"]

_INSTALL_HINT = "pip install 'dualtrack-memory[sentence-transformers]'"


class SentenceTransformersEmbedder:
    """Embedder backed by ``sentence_transformers.SentenceTransformer``."""

    def __init__(self, config: SentenceTransformersEmbedderConfig) -> None:
        if importlib.util.find_spec("sentence_transformers") is None:
            raise ConfigurationError(
                f"the sentence-transformers embedder needs the extra: {_INSTALL_HINT}"
            )
        if not config.model_path.is_dir():
            raise ConfigurationError(
                f"sentence-transformers model directory not found: {config.model_path} "
                "(models are never downloaded; save one there first)"
            )
        self.config = config
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """``sentence-transformers-<model directory name>``."""
        return f"sentence-transformers-{self.config.model_path.name}"

    @property
    def dimensions(self) -> int:
        """The model's embedding dimension (loads the model)."""
        model = self._get()
        # sentence-transformers 6 renamed the method; older releases only have the old name
        getter = getattr(model, "get_embedding_dimension", None)
        return int((getter or model.get_sentence_embedding_dimension)())

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors of ``texts`` in input order (loads the model on first use)."""
        ensure_texts(texts)
        if not texts:
            return []
        vectors = self._get().encode(
            list(texts),
            batch_size=self.config.batch_size,
            normalize_embeddings=self.config.normalize,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return [[float(x) for x in row] for row in vectors]

    def embed_query(self, text: str) -> list[float]:
        """The vector of one query text."""
        return self.embed_documents([text])[0]

    def _get(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    os.environ.setdefault("HF_HUB_OFFLINE", "1")
                    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                    try:
                        from sentence_transformers import SentenceTransformer
                    except ImportError as exc:
                        raise ConfigurationError(
                            f"cannot import sentence-transformers ({exc}): {_INSTALL_HINT}"
                        ) from exc
                    try:
                        self._model = SentenceTransformer(
                            str(self.config.model_path),
                            device=self.config.device,
                            local_files_only=True,
                        )
                    except (OSError, ValueError) as exc:
                        raise ConfigurationError(
                            f"cannot load the sentence-transformers model at "
                            f"{self.config.model_path}: {exc}"
                        ) from exc
        return self._model
