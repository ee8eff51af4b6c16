"""Build hook of ``dualtrack-client``: the wheel holds exactly the files
``scripts/client_files.py`` traces from the remote clients, at their repository paths, and
the sync client's stub (``sdk/remote.pyi``), written afresh by ``sdk/_unasync.py``."""

from __future__ import annotations

import importlib.util
import shutil
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

REPO = Path(__file__).resolve().parent.parent.parent


def _load(relative: str) -> ModuleType:
    """A standard-library-only module of the repository, loaded by path (the build runs
    elsewhere, without the repository on ``sys.path``)."""
    path = REPO / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class ClientFilesHook(BuildHookInterface):
    """Force-includes the traced files and the generated stub into the (non-editable)
    wheel; ``make`` writes the stub into the repository for the editable install."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version == "editable":  # dev-mode-dirs puts the repository itself on sys.path
            return
        client_files = _load("scripts/client_files.py")
        unasync = _load("sdk/_unasync.py")
        self._generated = Path(tempfile.mkdtemp(prefix="dualtrack-client-"))
        written = {
            "sdk/remote.pyi": unasync.sync_stub(unasync.ASYNC_SOURCE.read_text(encoding="utf-8"))
        }
        assert set(written) == set(client_files.GENERATED)
        for relative in client_files.thin_files(REPO):
            source = REPO / relative
            if relative in written:
                source = self._generated / relative
                source.parent.mkdir(parents=True, exist_ok=True)
                source.write_text(written[relative], encoding="utf-8")
            build_data["force_include"][str(source)] = relative

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if version != "editable":
            shutil.rmtree(self._generated, ignore_errors=True)
