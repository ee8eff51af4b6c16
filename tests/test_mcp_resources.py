"""The MCP server's resources and prompts through the official ``mcp`` client.

Over streamable HTTP (uvicorn in a thread, the test database) and once over stdio
(``dualtrack mcp`` as a child process): the profile and the context of the token's
user, the two prompts, and their refusals as MCP errors carrying the REST error body.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable
from typing import Any
from urllib.parse import quote

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from policies.lifecycle import LifecyclePolicy
from sdk import MemoryClient
from service.mcp_resources import CONTEXT_TEMPLATE, PROFILE_URI
from tests import test_mcp
from tests.test_mcp import REFUND, bounded, over_http, over_stdio, token

mcp_url = test_mcp.mcp_url  # the MCP tests' fixtures: the HTTP server, the child's environment
stdio_env = test_mcp.stdio_env

BUYER = "buyer-001"
PHONE = "13912345678"
QUESTION = "退款到账了吗"


def context_uri(query: str) -> str:
    return CONTEXT_TEMPLATE.replace("{query}", quote(query))


def text_of(result: Any) -> str:
    content = result.contents[0]
    assert isinstance(content.text, str)
    return str(content.text)


def test_resources_and_prompts_are_listed_without_a_user(mcp_url: str) -> None:
    async def run() -> tuple[Any, Any, Any]:
        async with over_http(mcp_url, token()) as client:
            return (
                await client.list_resources(),
                await client.list_resource_templates(),
                await client.list_prompts(),
            )

    resources, templates, prompts = bounded(run)
    assert [str(r.uri) for r in resources.resources] == [PROFILE_URI]
    assert [t.uri_template for t in templates.resource_templates] == [CONTEXT_TEMPLATE]
    assert {p.name for p in prompts.prompts} == {"answer_with_memory", "end_of_session"}
    listing = json.dumps(
        [x.model_dump(mode="json") for x in [resources, templates, prompts]], ensure_ascii=False
    )
    assert BUYER not in listing, "no URI, name or description names the user"


def test_profile_and_context_of_the_token_user(mcp_url: str, mem: MemoryClient) -> None:
    mem.profiles.ensure(BUYER)
    mem.profiles.ensure("buyer-002")

    async def run() -> tuple[dict[str, Any], str, str]:
        async with over_http(mcp_url, token()) as client:
            await client.call_tool("remember", REFUND)
            profile = json.loads(text_of(await client.read_resource(PROFILE_URI)))
            context = text_of(await client.read_resource(context_uri(QUESTION)))
        async with over_http(mcp_url, token(sub="buyer-002")) as other:
            theirs = text_of(await other.read_resource(context_uri(QUESTION)))
        return profile, context, theirs

    profile, context, theirs = bounded(run)
    assert profile["user_id"] == BUYER
    assert profile["version"] >= 1
    assert "RF20260629001" in context
    assert PHONE not in context, "the context holds the masked text"
    assert "RF20260629001" not in theirs, "another token reads its own user's context"


def test_the_prompts_carry_the_memory_and_the_session(mcp_url: str, mem: MemoryClient) -> None:
    mem.profiles.ensure(BUYER)
    mem.write(BUYER, REFUND["text"], lifecycle_policy=LifecyclePolicy.IMPLICIT)

    async def run() -> tuple[Any, Any]:
        async with over_http(mcp_url, token()) as client:
            answer = await client.get_prompt("answer_with_memory", {"question": QUESTION})
            closing = await client.get_prompt("end_of_session", {"session_id": "s-20260701-1"})
            return answer, closing

    answer, closing = bounded(run)
    block, asked = (m.content.text for m in answer.messages)
    assert "RF20260629001" in block
    assert PHONE not in block
    assert asked == QUESTION
    assert all(m.role == "user" for m in answer.messages)
    instruction = closing.messages[0].content.text
    assert "end_session" in instruction
    assert "'s-20260701-1'" in instruction


async def refusal(request: Awaitable[Any]) -> MCPError:
    """The MCP error ``request`` ends with (caught inside the client's task group)."""
    with pytest.raises(MCPError) as caught:
        await request
    return caught.value


def error_data(error: MCPError) -> dict[str, Any]:
    data: dict[str, Any] = error.error.data
    assert data["error"]["message"]
    return data


@pytest.mark.parametrize(
    ("scopes", "uri", "code"),
    [
        (["memory:write"], PROFILE_URI, "forbidden"),
        (["memory:read"], "dualtrack://nothing-here", "resource_not_found"),
        (["memory:read"], PROFILE_URI, "user_not_found"),
        (["memory:read"], CONTEXT_TEMPLATE.replace("{query}", ""), "invalid_input"),
    ],
)
def test_refused_reads_are_mcp_errors_with_the_rest_body(
    mcp_url: str, mem: MemoryClient, scopes: list[str], uri: str, code: str
) -> None:
    async def run() -> MCPError:
        async with over_http(mcp_url, token(sub="nobody-yet", scopes=scopes)) as client:
            return await refusal(client.read_resource(uri))

    assert error_data(bounded(run))["error"]["code"] == code


def test_a_prompt_with_bad_arguments_names_the_field_not_the_value(mcp_url: str) -> None:
    async def run() -> MCPError:
        async with over_http(mcp_url, token()) as client:
            return await refusal(client.get_prompt("answer_with_memory", {"query": PHONE}))

    data = error_data(bounded(run))
    assert data["error"]["code"] == "invalid_input"
    assert PHONE not in json.dumps(data)


def test_stdio_serves_the_resources_of_its_token(
    stdio_env: dict[str, str], mem: MemoryClient
) -> None:
    mem.profiles.ensure(BUYER)

    async def run() -> tuple[dict[str, Any], Any]:
        client: Client
        async with over_stdio(stdio_env, token()) as client:
            profile = json.loads(text_of(await client.read_resource(PROFILE_URI)))
            prompt = await client.get_prompt("answer_with_memory", {"question": QUESTION})
            return profile, prompt

    profile, prompt = bounded(run)
    assert profile["user_id"] == BUYER
    assert prompt.messages[1].content.text == QUESTION
