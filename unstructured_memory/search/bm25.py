"""Okapi BM25 over pre-tokenised documents, as Lucene and Weaviate score it.

``score(q, d) = sum over distinct query terms t of
idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))`` with
``idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))`` (never negative). Tokens
come from :func:`unstructured_memory.tokenize.tokens` on both sides. Used by the
in-memory evaluation and by any backend that scores keywords itself.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["BM25Index", "bm25_idf"]


def bm25_idf(n_docs: int, doc_freq: int) -> float:
    """Lucene's BM25 idf: ``ln(1 + (N - df + 0.5) / (df + 0.5))``."""
    return math.log(1.0 + (n_docs - doc_freq + 0.5) / (doc_freq + 0.5))


class BM25Index:
    """An immutable inverted index with BM25 scoring of token lists.

    ``docs[i]`` is the token list of document ``i``; results refer to documents
    by that position. Raises ``ValueError`` for ``k1 < 0`` or ``b`` outside [0, 1].
    """

    def __init__(self, docs: Sequence[Sequence[str]], *, k1: float = 1.2, b: float = 0.75) -> None:
        if k1 < 0.0 or not 0.0 <= b <= 1.0:
            raise ValueError(f"need k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}")
        self.k1 = k1
        self.b = b
        self.n_docs = len(docs)
        lengths = np.fromiter((len(d) for d in docs), dtype=np.float64, count=len(docs))
        self._lengths = lengths
        avgdl = float(lengths.mean()) if len(docs) and lengths.sum() > 0 else 1.0
        self._norm = k1 * (1.0 - b + b * lengths / avgdl)
        postings: dict[str, tuple[list[int], list[int]]] = {}
        for i, doc in enumerate(docs):
            for term, tf in Counter(doc).items():
                ids, tfs = postings.setdefault(term, ([], []))
                ids.append(i)
                tfs.append(tf)
        self._postings = {
            term: (np.asarray(ids, dtype=np.int64), np.asarray(tfs, dtype=np.float64))
            for term, (ids, tfs) in postings.items()
        }

    def idf(self, term: str) -> float:
        """Inverse document frequency of ``term`` (the maximum for an unseen term)."""
        ids = self._postings.get(term)
        return bm25_idf(self.n_docs, 0 if ids is None else len(ids[0]))

    def scores(self, query: Iterable[str]) -> npt.NDArray[np.float64]:
        """BM25 score of every document for the distinct terms of ``query``."""
        out = np.zeros(self.n_docs, dtype=np.float64)
        for term in dict.fromkeys(query):
            posting = self._postings.get(term)
            if posting is None:
                continue
            ids, tfs = posting
            idf = bm25_idf(self.n_docs, len(ids))
            out[ids] += idf * tfs * (self.k1 + 1.0) / (tfs + self._norm[ids])
        return out

    def top_k(self, query: Iterable[str], k: int) -> list[tuple[int, float]]:
        """Up to ``k`` ``(doc, score)`` pairs with a positive score, best first.

        Ties are broken by document position, so results are deterministic.
        """
        scores = self.scores(query)
        hits = np.flatnonzero(scores > 0.0)
        order = hits[np.lexsort((hits, -scores[hits]))][:k]
        return [(int(i), float(scores[i])) for i in order]
