"""The default offline embedder: hashed features beside the meaning of Chinese words.

A text's vector has two parts, each of unit length before they are joined:

* the :class:`~unstructured_memory.embedders.hashing.HashingEmbedder` vector (words,
  character n-grams: what the text says, to the letter);
* a meaning part: the SIF average (Arora et al., 2017) of the word vectors of its
  Chinese words (:mod:`~unstructured_memory.embedders.word_table`), a word missing from
  the table by its longest parts the table holds, left to right (王老师: 王 and 老师), a
  lone character at half weight, less its projection on the directions
  every text shares (the top principal directions of an average sentence of twelve
  words drawn by frequency, computed from the table, so every process finds the same).

So 高兴 finds 开心 and 电话 finds 手机 by meaning, while an exact word still counts as
before. The meaning part is weighted by ``meaning_weight`` (inner products add as
``hashing + weight × meaning``); a text with no Chinese word has none, and ranks as
with the hashing embedder alone.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections.abc import Iterator, Sequence
from typing import cast

import numpy as np
import numpy.typing as npt

from unstructured_memory.embedders.base import ensure_texts
from unstructured_memory.embedders.hashing import HashingEmbedder
from unstructured_memory.embedders.registry import WordVectorsEmbedderConfig
from unstructured_memory.embedders.word_table import WordTable, load_word_table, word_source
from unstructured_memory.tokenize import tokens

__all__ = ["WordVectorsEmbedder", "WordVectorsEmbedderConfig"]

_VERSION = "wordvectors-v1"
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_SENTENCE_WORDS = 12
_CHAR_WEIGHT = 0.5
_CHUNK = 4096
_LONGEST_PART = 4
_DEFAULT = WordVectorsEmbedderConfig()


def common_directions(table: WordTable, k: int) -> npt.NDArray[np.float32]:
    """The ``k`` top principal directions of a random sentence's SIF sum, in closed form.

    For a sentence of ``n`` words drawn with probabilities ``p``, the second moment of
    ``s = Σ w·v`` is ``n·Σ p w² v vᵀ + n(n-1)·μ μᵀ`` with ``μ = Σ p w v``: no sampling,
    so the directions are the same in every process.
    """
    if k == 0:
        return np.zeros((0, table.dimensions), dtype=np.float32)
    p = table.frequencies / table.frequencies.sum()
    w = table.weights.astype(np.float64)
    n = _SENTENCE_WORDS
    dims = table.dimensions
    mu = np.zeros(dims)
    moment = np.zeros((dims, dims))
    for start in range(0, len(p), _CHUNK):  # in chunks: no copy of the whole table
        v = np.asarray(table.vectors[start : start + _CHUNK], dtype=np.float64)
        pw = p[start : start + _CHUNK] * w[start : start + _CHUNK]
        mu += pw @ v
        moment += n * (v.T * (pw * w[start : start + _CHUNK])) @ v
    moment += n * (n - 1) * np.outer(mu, mu)
    _, vecs = np.linalg.eigh(moment)
    return np.ascontiguousarray(vecs[:, ::-1][:, :k].T, dtype=np.float32)


def _parts(token: str, rows: dict[str, int]) -> Iterator[tuple[int, float]]:
    """The table rows of ``token`` and their weights: the word's own, else its longest
    parts left to right (up to four characters), a lone character at half weight."""
    if (row := rows.get(token)) is not None:
        yield row, 1.0
        return
    i = 0
    while i < len(token):
        for j in range(min(len(token), i + _LONGEST_PART), i, -1):
            if (row := rows.get(token[i:j])) is not None:
                yield row, 1.0 if j - i > 1 else _CHAR_WEIGHT
                i = j
                break
        else:
            i += 1


class WordVectorsEmbedder:
    """Hashing features beside averaged Chinese word vectors; nothing downloaded."""

    def __init__(self, config: WordVectorsEmbedderConfig | None = None) -> None:
        self.config = config or _DEFAULT
        self._hashing = HashingEmbedder(self.config.hashing)
        word_source()  # the wheel is installed (ConfigurationError if not); read on first use
        self._lock = threading.Lock()
        self._directions: npt.NDArray[np.float32] | None = None
        self._scale = math.sqrt(self.config.meaning_weight)
        self._name = f"{_VERSION}-{self.dimensions}"
        if self.config != _DEFAULT:
            blob = self.config.model_dump_json().encode()
            self._name += "-" + hashlib.blake2b(blob, digest_size=4).hexdigest()

    @property
    def name(self) -> str:
        """``wordvectors-v1-<dimensions>``, plus a settings digest if not the defaults."""
        return self._name

    @property
    def dimensions(self) -> int:
        """The hashing part's length plus the word vectors' (200)."""
        return self.config.hashing.dimensions + 200

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors of ``texts``; see :class:`~unstructured_memory.embedders.base.Embedder`."""
        ensure_texts(texts)
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """The vector of ``text`` (queries and documents embed the same way)."""
        ensure_texts([text])
        return self._vector(text)

    def meaning(self, text: str) -> npt.NDArray[np.float32]:
        """The unit meaning part of ``text`` (zeros when it holds no Chinese word)."""
        table = load_word_table()
        rows: list[int] = []
        scale: list[float] = []
        for token in tokens(text):
            if _CJK.search(token):
                for row, weight in _parts(token, table.rows):
                    rows.append(row)
                    scale.append(weight)
        if not rows:
            return np.zeros(table.dimensions, dtype=np.float32)
        weights = table.weights[rows] * np.asarray(scale, dtype=np.float32)
        acc = weights @ table.vectors[rows]
        norm = float(np.linalg.norm(acc))
        if norm == 0.0:
            return acc
        acc /= norm
        directions = self._common(table)
        acc -= directions.T @ (directions @ acc)
        norm = float(np.linalg.norm(acc))
        return acc / norm if norm > 0.0 else acc

    def _common(self, table: WordTable) -> npt.NDArray[np.float32]:
        with self._lock:
            if self._directions is None:
                self._directions = common_directions(table, self.config.common_directions)
            return self._directions

    def _vector(self, text: str) -> list[float]:
        hashed = self._hashing.array(text).astype(np.float32)
        joined = np.concatenate([hashed, self._scale * self.meaning(text)])
        norm = float(np.linalg.norm(joined))
        return cast(list[float], (joined / norm if norm > 0.0 else joined).tolist())
