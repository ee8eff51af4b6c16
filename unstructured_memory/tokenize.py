"""Word segmentation shared by the summariser, the embedders and the indexes.

jieba segments Chinese; Latin text is split on word boundaries and
lower-cased. A product/brand user dictionary ships with the package
(``data/userdict.txt``) and more can be loaded from configuration. One
process-wide tokenizer is built lazily under a lock (jieba's own global
initialisation is not thread-safe), its prefix cache kept under the system
temp dir by jieba itself.
"""

from __future__ import annotations

import itertools
import logging
import re
import threading
import unicodedata
from functools import lru_cache
from importlib import resources
from pathlib import Path

import jieba

from policies.linear_re import LinearPattern

__all__ = ["MAX_TOKEN_CHARS", "index_text", "load_user_dict", "segment", "tokens"]

_log = logging.getLogger(__name__)
jieba.setLogLevel(logging.WARNING)  # spaCy's zh pipeline warms up jieba's global tokenizer
_lock = threading.Lock()
_state: dict[str, jieba.Tokenizer] = {}
_extra_dicts: list[Path] = []

_WORD_RE = re.compile(r"\w", re.UNICODE)

_MAX_RUN = 200
"""Longest run of characters jieba segments in one go (see :func:`_lcut`)."""
_LONG_RUN = LinearPattern(rf"[\u4e00-\u9fd5a-zA-Z0-9+#&._%\-]{{{_MAX_RUN}}}")
"""jieba's own block characters (``jieba.re_han_default``): it cuts at every other one."""

MAX_TOKEN_CHARS = 64
"""Longer tokens (a pasted hash, a run of one letter) are not indexed."""

_CACHED_TEXTS = 1024
"""Texts whose tokens are kept (least recently used dropped). A write tokenises its
masked text twice (keyword index, hashing embedder): a hit costs 0.4 µs where
jieba takes 0.5 ms for 200 characters. At most 4096 characters each, so a few
tens of MB at worst."""


def _load(tk: jieba.Tokenizer, path: Path) -> None:
    with path.open("rb") as fh:  # jieba leaves a path it opened itself unclosed
        tk.load_userdict(fh)


def _build() -> jieba.Tokenizer:
    tk = jieba.Tokenizer()
    tk.initialize()
    shipped = resources.files("unstructured_memory").joinpath("data/userdict.txt")
    with resources.as_file(shipped) as path:
        if path.exists():
            _load(tk, path)
    for extra in _extra_dicts:
        _load(tk, extra)
    return tk


def _get() -> jieba.Tokenizer:
    tk = _state.get("tokenizer")
    if tk is None:
        with _lock:
            tk = _state.get("tokenizer")
            if tk is None:
                tk = _state["tokenizer"] = _build()
    return tk


def load_user_dict(path: Path) -> None:
    """Add a jieba user dictionary (``word [freq] [tag]`` per line) to the tokenizer."""
    if not path.is_file():
        from policies.errors import ConfigurationError

        raise ConfigurationError(f"jieba user dictionary not found: {path}")
    with _lock:
        _extra_dicts.append(path)
        if "tokenizer" in _state:
            _load(_state["tokenizer"], path)
    _cached_tokens.cache_clear()


def _lcut(text: str) -> list[str]:
    """jieba's segmentation of ``text``, in linear time.

    jieba's HMM is quadratic in the length of a run of characters it has no
    word for (2 s for 20,000 times 市), so a run of its block characters is cut
    every :data:`_MAX_RUN` characters; ordinary text never has such runs and is
    segmented as a whole would be.
    """
    tk = _get()
    ends = (end for _, end in _LONG_RUN.spans(text)) if len(text) > _MAX_RUN else ()
    cuts = [0, *ends, len(text)]
    return [t for a, b in itertools.pairwise(cuts) for t in tk.lcut(text[a:b])]


def segment(text: str) -> list[str]:
    """jieba's segmentation of ``text``, whitespace tokens dropped, case kept."""
    return [t for t in _lcut(text) if t.strip()]


@lru_cache(maxsize=_CACHED_TEXTS)
def _cached_tokens(text: str) -> tuple[str, ...]:
    out: list[str] = []
    for raw in _lcut(unicodedata.normalize("NFKC", text)):
        tok = raw.strip().lower()
        if tok and len(tok) <= MAX_TOKEN_CHARS and _WORD_RE.search(tok):
            out.append(tok)
    return tuple(out)


def tokens(text: str) -> list[str]:
    """Lower-cased, NFKC-normalised word tokens of ``text``; punctuation and
    tokens over :data:`MAX_TOKEN_CHARS` dropped.

    This is the one tokenisation used for keyword indexing and for queries, so
    that both sides of a keyword match agree.
    """
    if len(text) > 4096:
        return list(_cached_tokens.__wrapped__(text))
    return list(_cached_tokens(text))


def index_text(text: str) -> str:
    """``tokens(text)`` joined by single spaces: what keyword indexes store."""
    return " ".join(tokens(text))
