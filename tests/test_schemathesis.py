"""No input gives a 5xx: schemathesis over the service's OpenAPI schema, in-process over ASGI.

Every operation gets a bounded number of derandomized examples (valid and invalid
ones, from each phase schemathesis runs) with a valid token of a user that exists,
and rate limits raised out of the way. Each response must be anything but a
server error; the error format and status codes are the other tests' concern.

The schema is the app's own OpenAPI document, read at import (building the app does
no I/O); each case is sent over ASGI to an app over the test database. Loading it with
``schemathesis.pytest.from_fixture`` instead fails under pytest 9 (its lazy loader
sets ``Function._nodeid``, which pytest 9 no longer has).
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from sdk import MemoryClient
from sdk.settings import Settings
from service import create_app
from tests.test_service import SERVICE, auth, token

FUZZ = SERVICE.model_copy(update={"rate_per_s": 1e9, "rate_burst": 10**9})
USER = "buyer-fuzz-01"
SCOPES = ["memory:read", "memory:write", "memory:erase", "ops"]

schema = schemathesis.openapi.from_dict(
    create_app(service=FUZZ, client=MemoryClient(Settings())).openapi()
)


@pytest.fixture(scope="module")
def fuzz_app(session_client: MemoryClient) -> FastAPI:
    """The app over the test database (schemathesis starts it on the first call)."""
    return create_app(service=FUZZ, client=session_client)


@pytest.fixture
def user(fuzz_app: FastAPI, mem: MemoryClient) -> dict[str, str]:
    """The headers of a user that exists (``mem`` empties the tables after each operation)."""
    created = TestClient(fuzz_app).put("/v1/profile", headers=auth(token(sub=USER)))
    assert created.status_code == 200
    return auth(token(sub=USER, scopes=SCOPES))


@schema.parametrize()
@settings(
    max_examples=15,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_no_input_gives_a_server_error(
    case: schemathesis.Case[Any], fuzz_app: FastAPI, user: dict[str, str], mem: MemoryClient
) -> None:
    case.call_and_validate(app=fuzz_app, headers=user, checks=[not_a_server_error])
    if case.method == "DELETE" and case.path == "/v1/me":
        mem.profiles.ensure(USER)  # erased: bring the user back for the next example
