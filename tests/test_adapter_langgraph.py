"""``DualtrackStore``: LangGraph's ``BaseStore`` over the real stores.

The store's semantics run over both clients (in process, and the remote client over
the REST service); then a real LangGraph graph, whose chat model is one of
langchain_core's fakes replaying a script, runs LangMem's manage and search memory
tools on the store and remembers a buyer from one thread to the next.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.store.base import BaseStore
from langmem import create_manage_memory_tool, create_search_memory_tool

from adapters import NamespaceWithoutUser
from adapters.langgraph_store import METADATA_KEY, DualtrackStore
from sdk import InvalidField, LifecyclePolicy, MemoryAPI, MemoryClient, PolicyMissing, UserNotFound
from tests.test_sdk_contract import remote, service_url  # noqa: F401 (the live service's fixtures)

BUYER = "buyer-001"
OTHER = "buyer-002"
LAYOUT = ("memories", "{user_id}")
IMPLICIT = LifecyclePolicy.IMPLICIT
EXPLICIT = LifecyclePolicy.EXPLICIT


@pytest.fixture(params=["in_process", "remote"])
def api(request: pytest.FixtureRequest) -> MemoryAPI:
    """The store's semantics run once per client."""
    client: MemoryAPI = request.getfixturevalue(
        "mem" if request.param == "in_process" else "remote"
    )
    return client


def store_over(client: MemoryAPI, **kw: Any) -> DualtrackStore:
    kw.setdefault("lifecycle_policy", IMPLICIT)
    return DualtrackStore(client, namespace=LAYOUT, **kw)


def test_put_get_replace_and_delete_by_key(api: MemoryAPI) -> None:
    api.profiles.ensure(BUYER)
    store = store_over(api)
    ns = ("memories", BUYER)
    store.put(ns, "notify", {"content": "以后都用微信通知我", "channel": "wechat"})
    item = store.get(ns, "notify")
    assert item is not None
    assert (item.namespace, item.key) == (ns, "notify")
    assert item.value == {"content": "以后都用微信通知我", "channel": "wechat"}
    assert store.get(ns, "other-key") is None

    store.put(ns, "notify", {"content": "改成短信通知我", "channel": "sms"})
    replaced = store.get(ns, "notify")
    assert replaced is not None
    assert replaced.value["channel"] == "sms"
    assert replaced.created_at == item.created_at  # the item's first write
    assert replaced.updated_at >= item.updated_at
    stored = [m for m in api.memories.list(BUYER) if METADATA_KEY in m.metadata]
    assert [m.text for m in stored] == ["改成短信通知我"], "the replaced memory is gone"
    assert stored[0].policy == "implicit"
    assert BUYER not in json.dumps(stored[0].metadata), "no user id is copied into metadata"

    store.delete(ns, "notify")
    assert store.get(ns, "notify") is None
    assert [m for m in api.memories.list(BUYER) if METADATA_KEY in m.metadata] == []


def test_search_is_the_users_hybrid_search(api: MemoryAPI) -> None:
    for user in (BUYER, OTHER):
        api.profiles.ensure(user)
    store = store_over(api)
    store.put(
        ("memories", BUYER), "refund", {"content": "订单 88231 的退款还没到账", "topic": "refund"}
    )
    store.put(("memories", BUYER), "yaml", {"content": "我不喜欢 YAML 配置", "topic": "taste"})
    store.put(("memories", BUYER, "deep"), "size", {"content": "鞋码 42", "topic": "size"})
    store.put(
        ("memories", OTHER), "refund", {"content": "订单 77777 的退款已经到账", "topic": "refund"}
    )
    api.write(BUYER, "退款的事我下周再问", lifecycle_policy=IMPLICIT)  # not a store item

    hits = store.search(("memories", BUYER), query="退款到账了吗", limit=5)
    assert hits, "the hybrid search finds the refund"
    assert hits[0].key == "refund"
    assert hits[0].value["content"] == "订单 88231 的退款还没到账"
    assert hits[0].score is not None
    assert all(h.namespace[:2] == ("memories", BUYER) for h in hits), "only this user's items"
    assert "退款的事我下周再问" not in [h.value["content"] for h in hits], "only store items"

    assert [h.key for h in store.search(("memories", BUYER), filter={"topic": "taste"})] == ["yaml"]
    assert {h.key for h in store.search(("memories", BUYER, "deep"))} == {"size"}
    assert {h.key for h in store.search(("memories", BUYER))} == {"refund", "yaml", "size"}
    assert len(store.search(("memories", BUYER), limit=2)) == 2
    assert len(store.search(("memories", BUYER), limit=2, offset=2)) == 1
    assert store.list_namespaces(prefix=("memories", BUYER)) == [
        ("memories", BUYER),
        ("memories", BUYER, "deep"),
    ]
    assert store.list_namespaces(prefix=("memories", BUYER), max_depth=2) == [("memories", BUYER)]


