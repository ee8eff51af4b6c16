"""MADial-Bench memory recall through the SDK (reporting only: never tune on it).

MADial-Bench (He et al., NAACL 2025, MIT; ``../shared/datasets/madial_bench`` or
``$DUALTRACK_MADIAL_DIR``): two users' archives of dated event summaries and 160
dialogues per language, each labelled with the memories the assistant's reply at its
first test turn should use. Loaded as the authors score the task: the query is the
dialogue before the first test turn (or, the short variant, the user's last turn before
it), the candidates the user's whole archive; see :mod:`benchmarks.dialogue_recall` for
the protocol and the BM25 baseline computed in the same run. Skips with a one-line reason
where the dataset is absent (a fresh clone has no ``../shared``).

    python -m benchmarks.madial [--lang zh,en]
"""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.common import console
from benchmarks.dialogue_recall import DialogueSet, Entry, Question, run

__all__ = ["dataset_dir", "load", "main"]

_LINE = re.compile(r"^\s*<([^<>]+)>\s*[:：]\s*(.*?)\s*$", re.DOTALL)
ASSISTANT = "Assistant"


def dataset_dir() -> Path:
    """Where the dataset is looked for."""
    env = os.environ.get("DUALTRACK_MADIAL_DIR")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[1]
    for parent in repo.parents:  # ../shared beside the clone, or further up (a worktree)
        found = parent / "shared" / "datasets" / "madial_bench"
        if found.is_dir():
            return found
    return repo.parent / "shared" / "datasets" / "madial_bench"


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


def _turn(line: str) -> tuple[str, str] | None:
    """``<Name>:"text"`` as (name, text); a line without a tag is the assistant's (35 en
    lines lack it); ``<BOD>``/``<EOD>`` are none."""
    line = line.strip()
    if line in ("<BOD>", "<EOD>", ""):
        return None
    m = _LINE.match(line)
    speaker, text = (m.group(1).strip(), m.group(2)) if m else (ASSISTANT, line)
    text = text.strip()
    if len(text) >= 2 and text[0] in '"“' and text[-1] in '"”':
        text = text[1:-1].strip()
    return speaker, text


def load(lang: str, root: Path | None = None) -> DialogueSet:
    """One language's archives and questions."""
    root = root or dataset_dir()
    zh_mem = {
        k: v for row in _read_jsonl(root / "zh/MADial-Bench-zh-memory.json") for k, v in row.items()
    }
    memory = (
        zh_mem
        if lang == "zh"
        else {
            k: v
            for row in _read_jsonl(root / "en/MADial-Bench-en-memory.json")
            for k, v in row.items()
        }
    )
    entries = [
        Entry(
            str(key),
            str(zh_mem[key]["user-id"]),
            datetime.fromisoformat(v["time"]).replace(tzinfo=UTC),
            str(zh_mem[key]["scene"]),
            v["event"],
        )
        for key, v in memory.items()
    ]
    questions = []
    for n, row in enumerate(_read_jsonl(root / f"{lang}/MADial-Bench-{lang}-dialogue.json")):
        lines = row["dialogue"]
        first = min(row["test-turn"])
        turns = [t for t in (_turn(ln) for ln in lines[:first]) if t is not None]
        user_turns = [i for i, (s, _) in enumerate(turns) if s != ASSISTANT]
        if not user_turns:
            continue
        questions.append(
            Question(
                str(row.get("id", n)),
                str(row["user-id"]),
                tuple(turns[: user_turns[-1] + 1]),
                user_turns[-1],
                tuple(str(r) for r in row["relevant-id"]),
            )
        )
    return DialogueSet("madial", lang, entries, questions, {e.id: e.scene for e in entries})


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run MADial-Bench in each language, or skip where the dataset is absent."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--lang", default="zh,en", help="languages, comma-separated")
    parser.add_argument("--quick", action="store_true", help="the same run (it is short)")
    parser.add_argument("--out", default="madial")
    args = parser.parse_args(argv)
    root = dataset_dir()
    if not (root / "zh" / "MADial-Bench-zh-memory.json").is_file():
        console.print(f"madial: skipped, no MADial-Bench at {root} (set DUALTRACK_MADIAL_DIR)")
        return {"skipped": f"no dataset at {root}"}
    sets = [load(lang, root) for lang in args.lang.split(",")]
    return run("MADial-Bench", sets, data_name="madial", out=args.out)


if __name__ == "__main__":
    main()
