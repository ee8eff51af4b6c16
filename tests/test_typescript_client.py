"""The TypeScript client (``clients/typescript``): its committed schema types are what
openapi-typescript makes of the app's schema today, and its ``node --test`` suite passes
against the real service (uvicorn on a free port, the embedded PostgreSQL).

``npm ci`` runs when ``node_modules`` is missing or older than ``package-lock.json``.
Without Node.js the tests skip, except under CI, where they fail.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sdk import MemoryClient
from service import create_app
from service.app import openapi_document
from service.tokens import mint
from tests.live_service import served
from tests.test_service import SERVICE

PACKAGE = Path(__file__).resolve().parent.parent / "clients" / "typescript"
SCHEMA_TYPES = PACKAGE / "src" / "schema.d.ts"
BIN = PACKAGE / "node_modules" / ".bin"
BUYER = "buyer-ts-01"


def _npm() -> str:
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        reason = "Node.js and npm are not installed (apt-get install nodejs npm)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return npm


def _run(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args,
        cwd=PACKAGE,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, **env},
    )


@pytest.fixture(scope="module")
def npm() -> str:
    """npm, with the package's locked dependencies installed."""
    npm = _npm()
    installed = PACKAGE / "node_modules" / ".package-lock.json"
    lock = PACKAGE / "package-lock.json"
    if not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime:
        done = _run([npm, "ci", "--no-audit", "--no-fund"])
        assert done.returncode == 0, done.stderr
    return npm


def generate_types(schema: dict[str, object], tmp_path: Path) -> str:
    """What ``npm run generate`` makes of ``schema``."""
    source = tmp_path / "openapi.json"
    source.write_text(json.dumps(schema, ensure_ascii=False), encoding="utf-8")
    out = tmp_path / "schema.d.ts"
    made = _run([str(BIN / "openapi-typescript"), "--default-non-nullable", "false",
                 str(source), "-o", str(out)])  # fmt: skip
    assert made.returncode == 0, made.stderr
    return out.read_text(encoding="utf-8")


def test_the_committed_schema_types_are_current(npm: str, tmp_path: Path) -> None:
    current = generate_types(openapi_document(), tmp_path)
    assert SCHEMA_TYPES.read_text(encoding="utf-8") == current, (
        "clients/typescript/src/schema.d.ts is stale: run `.venv/bin/dualtrack openapi > "
        "/tmp/openapi.json && (cd clients/typescript && npm run generate -- /tmp/openapi.json "
        "-o src/schema.d.ts)`"
    )


def test_a_stale_schema_would_be_caught(npm: str, tmp_path: Path) -> None:
    schema = openapi_document()
    schema["components"]["schemas"]["WriteRequest"]["properties"].pop("private")
    assert SCHEMA_TYPES.read_text(encoding="utf-8") != generate_types(schema, tmp_path)


def test_the_client_works_against_the_live_service(npm: str, mem: MemoryClient) -> None:
    def tok(sub: str, scopes: list[str]) -> str:
        return mint(SERVICE, sub=sub, agent="ts-agent", scopes=scopes)

    with served(create_app(service=SERVICE, client=mem)) as url:
        ran = _run(
            [npm, "test"],
            DUALTRACK_URL=url,
            DUALTRACK_USER=BUYER,
            DUALTRACK_TOKEN=tok(BUYER, ["memory:read", "memory:write"]),
            DUALTRACK_READ_ONLY_TOKEN=tok(BUYER, ["memory:read"]),
            DUALTRACK_NEW_USER_TOKEN=tok("buyer-ts-never-seen", ["memory:read"]),
        )
    report = ran.stdout + ran.stderr
    assert ran.returncode == 0, report
    assert "# fail 0" in report, report
    assert "# pass 4" in report, report
