"""Settings of the REST service, read from ``DUALTRACK_*`` variables like the SDK's."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["ServiceSettings"]


class ServiceSettings(BaseSettings):
    """How the service verifies tokens and what it accepts; prefix ``DUALTRACK_``."""

    model_config = SettingsConfigDict(env_prefix="DUALTRACK_", extra="ignore", frozen=True)

    jwt_secret: SecretStr | None = Field(
        default=None,
        description="HS256 secret; unset or empty: tokens must be RS256/ES256 signed.",
    )
    jwt_public_key_file: Path | None = Field(
        default=None, description="PEM public key for RS256/ES256 tokens."
    )
    jwt_jwks_file: Path | None = Field(
        default=None, description="A JWKS file of public keys (RS256/ES256), chosen by kid."
    )
    jwt_issuer: str | None = Field(default=None, description="Required `iss` when set.")
    jwt_audience: str | None = Field(default=None, description="Required `aud` when set.")
    jwt_leeway_s: int = Field(default=30, ge=0, le=300, description="Clock skew allowed.")
    max_body_bytes: int = Field(
        default=256 * 1024, ge=1024, description="Largest request body accepted (413 above)."
    )
    rate_per_s: float = Field(
        default=50.0, gt=0, description="Requests per second an agent may sustain (429 above)."
    )
    rate_burst: int = Field(default=100, ge=1, description="Requests an agent may burst.")
    rate_sync_s: float = Field(
        default=1.0,
        gt=0,
        le=60,
        description="How often each process reconciles its rate limits through PostgreSQL.",
    )
    export_interval_s: float = Field(
        default=60.0, gt=0, description="Least time between two exports of one user (429)."
    )
    unauthorized_per_s: float = Field(
        default=1.0, gt=0, description="401 answers an address may get a second sustained."
    )
    unauthorized_burst: int = Field(
        default=20, ge=1, description="401 answers an address may get at once (429 beyond)."
    )
    trusted_proxies: str = Field(
        default="",
        description="Comma-separated addresses or networks of proxies whose X-Forwarded-For "
        "names the client; from any other peer the header is ignored.",
    )
    metrics_access: Literal["ops", "open"] = Field(
        default="ops",
        description="/metrics: `ops` needs an ops token; `open` serves anyone (a private "
        "network's scraper).",
    )
    log_format: Literal["text", "json"] = Field(
        default="text",
        description="`dualtrack serve` log lines: `text` (uvicorn's) or `json` (one object "
        "a line, with request and trace ids).",
    )
    mcp_streams_per_token: int = Field(
        default=8, ge=1, description="MCP HTTP requests (streams) one token may hold open."
    )
    revocation_refresh_s: float = Field(
        default=5.0, ge=0, description="How often the revocation list is re-read."
    )

    @field_validator("jwt_secret", mode="before")
    @classmethod
    def _empty_secret_is_unset(cls, value: object) -> object:
        """An empty secret (``DUALTRACK_JWT_SECRET=``, compose's default) is no secret: never
        an HS256 key anyone could sign with."""
        if isinstance(value, SecretStr):
            value = value.get_secret_value()
        return None if isinstance(value, str) and not value.strip() else value

    def has_token_key(self) -> bool:
        """Whether any key to verify tokens is configured (a secret or public keys)."""
        keys = (self.jwt_secret, self.jwt_public_key_file, self.jwt_jwks_file)
        return any(k is not None for k in keys)
