"""Session-aware re-ranking of search candidates (pure functions, no I/O).

An index ranks each memory alone. In a conversation the answer to a question
often spans several turns of one session, and a turn whose session matches the
query as a whole is a better bet than an isolated near-match. :func:`rerank`
adds to each candidate's score:

- a *session prior*: ``session_weight`` times the sum of the ``session_top``
  best scores of its session among the candidates, divided by ``session_top``
  (so one lone match earns little);
- a *topic* term: ``topic_weight`` times the share of the query's topic terms
  (its keyword terms without stop words and speaker names, each weighted by
  how rare it is among the candidates) found in the memory's own text. A
  contextually indexed turn also matches through its neighbours' words; this
  tells the turn that says it from the turns next to it;
- a *speaker boost* where the memory records who spoke it
  (``metadata["speaker"]``) and the query names that speaker: ``speaker_boost``,
  times ``off_topic_speaker`` for a memory holding none of the topic terms while
  others do (the named person's small talk);
- a *length* term: ``length_weight`` times where the memory's length lies
  between ``length_floor`` (nothing) and ``length_words`` words (in full; see
  :func:`words`): a turn that tells something ("I'm keen on counseling or
  working in mental health") is a better bet than a two-word reply ("Wow,
  cool!") with the same match. Up to the floor length says nothing: a short
  fact ("想买车载冰箱，自驾游用") is complete;

and subtracts ``question_penalty`` from a memory that ends with a question mark
(it asks rather than tells). Scores are taken relative to the best candidate,
so the same weights fit relative-score and reciprocal-rank fusion; the results
are scaled so the first keeps the best score given.

Tuned on the LoCoMo tuning split (conv-26, -30, -41, -42, -43) only; see
``benchmarks/locomo.py``. Through the SDK (hybrid, hashing embedder), the topic
term, the gated speaker boost and the question penalty took tuning recall@10 /
MRR from 78.3 / 58.9 to 78.7 / 61.3 and multi-hop recall@10 from 41.1 to 45.8;
the length term took them to 79.5 / 62.5 (held-out 75.9 / 59.9 -> 76.7 / 60.9,
open-domain 36.5 -> 40.5). Its weight and words were picked on a grid over the
tuning split's recall@10 (a plateau from 0.25 to 0.4 and 30 to 50 words); the
floor (flat on the tuning split from 0 to 10 words) keeps the Chinese set's short
facts in the order of their match (without it zh-hard hybrid recall@10 88.1 -> 87.7).
"""

from __future__ import annotations

import heapq
import math
import re
import unicodedata
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from unstructured_memory.tokenize import STOP_WORDS, is_bigram, keyword_terms, query_terms

__all__ = ["DEFAULT_RERANK", "SPEAKER_KEY", "Candidate", "RerankConfig", "names", "rerank", "words"]

K = TypeVar("K", bound=Hashable)

SPEAKER_KEY = "speaker"
"""The metadata key naming who said a memory (a person, or a role such as ``客服``)."""


@dataclass(frozen=True, slots=True)
class RerankConfig:
    """Weights of the re-ranking and how many candidates it looks at."""

    depth: int = 30
    """Candidates taken from the index (at least the caller's ``limit``)."""
    session_weight: float = 0.6
    session_top: int = 4
    speaker_boost: float = 0.6
    off_topic_speaker: float = 0.5
    """Share of ``speaker_boost`` for a memory holding none of the query's topic terms."""
    topic_weight: float = 0.3
    question_penalty: float = 0.2
    length_weight: float = 0.3
    """Added in full to a memory of at least ``length_words`` words, nothing up to
    ``length_floor`` words, in proportion between."""
    length_floor: int = 10
    length_words: int = 50


DEFAULT_RERANK = RerankConfig()


@dataclass(frozen=True, slots=True)
class Candidate(Generic[K]):
    """One index hit as the re-ranking sees it: its score, session, speaker and own text."""

    key: K
    score: float
    session: str | None = None
    speaker: str | None = None
    text: str = ""


_ASCII_WORD = "A-Za-z0-9"
_QUESTION_MARKS = ("?", "？")
_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_CHAR = re.compile(rf"[{_CJK}]")
_WORD_RUN = re.compile(rf"[^\W{_CJK}]+")


def words(text: str) -> float:
    """About how many words ``text`` holds: half a word per CJK character (a Chinese word
    is about two characters long) plus its other words: the whitespace-separated pieces
    of an ASCII text (the common case, and ten times cheaper), else the runs of letters
    and digits outside CJK."""
    if text.isascii():
        return len(text.split())
    return len(_WORD_RUN.findall(text)) + len(_CJK_CHAR.findall(text)) / 2


