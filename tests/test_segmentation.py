"""Segmentation: jieba-rs computes it, and it must be jieba's own, token for token.

Stored keyword terms and hashing vectors were made with jieba; a segmenter that
cut one text differently would make a query miss what an older write stored.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.unstructured import Generator
from benchmarks.writes import Mixed
from unstructured_memory import tokenize
from unstructured_memory.tokenize import load_user_dict, segment, tokens

ZH_SET = Path(__file__).parent.parent / "benchmarks" / "data" / "zh_retrieval.jsonl"

# characters where jieba and jieba-rs part ways, beside ordinary Chinese and English
PIECES = [
    "订单号", "手机", "退款", "发货", "到账", "了吗", "京东", "淘宝", "T恤", "U盘", "A股", "QQ号",
    "iPhone", "15", "Pro", "Max", "3.5", "49.00", "50%", "C++", "C#", "e-mail", "a.b.c",
    "example.com", "x_y", "&", "#", "-", ".", "..", "--", " ", "，", "？", "元", "¥", "$",
    "RF2026060180840", "SF1234567890", "user89205@example.com", "双11", "618", "纯棉",
]  # fmt: skip


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _corpus() -> list[str]:
    texts = [m.text for m in Mixed(7, 50).memories(1500)]
    texts += [f.text for f in Generator(11, 50).fragments(500)]
    with ZH_SET.open(encoding="utf-8") as fh:
        for line in fh:
            texts += _strings(json.loads(line))
    return texts


def _jieba(text: str) -> list[str]:
    cut: list[str] = tokenize._get().exact.lcut(text)
    return cut


def test_the_benchmark_corpora_segment_as_jieba_does() -> None:
    texts = _corpus()
    seg = tokenize._get()
    differ = [t for t in texts if tokenize._cut(seg, t) != _jieba(t)]
    assert len(texts) > 2000
    assert differ == []


def test_latin_runs_are_cut_as_jieba_cuts_them() -> None:
    seg = tokenize._get()
    text = "邮箱 user89205@example.com 收不到 e-mail，金额 9747.99 元，C++ 课程 50% off"
    assert seg.fast.cut(text) != _jieba(text)  # jieba-rs alone differs here
    assert tokenize._cut(seg, text) == _jieba(text)
    assert "9747.99" in tokens(text)
    assert "example.com" not in tokens(text)


@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=12).map("".join))
def test_mixed_pieces_segment_as_jieba_does(text: str) -> None:
    assert tokenize._cut(tokenize._get(), text) == _jieba(text)


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=60))
def test_any_text_segments_as_jieba_does(text: str) -> None:
    assert tokenize._cut(tokenize._get(), text) == _jieba(text)


@pytest.fixture
def user_dict(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "words.txt"
    path.write_text("\ufeff星飞帆奶粉 30000 n\n云朵软糯抱枕\n", encoding="utf-8")
    yield path
    if path in tokenize._extra_dicts:
        tokenize._extra_dicts.remove(path)
    tokenize._state.clear()
    tokenize._cached_tokens.cache_clear()
    tokenize._cached_segment.cache_clear()


def test_a_loaded_user_dictionary_reaches_both_segmenters(user_dict: Path) -> None:
    text = "给宝宝买的星飞帆奶粉和云朵软糯抱枕都到了"
    before = segment(text)
    assert "星飞帆奶粉" not in before
    load_user_dict(user_dict)
    after = segment(text)
    assert "星飞帆奶粉" in after
    assert "云朵软糯抱枕" in after
    assert after == [t for t in _jieba(text) if t.strip()]
