"""The conftest of the contract cases in the client-only venv (``tests/test_thin_client.py``
copies it there as ``conftest.py`` beside ``sdk_contract_cases.py``): the fixtures over the
remote clients only, from what the harness hands over in the environment.

``DUALTRACK_CONTRACT_URL`` is the live service; ``DUALTRACK_CONTRACT_TOKENS`` a JSON object
of user id to token, minted by the harness (this venv has no way to mint one): each test
takes fresh users from it, so no test sees another's data."""

from __future__ import annotations

import json
import os
import sysconfig
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

import sdk
from sdk import MemoryAPI, RemoteMemoryClient

URL = os.environ["DUALTRACK_CONTRACT_URL"]
TOKENS: dict[str, str] = json.loads(os.environ["DUALTRACK_CONTRACT_TOKENS"])
_unused = iter(sorted(TOKENS))


def pytest_sessionstart(session: pytest.Session) -> None:
    """Refuse to run on anything but the installed distribution (not a checkout's ``sdk``)."""
    installed = Path(sysconfig.get_paths()["purelib"]).resolve()
    if not Path(sdk.__file__).resolve().is_relative_to(installed):
        raise pytest.UsageError(f"sdk comes from {sdk.__file__}, not from {installed}")


def token_for(user_id: str) -> str:
    """The harness's token for ``user_id`` (a user it minted none for has no token)."""
    return TOKENS[user_id]


@pytest.fixture(name="token_for")
def _token_for() -> Callable[[str], str]:
    return token_for


@pytest.fixture
def buyer() -> str:
    return next(_unused)


@pytest.fixture
def other_buyer() -> str:
    return next(_unused)


@pytest.fixture
def api() -> Iterator[MemoryAPI]:
    with RemoteMemoryClient(URL, token_provider=token_for) as client:
        yield client


@pytest.fixture
def async_http() -> Callable[[], httpx.AsyncClient]:
    return lambda: httpx.AsyncClient(base_url=URL)