def names(query: str, speaker: str) -> bool:
    """Whether ``query`` names ``speaker``: case-insensitive, as a whole word for
    Latin letters and digits (``Al`` is not in ``also``), as a substring between
    CJK characters (``张伟`` in ``张伟说的退款``)."""
    name = speaker.strip()
    if not name:
        return False
    pattern = rf"(?<![{_ASCII_WORD}]){re.escape(name)}(?![{_ASCII_WORD}])"
    return re.search(pattern, query, flags=re.IGNORECASE) is not None


def _topic_terms(
    terms: Sequence[str], speakers: set[str], weights: Sequence[float] = ()
) -> dict[str, float]:
    """The query's terms that carry its topic, with their weights (default 1): no stop
    words, no speaker's name, no character bigram (a topic term is held as a word)."""
    spoken = {t for s in speakers for t in keyword_terms(s)}
    out: dict[str, float] = {}
    for i, t in enumerate(terms):
        if t in STOP_WORDS or t in spoken or is_bigram(t):
            continue
        w = weights[i] if i < len(weights) else 1.0
        if w > out.get(t, 0.0):
            out[t] = w
    return out


def _holds(text: str, term: str) -> bool:
    """Whether lower-cased ``text`` holds ``term``: a Latin term (a stem) at the start
    of a word (``paint`` in ``painting``, not ``car`` in ``scary``), any other anywhere."""
    at = text.find(term)
    if not term.isascii():
        return at >= 0
    while at >= 0:
        if at == 0 or not (text[at - 1].isascii() and text[at - 1].isalnum()):
            return True
        at = text.find(term, at + 1)
    return False


def _coverage(terms: dict[str, float], texts: Sequence[str]) -> list[float]:
    """Per text, the share of ``terms`` it holds (see :func:`_holds`), each term weighted
    by its rarity among ``texts`` (``log(1 + n / df)``) times its own weight."""
    lowered = [unicodedata.normalize("NFKC", t).lower() for t in texts]  # as terms are
    n = len(texts)
    share = [0.0] * n
    total = 0.0
    for term, own in terms.items():
        held = [i for i, t in enumerate(lowered) if _holds(t, term)]
        if held:
            weight = own * math.log(1.0 + n / len(held))
            total += weight
            for i in held:
                share[i] += weight
    return [s / total for s in share] if total else share


def _length_share(text: str, config: RerankConfig) -> float:
    """Where ``text``'s length lies from ``length_floor`` (0) to ``length_words`` (1) words."""
    span = max(config.length_words - config.length_floor, 1)
    return min(max((words(text) - config.length_floor) / span, 0.0), 1.0)


def rerank(
    query: str,
    candidates: Sequence[Candidate[K]],
    config: RerankConfig = DEFAULT_RERANK,
    *,
    terms: Sequence[str] | None = None,
    weights: Sequence[float] = (),
) -> list[tuple[K, float]]:
    """``(key, score)`` of ``candidates``, best first, after the session prior, the
    topic term, the speaker boost and the question penalty; ties keep the given
    order and scores stay in ``[0, best score given]``. ``terms`` are the query's
    keyword terms (default ``query_terms(query)``), ``weights`` theirs (default 1). A
    candidate without a session forms a session of its own."""
    if not candidates:
        return []
    best = max(c.score for c in candidates)
    if best <= 0.0:
        return [(c.key, c.score) for c in candidates]
    relative = [c.score / best for c in candidates]
    sessions = [c.session if c.session is not None else ("#", i) for i, c in enumerate(candidates)]
    by_session: dict[object, list[float]] = {}
    for session, s in zip(sessions, relative, strict=True):
        by_session.setdefault(session, []).append(s)
    top = max(config.session_top, 1)
    prior = {key: sum(heapq.nlargest(top, scores)) / top for key, scores in by_session.items()}
    speakers = {c.speaker for c in candidates if c.speaker}
    topic = _topic_terms(query_terms(query) if terms is None else terms, speakers, weights)
    coverage = _coverage(topic, [c.text for c in candidates])
    on_topic_somewhere = any(coverage)
    named = {s: names(query, s) for s in speakers} if config.speaker_boost else {}
    scored: list[tuple[float, int, K]] = []
    for i, (c, s) in enumerate(zip(candidates, relative, strict=True)):
        value = s + config.session_weight * prior[sessions[i]] + config.topic_weight * coverage[i]
        if c.speaker and named.get(c.speaker):
            on_topic = coverage[i] > 0.0 or not on_topic_somewhere
            value += config.speaker_boost * (1.0 if on_topic else config.off_topic_speaker)
        if c.text.rstrip().endswith(_QUESTION_MARKS):
            value -= config.question_penalty
        if config.length_weight:
            value += config.length_weight * _length_share(c.text, config)
        scored.append((-value, i, c.key))
    scored.sort(key=lambda t: (t[0], t[1]))
    first = -scored[0][0]
    scale = best / first if first > 0.0 else 0.0  # the first keeps the best score given
    return [(key, max(-neg * scale, 0.0)) for neg, _, key in scored]
