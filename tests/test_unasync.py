"""The sync remote client is derived from the async one on import (``sdk._unasync``): it
has no source of its own to drift, it does sync I/O on ``httpx.Client``, its tracebacks show
the async source, and the derived code is cached and made again when a source changes. What
it does over HTTP is the contract tests' (``tests/test_sdk_contract.py``, both clients)."""

from __future__ import annotations

import ast
import inspect
import socket
import sys
import traceback
from pathlib import Path

import httpx
import pytest

import sdk.remote
from sdk import _unasync
from sdk.errors import ServiceUnavailable
from sdk.remote import RemoteMemoryClient, RemoteSandboxSession
from sdk.remote_async import AsyncRemoteMemoryClient, AsyncRemoteSandboxSession
from tests.test_sdk_contract import token_for


def test_the_sync_module_defines_nothing_in_its_own_file() -> None:
    own = ast.parse(Path(sdk.remote.__file__ or "").read_text(encoding="utf-8"))
    assert not [n for n in ast.walk(own) if isinstance(n, ast.FunctionDef | ast.ClassDef)]
    assert sdk.remote.__all__ == ["RemoteMemoryClient", "RemoteSandboxSession"]
    for cls in (RemoteMemoryClient, RemoteSandboxSession):
        assert cls.__module__ == "sdk.remote"
        assert inspect.getsourcefile(cls.__init__) == str(_unasync.ASYNC_SOURCE)


@pytest.mark.parametrize(
    ("sync", "async_"),
    [
        (RemoteMemoryClient, AsyncRemoteMemoryClient),
        (RemoteSandboxSession, AsyncRemoteSandboxSession),
    ],
)
def test_every_async_method_has_a_plain_sync_twin(sync: type, async_: type) -> None:
    renamed = {"__aenter__": "__enter__", "__aexit__": "__exit__", "aclose": "close"}
    for name, member in inspect.getmembers(async_, inspect.iscoroutinefunction):
        twin = getattr(sync, renamed.get(name, name))
        assert inspect.isfunction(twin), name
        assert not inspect.iscoroutinefunction(twin), name
        assert list(inspect.signature(twin).parameters) == list(
            inspect.signature(member).parameters
        )


def test_the_sync_client_sends_on_httpx_client_and_its_traceback_shows_the_async_source() -> None:
    """Nothing listens on the port: the sync call fails in this thread, with the typed
    error, and the frame it raised in is the async module's line of that send."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with RemoteMemoryClient(f"http://127.0.0.1:{port}", token_provider=token_for) as mem:
        assert isinstance(mem._http, httpx.Client)
        with pytest.raises(ServiceUnavailable) as raised:
            mem.profiles.get("buyer-001")
    ours = [
        f
        for f in traceback.extract_tb(raised.value.__traceback__)
        if f.filename == str(_unasync.ASYNC_SOURCE)
    ]
    assert [f.name for f in ours] == ["get", "_send"]
    assert ours[-1].line == "raise calls.unreachable(exc) from exc"
    cause = raised.value.__cause__
    assert isinstance(cause, httpx.ConnectError)
    (sent,) = [f for f in traceback.extract_tb(cause.__traceback__) if f.name == "_send"]
    assert sent.line == "response = await self._http.request("


def test_the_derived_code_is_cached_and_made_again_when_the_source_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    source = tmp_path / "client_async.py"
    source.write_text("async def ask() -> str:\n    return 'async'\n", encoding="utf-8")

    def run() -> dict[str, object]:
        namespace: dict[str, object] = {}
        exec(_unasync.sync_code(source), namespace)
        return namespace

    assert not inspect.iscoroutinefunction(run()["ask"])
    (cached,) = (tmp_path / "__pycache__").glob("client_async.*.opt-sync.pyc")
    cached.write_bytes(cached.read_bytes()[:-8])  # damaged: made again, not loaded
    assert run()["ask"].__code__.co_consts[-1] == "async"  # type: ignore[attr-defined]
    source.write_text("async def ask() -> str:\n    return '同步'\n", encoding="utf-8")
    assert run()["ask"].__code__.co_consts[-1] == "同步"  # type: ignore[attr-defined]
