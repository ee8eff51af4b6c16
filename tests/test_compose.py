"""docker-compose.yml wires PostgreSQL, Weaviate 1.39, the migration, the worker and the
service with health checks and every variable the service needs (no Docker here: the file
is checked, not run); ``docker compose config`` needs no variable, the services (``nobody``)
can read the key file ``make demo`` writes, and ``.dockerignore`` keeps the build context to
the sources."""

from __future__ import annotations

import os
import posixpath
import re
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from sdk import MemoryClient
from sdk.settings import Settings
from service.cli import app
from service.settings import ServiceSettings
from structured_memory.pii.dev_key_file import DEV_KEY_FILE_MODE

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
OURS = ("migrate", "worker", "service")
"""The services built from this repository's Dockerfile."""


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


def test_compose_config_needs_no_variable() -> None:
    """Every ``${VAR}`` has a default: no ``${VAR:?...}`` (or ``${VAR?...}``, or a bare
    ``${VAR}``) that makes even ``docker compose config`` fail when it is unset."""
    text = COMPOSE.read_text(encoding="utf-8")
    uses = re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)([^}]*)\}", text)
    assert uses, "the service's JWT secret comes from the environment"
    for name, rest in uses:
        assert rest.startswith((":-", "-")), f"${{{name}{rest}}} fails when {name} is unset"
    env = _compose()["services"]["service"]["environment"]
    assert env["DUALTRACK_JWT_SECRET"] == "${DUALTRACK_JWT_SECRET:-}"


def test_an_empty_jwt_secret_is_no_key_and_serve_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    """Compose's default (an empty secret) never becomes an HS256 key anyone could sign
    with: the service refuses to start, naming the variable, before it binds a port."""
    assert ServiceSettings(jwt_secret="").jwt_secret is None  # type: ignore[arg-type]
    assert ServiceSettings(jwt_secret="  ").has_token_key() is False  # type: ignore[arg-type]
    assert ServiceSettings(jwt_secret="s" * 32).has_token_key() is True  # type: ignore[arg-type]
    for name in ("JWT_PUBLIC_KEY_FILE", "JWT_JWKS_FILE"):
        monkeypatch.delenv(f"DUALTRACK_{name}", raising=False)
    monkeypatch.setenv("DUALTRACK_JWT_SECRET", "")

    def started(*args: object, **kwargs: object) -> None:
        raise AssertionError("serve went on to start uvicorn without a token key")

    monkeypatch.setattr("uvicorn.run", started)
    result = CliRunner().invoke(app, ["serve"])
    assert result.exit_code == 1, result.output
    assert "no token key: set DUALTRACK_JWT_SECRET" in result.output
    assert "refuses to start" in result.output
    assert "Traceback" not in result.output


def _dockerfile_user() -> str:
    users = [
        line.split(None, 1)[1].strip()
        for line in DOCKERFILE.read_text(encoding="utf-8").splitlines()
        if line.upper().startswith("USER ")
    ]
    assert users, "the image drops root"
    return users[-1]


def test_the_services_run_as_nobody_with_the_key_file_as_a_secret() -> None:
    compose = _compose()
    services = compose["services"]
    assert _dockerfile_user() in ("nobody", "65534", "65534:65534")
    for name in OURS:
        assert services[name]["build"] == ".", name
        assert services[name].get("user", "nobody") in ("nobody", "65534", "65534:65534"), name
    assert compose["secrets"]["pii_keys"] == {"file": "./.dualtrack/pii.keys"}
    for name in ("worker", "service"):
        service = services[name]
        # the short form: /run/secrets/pii_keys, a bind mount of the host file with its own
        # owner and mode (Compose ignores uid, gid and mode for a file secret)
        assert service["secrets"] == ["pii_keys"], name
        assert service["environment"]["DUALTRACK_PII_KEY_FILE"] == "/run/secrets/pii_keys"
    for name, service in services.items():
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0] if isinstance(volume, str) else volume["source"]
            assert source in compose["volumes"], f"{name} mounts a host path: {volume}"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _readable_by_nobody(path: Path) -> bool:
    """What a bind mount of ``path`` gives the containers' user ``nobody`` (uid 65534,
    neither its owner nor in its group): the mode's bits for others."""
    info = path.stat()
    assert info.st_uid != 65534
    return bool(info.st_mode & stat.S_IROTH)


def _demo_client(settings: Settings, data_dir: Path) -> MemoryClient:
    """A client as ``make demo`` builds one: no key ring configured, so the generated file
    in the data directory (over the test database)."""
    fields = {**settings.model_dump(), "pii_keys": None, "pii_key_file": None}
    return MemoryClient(Settings(**{**fields, "data_dir": data_dir}))


