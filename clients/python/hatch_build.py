"""Build hook of ``dualtrack-client``: the wheel holds exactly the files
``scripts/client_files.py`` traces from the remote clients, at their repository paths."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

REPO = Path(__file__).resolve().parent.parent.parent


def _client_files() -> list[str]:
    """``scripts.client_files.thin_files()``, loaded by path (the build runs elsewhere)."""
    path = REPO / "scripts" / "client_files.py"
    spec = importlib.util.spec_from_file_location("client_files", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    files: list[str] = module.thin_files(REPO)
    return files


class ClientFilesHook(BuildHookInterface):
    """Force-includes the traced files into the (non-editable) wheel."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version == "editable":  # dev-mode-dirs puts the repository itself on sys.path
            return
        for relative in _client_files():
            build_data["force_include"][str(REPO / relative)] = relative
