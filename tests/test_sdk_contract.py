"""One SDK contract, two clients: every test of ``tests/sdk_contract_cases.py`` runs here
against ``MemoryClient`` in process and ``RemoteMemoryClient`` over the REST service, with
the same arguments, results and typed errors. The service runs under uvicorn in a thread on
a loopback port of its own (the real HTTP stack, and a plain ``httpx.Client``); the async
client runs the same story over ``httpx.ASGITransport``. ``tests/test_thin_client.py`` runs
the same cases on the client-only distribution in a venv of its own."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import httpx
import pytest
import uvicorn

from sdk import MemoryAPI, MemoryClient, RemoteMemoryClient
from service import create_app
from service.settings import ServiceSettings
from service.tokens import mint
from tests.sdk_contract_cases import (  # noqa: F401 (collected here, over the fixtures below)
    TokenFor,
    test_a_token_of_another_user_is_refused_before_sending,
    test_an_unreachable_service_is_service_unavailable,
    test_answers_without_the_error_format_are_typed_too,
    test_bad_input_is_the_same_typed_error,
    test_build_context_holds_the_profile_facts_and_records,
    test_devices_links_and_facts,
    test_end_session_and_append_turns,
    test_feedback_export_and_forget,
    test_profiles_ensure_get_update_and_a_stale_version,
    test_sandbox_write_fork_merge_discard,
    test_the_async_client_tells_the_same_story,
    test_write_search_read_and_delete,
)

SECRET = "contract-secret-0123456789abcdef0123"
SERVICE = ServiceSettings(
    jwt_secret=SECRET,  # type: ignore[arg-type]
    jwt_audience="dualtrack",
    rate_per_s=1000,
    rate_burst=1000,
    export_interval_s=0.001,
    max_body_bytes=256 * 1024,
)
SCOPES = ["memory:read", "memory:write", "memory:erase", "account:export"]


def token_for(user_id: str) -> str:
    """A development token whose ``sub`` is ``user_id`` (the agent is the same for all)."""
    return mint(SERVICE, sub=user_id, agent="refund-agent", scopes=SCOPES)


@pytest.fixture(name="token_for")
def _token_for() -> TokenFor:
    return token_for


@pytest.fixture
def buyer() -> str:
    """The user of a contract test (``mem`` empties the tables after each)."""
    return "buyer-001"


@pytest.fixture
def other_buyer() -> str:
    return "buyer-002"


@pytest.fixture(scope="module")
def service_url(session_client: MemoryClient) -> Iterator[str]:
    """The service over the test database, served on 127.0.0.1 (a free port) for the module."""
    app = create_app(service=SERVICE, client=session_client)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, name="contract-service", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            pytest.fail("the service did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=60)


@pytest.fixture
def remote(mem: MemoryClient, service_url: str) -> Iterator[RemoteMemoryClient]:
    """The remote client over the service (``mem`` empties the tables after the test)."""
    with RemoteMemoryClient(service_url, token_provider=token_for) as client:
        yield client


@pytest.fixture(params=["in_process", "remote"])
def api(request: pytest.FixtureRequest) -> MemoryAPI:
    """Each contract test runs once per client."""
    name = "mem" if request.param == "in_process" else "remote"
    client: MemoryAPI = request.getfixturevalue(name)
    return client


def test_both_clients_satisfy_the_protocol(mem: MemoryClient, remote: RemoteMemoryClient) -> None:
    # the assignments are the check: mypy --strict refuses a client that drifts from MemoryAPI
    clients: list[MemoryAPI] = [mem, remote]
    assert all(callable(c.write) for c in clients)


@pytest.fixture
def async_http(mem: MemoryClient) -> Callable[[], httpx.AsyncClient]:
    """A new ``httpx.AsyncClient`` on the app over the test database, in process."""
    transport = httpx.ASGITransport(app=create_app(service=SERVICE, client=mem))
    return lambda: httpx.AsyncClient(transport=transport, base_url="http://testserver")