def test_the_key_file_the_demo_writes_is_readable_by_the_service_user(
    settings: Settings, tmp_path: Path
) -> None:
    data_dir = tmp_path / ".dualtrack"
    with _demo_client(settings, data_dir).start():
        pass
    key_file = data_dir / "pii.keys"
    assert _mode(key_file) == DEV_KEY_FILE_MODE == 0o644
    assert _readable_by_nobody(key_file)
    assert _mode(data_dir) == 0o700, "the host's other users cannot reach the file"
    assert "@blind:" in key_file.read_text()


def test_a_key_file_left_owner_only_is_opened_up_in_a_private_directory(
    settings: Settings, tmp_path: Path
) -> None:
    """What earlier versions left (0600 in a 0755 directory) is what the issue measured:
    ``PermissionError: /run/secrets/pii_keys``. The next start repairs it."""
    data_dir = tmp_path / ".dualtrack"
    with _demo_client(settings, data_dir).start():
        pass
    key_file = data_dir / "pii.keys"
    before = key_file.read_text()
    key_file.chmod(0o600)
    data_dir.chmod(0o755)
    assert not _readable_by_nobody(key_file)
    with _demo_client(settings, data_dir).start():
        pass
    assert _readable_by_nobody(key_file)
    assert (_mode(data_dir), _mode(key_file)) == (0o700, 0o644)
    assert key_file.read_text() == before, "the same keys"


def _ignore_rules() -> list[tuple[bool, str, re.Pattern[str]]]:
    """``.dockerignore`` as (negated, pattern, regex), in order (the last match wins)."""
    rules = []
    for raw in DOCKERIGNORE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        pattern = posixpath.normpath(line.removeprefix("!").strip()).lstrip("/")
        regex, i = "", 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                regex, i = regex + "(?:.*/)?", i + 3
            elif pattern.startswith("**", i):
                regex, i = regex + ".*", i + 2
            else:
                c = pattern[i]
                regex += "[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c)
                i += 1
        rules.append((negated, pattern, re.compile(regex)))
    return rules


def _ignored(rel: str, rules: list[tuple[bool, str, re.Pattern[str]]]) -> bool:
    """Docker's rule: a pattern matching a path or one of its parents excludes it, a
    negated one includes it again; the last matching pattern decides."""
    parts = rel.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    ignored = False
    for negated, _, regex in rules:
        if any(regex.fullmatch(p) for p in prefixes):
            ignored = not negated
    return ignored


def _build_context() -> dict[str, int]:
    """The files ``docker build .`` would send, with their sizes."""
    rules = _ignore_rules()
    reopened = [p for negated, p, _ in rules if negated]
    sent: dict[str, int] = {}
    for top, dirs, files in os.walk(ROOT):
        rel_top = os.path.relpath(top, ROOT)
        for d in list(dirs):
            rel = d if rel_top == "." else f"{rel_top}/{d}"
            if _ignored(rel, rules) and not any(p.startswith(rel + "/") for p in reopened):
                dirs.remove(d)
        for f in files:
            rel = f if rel_top == "." else f"{rel_top}/{f}"
            if not _ignored(rel, rules):
                sent[rel] = os.path.getsize(os.path.join(top, f))
    return sent


def test_the_build_context_is_the_sources() -> None:
    sent = _build_context()
    copied = [
        part
        for line in DOCKERFILE.read_text(encoding="utf-8").splitlines()
        if line.upper().startswith("COPY ")
        for part in line.split()[1:-1]
    ]
    assert "structured_memory" in copied
    assert "pyproject.toml" in copied
    for source in copied:  # everything the Dockerfile copies reaches the build
        path = ROOT / source
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
        wanted = {str(p.relative_to(ROOT)) for p in files if "__pycache__" not in p.parts}
        assert wanted, source
        assert wanted <= set(sent), (source, sorted(wanted - set(sent))[:5])
    tops = {rel.split("/", 1)[0] for rel in sent}
    assert tops <= {c.split("/", 1)[0] for c in copied}, tops - {*copied}
    for private in (".venv", ".git", ".cache", ".dualtrack", "tests", "benchmarks"):
        assert _ignored(private, _ignore_rules()), private
        assert _ignored(f"{private}/x/y.bin", _ignore_rules()), private
    assert not any("__pycache__" in rel or rel.endswith(".pyc") for rel in sent)
    assert sum(sent.values()) < 8 * 1024 * 1024, "the sources are a few MB, not 761"


def test_a_directory_holding_more_than_dualtracks_state_is_left_alone(
    settings: Settings, tmp_path: Path
) -> None:
    """A data directory pointed at a place of the user's own (here with a file of theirs)
    keeps its mode, and the key file in it stays owner-only."""
    data_dir = tmp_path / "shared"
    data_dir.mkdir()
    (data_dir / "notes.txt").write_text("mine")
    data_dir.chmod(0o755)
    with _demo_client(settings, data_dir).start():
        pass
    assert _mode(data_dir) == 0o755
    assert _mode(data_dir / "pii.keys") == 0o600
