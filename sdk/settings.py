"""Settings of a dualtrack deployment, read from ``DUALTRACK_*`` environment variables.

Every setting is documented in the README. The object is passed down
explicitly; nothing reads a module-level global.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["Settings"]


class Settings(BaseSettings):
    """Deployment settings; environment prefix ``DUALTRACK_``."""

    model_config = SettingsConfigDict(env_prefix="DUALTRACK_", extra="forbid", frozen=True)

    postgres_dsn: SecretStr | None = Field(
        default=None,
        description="SQLAlchemy/libpq DSN of a PostgreSQL 14+ server; unset: embedded server.",
    )
    data_dir: Path = Field(
        default=Path(".dualtrack"),
        description="Local state: the embedded server's data, the generated dev key file.",
    )
    pii_keys: SecretStr | None = Field(
        default=None,
        description="PII key ring: 'id:base64key:YYYY-MM-DD' entries, comma or newline "
        "separated, the first one active.",
    )
    pii_key_file: Path | None = Field(
        default=None,
        description="File holding the key ring in the same format; default <data_dir>/pii.keys "
        "(generated on first use) when pii_keys is unset.",
    )
    auto_migrate: bool = Field(
        default=True, description="Run pending Alembic migrations when the client starts."
    )
    pool_size: int = Field(default=5, ge=1, le=100, description="Connections kept per process.")
    statement_timeout_ms: int = Field(
        default=30_000, ge=0, description="Server-side statement timeout (0: none)."
    )

    def resolved_data_dir(self) -> Path:
        """``data_dir`` made absolute against the working directory."""
        return self.data_dir.expanduser().resolve()

    def dsn(self) -> str | None:
        """The configured DSN in clear, or ``None`` for the embedded server."""
        return self.postgres_dsn.get_secret_value() if self.postgres_dsn else None

    @classmethod
    def from_env(cls, **overrides: Any) -> Settings:
        """Settings from the environment, with explicit keyword overrides on top."""
        return cls(**overrides)
