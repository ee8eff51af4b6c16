"""The hashing embedder, the embedder registry and the unstructured-track errors.

The sentence-transformers test skips (``pytest.importorskip``) unless the
optional extra is installed; it never downloads a model.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from policies.errors import ConfigurationError, InvalidText, StoreUnavailable
from unstructured_memory.embedders import (
    DEFAULT_EMBEDDER,
    EMBEDDERS,
    Embedder,
    HashingEmbedder,
    HashingEmbedderConfig,
    create_embedder,
)
from unstructured_memory.errors import (
    EmbedderError,
    EmbedderUnavailable,
    EmbeddingDimensionMismatch,
)

REPO = Path(__file__).resolve().parents[1]
SAMPLES = [
    "退款什么时候到账",
    "I went to a LGBTQ support group yesterday",
    "订单 88231 的 refund 还没到账 😡",
    "👍",
]


def _cos(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b))


@pytest.fixture(scope="module")
def embedder() -> HashingEmbedder:
    return HashingEmbedder()


def test_default_name_and_dimensions(embedder: HashingEmbedder) -> None:
    assert embedder.name == "hashing-v1-1024"
    assert embedder.dimensions == 1024
    assert isinstance(embedder, Embedder)


def test_deterministic_across_processes(embedder: HashingEmbedder) -> None:
    code = (
        "import json, sys\n"
        "from unstructured_memory.embedders import HashingEmbedder\n"
        "print(json.dumps(HashingEmbedder().embed_documents(json.loads(sys.argv[1]))))\n"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", code, json.dumps(SAMPLES)],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PATH": ""},
        ).stdout
        for seed in ("1", "2")
    ]
    assert runs[0] == runs[1]
    assert json.loads(runs[0]) == embedder.embed_documents(SAMPLES)


@pytest.mark.parametrize("text", SAMPLES)
def test_unit_length(embedder: HashingEmbedder, text: str) -> None:
    vector = embedder.embed_query(text)
    assert len(vector) == embedder.dimensions
    assert math.isclose(float(np.linalg.norm(vector)), 1.0, rel_tol=1e-9)


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_empty_text_is_refused(embedder: HashingEmbedder, text: str) -> None:
    with pytest.raises(InvalidText):
        embedder.embed_query(text)
    with pytest.raises(InvalidText):
        embedder.embed_documents(["ok", text])


def test_punctuation_only_is_the_zero_vector(embedder: HashingEmbedder) -> None:
    assert not any(embedder.embed_query("...!?，。"))


def test_no_texts_no_vectors(embedder: HashingEmbedder) -> None:
    assert embedder.embed_documents([]) == []


def test_chinese_similarity(embedder: HashingEmbedder) -> None:
    query, refund, shopping = embedder.embed_documents(
        ["退款什么时候到账", "退款 RF20260629001 预计 1-3 个工作日到账", "我想买一台扫地机器人"]
    )
    assert _cos(query, refund) > _cos(query, shopping) + 0.2


def test_english_inflections_match(embedder: HashingEmbedder) -> None:
    query, doc, other = embedder.embed_documents(
        ["When did she paint the sunrise?", "Melanie: I painted that lake sunrise", "Nice dog!"]
    )
    assert _cos(query, doc) > _cos(query, other) + 0.2


def test_mixed_and_emoji(embedder: HashingEmbedder) -> None:
    mixed, english, emoji = embedder.embed_documents(
        ["我的 iPhone 15 屏幕碎了 😭", "my iphone screen is broken", "😭"]
    )
    assert _cos(mixed, english) > 0.1
    assert _cos(mixed, emoji) > 0.0


def test_settings_change_the_name() -> None:
    assert HashingEmbedder(HashingEmbedderConfig(dimensions=512)).name == "hashing-v1-512"
    tuned = HashingEmbedder(HashingEmbedderConfig(char_weight=0.2))
    assert tuned.name.startswith("hashing-v1-1024-")
    assert tuned.name != HashingEmbedder().name


def test_registry_default_is_hashing() -> None:
    assert DEFAULT_EMBEDDER in EMBEDDERS
    made = create_embedder("hashing", {"dimensions": 256})
    assert made.dimensions == 256
    assert len(made.embed_query("hello")) == 256


def test_registry_unknown_name_lists_known() -> None:
    with pytest.raises(ConfigurationError) as info:
        create_embedder("word2vec", {})
    for name in ("hashing", "openai", "sentence-transformers"):
        assert name in info.value.message


@pytest.mark.parametrize(
    ("name", "config"),
    [
        ("hashing", {"dimensions": "many"}),
        ("hashing", {"colour": "blue"}),
        ("openai", {"base_url": "http://127.0.0.1:1/v1"}),
        ("sentence-transformers", {}),
    ],
)
def test_registry_bad_config(name: str, config: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError, match="invalid config"):
        create_embedder(name, config)


def test_sentence_transformers_missing_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"sentence-transformers|not found"):
        create_embedder("sentence-transformers", {"model_path": str(tmp_path / "nope")})


def test_sentence_transformers_local_model() -> None:
    """Runs only with the optional extra and a model in $DUALTRACK_ST_MODEL."""
    pytest.importorskip("sentence_transformers")
    import os

    path = os.environ.get("DUALTRACK_ST_MODEL")
    if not path:
        pytest.skip("set DUALTRACK_ST_MODEL to a local sentence-transformers model")
    made = create_embedder("sentence-transformers", {"model_path": path, "device": "cpu"})
    vector = made.embed_query("退款什么时候到账")
    assert len(vector) == made.dimensions
    assert math.isclose(float(np.linalg.norm(vector)), 1.0, rel_tol=1e-5)


def test_error_classes() -> None:
    assert issubclass(EmbedderUnavailable, StoreUnavailable)
    assert EmbedderUnavailable.http_status == 503
    assert EmbedderError.code == "embedder_error"
    err = EmbeddingDimensionMismatch(stored=768, configured=1024, embedder="hashing-v1-1024")
    assert isinstance(err, ConfigurationError)
    assert "768" in err.message
    assert "1024" in err.message
    # the command that moves stored vectors to the configured embedder; `reindex` only
    # copies the stored vectors into the index
    assert "dualtrack reembed" in err.message
    assert "dualtrack reindex" not in err.message
    assert err.to_dict()["code"] == "embedding_dimension_mismatch"
