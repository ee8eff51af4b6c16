"""The one list of profile-extractor names: name -> implementation class path and config.

Implementations are imported only when :func:`create_extractor` asks for them
(the chat extractor loads httpx).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from unstructured_memory.plugins import PluginSpec, resolve
from unstructured_memory.profile.base import ProfileExtractor

__all__ = [
    "DEFAULT_EXTRACTOR",
    "EXTRACTORS",
    "ChatExtractorConfig",
    "RuleExtractorConfig",
    "create_extractor",
]


class RuleExtractorConfig(BaseModel):
    """Settings of :class:`RuleExtractor` (rules + NER, no model)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_temporary: int = Field(
        default=5, ge=0, le=50, description="temporary intents kept per session"
    )


class ChatExtractorConfig(BaseModel):
    """Settings of :class:`ChatExtractor`: an OpenAI-compatible ``/chat/completions``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = Field(description="API root including the version, e.g. .../v1")
    model: str = Field(min_length=1, description="e.g. qwen-plus, gpt-4o-mini")
    api_key: SecretStr | None = Field(default=None, description="sent as a Bearer token when set")
    timeout_s: float = Field(default=20.0, gt=0.0, le=600.0, description="per-request timeout")
    max_tokens: int = Field(default=600, ge=16, le=8192, description="answer length bound")
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_temporary: int = Field(
        default=5, ge=0, le=50, description="temporary intents kept per session"
    )


EXTRACTORS: Mapping[str, PluginSpec] = {
    "rules": PluginSpec("unstructured_memory.profile.rules:RuleExtractor", RuleExtractorConfig),
    "openai": PluginSpec(
        "unstructured_memory.profile.openai_chat:ChatExtractor", ChatExtractorConfig
    ),
}

DEFAULT_EXTRACTOR = "rules"
"""Rules + NER: what runs when settings name no extractor."""


def create_extractor(name: str, config: Mapping[str, object]) -> ProfileExtractor:
    """Build the extractor registered as ``name`` from a plain ``config`` mapping.

    Raises ``ConfigurationError`` for an unknown name (listing the known ones)
    or a config its pydantic model rejects (with pydantic's message).
    """
    cls, settings = resolve("profile extractor", name, EXTRACTORS, config)
    return cast(ProfileExtractor, cls(settings))
