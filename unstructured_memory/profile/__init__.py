"""Profile extraction at session end: rules + NER by default, an optional chat model.

:func:`create_extractor` builds an extractor by name (``rules``, ``openai``);
each returns :class:`Extraction` observations for ``policies.profile_merge``.
Members are imported on first use: the rules load jieba and spaCy, the chat
extractor httpx.
"""

from typing import TYPE_CHECKING

from unstructured_memory.plugins import lazy_exports

if TYPE_CHECKING:
    from unstructured_memory.profile.base import Extraction, Instruction, ProfileExtractor
    from unstructured_memory.profile.openai_chat import ChatExtractor
    from unstructured_memory.profile.registry import (
        DEFAULT_EXTRACTOR,
        EXTRACTORS,
        ChatExtractorConfig,
        RuleExtractorConfig,
        create_extractor,
    )
    from unstructured_memory.profile.rules import RuleExtractor

__all__ = [
    "DEFAULT_EXTRACTOR",
    "EXTRACTORS",
    "ChatExtractor",
    "ChatExtractorConfig",
    "Extraction",
    "Instruction",
    "ProfileExtractor",
    "RuleExtractor",
    "RuleExtractorConfig",
    "create_extractor",
]

_MODULES = {
    "base": ("Extraction", "Instruction", "ProfileExtractor"),
    "openai_chat": ("ChatExtractor",),
    "registry": (
        "DEFAULT_EXTRACTOR",
        "EXTRACTORS",
        "ChatExtractorConfig",
        "RuleExtractorConfig",
        "create_extractor",
    ),
    "rules": ("RuleExtractor",),
}
__getattr__ = lazy_exports(
    __name__, {n: f"{__name__}.{m}" for m, names in _MODULES.items() for n in names}
)
