"""The rule + NER summariser of the unstructured track (no LLM).

jieba + blank spaCy pipelines with rules tag entities (:func:`extract_entities`),
a weighted-rule classifier names the intent (:func:`classify_intent`), and
:func:`summarise` turns a transcript into a masked one-sentence interaction
record; :func:`analyse_text` does the same for one free text. PII is masked
everywhere except in the ``pii`` lists meant for the encrypted vault.

Members are imported on first use: jieba and spaCy load only when needed. The
value types (``Entity``, ``Intent``, ``SessionSummary``, ``Turn``) are ``values``'s,
re-exported here for one release: importing them loads no NLP.
"""

from typing import TYPE_CHECKING

from unstructured_memory.plugins import lazy_exports

if TYPE_CHECKING:
    from unstructured_memory.summariser.entities import detect_language, extract_entities
    from unstructured_memory.summariser.intent import IntentResult, classify_intent
    from unstructured_memory.summariser.summary import TextAnalysis, analyse_text, summarise
    from values.entities import Entity
    from values.sessions import Intent, Lang, SessionSummary, Turn

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
    f"{__name__}.entities": ("detect_language", "extract_entities"),
    f"{__name__}.intent": ("IntentResult", "classify_intent"),
    f"{__name__}.summary": ("TextAnalysis", "analyse_text", "summarise"),
    "values.entities": ("Entity",),
    "values.sessions": ("Intent", "Lang", "SessionSummary", "Turn"),
}
__getattr__ = lazy_exports(
    __name__, {n: module for module, names in _MODULES.items() for n in names}
)
