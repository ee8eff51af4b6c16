"""The rule + NER summariser of the unstructured track (no LLM).

jieba + blank spaCy pipelines with rules tag entities (:func:`extract_entities`),
a weighted-rule classifier names the intent (:func:`classify_intent`), and
:func:`summarise` turns a transcript into a masked one-sentence interaction
record; :func:`analyse_text` does the same for one free text. PII is masked
everywhere except in the ``pii`` lists meant for the encrypted vault.
"""

from unstructured_memory.summariser.entities import Entity, Lang, detect_language, extract_entities
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
