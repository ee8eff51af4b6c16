"""Name -> lazily imported class plus pydantic config: what both registries share.

Also :func:`lazy_exports`, which lets a package name its public members
without importing the modules that hold them (importing ``sdk`` must not load
jieba, spaCy or numpy before they are used).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, SecretStr, ValidationError

from policies.errors import ConfigurationError

__all__ = ["PluginSpec", "lazy_exports", "resolve", "seal_secrets"]


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


def seal_secrets(
    name: str, specs: Mapping[str, PluginSpec], config: Mapping[str, Any]
) -> dict[str, Any]:
    """``config`` with the value of each field its plugin's config declares ``SecretStr``
    wrapped in one, so dumps and reprs of the settings holding it show ``**********``;
    :func:`resolve` hands the plugin the clear value all the same.

    A name no spec registers is left as it is (:func:`resolve` refuses it).
    """
    spec = specs.get(name)
    if spec is None:
        return dict(config)
    secret = {
        field
        for field, info in spec.config.model_fields.items()
        if SecretStr in (info.annotation, *getattr(info.annotation, "__args__", ()))
    }
    return {
        key: SecretStr(value) if key in secret and isinstance(value, str) else value
        for key, value in config.items()
    }


def lazy_exports(package: str, members: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` importing each public member from its module on first use.

    ``members`` maps a name to the module that defines it. The package imports
    the same names under ``TYPE_CHECKING`` so type checkers see them.
    """

    def __getattr__(name: str) -> Any:
        module = members.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return __getattr__
