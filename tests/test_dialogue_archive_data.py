"""The harder dialogue tuning set, ``benchmarks/data/dialogue_archive.jsonl``, is well formed:
every memory in both languages under a unique id, every dialogue a user / assistant
exchange ending with the user's turn and labelled with memories of its own user, written
before it (no database needed)."""

from __future__ import annotations

import json
from collections import Counter
from datetime import date
from itertools import pairwise
from typing import Any

import pytest

from benchmarks.dialogue_recall import ARCHIVE, load_archive

SCENES = {"活动类", "喜好类", "情绪类", "物品类", "其他类"}


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    lines = ARCHIVE.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def _memories(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r["type"] == "memory"]


def _dialogues(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r["type"] == "dialogue"]


def test_the_file_holds_users_memories_and_dialogues_only(rows: list[dict[str, Any]]) -> None:
    assert rows[0]["type"] == "users"
    assert {r["type"] for r in rows[1:]} == {"memory", "dialogue"}
    names = rows[0]["names"]
    assert len(names) == 4
    assert all(n["zh"] and n["en"] for n in names.values())
    assert rows[0]["assistant"] == {"zh": "助手", "en": "Assistant"}


def test_ids_are_unique(rows: list[dict[str, Any]]) -> None:
    ids = Counter(r["id"] for r in rows[1:])
    assert [i for i, n in ids.items() if n > 1] == []


def test_every_memory_has_both_languages_a_scene_a_date_and_its_user_by_name(
    rows: list[dict[str, Any]],
) -> None:
    names = rows[0]["names"]
    for m in _memories(rows):
        assert m["user"] in names, m["id"]
        assert m["scene"] in SCENES, m["id"]
        date.fromisoformat(m["time"])
        for lang in ("zh", "en"):
            assert m[lang].strip(), (m["id"], lang)
            assert names[m["user"]][lang] in m[lang], (m["id"], lang)  # third person, named


def test_each_archive_spans_years_with_100_to_130_memories(rows: list[dict[str, Any]]) -> None:
    by_user: dict[str, list[date]] = {}
    for m in _memories(rows):
        by_user.setdefault(m["user"], []).append(date.fromisoformat(m["time"]))
    assert set(by_user) == set(rows[0]["names"])
    for user, days in by_user.items():
        assert 100 <= len(days) <= 130, user
        assert (max(days) - min(days)).days >= 2 * 365, user
        assert {m["scene"] for m in _memories(rows) if m["user"] == user} == SCENES


def test_every_dialogue_alternates_and_ends_with_the_user(rows: list[dict[str, Any]]) -> None:
    for d in _dialogues(rows):
        zh, en = d["zh"], d["en"]
        assert 4 <= len(zh) <= 14, d["id"]
        assert [role for role, _ in zh] == [role for role, _ in en], d["id"]
        roles = [role for role, _ in zh]
        assert set(roles) <= {"user", "assistant"}, d["id"]
        assert all(a != b for a, b in pairwise(roles)), d["id"]
        assert roles[-1] == "user", d["id"]
        assert all(text.strip() for _, text in zh + en), d["id"]


def test_every_label_is_a_memory_of_the_dialogues_user_written_before_it(
    rows: list[dict[str, Any]],
) -> None:
    memories = {m["id"]: m for m in _memories(rows)}
    for d in _dialogues(rows):
        assert 1 <= len(d["relevant"]) <= 3, d["id"]
        assert len(set(d["relevant"])) == len(d["relevant"]), d["id"]
        for entry in d["relevant"]:
            assert entry in memories, (d["id"], entry)
            assert memories[entry]["user"] == d["user"], (d["id"], entry)
            assert memories[entry]["time"] < d["time"], (d["id"], entry)
        assert d["cue"] in {"last", "spread", "earlier"}, d["id"]


def test_the_dialogues_are_many_and_varied(rows: list[dict[str, Any]]) -> None:
    dialogues = _dialogues(rows)
    assert len(dialogues) >= 70
    assert min(Counter(d["user"] for d in dialogues).values()) >= 15
    lengths = Counter(
        "short" if len(d["zh"]) <= 6 else "medium" if len(d["zh"]) <= 10 else "long"
        for d in dialogues
    )
    assert min(lengths.values()) >= len(dialogues) // 4, lengths
    cues = Counter(d["cue"] for d in dialogues)
    assert cues["earlier"] >= len(dialogues) // 4, cues
    assert cues["last"] >= len(dialogues) // 5, cues


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_benchmark_loads_every_dialogue_in_each_language(
    rows: list[dict[str, Any]], lang: str
) -> None:
    dset = load_archive(lang)
    assert dset.name == "own-archive"
    assert len(dset.entries) == len(_memories(rows))
    assert len(dset.questions) == len(_dialogues(rows))
    names = {n[lang] for n in rows[0]["names"].values()}
    for q in dset.questions:
        assert q.user_turn == len(q.turns) - 1
        assert q.turns[q.user_turn][0] in names
