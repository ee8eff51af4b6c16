"""The default offline embedder: signed feature hashing, no model to download.

Features of a text, each family L2-normalised on its own and then weighted:

* ``w`` — words from :func:`~unstructured_memory.tokenize.tokens` (jieba for
  Chinese), Latin words lightly stemmed, stop words down-weighted;
* ``c`` — character 3- to 5-grams of each Latin word with ``<``/``>`` boundary
  markers (spelling and inflection variants still overlap);
* ``z`` — character bigrams and trigrams of each run of CJK characters (robust
  to jieba cutting a word differently in query and document);
* ``s`` — symbol characters such as emoji.

Counts are sublinear (``1 + ln tf``). A feature's slot and sign come from a
keyed BLAKE2b digest, so vectors are identical across processes and machines
(Python's ``hash()`` is salted per process). The result is L2-normalised; a
text with no feature at all (only punctuation) embeds to the zero vector.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import cast

import numpy as np
import numpy.typing as npt

from unstructured_memory.embedders.base import ensure_texts
from unstructured_memory.embedders.registry import HashingEmbedderConfig
from unstructured_memory.tokenize import STOP_WORDS as _STOP
from unstructured_memory.tokenize import stem as _stem
from unstructured_memory.tokenize import tokens

__all__ = ["HashingEmbedder", "HashingEmbedderConfig"]

_VERSION = "hashing-v1"
_KEY = b"dualtrack/hashing-v1"

_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]+")


_DEFAULT = HashingEmbedderConfig()


@lru_cache(maxsize=1 << 20)
def _slot(feature: str, dimensions: int) -> int:
    """Signed slot of a feature: ``+(i + 1)`` or ``-(i + 1)`` for index ``i``."""
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8, key=_KEY).digest()
    h = int.from_bytes(digest, "little")
    index = (h >> 1) % dimensions
    return index + 1 if h & 1 else -(index + 1)


def _as_list(vector: npt.NDArray[np.float64]) -> list[float]:
    return cast(list[float], vector.tolist())


class HashingEmbedder:
    """Deterministic, dependency-free embedder for Chinese and English text."""

    def __init__(self, config: HashingEmbedderConfig | None = None) -> None:
        self.config = config or _DEFAULT
        if self.config.char_ngram_min > self.config.char_ngram_max:
            from policies.errors import ConfigurationError

            raise ConfigurationError("char_ngram_min must not exceed char_ngram_max")
        self._name = f"{_VERSION}-{self.config.dimensions}"
        tuned = self.config.model_dump(exclude={"dimensions"})
        if tuned != _DEFAULT.model_dump(exclude={"dimensions"}):
            blob = repr(sorted(tuned.items())).encode()
            self._name += "-" + hashlib.blake2b(blob, digest_size=4).hexdigest()

    @property
    def name(self) -> str:
        """``hashing-v1-<dimensions>``, plus a settings digest if not the defaults."""
        return self._name

    @property
    def dimensions(self) -> int:
        """The configured vector length."""
        return self.config.dimensions

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors of ``texts``; see :class:`~unstructured_memory.embedders.base.Embedder`."""
        ensure_texts(texts)
        return [_as_list(self._vector(t)) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """The vector of ``text`` (queries and documents embed the same way)."""
        ensure_texts([text])
        return _as_list(self._vector(text))

    def array(self, text: str) -> npt.NDArray[np.float64]:
        """The vector of ``text`` as a numpy array (no check of the text)."""
        return self._vector(text)

    def features(self, text: str) -> dict[str, float]:
        """Weighted features of ``text`` before hashing, keyed ``family:feature``."""
        cfg = self.config
        words, chars, stop_words = self._latin_and_words(text)
        normalised = unicodedata.normalize("NFKC", text)
        cjk: Counter[str] = Counter()
        for run in _CJK_RUN.findall(normalised):
            for n in (2, 3):
                cjk.update(run[i : i + n] for i in range(len(run) - n + 1))
            if len(run) == 1:
                cjk[run] += 1
        symbols = Counter(ch for ch in normalised if unicodedata.category(ch) == "So")

        out: dict[str, float] = {}
        for family, counts, weight in (
            ("w", words, cfg.word_weight),
            ("c", chars, cfg.char_weight),
            ("z", cjk, cfg.cjk_weight),
            ("s", symbols, cfg.symbol_weight),
        ):
            if not counts or weight == 0.0:
                continue
            raw = {f: 1.0 + math.log(tf) for f, tf in counts.items()}
            if family == "w":
                for f in stop_words:
                    raw[f] *= cfg.stopword_weight
            norm = math.sqrt(sum(v * v for v in raw.values()))
            if norm == 0.0:
                continue
            for f, v in raw.items():
                out[f"{family}:{f}"] = weight * v / norm
        return out

    def _latin_and_words(self, text: str) -> tuple[Counter[str], Counter[str], set[str]]:
        """Word counts, Latin char n-gram counts and the stop words seen in ``text``."""
        cfg = self.config
        words: Counter[str] = Counter()
        chars: Counter[str] = Counter()
        stop_words: set[str] = set()
        for tok in tokens(text):
            if tok in _STOP:
                stop_words.add(tok)
                words[tok] += 1
            elif tok.isalpha() and not _CJK_RUN.search(tok):
                words[_stem(tok) if cfg.stem else tok] += 1
                marked = f"<{tok}>"
                for n in range(cfg.char_ngram_min, cfg.char_ngram_max + 1):
                    chars.update(marked[i : i + n] for i in range(len(marked) - n + 1))
            else:
                words[tok] += 1
        return words, chars, stop_words

    def _vector(self, text: str) -> npt.NDArray[np.float64]:
        dim = self.config.dimensions
        feats = self.features(text)
        vec = np.zeros(dim, dtype=np.float64)
        if not feats:
            return vec
        slots = np.fromiter((_slot(f, dim) for f in feats), dtype=np.int64, count=len(feats))
        weights = np.fromiter(feats.values(), dtype=np.float64, count=len(feats))
        np.add.at(vec, np.abs(slots) - 1, np.sign(slots) * weights)
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm > 0.0 else vec
