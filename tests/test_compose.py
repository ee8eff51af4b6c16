"""docker-compose.yml wires PostgreSQL, Weaviate 1.39, the migration, the worker and the
service with health checks and every variable the service needs (no Docker here: the file
is checked, not run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from sdk.settings import Settings
from service.settings import ServiceSettings

COMPOSE = Path(__file__).resolve().parent.parent / "docker-compose.yml"


def _compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    return data


def test_the_services_and_their_health_checks() -> None:
    services = _compose()["services"]
    assert {"postgres", "weaviate", "migrate", "worker", "service"} <= set(services)
    assert services["weaviate"]["image"].endswith(":1.39.3")
    assert "pgvector" in services["postgres"]["image"]
    for name in ("postgres", "weaviate", "service"):
        assert services[name]["healthcheck"]["test"], name
    assert "/readyz" in " ".join(services["service"]["healthcheck"]["test"])
    depends = services["service"]["depends_on"]
    assert depends["migrate"]["condition"] == "service_completed_successfully"
    assert depends["postgres"]["condition"] == "service_healthy"
    assert services["service"]["ports"] == ["127.0.0.1:8000:8000"]


def test_every_variable_the_service_reads_is_known() -> None:
    env = _compose()["services"]["service"]["environment"]
    known = {f"DUALTRACK_{n.upper()}" for n in Settings.model_fields} | {
        f"DUALTRACK_{n.upper()}" for n in ServiceSettings.model_fields
    }
    assert set(env) <= known, set(env) - known
    needed = {
        "DUALTRACK_POSTGRES_DSN",
        "DUALTRACK_INDEX",
        "DUALTRACK_INDEX_CONFIG",
        "DUALTRACK_PII_KEY_FILE",
        "DUALTRACK_JWT_SECRET",
        "DUALTRACK_AUTO_MIGRATE",
    }
    assert needed <= set(env)
    assert env["DUALTRACK_AUTO_MIGRATE"] == "false", "service mode: migrate is a deploy step"
    Settings.model_validate(
        {"index": env["DUALTRACK_INDEX"], "auto_migrate": env["DUALTRACK_AUTO_MIGRATE"]}
    )
