"""Errors never carry the user id: it may be an e-mail or a phone number.

``UserNotFound`` is raised for every call naming a user without a profile; its
``to_dict()``, its details, the REST error body, the MCP tool error and the
log lines of the call must not hold the id.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient

from policies.errors import UserNotFound
from policies.lifecycle import LifecyclePolicy
from sdk import MemoryClient
from service import create_app
from tests.test_mcp import call, error_code, mcp_url  # noqa: F401  (fixture)
from tests.test_mcp import token as mcp_token
from tests.test_service import SERVICE, auth, token
from values.sessions import Turn

EMAIL = "zhang.wei@example.com"
PHONE = "13912345678"

CALLS: dict[str, Callable[[MemoryClient, str], Any]] = {
    "facts.put": lambda m, u: m.facts.put(u, "k", 1, lifecycle_policy=LifecyclePolicy.EXPLICIT),
    "pii.store": lambda m, u: m.pii.store(u, "phone", "13800001111"),
    "profiles.get": lambda m, u: m.profiles.get(u),
    "profiles.update": lambda m, u: m.profiles.update(u, expected_version=1, language="en"),
    "devices.register": lambda m, u: m.devices.register(u, device_id="d", os="ios", browser="x"),
    "links.add": lambda m, u: m.links.add(u, entity_type="order", entity_id="88231", role="owner"),
    "write": lambda m, u: m.write(u, "订单 88231", lifecycle_policy=LifecyclePolicy.IMPLICIT),
    "end_session": lambda m, u: m.end_session(u, "s-1", [Turn("user", "订单 88231 退款")]),
}


@pytest.mark.parametrize("user_id", [EMAIL, PHONE])
@pytest.mark.parametrize("name", sorted(CALLS))
def test_user_not_found_names_no_user(
    mem: MemoryClient, caplog: pytest.LogCaptureFixture, name: str, user_id: str
) -> None:
    caplog.set_level(logging.DEBUG)
    with pytest.raises(UserNotFound) as raised:
        CALLS[name](mem, user_id)
    error = raised.value
    assert user_id not in json.dumps(error.to_dict())
    assert user_id not in f"{error} {error.details!r} {error.args!r}"
    assert user_id not in caplog.text


def test_rest_and_mcp_errors_name_no_user(
    mem: MemoryClient,
    mcp_url: str,  # noqa: F811
) -> None:
    with TestClient(create_app(service=SERVICE, client=mem)) as api:
        for answer in (
            api.get("/v1/profile", headers=auth(token(sub=EMAIL))),
            api.put(
                "/v1/facts/k",
                headers=auth(token(sub=EMAIL)),
                json={"value": 1, "lifecycle_policy": "explicit"},
            ),
        ):
            assert answer.status_code == 404
            assert EMAIL not in answer.text
    remember = {"text": "hi", "lifecycle_policy": "implicit"}
    result = call(mcp_url, mcp_token(sub=EMAIL), "remember", remember)
    assert error_code(result) == "user_not_found"
    assert EMAIL not in result.model_dump_json()
