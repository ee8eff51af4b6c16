"""The :class:`Embedder` protocol every embedding backend implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from policies.errors import InvalidText

__all__ = ["Embedder", "ensure_texts"]


@runtime_checkable
class Embedder(Protocol):
    """Turns text into L2-normalised float vectors of a fixed dimension.

    Empty or whitespace-only text is refused with ``InvalidText`` by every
    implementation before any work or I/O is done.
    """

    @property
    def name(self) -> str:
        """Stable id of the embedder and its settings, e.g. ``"hashing-v1-1024"``.

        Stored next to each vector: two embedders with the same name produce
        the same vectors, a different name means the index must be rebuilt.
        """
        ...

    @property
    def dimensions(self) -> int:
        """Length of every vector this embedder returns."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector per text, in input order (``[]`` for no texts).

        Raises ``InvalidText`` for an empty text, ``EmbedderUnavailable`` when a
        remote backend cannot be reached after retries and ``EmbedderError``
        when its answer is malformed.
        """
        ...

    def embed_query(self, text: str) -> list[float]:
        """The unit-length vector of a search query; raises as :meth:`embed_documents`."""
        ...


def ensure_texts(texts: Sequence[str]) -> None:
    """Raise ``InvalidText`` unless every item is a ``str`` with a non-space character."""
    if isinstance(texts, str):
        raise InvalidText("expected a sequence of texts, got a single str")
    for i, text in enumerate(texts):
        if not isinstance(text, str) or not text.strip():
            raise InvalidText("cannot embed an empty text", index=i)
