"""``dualtrack token`` and ``dualtrack serve``: one clear line and a non-zero exit on errors."""

from __future__ import annotations

import jwt
import pytest
from typer.testing import CliRunner

from service.cli import app

SECRET = "cli-secret-0123456789abcdef0123456789"


def test_token_prints_a_verifiable_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DUALTRACK_JWT_SECRET", SECRET)
    result = CliRunner().invoke(
        app, ["token", "--sub", "buyer-001", "--agent", "refund-agent", "--scope", "memory:read"]
    )
    assert result.exit_code == 0, result.output
    claims = jwt.decode(result.stdout.strip(), SECRET, algorithms=["HS256"])
    assert claims["sub"] == "buyer-001"
    assert claims["azp"] == "refund-agent"
    assert claims["scope"] == "memory:read"
    assert claims["exp"] > claims["iat"]


def test_token_errors_are_one_line_and_non_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DUALTRACK_JWT_SECRET", raising=False)
    runner = CliRunner()
    no_secret = runner.invoke(app, ["token", "--sub", "buyer-001"])
    assert no_secret.exit_code == 1
    assert "DUALTRACK_JWT_SECRET" in no_secret.output
    assert "Traceback" not in no_secret.output
    monkeypatch.setenv("DUALTRACK_JWT_SECRET", SECRET)
    bad_scope = runner.invoke(app, ["token", "--sub", "buyer-001", "--scope", "everything"])
    assert bad_scope.exit_code == 1
    assert "unknown scope" in bad_scope.output
    bad_sub = runner.invoke(app, ["token", "--sub", "bad user!"])
    assert bad_sub.exit_code == 1
    assert "invalid_user_id" in bad_sub.output
