"""The LoCoMo dataset as the retrieval benchmarks use it, and their metrics.

Shared by :mod:`benchmarks.locomo_offline` (in-memory reference) and
:mod:`benchmarks.locomo` (the real SDK): one user per conversation, one memory
per turn (``speaker: text`` plus the image caption where present,
``occurred_at`` from the session date, the ``dia_id``, the speaker and the
session key in metadata); every question of categories 1-4 is a query whose relevant
memories are its evidence turns.

The dataset is found at ``$DUALTRACK_LOCOMO_PATH`` or, by default, at
``<checkout>/../shared/datasets/locomo/locomo10.json`` (the ``shared/``
directory beside the repository checkout).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from unstructured_memory.tokenize import keyword_terms, query_terms

__all__ = [
    "CATEGORIES",
    "DATASET",
    "METHODS",
    "METRICS",
    "MRR_DEPTH",
    "TUNING",
    "Conversation",
    "Memory",
    "Query",
    "Ranking",
    "Report",
    "Totals",
    "accumulate",
    "dataset_path",
    "evidence_ids",
    "load",
    "metrics",
    "print_split",
    "summarise",
]

ENV_PATH = "DUALTRACK_LOCOMO_PATH"
DATASET = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "locomo" / "locomo10.json"
"""The default location: ``shared/`` beside the repository checkout."""

TUNING = ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43")
"""Conversations search parameters may be tuned on; the other five are held out."""
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
METRICS = ("recall@5", "recall@10", "recall@25", "hit@10", "mrr")
METHODS = ("keyword", "vector", "hybrid")
MRR_DEPTH = 100

Ranking = list[int]
"""Memory positions of one conversation, best first."""
Totals = dict[str, dict[str, float]]
"""``{category or "overall": {metric: sum, "n": count}}`` while accumulating."""
Report = dict[str, dict[str, dict[str, float]]]
"""``{method: {category or "overall": {metric: percent, "n": count}}}``."""


def dataset_path() -> Path:
    """``$DUALTRACK_LOCOMO_PATH`` if set, else :data:`DATASET`."""
    override = os.environ.get(ENV_PATH)
    return Path(override).expanduser() if override else DATASET


@dataclass(frozen=True)
class Memory:
    """One turn as a memory: its text, session date and metadata."""

    text: str
    occurred_at: datetime
    metadata: dict[str, str]
    session: str


@dataclass(frozen=True)
class Query:
    """One question of categories 1-4 with its (cleaned) evidence turn positions."""

    text: str
    category: int
    evidence: frozenset[int]


@dataclass
class Conversation:
    """A LoCoMo sample: one user's memories and the questions asked about them."""

    sample_id: str
    memories: list[Memory]
    queries: list[Query]
    doc_tokens: list[list[str]] = field(default_factory=list)
    query_tokens: list[list[str]] = field(default_factory=list)


_DIA = re.compile(r"D:?(\d+):0*(\d+)")


def evidence_ids(raw: Iterable[str]) -> set[str]:
    """``dia_id``s in an evidence list, repairing "D8:6; D9:17", "D30:05", "D:11:26"."""
    return {f"D{s}:{t}" for item in raw for s, t in _DIA.findall(item)}


def load(
    path: Path | None = None,
    *,
    context_turns: int = 0,
    date_prefix: bool = False,
    with_tokens: bool = True,
) -> list[Conversation]:
    """Conversations of the dataset; questions left without valid evidence are dropped.

    ``path`` defaults to :func:`dataset_path`. ``context_turns`` and
    ``date_prefix`` select the non-default "contextual" variant: each memory's
    text is preceded by the session date and by up to that many previous turns
    of its session (the retrieval unit is still the turn). ``with_tokens``
    fills ``doc_tokens`` and ``query_tokens`` (the offline evaluation needs them).
    """
    path = dataset_path() if path is None else path
    if not path.is_file():
        raise FileNotFoundError(f"LoCoMo dataset not found at {path}; set ${ENV_PATH}")
    out = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        conv = sample["conversation"]
        memories: list[Memory] = []
        position: dict[str, int] = {}
        n = 1
        while f"session_{n}" in conv:
            key = f"session_{n}"
            when = datetime.strptime(conv[f"{key}_date_time"], "%I:%M %p on %d %B, %Y")
            turns: list[str] = []
            for turn in conv[key]:
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [image: {turn['blip_caption']}]"
                turns.append(text)
                context = turns[max(0, len(turns) - 1 - context_turns) : -1]
                if context:
                    text = " ".join([*context, text])
                if date_prefix:
                    text = f"{when:%d %B %Y}: {text}"
                position[turn["dia_id"]] = len(memories)
                meta = {"dia_id": turn["dia_id"], "speaker": turn["speaker"]}
                memories.append(Memory(text, when, meta, key))
            n += 1
        queries = []
        for qa in sample["qa"]:
            if qa["category"] not in CATEGORIES:
                continue
            evidence = frozenset(position[d] for d in evidence_ids(qa["evidence"]) if d in position)
            if evidence:
                queries.append(Query(qa["question"], qa["category"], evidence))
        out.append(Conversation(sample["sample_id"], memories, queries))
    if with_tokens:
        for c in out:
            c.doc_tokens = [keyword_terms(m.text) for m in c.memories]
            c.query_tokens = [query_terms(q.text) for q in c.queries]
    return out


def metrics(ranking: Sequence[int], evidence: frozenset[int]) -> dict[str, float]:
    """Recall@5/@10/@25, hit@10 and MRR (within :data:`MRR_DEPTH`) of one ranking, as 0-1."""

    def recall(k: int) -> float:
        return len(evidence.intersection(ranking[:k])) / len(evidence)

    first = next((r for r, i in enumerate(ranking[:MRR_DEPTH]) if i in evidence), None)
    return {
        "recall@5": recall(5),
        "recall@10": recall(10),
        "recall@25": recall(25),
        "hit@10": float(recall(10) > 0.0),
        "mrr": 0.0 if first is None else 1.0 / (first + 1),
    }


def accumulate(totals: Totals, query: Query, ranking: Sequence[int]) -> None:
    """Add one query's metrics to its category's and the overall sums."""
    for bucket in (CATEGORIES[query.category], "overall"):
        acc = totals.setdefault(bucket, dict.fromkeys((*METRICS, "n"), 0.0))
        for name, value in metrics(ranking, query.evidence).items():
            acc[name] += value
        acc["n"] += 1


def _bucket_order(bucket: str) -> int:
    return [*CATEGORIES.values(), "overall"].index(bucket)


def summarise(sums: Mapping[str, Totals]) -> Report:
    """Sums per method turned into percentages (one decimal), categories in order."""
    return {
        method: {
            bucket: {k: (v if k == "n" else round(100.0 * v / acc["n"], 1)) for k, v in acc.items()}
            for bucket, acc in sorted(buckets.items(), key=lambda kv: _bucket_order(kv[0]))
        }
        for method, buckets in sums.items()
    }


def print_split(title: str, result: Report) -> None:
    """A plain-text table of one split's results."""
    print(f"\n{title}")
    header = f"{'method':<8} {'category':<12} {'n':>5} " + " ".join(f"{m:>9}" for m in METRICS)
    print(header)
    print("-" * len(header))
    for method, buckets in result.items():
        for bucket, values in buckets.items():
            cells = " ".join(f"{values[m]:>9.1f}" for m in METRICS)
            print(f"{method:<8} {bucket:<12} {int(values['n']):>5} {cells}")
