"""Name -> lazily imported class plus pydantic config: what both registries share."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from policies.errors import ConfigurationError

__all__ = ["PluginSpec", "resolve"]


@dataclass(frozen=True)
class PluginSpec:
    """Where an implementation lives (``"module:Class"``) and how its config is validated."""

    class_path: str
    config: type[BaseModel]


def resolve(
    kind: str, name: str, specs: Mapping[str, PluginSpec], config: Mapping[str, object]
) -> tuple[Any, BaseModel]:
    """The class registered as ``name`` (imported now) and its validated config.

    Raises :class:`ConfigurationError` for an unknown name, listing the known
    ones, or for a config its pydantic model rejects, with pydantic's message.
    """
    spec = specs.get(name)
    if spec is None:
        known = ", ".join(sorted(specs))
        raise ConfigurationError(f"unknown {kind} {name!r}; known: {known}")
    try:
        settings = spec.config.model_validate(dict(config))
    except ValidationError as exc:
        raise ConfigurationError(f"invalid config for {kind} {name!r}: {exc}") from exc
    module_name, _, class_name = spec.class_path.partition(":")
    return getattr(importlib.import_module(module_name), class_name), settings
