"""The MCP server through the `mcp` client, over streamable HTTP and over stdio.

HTTP: the server runs in uvicorn on a loopback port in a thread, over the test
database; each request carries its Bearer token. Stdio: `dualtrack mcp` is a
child process over the same database, acting for the token in its environment.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import ExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx
import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from sdk import MemoryClient
from service.mcp_server import DualtrackMcp
from service.settings import ServiceSettings
from service.tokens import mint
from tests.conftest import key_line

REPO = Path(__file__).resolve().parents[1]
SECRET = "mcp-test-secret-0123456789abcdef012345"
SERVICE = ServiceSettings(
    jwt_secret=SECRET,  # type: ignore[arg-type]
    jwt_audience="dualtrack",
    rate_per_s=1000,
    rate_burst=1000,
)
ALL = ["memory:read", "memory:write", "memory:erase"]
TOOLS = {"remember", "recall", "context", "end_session", "feedback", "forget"}
REFUND = {
    "text": "订单 88231 的退款 RF20260629001 预计三天到账，有问题打 13912345678",
    "lifecycle_policy": "implicit",
}
BOUND_S = 60.0
T = TypeVar("T")


def token(sub: str = "buyer-001", agent: str | None = "refund-agent", **kw: Any) -> str:
    return mint(SERVICE, sub=sub, agent=agent, scopes=kw.pop("scopes", ALL), **kw)


def bounded(run: Callable[[], Awaitable[T]]) -> T:
    """Run ``run`` on an event loop, failing after ``BOUND_S`` rather than hanging."""

    async def within() -> T:
        with anyio.fail_after(BOUND_S):
            return await run()

    return anyio.run(within)


def body(result: CallToolResult) -> dict[str, Any]:
    """The structured content, checked against the text content (the same JSON)."""
    content: dict[str, Any] | None = result.structured_content
    assert content is not None, "never an empty result"
    assert json.loads(result.content[0].text) == content  # type: ignore[union-attr]
    return content


def error_code(result: CallToolResult) -> str:
    assert result.is_error, result
    code: str = body(result)["error"]["code"]
    assert body(result)["error"]["message"]
    return code


# --------------------------------------------------------------------------- HTTP


@pytest.fixture(scope="module")
def mcp_url(session_client: MemoryClient) -> Iterator[str]:
    """The streamable HTTP server on a free loopback port, for the module's tests."""
    app = DualtrackMcp(session_client, SERVICE).http_app()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + BOUND_S
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "uvicorn did not start"
    yield f"http://127.0.0.1:{port}/mcp"
    server.should_exit = True
    thread.join(BOUND_S)
    sock.close()


@asynccontextmanager
async def over_http(url: str, tok: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {tok}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=BOUND_S) as http,
        Client(streamable_http_client(url, http_client=http), read_timeout_seconds=BOUND_S) as c,
    ):
        yield c


def call(url: str, tok: str, name: str, arguments: dict[str, Any]) -> CallToolResult:
    async def run() -> CallToolResult:
        async with over_http(url, tok) as client:
            return await client.call_tool(name, arguments)

    return bounded(run)


def test_the_six_tools_are_listed_and_none_takes_a_user_id(mcp_url: str) -> None:
    async def run() -> list[Any]:
        async with over_http(mcp_url, token()) as client:
            return (await client.list_tools()).tools

    tools = {t.name: t for t in bounded(run)}
    assert set(tools) == TOOLS
    for tool in tools.values():
        schema = tool.input_schema
        assert "user_id" not in schema.get("properties", {}), tool.name
        assert schema.get("additionalProperties") is False, tool.name
        assert tool.output_schema is not None, tool.name
    assert "lifecycle_policy" in tools["remember"].input_schema["required"]
    assert tools["forget"].annotations is not None
    assert tools["forget"].annotations.destructive_hint is True


