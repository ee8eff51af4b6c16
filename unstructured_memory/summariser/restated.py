"""An older record as a changed instruction leaves it: the clauses stating the old one go.

When a session changes or withdraws an instruction the profile holds (``以后别放门口了，
交给门卫``), the records of earlier sessions may still quote the old one where it was
applied to a single order ("Same as usual for this one, under the doormat") or said
before the profile kept such things. :func:`restate` finds those clauses, by the
topic's own pattern or by their words being the old instruction's, and puts a short
marker in their place ("（收货方式已更新，以画像为准）"), so that a later context never
asserts what the user changed; the rest of the record stays as it was.

Pure functions of the text: no I/O. Patterns run under RE2 in linear time.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Final

from policies.linear_re import LinearPattern
from unstructured_memory.summariser.topics import Topic

__all__ = ["restate"]

_CLAUSE: Final = LinearPattern(r"[^，。！？!?；;,：:\n]+")
_HEAD: Final = LinearPattern(r"^[^：:]*[：:]")
"""What the record says the user did, up to its colon; the quotes follow it."""
_CJK: Final = LinearPattern(r"[\x{4e00}-\x{9fff}]+")
_WORD: Final = LinearPattern(r"[A-Za-z][A-Za-z']+|\d+")
_STOP: Final = frozenset(
    {
        *("the", "and", "for", "this", "that", "with", "you", "your", "they", "them"),
        *("their", "are", "was", "were", "its", "it's", "is", "be", "can", "just"),
        *("one", "fine", "please", "all", "any", "our", "out", "not", "but", "also", "like"),
    }
)
_SHARED: Final = 0.6
"""The share of a clause's words the old instruction must hold for the clause to state it."""
_MIN_UNITS: Final = 2


@lru_cache(maxsize=4096)
def _units(text: str) -> frozenset[str]:
    """The words of ``text`` compared: CJK character pairs, Latin words and numbers."""
    out = {w.casefold() for a, b in _WORD.spans(text) if (w := text[a:b]).casefold() not in _STOP}
    for a, b in _CJK.spans(text):
        run = text[a:b]
        out.update(run[i : i + 2] for i in range(len(run) - 1))
    return frozenset(out)


@lru_cache(maxsize=4096)
def _body(text: str) -> tuple[int, frozenset[str]]:
    """Where the quotes of record ``text`` start (after its head), and their words: an
    earlier record is tried again each time an instruction changes."""
    head = _HEAD.match(text)
    start = head.end() if head is not None else 0
    return start, _units(text[start:])


@lru_cache(maxsize=8192)
def _states(pattern: LinearPattern, body: str) -> bool:
    """Whether a topic's ``pattern`` occurs in ``body``."""
    return pattern.search(body) is not None


def _said_in(units: frozenset[str], said: Sequence[frozenset[str]]) -> bool:
    return len(units) >= _MIN_UNITS and any(len(units & s) >= _SHARED * len(units) for s in said)


def restate(
    text: str,
    topics: Sequence[Topic],
    olds: Sequence[str] = (),
    news: Sequence[str] = (),
    *,
    lang: str = "zh",
) -> str | None:
    """``text`` with each clause after its head that states one of ``topics`` (by the
    topic's pattern, or by words of one of ``olds``, the instructions as they were) and
    not in the words of ``news`` (the instructions as they are now) replaced by one
    marker naming the topics; ``None`` when no clause does."""
    start, words = _body(text)
    old_units = [u for old in olds if len(u := _units(old)) >= _MIN_UNITS]
    new_units = [u for new in news if len(u := _units(new)) >= _MIN_UNITS]
    if not any(words & u for u in old_units) and not any(
        _states(t.pattern, text[start:]) for t in topics
    ):
        return None  # no clause can state an old instruction: the common case, found at once

    def stale(clause: str) -> bool:
        units = _units(clause)
        if _said_in(units, new_units):
            return False
        if _said_in(units, old_units):
            return True
        for topic in topics:  # the topic's value said here, unless it is the new one
            m = topic.pattern.search(clause)
            if m is not None and not _said_in(_units(m.group(0) or ""), new_units):
                return True
        return False

    spans = [
        (start + a + len(clause) - len(clause.lstrip()), start + b)
        for a, b in _CLAUSE.spans(text[start:])
        if (clause := text[start + a : start + b]).strip() and stale(clause)
    ]
    if not spans:
        return None
    if lang == "zh":
        marker = f"（{'、'.join(t.zh for t in topics)}已更新，以画像为准）"
    else:
        marker = f"({', '.join(t.en for t in topics)} since changed: see the profile)"
    out: list[str] = []
    at = 0
    for a, b in spans:
        out.append(text[at:a])
        if not out[-1].rstrip(" ，,").endswith(marker):
            out.append(marker)
        at = b
    rest = text[at:]
    kept = "".join(out)
    if not rest.strip(" ，,。.;；"):
        return kept.rstrip(" ，,") + ("" if lang == "zh" else ".")
    return kept + rest
