"""A dialogue as a search query: which turns, and whose, carry what is being looked for.

An agent rarely has a clean one-line query: it passes what the user just said, often
with the turns before it (``"小雨: ...\\n助手: ...\\n小雨: ..."``). :func:`parse_turns`
recognises such a text (at least two lines opening with a speaker's label, ``Name:``,
``Name：``, ``<Name>:`` or ``[Name]:``, from at least two speakers) and
:func:`turn_weights` weighs its turns: the user's latest turn in full, each earlier
user turn by ``user_decay`` per step back, the other side's turns (the assistant's
replies, which mostly echo and encourage) at ``other_weight``, also fading with their
distance. The user is whoever spoke last, unless that label names an assistant role
(:data:`ASSISTANT_LABELS`), then the speaker heard most otherwise.

Pure functions, no I/O; :func:`unstructured_memory.search.query.build_query` turns
the weights into keyword-term weights and a weighted sum of the turns' vectors.
Weights were chosen on the project's dialogue set (``benchmarks/data/
dialogue_recall.jsonl``, and its drift variant where each dialogue follows the
previous one of its user) and the LoCoMo tuning split only.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "ASSISTANT_LABELS",
    "DEFAULT_DIALOGUE",
    "DialogueConfig",
    "Turn",
    "parse_turns",
    "turn_weights",
]

ASSISTANT_LABELS = frozenset(
    (
        *("assistant", "ai", "bot", "chatbot", "agent", "system", "gpt", "chatgpt", "robot"),
        *("助手", "小助手", "智能助手", "ai助手", "助理", "小助理", "客服", "在线客服"),
        *("人工客服", "机器人", "系统"),
    )
)
"""Speaker labels that name the assistant's side (compared case-folded)."""

MAX_LABEL_CHARS = 24

_LABEL = re.compile(
    r"^\s*(?:<(?P<angle>[^<>\n]{1,24})>|\[(?P<square>[^\[\]\n]{1,24})\]"
    r"|(?P<plain>[^\s:：<>\[\]\"“”'][^:：\n]{0,23}?))\s*[:：]\s*(?P<text>.*)$"
)
_QUOTES = (('"', '"'), ("“", "”"), ("'", "'"), ("「", "」"))


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn of a dialogue: who spoke (as labelled) and what was said."""

    speaker: str
    text: str


@dataclass(frozen=True, slots=True)
class DialogueConfig:
    """How the turns of a dialogue query are weighed (see the module)."""

    user_decay: float = 0.6
    other_weight: float = 0.5
    other_decay: float = 0.8
    floor: float = 0.3
    """No turn weighs less (an old turn still names the topic now and then)."""
    coherence: float = 4.0
    """How much an older turn's share of the latest exchange's topic words lifts it."""


DEFAULT_DIALOGUE = DialogueConfig()


def _label(line: str) -> tuple[str, str] | None:
    m = _LABEL.match(line)
    if m is None:
        return None
    label = (m.group("angle") or m.group("square") or m.group("plain") or "").strip()
    rest = m.group("text")
    if (
        not label
        or len(label) > MAX_LABEL_CHARS
        or label.count(" ") > 2
        or not any(ch.isalpha() for ch in label)
        or rest.startswith("//")  # a URL
    ):
        return None
    return label, _unquote(rest.strip())


def _unquote(text: str) -> str:
    for left, right in _QUOTES:
        if len(text) >= 2 and text.startswith(left) and text.endswith(right):
            return text[1:-1].strip()
    return text


def parse_turns(text: str) -> list[Turn] | None:
    """The turns of ``text`` if it reads as a dialogue (see the module), else ``None``.

    A line without a label continues the turn before it; lines before the first label
    form a turn of no speaker (``""``)."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) < 2:
        return None
    turns: list[tuple[str, list[str]]] = []
    labelled = 0
    for line in lines:
        found = _label(line)
        if found is None:
            if turns:
                turns[-1][1].append(line.strip())
            else:
                turns.append(("", [line.strip()]))
            continue
        labelled += 1
        turns.append((found[0], [found[1]] if found[1] else []))
    speakers = {s for s, _ in turns if s}
    if labelled < 2 or len(speakers) < 2:
        return None
    return [Turn(s, "\n".join(parts)) for s, parts in turns if any(p.strip() for p in parts)]


def _is_assistant(label: str) -> bool:
    return unicodedata.normalize("NFKC", label).casefold().replace(" ", "") in ASSISTANT_LABELS


def user_label(turns: list[Turn]) -> str:
    """Who the user is: the last speaker, unless an assistant role, then the speaker
    heard most otherwise (the last speaker if every label is a role)."""
    last = turns[-1].speaker
    if not _is_assistant(last):
        return last
    others = Counter(t.speaker for t in turns if t.speaker and not _is_assistant(t.speaker))
    return others.most_common(1)[0][0] if others else last


def turn_weights(
    turns: list[Turn],
    config: DialogueConfig = DEFAULT_DIALOGUE,
    topics: Sequence[frozenset[str]] | None = None,
) -> list[float]:
    """A weight in ``[floor, 1]`` per turn; the user's last turn weighs 1.

    With ``topics`` (each turn's topic words), an older turn that stays on the topic of
    the latest exchange (the user's last turn and the reply before it) weighs at least
    ``coherence`` times the share of its topic words found there (capped at 1): a long
    conversation on one subject keeps its early turns, one that moved on drops them."""
    user = user_label(turns)
    out = [0.0] * len(turns)
    user_steps = other_steps = 0
    for i in range(len(turns) - 1, -1, -1):
        if turns[i].speaker == user:
            w = config.user_decay**user_steps
            user_steps += 1
        else:
            w = config.other_weight * config.other_decay**other_steps
            other_steps += 1
        out[i] = max(w, config.floor)
    if topics is not None and config.coherence > 0:
        last = max(i for i, t in enumerate(turns) if t.speaker == user)
        recent = frozenset().union(*topics[max(0, last - 1) : last + 1])
        for i, words in enumerate(topics[: max(0, last - 1)]):
            if words:
                share = len(words & recent) / len(words)
                out[i] = max(out[i], min(1.0, config.coherence * share))
    return out
