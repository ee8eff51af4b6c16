"""Each operation is declared once (``sdk.operations``): the REST routes, the MCP tools and
the remote clients are derived from the table, and the generated clients are current."""

from __future__ import annotations

import inspect

import pytest
from fastapi.routing import APIRoute

from policies.lifecycle import LifecyclePolicy
from scripts.remote_clients import ASYNC, STUB, async_source
from sdk import api
from sdk import operations as ops
from sdk._unasync import sync_stub
from sdk.remote import RemoteMemoryClient
from sdk.remote_async import AsyncRemoteMemoryClient
from sdk.wire import WriteRequest
from service.app import openapi_document
from service.mcp_server import TOOLS
from service.operations import operation_router


def test_the_generated_clients_are_current() -> None:
    """``make generate`` writes the operation methods of the async client and the sync
    client's stub; a stale file fails here (as ``docs/reference/rest.md`` does in test_docs).
    The sync client itself has no file to go stale: it is derived on import."""
    async_text = async_source()
    assert ASYNC.read_text(encoding="utf-8") == async_text, "run make generate"
    assert STUB.read_text(encoding="utf-8") == sync_stub(async_text), "run make generate"


def test_every_operation_has_its_route_once() -> None:
    document = openapi_document()
    ids = {
        op["operationId"]
        for path in document["paths"].values()
        for op in path.values()
        if isinstance(op, dict) and "operationId" in op
    }
    declared = [f"{op.tag}_{op.route}" for op in ops.OPERATIONS]
    assert len(declared) == len(set(declared))
    assert set(declared) <= ids
    for op in ops.OPERATIONS:
        assert op.path.replace(":path", "") in document["paths"]


def test_the_mcp_tools_are_the_operations_with_a_tool() -> None:
    assert [t.name for t in TOOLS] == [op.tool.name for op in ops.OPERATIONS if op.tool]
    remember = next(t for t in TOOLS if t.name == "remember")
    assert remember.arguments is WriteRequest
    assert remember.scope == "memory:write"


def _members(protocol: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in vars(protocol).items()
        if inspect.isfunction(member) and not name.startswith("_") and name != "sandbox"
    }


@pytest.mark.parametrize("client", [RemoteMemoryClient, AsyncRemoteMemoryClient])
def test_the_remote_clients_keep_the_protocols_signatures(client: type) -> None:
    """Every protocol method has a remote method of the same parameters, which sends the
    operation named after it."""
    sub_apis = {
        "profiles": api.ProfilesAPI,
        "devices": api.DevicesAPI,
        "links": api.LinksAPI,
        "facts": api.FactsAPI,
        "memories": api.MemoriesAPI,
    }
    module = inspect.getmodule(client)
    for attr, protocol in [("", api.MemoryAPI), *sub_apis.items()]:
        owner = getattr(module, f"_{attr.capitalize()}") if attr else client
        for name, signature in _members(protocol).items():
            remote = getattr(owner, name)
            assert list(inspect.signature(remote).parameters) == list(signature.parameters)
            member = f"{attr}.{name}" if attr else name
            constant = member.replace(".", "_").upper()
            assert getattr(ops, constant).name == member


def test_a_write_field_reaches_the_sdk_as_a_keyword() -> None:
    """What the route and the MCP tool hand the SDK is the request model's fields: a new
    field of ``WriteRequest`` needs no transport edit."""
    body = WriteRequest(
        text="以后都用微信通知我", lifecycle_policy=LifecyclePolicy.EXPLICIT, private=True
    )
    assert body.sdk_args() == {
        "text": "以后都用微信通知我",
        "lifecycle_policy": body.lifecycle_policy,
        "session_id": None,
        "occurred_at": None,
        "metadata": None,
        "kind": body.kind,
        "private": True,
    }
    call = ops.WRITE.call("buyer-001", **body.sdk_args())
    assert call.body == {
        "text": "以后都用微信通知我",
        "lifecycle_policy": "explicit",
        "private": True,
    }
    assert (call.method, call.path) == ("POST", "/v1/memories")


def test_a_route_is_built_from_its_operation() -> None:
    router = operation_router("facts")
    routes = [r for r in router.routes if isinstance(r, APIRoute)]
    assert [(r.name, r.path) for r in routes] == [
        ("put", "/v1/facts/{key:path}"),
        ("list", "/v1/facts"),
        ("get", "/v1/facts/{key:path}"),
        ("delete", "/v1/facts/{key:path}"),
    ]
    assert routes[3].status_code == 204
    assert routes[2].description == ops.FACTS_GET.doc


def test_a_path_parameter_is_checked_and_encoded_by_the_remote_call() -> None:
    call = ops.FACTS_GET.call("buyer-001", key="订单/88231")
    assert call.path == "/v1/facts/%E8%AE%A2%E5%8D%95%2F88231"
    assert call.missing is not None
    assert call.missing() is None
    removed = ops.FACTS_DELETE.call("buyer-001", key="k")
    assert removed.missing is not None
    assert removed.missing() is False