def test_a_namespace_without_a_user_is_refused(mem: MemoryClient) -> None:
    mem.profiles.ensure(BUYER)
    store = store_over(mem)
    for namespace in [("memories",), ("notes", BUYER), ("memories", "*"), ()]:
        with pytest.raises(NamespaceWithoutUser):
            store.search(namespace, query="退款")
    with pytest.raises(NamespaceWithoutUser):
        store.put(("memories",), "k", {"content": "x"})
    with pytest.raises(NamespaceWithoutUser):
        store.list_namespaces()
    with pytest.raises(NamespaceWithoutUser):
        store.list_namespaces(suffix=("deep",))
    with pytest.raises(UserNotFound):
        store.put(("memories", "nobody-yet"), "k", {"content": "x"})
    assert mem.memories.list(BUYER) == []


def test_bad_values_keys_and_ttl_are_typed_errors_and_write_nothing(mem: MemoryClient) -> None:
    mem.profiles.ensure(BUYER)
    store = store_over(mem)
    ns = ("memories", BUYER)
    with pytest.raises(InvalidField):
        store.put(ns, "k", {"text": "no content field"})
    with pytest.raises(InvalidField):
        store.put(ns, "k", {"content": {"nested": "not a string"}})
    with pytest.raises(InvalidField):
        store.put(ns, "13912345678", {"content": "a key holding a phone number"})
    with pytest.raises(InvalidField):
        store.put(ns, "k", {"content": "x"}, index=["other"])
    with pytest.raises(NotImplementedError):  # LangGraph's own refusal: supports_ttl is false
        store.put(ns, "k", {"content": "x"}, ttl=5)
    assert mem.memories.list(BUYER) == []


def test_the_policy_is_required_and_can_differ_by_prefix(mem: MemoryClient) -> None:
    mem.profiles.ensure(BUYER)
    with pytest.raises(TypeError):
        DualtrackStore(mem, namespace=LAYOUT)  # type: ignore[call-arg]
    with pytest.raises(PolicyMissing):
        DualtrackStore(mem, namespace=LAYOUT, lifecycle_policy=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidField):
        DualtrackStore(mem, namespace=("memories",), lifecycle_policy=IMPLICIT)
    with pytest.raises(InvalidField):  # a prefix must name the user as {user_id}
        DualtrackStore(mem, namespace=LAYOUT, lifecycle_policy={("memories", BUYER): IMPLICIT})

    store = DualtrackStore(
        mem,
        namespace=LAYOUT,
        lifecycle_policy={
            ("memories", "{user_id}"): IMPLICIT,
            ("memories", "{user_id}", "profile"): EXPLICIT,
        },
    )
    store.put(("memories", BUYER), "a", {"content": "最近在看跑鞋"})
    store.put(("memories", BUYER, "profile"), "b", {"content": "请记住我穿 42 码"})
    policies = {m.text: (m.policy, m.expires_at) for m in mem.memories.list(BUYER)}
    assert policies["最近在看跑鞋"][0] == "implicit"
    assert policies["最近在看跑鞋"][1] is not None, "implicit memories expire"
    assert policies["请记住我穿 42 码"] == ("explicit", None)

    narrow = DualtrackStore(
        mem, namespace=LAYOUT, lifecycle_policy={("memories", "{user_id}", "profile"): EXPLICIT}
    )
    with pytest.raises(PolicyMissing):
        narrow.put(("memories", BUYER), "c", {"content": "无人管的命名空间"})


