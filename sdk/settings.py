"""Settings of a dualtrack deployment, read from ``DUALTRACK_*`` environment variables.

Every setting is documented in the README. The object is passed down
explicitly; nothing reads a module-level global.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from policies.confidence import ConfidenceConfig
from policies.profile_merge import DEFAULT_CONFIRMATIONS
from policies.ttl import TTLConfig
from unstructured_memory.embedders.registry import AUTO_EMBEDDER, EMBEDDERS
from unstructured_memory.index.registry import DEFAULT_INDEX
from unstructured_memory.plugins import seal_secrets
from unstructured_memory.profile.registry import DEFAULT_EXTRACTOR, EXTRACTORS

__all__ = ["Settings"]


class Settings(BaseSettings):
    """Deployment settings; environment prefix ``DUALTRACK_``."""

    model_config = SettingsConfigDict(
        env_prefix="DUALTRACK_", env_nested_delimiter="__", extra="forbid", frozen=True
    )

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
        default=True,
        description="Run pending Alembic migrations when the client starts (embedded default). "
        "Set false in a service: `dualtrack migrate` is then a deploy step, and a client "
        "refuses a schema outside the range it serves (SchemaMismatch).",
    )
    pool_size: int = Field(default=5, ge=1, le=100, description="Connections kept per process.")
    statement_timeout_ms: int = Field(
        default=30_000, ge=0, description="Server-side statement timeout (0: none)."
    )

    embedder: str = Field(
        default=AUTO_EMBEDDER,
        description="Embedder name: auto (the default: wordvectors for a new deployment, the "
        "offline embedder its vectors belong to for an existing one), wordvectors, hashing, "
        "sentence-transformers, openai.",
    )
    embedder_config: dict[str, Any] = Field(
        default_factory=dict,
        repr=False,
        description='The embedder\'s settings as JSON, e.g. {"model_path": "/models/bge"}; '
        "its secrets (an API key) are kept as SecretStr, shown as ********** in dumps.",
    )
    index: str = Field(
        default=DEFAULT_INDEX, description="Search index backend: pgvector, weaviate."
    )
    index_config: dict[str, Any] = Field(
        default_factory=dict, description="The index backend's settings as JSON."
    )
    outbox_worker: Literal["thread", "external"] = Field(
        default="thread",
        description="Who applies the outbox to a derived index: a thread of each client, or "
        "`dualtrack worker` processes.",
    )
    outbox_max_delay_s: float = Field(
        default=60.0, gt=0, description="Longest backoff between retries of a failing batch."
    )
    renewal_flush_s: float = Field(
        default=1.0,
        gt=0,
        le=60,
        description="A search's TTL renewal and use tracking are written in batches at most "
        "this many seconds later (memories within a day of expiry renew at once).",
    )
    prefilter_limit: int = Field(
        default=0,
        ge=0,
        description="A filtered search on a derived index first asks the ledger for matching "
        "ids and ranks only those when there are at most this many (0: the index filters "
        "by itself, which measured faster in every case; see the README).",
    )
    erasure_vacuum_timeout_s: float = Field(
        default=10.0,
        ge=0,
        le=600,
        description="forget_user vacuums the tables it touched once it has committed, and "
        "waits for that at most this long (0: off; the sweep's vacuum then clears the erased "
        'rows). See "Erasure" in the README.',
    )
    cold_after_days: int = Field(
        default=30, ge=1, description="`dualtrack sweep` sets users idle this long to cold."
    )
    context_turns: int = Field(
        default=2,
        ge=0,
        le=10,
        description="Contextual indexing: previous turns of the session indexed with a "
        "fragment (0: off).",
    )
    sandbox_hours: float = Field(
        default=24.0,
        gt=0,
        le=24 * 90,
        description="How long a session sandbox (and what was written in it but not merged) lives.",
    )
    search_preset: str = Field(
        default="hybrid",
        description="Default search preset: hybrid, hybrid_ranked, keyword, vector.",
    )
    verifier_timeout_ms: int = Field(
        default=300,
        ge=1,
        le=60_000,
        description="Longest a verification round waits for business verifiers; what has "
        "not answered by then is unverified.",
    )
    verifier_max_workers: int = Field(
        default=8, ge=1, le=64, description="Business verifiers called at once, per client."
    )
    profile_extractor: str = Field(
        default=DEFAULT_EXTRACTOR,
        description="Profile extraction at session end: rules (rules + NER, the default) or "
        "openai (a chat model at an OpenAI-compatible endpoint, falling back to the rules).",
    )
    profile_extractor_config: dict[str, Any] = Field(
        default_factory=dict,
        repr=False,
        description='The extractor\'s settings as JSON, e.g. {"base_url": "https://.../v1", '
        '"model": "qwen-plus", "api_key": "...", "timeout_s": 20}; the API key kept as for '
        "embedder_config.",
    )
    preference_confirmations: int = Field(
        default=DEFAULT_CONFIRMATIONS,
        ge=0,
        le=10,
        description="Sessions after the first that must repeat a preference before it "
        "becomes the profile's (0: at once).",
    )
    session_idle_minutes: float = Field(
        default=30.0,
        gt=0,
        le=7 * 24 * 60,
        description="A session without a new turn this long is ended by `dualtrack sweep` "
        "(its turns summarised and merged into the profile).",
    )
    session_extract_every_turns: int = Field(
        default=20,
        ge=1,
        le=10_000,
        description="append_turns summarises a long session's unprocessed turns once this "
        "many have gathered.",
    )
    ttl: TTLConfig = Field(
        default_factory=TTLConfig,
        description="TTL days, e.g. DUALTRACK_TTL__IMPLICIT_DAYS=7.",
    )
    confidence: ConfidenceConfig = Field(
        default_factory=ConfidenceConfig,
        description="Feedback weights, the pending threshold and the decay schedule, e.g. "
        "DUALTRACK_CONFIDENCE__SKIP=0.1.",
    )

    @field_validator("embedder_config")
    @classmethod
    def _seal_embedder_secrets(cls, value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        return seal_secrets(info.data.get("embedder", ""), EMBEDDERS, value)

    @field_validator("profile_extractor_config")
    @classmethod
    def _seal_extractor_secrets(cls, value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        return seal_secrets(info.data.get("profile_extractor", ""), EXTRACTORS, value)

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
