"""BM25 scoring, score fusion and the search presets (pure functions, no I/O)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from unstructured_memory.search import (
    HYBRID_DEFAULT,
    KEYWORD_ONLY,
    PRESETS,
    VECTOR_ONLY,
    BM25Index,
    Fusion,
    SearchConfig,
    ranked_fusion,
    relative_score_fusion,
)
from unstructured_memory.search.bm25 import bm25_idf
from unstructured_memory.search.fusion import min_max_normalise
from unstructured_memory.tokenize import tokens

DOCS = [
    tokens("退款 RF20260629001 预计 1-3 个工作日到账"),
    tokens("我想买一台扫地机器人"),
    tokens("refund refund refund for order 88231"),
    tokens("the order shipped yesterday"),
]


def test_bm25_matches_the_formula() -> None:
    index = BM25Index(DOCS, k1=1.2, b=0.75)
    avgdl = sum(map(len, DOCS)) / len(DOCS)
    tf, dl, df = 3, len(DOCS[2]), 1
    expected = bm25_idf(4, df) * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl))
    assert math.isclose(index.scores(["refund"])[2], expected)
    assert index.scores(["refund"])[[0, 1, 3]].tolist() == [0.0, 0.0, 0.0]


def test_bm25_idf_is_lucenes() -> None:
    assert math.isclose(bm25_idf(10, 2), math.log(1 + 8.5 / 2.5))
    assert bm25_idf(10, 10) > 0.0


def test_bm25_top_k_and_repeated_query_terms() -> None:
    index = BM25Index(DOCS)
    assert [i for i, _ in index.top_k(tokens("退款到账"), 10)] == [0]
    assert index.top_k(["order", "order"], 10) == index.top_k(["order"], 10)
    assert index.top_k(["nothing"], 10) == []
    assert len(index.top_k(["order"], 1)) == 1


def test_bm25_rejects_bad_parameters() -> None:
    with pytest.raises(ValueError, match="k1"):
        BM25Index(DOCS, k1=-1.0)
    with pytest.raises(ValueError, match="b="):
        BM25Index(DOCS, b=1.5)


def test_bm25_empty_corpus() -> None:
    assert BM25Index([]).top_k(["x"], 5) == []


def test_min_max_normalise() -> None:
    assert min_max_normalise([("a", 3.0), ("b", 1.0), ("c", 2.0)]) == {"a": 1.0, "b": 0.0, "c": 0.5}
    assert min_max_normalise([("a", 0.4), ("b", 0.4)]) == {"a": 1.0, "b": 1.0}
    assert min_max_normalise([]) == {}


def test_relative_score_fusion_weights_and_missing() -> None:
    vector = [("a", 0.9), ("b", 0.5), ("c", 0.1)]
    keyword = [("c", 12.0), ("d", 2.0)]
    fused = dict(relative_score_fusion(vector, keyword, alpha=0.75, limit=10))
    assert fused == pytest.approx({"a": 0.75, "b": 0.375, "c": 0.25, "d": 0.0})


def test_relative_score_fusion_extremes_follow_one_list() -> None:
    vector = [("a", 0.9), ("b", 0.5)]
    keyword = [("b", 5.0), ("a", 1.0)]
    assert [k for k, _ in relative_score_fusion(vector, keyword, alpha=1.0, limit=2)] == ["a", "b"]
    assert [k for k, _ in relative_score_fusion(vector, keyword, alpha=0.0, limit=2)] == ["b", "a"]


def test_ranked_fusion() -> None:
    fused = dict(ranked_fusion([("a", 0.9), ("b", 0.1)], [("b", 3.0)], alpha=0.5, limit=5))
    assert fused == pytest.approx({"a": 0.5 / 60, "b": 0.5 / 61 + 0.5 / 60})


@pytest.mark.parametrize("fuse", [relative_score_fusion, ranked_fusion])
def test_fusion_rejects_bad_alpha(fuse: type) -> None:
    with pytest.raises(ValueError, match="alpha"):
        fuse([], [], alpha=1.5, limit=3)


scored = st.lists(st.tuples(st.integers(0, 20), st.floats(-100, 100, allow_nan=False)), max_size=15)


@given(scored, scored, st.floats(0.0, 1.0), st.integers(0, 30))
def test_relative_score_fusion_properties(
    vector: list[tuple[int, float]],
    keyword: list[tuple[int, float]],
    alpha: float,
    limit: int,
) -> None:
    fused = relative_score_fusion(vector, keyword, alpha=alpha, limit=limit)
    keys = [k for k, _ in fused]
    scores = [s for _, s in fused]
    assert len(keys) == len(set(keys)) == min(limit, len({k for k, _ in vector + keyword}))
    assert scores == sorted(scores, reverse=True)
    assert all(-1e-9 <= s <= 1.0 + 1e-9 for s in scores)
    assert fused == relative_score_fusion(vector, keyword, alpha=alpha, limit=limit)


def test_presets() -> None:
    assert KEYWORD_ONLY.alpha == 0.0
    assert VECTOR_ONLY.alpha == 1.0
    assert 0.0 < HYBRID_DEFAULT.alpha < 1.0
    assert PRESETS["hybrid"] is HYBRID_DEFAULT
    assert Fusion("ranked") is Fusion.RANKED
    with pytest.raises(ValidationError):
        SearchConfig(alpha=1.2, candidates=100, bm25_k1=1.2, bm25_b=0.75)
    with pytest.raises(ValidationError):
        SearchConfig.model_validate({**HYBRID_DEFAULT.model_dump(), "rerank": True})