def test_remember_then_recall_and_context_for_the_token_user_only(
    mcp_url: str, mem: MemoryClient
) -> None:
    for user in ("buyer-001", "buyer-002"):
        mem.profiles.ensure(user)
    written = call(mcp_url, token(), "remember", REFUND)
    assert not written.is_error, written
    memory_id = body(written)["memory_id"]
    record = mem.memories.get("buyer-001", memory_id)
    assert record is not None
    assert record.agent_id == "refund-agent", "the agent is the token's azp"

    found = body(call(mcp_url, token(), "recall", {"query": "退款到账了吗"}))
    assert [h["memory_id"] for h in found["hits"]] == [memory_id]
    assert "13912345678" not in found["hits"][0]["text"], "recall returns masked text"
    context = body(call(mcp_url, token(), "context", {"query": "退款到账了吗"}))
    assert memory_id in [item["ref"] for item in context["items"]]
    assert "RF20260629001" in context["text"]

    other = token(sub="buyer-002", agent="shopping-agent")
    assert body(call(mcp_url, other, "recall", {"query": "退款 88231"}))["hits"] == []
    theirs = body(call(mcp_url, other, "context", {"query": "退款 88231"}))
    assert memory_id not in [item["ref"] for item in theirs["items"]]
    assert "RF20260629001" not in theirs["text"]

    smuggled = call(mcp_url, other, "recall", {"query": "退款", "user_id": "buyer-001"})
    assert error_code(smuggled) == "invalid_input", "a user_id argument is refused"
    assert "13912345678" not in json.dumps(body(smuggled), ensure_ascii=False)


def test_a_call_without_the_scope_is_refused_and_a_bad_token_is_401(
    mcp_url: str, mem: MemoryClient
) -> None:
    mem.profiles.ensure("buyer-001")
    read_only = token(scopes=["memory:read"])
    assert error_code(call(mcp_url, read_only, "remember", REFUND)) == "forbidden"
    assert error_code(call(mcp_url, token(scopes=["memory:write"]), "forget", {})) == ("forbidden")
    assert error_code(call(mcp_url, token(scopes=["memory:write"]), "recall", {"query": "x"})) == (
        "forbidden"
    )
    assert mem.memories.list("buyer-001") == [], "the refused write wrote nothing"
    ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    for headers in ({}, {"Authorization": "Bearer not.a.jwt"}):
        refused = httpx.post(mcp_url, json=ping, headers=headers, timeout=BOUND_S)
        assert refused.status_code == 401
        assert refused.json()["error"]["code"] == "unauthorized"
        assert refused.headers["WWW-Authenticate"] == "Bearer"


def test_errors_are_tool_errors_with_their_code(mcp_url: str, mem: MemoryClient) -> None:
    assert error_code(call(mcp_url, token(), "remember", REFUND)) == "user_not_found"
    mem.profiles.ensure("buyer-001")
    no_policy = call(mcp_url, token(), "remember", {"text": "请记住我的邮箱 a@b.com"})
    assert error_code(no_policy) == "invalid_input"
    assert "lifecycle_policy" in body(no_policy)["error"]["message"]
    assert "a@b.com" not in json.dumps(body(no_policy)), "errors never echo values"
    missing = {"memory_id": "00000000-0000-4000-8000-000000000000", "action": "click"}
    assert error_code(call(mcp_url, token(), "feedback", missing)) == "record_not_found"


def test_end_session_feedback_and_forget(mcp_url: str, mem: MemoryClient) -> None:
    mem.profiles.ensure("buyer-001")
    transcript = [
        {"role": "user", "text": "我的订单 88231 退款 RF20260629001 到哪了？手机 13912345678"},
        {"role": "assistant", "text": "退款已提交，预计三天到账"},
    ]
    ended = call(mcp_url, token(), "end_session", {"session_id": "s-1", "transcript": transcript})
    record = body(ended)
    assert not ended.is_error
    assert "13912345678" not in json.dumps(record, ensure_ascii=False), "summary is masked"
    clicked = body(
        call(mcp_url, token(), "feedback", {"memory_id": record["memory_id"], "action": "click"})
    )
    assert clicked["memory_id"] == record["memory_id"]
    assert clicked["action"] == "click"
    assert body(call(mcp_url, token(), "forget", {})) == {"erased": True}
    assert error_code(call(mcp_url, token(), "context", {"query": "退款"})) == "user_not_found"


# --------------------------------------------------------------------------- stdio


@pytest.fixture
def stdio_env(dsn: str, data_dir: Path) -> dict[str, str]:
    """The child's environment: the test database, its PII keys, the token settings."""
    return {
        "DUALTRACK_POSTGRES_DSN": dsn,
        "DUALTRACK_DATA_DIR": str(data_dir),
        "DUALTRACK_PII_KEYS": key_line("k-test-1", 7),
        "DUALTRACK_JWT_SECRET": SECRET,
        "DUALTRACK_JWT_AUDIENCE": "dualtrack",
        "PYTHONPATH": str(REPO),
    }