def test_the_async_half_is_the_same_store(mem: MemoryClient) -> None:
    mem.profiles.ensure(BUYER)
    store = store_over(mem)
    ns = ("memories", BUYER)

    async def story() -> tuple[Any, ...]:
        await store.aput(ns, "k1", {"content": "喜欢黑色的款式"})
        await store.aput(ns, "k2", {"content": "预算五百元以内"})
        got = await store.aget(ns, "k1")
        found = await store.asearch(ns, query="预算多少", limit=1)
        await store.adelete(ns, "k1")
        gone = await store.aget(ns, "k1")
        return got, found, gone

    got, found, gone = asyncio.run(story())
    assert got is not None
    assert got.value["content"] == "喜欢黑色的款式"
    assert [h.key for h in found] == ["k2"]
    assert gone is None


# ----------------------------------------------------------------- a real graph


class ScriptedChatModel(FakeMessagesListChatModel):
    """langchain_core's fake, replaying its messages; binding tools changes nothing."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self


def tool_call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


def memory_graph(store: BaseStore, script: list[BaseMessage]) -> Any:
    """An agent graph: the model, then LangMem's tools while it calls them."""
    model = ScriptedChatModel(responses=script)
    namespace = ("memories", "{langgraph_user_id}")
    tools = [create_manage_memory_tool(namespace), create_search_memory_tool(namespace)]

    def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=InMemorySaver(), store=store)


def test_langmem_tools_remember_a_user_across_threads(mem: MemoryClient) -> None:
    for user in (BUYER, OTHER):
        mem.profiles.ensure(user)
    store = store_over(mem)
    graph = memory_graph(
        store,
        [
            tool_call("manage_memory", {"content": "用户希望以后都用微信通知，不要打电话"}, "c1"),
            AIMessage(content="好的，以后用微信通知您。"),
            tool_call("search_memory", {"query": "用什么方式通知用户"}, "c2"),
            AIMessage(content="按您的习惯，用微信通知您。"),
            tool_call("search_memory", {"query": "用什么方式通知用户"}, "c3"),
            AIMessage(content="请问您希望怎么通知？"),
        ],
    )

    def config(thread: str, user: str) -> dict[str, Any]:
        return {"configurable": {"thread_id": thread, "langgraph_user_id": user}}

    first = graph.invoke(
        {"messages": [HumanMessage("以后都用微信通知我，别打电话")]}, config("t-1", BUYER)
    )
    created = [m.text for m in first["messages"] if isinstance(m, ToolMessage)]
    assert created[0].startswith("created memory")

    async def second_thread() -> Any:  # the async path: aput/asearch through abatch
        return await graph.ainvoke(
            {"messages": [HumanMessage("我的退款到了记得通知我")]}, config("t-2", BUYER)
        )

    second = asyncio.run(second_thread())
    found = json.loads(next(m.text for m in second["messages"] if isinstance(m, ToolMessage)))
    assert found, "the new thread finds what the first one stored"
    assert found[0]["value"]["content"] == "用户希望以后都用微信通知，不要打电话"
    assert found[0]["namespace"] == ["memories", BUYER]

    third = graph.invoke({"messages": [HumanMessage("怎么通知我？")]}, config("t-3", OTHER))
    other = json.loads(next(m.text for m in third["messages"] if isinstance(m, ToolMessage)))
    assert other == [], "another user's thread sees nothing of the first user's"
    stored = mem.memories.list(BUYER)
    assert [m.text for m in stored] == ["用户希望以后都用微信通知，不要打电话"]
