"""A rule-based intent classifier for customer-service utterances (Chinese and English).

No model and no training: each intent has weighted regular expressions in the
shipped ``data/intent_rules.json``, matched on the NFKC-normalised, lower-cased
text. An intent scores the sum of the weights of its patterns that match; the
confidence is the softmax share of the best score, with :attr:`Intent.OTHER`
holding a small base score so that text matching nothing is ``other``. Ties
go to the intent listed first in :class:`Intent`. Deterministic, thread-safe,
and several thousand utterances per second on one core.

Intents:

* ``return_request``: return, exchange, cancel or get a refund for a purchase;
* ``refund_status``: where an already requested refund is, when it arrives;
* ``tracking_inquiry``: shipping, delivery and parcel whereabouts;
* ``complaint``: dissatisfaction with service, quality or honesty, escalation;
* ``product_consult``: features, usage, troubleshooting, price, stock, warranty;
* ``invoice``: invoices, receipts, VAT titles and tax numbers;
* ``account``: login, password, binding, membership and personal data;
* ``other``: greetings, thanks, asking for a human, anything else.

:class:`Intent` is ``values.sessions``'s (the vocabulary of a session record),
re-exported here for one release.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Final

from policies.errors import InvalidText
from policies.linear_re import PythonPrefilter
from policies.validation import check_text
from values.sessions import Intent

__all__ = ["Intent", "IntentResult", "classify_intent", "classify_turns", "intent_scores"]


@dataclass(frozen=True, slots=True)
class IntentResult:
    """The winning intent and its confidence in ``(0, 1]``."""

    label: Intent
    confidence: float


_OTHER_BASE: Final = 0.6
"""Score of ``other`` before its own patterns: one weak cue of any intent beats it."""

_TEMPERATURE: Final = 1.5
"""Softmax sharpness: score differences are multiplied by this."""

_MAX_CHARS: Final = 4096
"""Only the first characters of very long texts are classified."""


@lru_cache(maxsize=1)
def _rules() -> tuple[tuple[Intent, tuple[tuple[re.Pattern[str], float], ...]], ...]:
    raw = resources.files("unstructured_memory.summariser").joinpath("data/intent_rules.json")
    data: dict[str, object] = json.loads(raw.read_text(encoding="utf-8"))
    rules: list[tuple[Intent, tuple[tuple[re.Pattern[str], float], ...]]] = []
    for intent in Intent:
        table = data[intent.value]
        assert isinstance(table, dict)
        rules.append((intent, tuple((re.compile(p), float(w)) for p, w in table.items())))
    return tuple(rules)


@lru_cache(maxsize=1)
def _prefilter() -> PythonPrefilter:
    """One RE2 pass over every rule, in the order of :func:`_rules`: a rule it leaves
    out cannot match, so only the others are searched."""
    return PythonPrefilter([rx.pattern for _, patterns in _rules() for rx, _ in patterns])


def intent_scores(text: str) -> dict[Intent, float]:
    """The raw rule score of every intent for ``text`` (``other`` includes its base)."""
    norm = unicodedata.normalize("NFKC", text[:_MAX_CHARS]).lower()
    hits = _prefilter().candidates(norm)
    scores: dict[Intent, float] = {}
    first = 0
    for intent, patterns in _rules():
        scores[intent] = sum(
            w for k, (rx, w) in enumerate(patterns, first) if k in hits and rx.search(norm)
        )
        first += len(patterns)
    scores[Intent.OTHER] += _OTHER_BASE
    return scores


def _decide(scores: dict[Intent, float]) -> IntentResult:
    best = max(Intent, key=lambda i: scores[i])  # first listed wins a tie
    top = scores[best]
    total = sum(math.exp(_TEMPERATURE * (s - top)) for s in scores.values())
    return IntentResult(best, round(1.0 / total, 4))


def classify_intent(text: str) -> IntentResult:
    """The intent of one utterance, with its confidence.

    Raises :class:`policies.errors.InvalidText` for empty or invalid text.
    """
    return _decide(intent_scores(check_text(text)))


def classify_turns(texts: Sequence[str]) -> IntentResult:
    """The intent of a user's turns in a session: scores add up, the first turn's twice.

    The opening turn usually states why the user came. Empty texts are
    skipped; raises :class:`policies.errors.InvalidText` if none is left.
    """
    kept = [check_text(t, allow_empty=True) for t in texts]
    kept = [t for t in kept if t.strip()]
    if not kept:
        raise InvalidText("no non-empty text to classify", field="texts")
    total = dict.fromkeys(Intent, 0.0)
    for i, text in enumerate(kept):
        for intent, score in intent_scores(text).items():
            total[intent] += score * (2.0 if i == 0 else 1.0)
    return _decide(total)
