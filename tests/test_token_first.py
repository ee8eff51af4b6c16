"""Every route of the app, found by walking ``app.routes``: the token is checked before the
body is read (malformed JSON without a token is 401, not 400/422), and the scheme of
``Authorization`` is case-insensitive (RFC 7235: ``bearer`` and ``BEARER`` are ``Bearer``)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from fastapi.testclient import TestClient

from sdk import MemoryClient
from service import create_app
from tests.test_service import SERVICE, token

PUBLIC = {
    ("GET", "/openapi.json"),
    ("GET", "/docs"),
    ("GET", "/docs/oauth2-redirect"),
    ("GET", "/redoc"),
    ("GET", "/docs/static/{name}"),
    ("GET", "/readyz"),
    ("GET", "/healthz"),
    ("GET", "/ops"),
    ("GET", "/ops/static/{name}"),
}
"""The routes that take no token (the probes, the dashboard's static page, the schema)."""

PATH_VALUES = {
    "session_id": "s-1",
    "fingerprint": "a" * 64,
    "key": "contact.channel",
    "link_id": "00000000-0000-4000-8000-000000000001",
    "memory_id": "00000000-0000-4000-8000-000000000002",
    "name": "ops.js",
}
"""A well-formed value for each path parameter of the app (a new one must be added)."""

MALFORMED = b'{"text": "unterminated'


def routes(app: FastAPI) -> Iterator[tuple[str, str]]:
    """Every (method, concrete path) the app serves."""
    for route in iter_route_contexts(app.routes):
        for method in sorted((route.methods or set()) - {"HEAD"}):
            yield method, str(route.path)


def concrete(path: str) -> str:
    return re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: PATH_VALUES[m.group(1)], path)


@pytest.fixture
def api(mem: MemoryClient) -> Iterator[TestClient]:
    with TestClient(create_app(service=SERVICE, client=mem)) as client:
        yield client


def test_every_route_is_either_public_or_checks_the_token_before_the_body(
    api: TestClient,
) -> None:
    app = api.app
    assert isinstance(app, FastAPI)
    token_routes = [r for r in routes(app) if r not in PUBLIC]
    assert len(token_routes) > 30, "the walk found the included routers' routes"
    answers = {
        (method, path): api.request(
            method,
            concrete(path),
            content=MALFORMED,
            headers={"Content-Type": "application/json"},
        ).status_code
        for method, path in token_routes
    }
    assert {r: s for r, s in answers.items() if s != 401} == {}


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "Bearer"])
def test_every_token_route_accepts_the_scheme_in_any_case(api: TestClient, scheme: str) -> None:
    app = api.app
    assert isinstance(app, FastAPI)
    user = token(scopes=["memory:read", "memory:write", "memory:erase", "account:export"])
    ops = token(sub="operator-01", agent="ops-console", scopes=["ops"])
    refused = {}
    for method, path in routes(app):
        if (method, path) in PUBLIC:
            continue
        tok = ops if path.startswith(("/v1/ops", "/metrics")) else user
        answer = api.request(
            method,
            concrete(path),
            content=MALFORMED,
            headers={"Content-Type": "application/json", "Authorization": f"{scheme} {tok}"},
        )
        if answer.status_code in (401, 403):
            refused[(method, path)] = answer.status_code
    assert refused == {}
