"""The OpenAPI document as a contract: the Bearer scheme, stable operation ids, every error
answer declared with the body the service really sends, defaults never required, and a
Python client generated from it (openapi-python-client) that passes ``mypy --strict``."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from sdk import MemoryClient
from service import create_app
from service.app import openapi_document
from service.errors import ErrorBody
from tests.test_service import SERVICE, auth, token

DOC = openapi_document()
OPERATIONS = [
    (method, path, op) for path, ops in DOC["paths"].items() for method, op in ops.items()
]
PUBLIC = {"/readyz", "/healthz"}
ERROR_REF = {"$ref": "#/components/schemas/ErrorBody"}


@pytest.fixture
def api(mem: MemoryClient) -> Iterator[TestClient]:
    tight = SERVICE.model_copy(update={"max_body_bytes": 1024})
    with TestClient(create_app(service=tight, client=mem)) as client:
        yield client


def test_token_routes_require_the_bearer_scheme_and_take_no_authorization_parameter() -> None:
    assert DOC["components"]["securitySchemes"] == {
        "bearer": {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "JWT",
            "description": DOC["components"]["securitySchemes"]["bearer"]["description"],
        }
    }
    for method, path, op in OPERATIONS:
        names = {p["name"].lower() for p in op.get("parameters", [])}
        assert "authorization" not in names, (method, path)
        expected: list[dict[str, list[str]]] | None = None if path in PUBLIC else [{"bearer": []}]
        assert op.get("security") == expected, (method, path)


def test_operation_ids_are_the_tag_and_the_route_name() -> None:
    ids = [op["operationId"] for _, _, op in OPERATIONS]
    assert len(ids) == len(set(ids))
    for (_, _, op), op_id in zip(OPERATIONS, ids, strict=True):
        assert op_id.startswith(f"{op['tags'][0]}_"), op_id
        assert re.fullmatch(r"[a-z]+_[a-z_]+", op_id), op_id
    assert {
        "memories_write",
        "memories_search",
        "memories_list",
        "context_build",
        "sessions_end",
        "sessions_append_turns",
        "profile_ensure",
        "feedback_report",
    } <= set(ids)


def test_every_error_answer_is_declared_with_the_error_body() -> None:
    assert "HTTPValidationError" not in DOC["components"]["schemas"]
    assert "ValidationError" not in DOC["components"]["schemas"]
    for method, path, op in OPERATIONS:
        answers = op["responses"]
        assert "500" in answers, (method, path)
        for status, answer in answers.items():
            if int(status) < 400 or (path in PUBLIC and status == "503"):
                continue
            assert answer["content"] == {"application/json": {"schema": ERROR_REF}}, (
                method,
                path,
                status,
            )
        if path not in PUBLIC:
            assert {"400", "401", "403", "404", "429", "503"} <= set(answers), (method, path)
        if "requestBody" in op:
            assert {"413", "422"} <= set(answers), (method, path)
    four_oh_four = DOC["paths"]["/v1/profile"]["get"]["responses"]["404"]["description"]
    assert "`user_not_found`" in four_oh_four
    assert "`sandbox_not_found`" in four_oh_four
    assert "token_user_mismatch" not in str(DOC), "a code only the remote client raises"


def _declared(method: str, path: str) -> set[int]:
    return {int(s) for s in DOC["paths"][path][method]["responses"]}


def test_what_the_service_sends_is_declared_and_is_the_error_body(api: TestClient) -> None:
    user, reader = auth(token()), auth(token(scopes=["memory:read"]))
    write = {"text": "记住我的邮箱", "lifecycle_policy": "explicit"}
    answers = {
        ("get", "/v1/profile", 401): api.get("/v1/profile"),
        ("get", "/v1/profile", 404): api.get("/v1/profile", headers=user),
        ("post", "/v1/memories", 403): api.post("/v1/memories", headers=reader, json=write),
        ("post", "/v1/memories", 413): api.post(
            "/v1/memories", headers=user, json={**write, "text": "长" * 2000}
        ),
    }
    api.put("/v1/profile", headers=user)
    answers[("post", "/v1/memories", 422)] = api.post(
        "/v1/memories", headers=user, json={"text": "x"}
    )
    answers[("get", "/v1/memories/{memory_id}", 422)] = api.get("/v1/memories/x", headers=user)
    answers[("post", "/v1/search", 400)] = api.post(
        "/v1/search", headers={**user, "X-Dualtrack-Sandbox": "not-a-uuid"}, json={"query": "q"}
    )
    answers[("patch", "/v1/profile", 412)] = api.patch(
        "/v1/profile", headers={**user, "If-Match": '"7"'}, json={"language": "zh"}
    )
    for (method, path, status), answer in answers.items():
        assert answer.status_code == status, (method, path, answer.text)
        assert status in _declared(method, path), (method, path, status)
        ErrorBody.model_validate(answer.json())  # extra="forbid": exactly the declared shape
    assert answers[("patch", "/v1/profile", 412)].json()["error"]["current_version"] == 1


def test_dualtrack_openapi_prints_the_document() -> None:
    import json

    from typer.testing import CliRunner

    from service.cli import app

    printed = CliRunner().invoke(app, ["openapi"])
    assert printed.exit_code == 0, printed.output
    assert json.loads(printed.output) == DOC


def test_fields_with_defaults_are_never_required() -> None:
    for name, schema in DOC["components"]["schemas"].items():
        required = set(schema.get("required", []))
        defaulted = {k for k, v in schema.get("properties", {}).items() if "default" in v}
        assert not required & defaulted, name
    write = DOC["components"]["schemas"]["WriteRequest"]
    assert set(write["required"]) == {"text", "lifecycle_policy"}
    assert {"kind", "private"} <= set(write["properties"])


USAGE = """
from dualtrack_client import AuthenticatedClient
from dualtrack_client.api.memories import memories_search, memories_write
from dualtrack_client.models import ErrorBody, LifecyclePolicy, SearchBody, SearchOut, WriteRequest

client = AuthenticatedClient(base_url="http://127.0.0.1:8000", token="a-jwt")
written = memories_write.sync(
    client=client,
    body=WriteRequest(text="以后都用微信通知我", lifecycle_policy=LifecyclePolicy.EXPLICIT),
)
found = memories_search.sync(client=client, body=SearchBody(query="怎么通知"))
if isinstance(found, SearchOut):
    texts: list[str] = [hit.text for hit in found.hits]
elif isinstance(found, ErrorBody):
    code: str = found.error.code
"""


def test_a_python_client_generated_from_the_schema_type_checks(tmp_path: Path) -> None:
    import json

    source = tmp_path / "openapi.json"
    source.write_text(json.dumps(DOC, ensure_ascii=False), encoding="utf-8")
    config = tmp_path / "config.yaml"
    config.write_text("package_name_override: dualtrack_client\npost_hooks: []\n")
    package = tmp_path / "pkg" / "dualtrack_client"
    generator = Path(sys.executable).parent / "openapi-python-client"
    made = subprocess.run(
        [str(generator), "generate", "--path", str(source), "--meta", "none",
         "--config", str(config), "--output-path", str(package), "--fail-on-warning"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert made.returncode == 0, made.stdout + made.stderr
    assert (package / "api" / "memories" / "memories_search.py").exists()
    (tmp_path / "pkg" / "usage.py").write_text(USAGE, encoding="utf-8")
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--config-file", "",
         "dualtrack_client", "usage.py"],
        cwd=tmp_path / "pkg", capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
