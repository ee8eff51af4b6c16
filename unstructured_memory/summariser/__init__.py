"""The rule + NER summariser of the unstructured track (no LLM).

jieba + blank spaCy pipelines with rules tag entities (:func:`extract_entities`),
a weighted-rule classifier names the intent (:func:`classify_intent`), and
:func:`summarise` turns a transcript into a masked one-sentence interaction
record; :func:`analyse_text` does the same for one free text. PII is masked
everywhere except in the ``pii`` lists meant for the encrypted vault.

Members are imported on first use: jieba and spaCy load only when needed.
"""

from typing import TYPE_CHECKING

from unstructured_memory.plugins import lazy_exports

if TYPE_CHECKING:
    from unstructured_memory.summariser.entities import (
        Entity,
        Lang,
        detect_language,
        extract_entities,
    )
    from unstructured_memory.summariser.intent import Intent, IntentResult, classify_intent
    from unstructured_memory.summariser.summary import (
        SessionSummary,
        TextAnalysis,
        analyse_text,
        summarise,
    )
    from unstructured_memory.summariser.transcript import Turn

__all__ = [
    "Entity",
    "Intent",
    "IntentResult",
    "Lang",
    "SessionSummary",
    "TextAnalysis",
    "Turn",
    "analyse_text",
    "classify_intent",
    "detect_language",
    "extract_entities",
    "summarise",
]

_MODULES = {
    "entities": ("Entity", "Lang", "detect_language", "extract_entities"),
    "intent": ("Intent", "IntentResult", "classify_intent"),
    "summary": ("SessionSummary", "TextAnalysis", "analyse_text", "summarise"),
    "transcript": ("Turn",),
}
__getattr__ = lazy_exports(
    __name__, {n: f"{__name__}.{m}" for m, names in _MODULES.items() for n in names}
)