@asynccontextmanager
async def over_stdio(env: dict[str, str], tok: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "service.cli", "mcp", "--transport", "stdio"],
        env={**env, "DUALTRACK_MCP_TOKEN": tok},
        cwd=REPO,
    )
    with tempfile.TemporaryFile("w+") as errlog:
        try:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                yield client
        except BaseException:
            errlog.seek(0)
            sys.stderr.write(errlog.read()[-3000:])
            raise


def test_stdio_acts_for_the_token_given_at_start(
    stdio_env: dict[str, str], mem: MemoryClient
) -> None:
    for user in ("buyer-001", "buyer-002"):
        mem.profiles.ensure(user)

    async def first_user() -> tuple[set[str], str, dict[str, Any], dict[str, Any], str]:
        async with over_stdio(stdio_env, token()) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            written = body(await client.call_tool("remember", REFUND))["memory_id"]
            found = body(await client.call_tool("recall", {"query": "退款到账了吗"}))
            context = body(await client.call_tool("context", {"query": "退款到账了吗"}))
            smuggled = await client.call_tool("recall", {"query": "退款", "user_id": "buyer-002"})
            return names, written, found, context, error_code(smuggled)

    names, memory_id, found, context, smuggled = bounded(first_user)
    assert names == TOOLS
    assert [h["memory_id"] for h in found["hits"]] == [memory_id]
    assert memory_id in [item["ref"] for item in context["items"]]
    assert smuggled == "invalid_input"
    record = mem.memories.get("buyer-001", memory_id)
    assert record is not None
    assert record.agent_id == "refund-agent"

    async def second_user() -> tuple[dict[str, Any], str]:
        read_only = token(sub="buyer-002", agent="shopping-agent", scopes=["memory:read"])
        async with over_stdio(stdio_env, read_only) as client:
            found = body(await client.call_tool("recall", {"query": "退款 88231"}))
            refused = await client.call_tool("remember", REFUND)
            return found, error_code(refused)

    theirs, refused = bounded(second_user)
    assert theirs["hits"] == [], "another user's token never sees the first user's memories"
    assert refused == "forbidden"
    assert mem.memories.list("buyer-002") == []


def test_stdio_refuses_to_start_with_a_bad_token(stdio_env: dict[str, str]) -> None:
    forged = mint(
        ServiceSettings(jwt_secret="another-secret-0123456789abcdef0123"),  # type: ignore[arg-type]
        sub="buyer-001",
        agent="refund-agent",
        scopes=ALL,
    )
    for tok in ("", forged):
        done = subprocess.run(
            [sys.executable, "-m", "service.mcp_server"],
            env={**os.environ, **stdio_env, "DUALTRACK_MCP_TOKEN": tok},
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=BOUND_S,
            check=False,
        )
        assert done.returncode == 1
        assert done.stdout == "", "nothing reaches the protocol's stdout"
        assert "[unauthorized]" in done.stderr
        assert "Traceback" not in done.stderr


def test_a_token_holds_a_bounded_number_of_open_streams(mcp_url: str) -> None:
    """Idle SSE streams (GET) are held open by the server: a token may hold
    ``mcp_streams_per_token`` of them (8), the next request is refused until one closes."""
    headers = {"Authorization": f"Bearer {token()}", "Accept": "text/event-stream"}
    with httpx.Client(timeout=BOUND_S) as http, ExitStack() as streams:
        opened = [
            streams.enter_context(http.stream("GET", mcp_url, headers=headers)).status_code
            for _ in range(SERVICE.mcp_streams_per_token)
        ]
        assert opened == [200] * SERVICE.mcp_streams_per_token
        with http.stream("GET", mcp_url, headers=headers) as refused:
            assert refused.status_code == 429
            assert json.loads(refused.read())["error"]["code"] == "rate_limited"
        other = {**headers, "Authorization": f"Bearer {token(sub='buyer-002')}"}
        with http.stream("GET", mcp_url, headers=other) as theirs:
            assert theirs.status_code == 200, "the cap is per token"
