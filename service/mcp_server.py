"""The MCP server: remember, recall, context, end_session, feedback and forget as tools;
the profile and the context as resources, and two prompts (:mod:`service.mcp_resources`).

One core, two transports (STYLE item 12): each tool is an operation of
:data:`sdk.operations.OPERATIONS`; it validates its arguments with the REST
request model (``extra="forbid"``, so a ``user_id`` argument is refused, and
none is in any input schema), calls :class:`MemoryClient` and answers with the
REST response model as structured content. The user and the agent never
come from arguments: over stdio from the token given at start
(``DUALTRACK_MCP_TOKEN``, checked again at every call, so expiry and
revocation apply), over streamable HTTP from each request's
``Authorization: Bearer`` token, verified by the REST API's :class:`Gate` (its
keys, scopes, per-agent rate limits reconciled across processes, and the limit
on refused tokens per address); a token holds at most ``mcp_streams_per_token``
requests (an idle SSE stream included) open at once. A refused or failed call is
an MCP tool error whose content is the REST error body
``{"error": {"code", "message"}}``, never a stack trace nor an empty result.

Over HTTP the server is stateless and answers JSON (no session to pin to a pod).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager, redirect_stdout
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NoReturn, TypeVar, cast

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ValidationError
from rich.console import Console
from rich.markup import escape
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from policies.errors import DualtrackError, InvalidInput
from sdk.client import MemoryClient
from sdk.operations import OPERATIONS, Operation, Tool
from sdk.settings import Settings
from sdk.wire import Body, EndSessionArgs, ForgetArgs, ForgetOut
from service.auth import Principal, TokenVerifier
from service.auth import Scope as TokenScope
from service.errors import RateLimited, Unauthorized, error_body, error_response
from service.gate import Gate
from service.mcp_probes import McpProbes
from service.mcp_resources import (
    PROMPTS,
    RESOURCE_TEMPLATES,
    RESOURCES,
    get_prompt,
    read_resource,
)
from service.metrics import ServiceMetrics
from service.middleware.metrics import RequestMetrics
from service.middleware.request_context import RequestContext
from service.ratelimit import RateLimits
from service.settings import ServiceSettings
from service.shutdown import exit_cleanly_on_signals

__all__ = [
    "TOOLS",
    "DualtrackMcp",
    "EndSessionArgs",
    "ForgetArgs",
    "ForgetOut",
    "McpTool",
    "main",
    "run_http",
    "run_stdio",
]

_log = logging.getLogger(__name__)

_PRINCIPAL = "dualtrack.principal"
"""ASGI scope key under which the HTTP gate leaves the request's verified principal."""

R = TypeVar("R")


@dataclass(frozen=True)
class McpTool:
    """A tool: an operation of :data:`sdk.operations.OPERATIONS` with an MCP tool, its
    arguments (the request model), result model and scope read from there."""

    operation: Operation[Any]
    tool: Tool

    @property
    def name(self) -> str:
        """The tool's name."""
        return self.tool.name

    @property
    def scope(self) -> TokenScope:
        """The scope a token needs to call it."""
        return TokenScope(self.operation.scope)

    @property
    def arguments(self) -> type[Body]:
        """The request model that validates the arguments."""
        arguments = self.tool.arguments or self.operation.body
        assert arguments is not None
        assert issubclass(arguments, Body)
        return arguments

    def listing(self) -> types.Tool:
        """The tool as ``tools/list`` shows it."""
        result = self.tool.result or self.operation.response
        return types.Tool(
            name=self.tool.name,
            description=self.tool.description,
            input_schema=self.arguments.model_json_schema(),
            output_schema=result.model_json_schema(),
            annotations=types.ToolAnnotations(
                read_only_hint=self.tool.read_only,
                destructive_hint=self.tool.destructive,
                idempotent_hint=self.tool.idempotent,
                open_world_hint=False,
            ),
        )

    def run(self, mem: MemoryClient, user_id: str, arguments: Mapping[str, Any]) -> BaseModel:
        """Validate ``arguments`` (:class:`InvalidInput` naming the field, never its value)
        and call the SDK for ``user_id``."""
        try:
            args = self.arguments.model_validate(arguments)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"][:2]) or "arguments"
            raise InvalidInput(f"{where}: {first['type']}") from None
        result = self.operation.run(mem, user_id, args.sdk_args())
        answer = self.tool.answer or self.operation.answer
        assert answer is not None
        out: BaseModel = answer(result)
        return out


TOOLS: tuple[McpTool, ...] = tuple(McpTool(op, op.tool) for op in OPERATIONS if op.tool is not None)
"""The operations' tools: remember, recall, context, end_session, feedback, forget."""

_INSTRUCTIONS = (
    "Long-term memory of one user: the user (and the calling agent) are those of the token "
    "this connection carries, never an argument. Call `context` before answering, `remember` "
    "what the user asks to keep, `end_session` when a conversation ends."
)


def _tool_error(code: str, message: str) -> types.CallToolResult:
    body = error_body(code, message)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(body, ensure_ascii=False))],
        structured_content=body,
        is_error=True,
    )


class DualtrackMcp:
    """The tools over one root client; each agent gets a client over its stores.

    With ``stdio_token`` every call acts for that token; without, for the
    principal the HTTP gate (:meth:`http_app`) verified for the request. With
    ``owns_client``, ``mem`` is closed when the server's lifespan ends (uvicorn's
    shutdown, which a signal ends by re-raising it: code after ``uvicorn.run``
    never runs).
    """

    def __init__(
        self,
        mem: MemoryClient,
        service: ServiceSettings,
        *,
        stdio_token: str | None = None,
        owns_client: bool = False,
    ) -> None:
        self._mem = mem
        self._owns_client = owns_client
        verifier = TokenVerifier(
            service, lambda: mem.admin.revoked_tokens.revoked(datetime.now(UTC))
        )
        self._limits = RateLimits(lambda: mem.admin.rate_limits, service.rate_sync_s)
        self._gate = Gate(service, verifier, self._limits)
        self._service = service
        self._stdio_token = stdio_token
        self._agents: dict[str | None, MemoryClient] = {}
        self._agents_lock = threading.Lock()
        self._tools = {t.name: t for t in TOOLS}
        self._listing = [t.listing() for t in TOOLS]
        self.server: Server[Any] = Server(
            "dualtrack",
            version="1",
            instructions=_INSTRUCTIONS,
            lifespan=self._lifespan,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_resource_templates,
            on_read_resource=self._read_resource,
            on_list_prompts=self._list_prompts,
            on_get_prompt=self._get_prompt,
            get_tool_input_schema=self._input_schema,
        )

    @asynccontextmanager
    async def _lifespan(self, _: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        serves_http = self._stdio_token is None  # over stdio, one token: nothing to limit
        try:
            if serves_http:
                await anyio.to_thread.run_sync(self._limits.start)
            yield {}
        finally:
            if serves_http:
                await anyio.to_thread.run_sync(self._limits.stop)
            if self._owns_client:
                await anyio.to_thread.run_sync(self._mem.close)

    def stdio_principal(self) -> Principal:
        """The principal of the stdio token, verified now (:class:`Unauthorized` otherwise)."""
        if self._stdio_token is None:
            raise Unauthorized("this server serves HTTP: its tokens come with each request")
        return self._gate.verifier.verify(f"Bearer {self._stdio_token}")

    def _client(self, agent_id: str | None) -> MemoryClient:
        client = self._agents.get(agent_id)
        if client is None:
            with self._agents_lock:
                client = self._agents.get(agent_id)
                if client is None:
                    client = self._agents[agent_id] = self._mem.for_agent(agent_id)
        return client

    def _input_schema(self, name: str) -> dict[str, Any] | None:
        tool = self._tools.get(name)
        return None if tool is None else tool.arguments.model_json_schema()

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self._listing)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = self._tools.get(params.name)
        if tool is None:
            raise MCPError(code=types.INVALID_PARAMS, message="unknown tool")
        principal = _principal_of(ctx)
        arguments = dict(params.arguments or {})
        return await anyio.to_thread.run_sync(self._execute, tool, principal, arguments)

    def _admit(self, principal: Principal | None, scope: TokenScope) -> Principal:
        """The caller's principal, allowed ``scope`` (the stdio token is verified again)."""
        if self._stdio_token is not None:
            principal = self.stdio_principal()
            principal.require(scope)
        elif principal is None:
            raise Unauthorized("a Bearer token is required")
        else:
            self._gate.admit(principal, scope)
        return principal

    def _execute(
        self, tool: McpTool, principal: Principal | None, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        try:
            principal = self._admit(principal, tool.scope)
            out = tool.run(self._client(principal.agent_id), principal.user_id, arguments)
        except DualtrackError as exc:
            return _tool_error(exc.code, exc.message)
        except Exception as exc:  # the text could hold a value: only its type is logged
            _log.error("unexpected %s in MCP tool %s", type(exc).__name__, tool.name)
            return _tool_error("internal", "internal error")
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=out.model_dump_json())],
            structured_content=out.model_dump(mode="json"),
        )

    async def _list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=list(RESOURCES))

    async def _list_resource_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=list(RESOURCE_TEMPLATES))

    async def _read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        principal = _principal_of(ctx)
        uri = str(params.uri)
        return await anyio.to_thread.run_sync(
            self._read, principal, lambda m, user: read_resource(m, user, uri)
        )

    async def _list_prompts(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=list(PROMPTS))

    async def _get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        principal = _principal_of(ctx)
        name, arguments = params.name, params.arguments
        return await anyio.to_thread.run_sync(
            self._read, principal, lambda m, user: get_prompt(m, user, name, arguments)
        )

    def _read(self, principal: Principal | None, read: Callable[[MemoryClient, str], R]) -> R:
        """``read`` for the caller with the read scope; a refusal or failure is an MCP error
        carrying the REST error body."""
        try:
            principal = self._admit(principal, TokenScope.READ)
            return read(self._client(principal.agent_id), principal.user_id)
        except DualtrackError as exc:
            code = types.INVALID_PARAMS if exc.http_status in (400, 404) else types.INTERNAL_ERROR
            raise MCPError(code, exc.message, error_body(exc.code, exc.message)) from None
        except Exception as exc:  # the text could hold a value: only its type is logged
            _log.error("unexpected %s in an MCP read", type(exc).__name__)
            raise MCPError(types.INTERNAL_ERROR, "internal error") from None

    async def serve_stdio(self) -> None:
        """Serve MCP over this process's stdin and stdout until stdin closes."""
        async with stdio_server() as (read, write):
            await self.server.run(read, write, self.server.create_initialization_options())

    def http_app(self, *, path: str = "/mcp", host: str = "127.0.0.1") -> ASGIApp:
        """The streamable HTTP app (stateless, JSON answers) behind the Bearer gate.

        Mountable in another app; its lifespan runs the MCP session manager. ``/healthz``
        and ``/metrics`` answer beside it (:mod:`service.mcp_probes`), and each request
        has an id and a server span (:mod:`service.middleware.request_context`).
        ``host`` 127.0.0.1/localhost turns on the SDK's DNS-rebinding protection.
        """
        app = self.server.streamable_http_app(
            streamable_http_path=path,
            json_response=True,
            stateless_http=True,
            max_request_body_size=self._service.max_body_bytes,
            host=host,
        )
        gated: Any = _BearerGate(app, self._gate, self._service.mcp_streams_per_token)
        metrics = ServiceMetrics(self._mem)
        open_metrics = self._service.metrics_access == "open"
        gated = McpProbes(gated, self._mem, metrics, self._gate, open_metrics)
        gated = RequestContext(RequestMetrics(gated, histogram=metrics.request_seconds))
        if self._service.trusted_proxies:  # uvicorn's ASGI types are narrower than Starlette's
            gated = ProxyHeadersMiddleware(gated, trusted_hosts=self._service.trusted_proxies)
        return cast(ASGIApp, gated)


def _principal_of(ctx: ServerRequestContext[Any]) -> Principal | None:
    """Over HTTP, the principal the gate left in the Starlette request's scope; else None."""
    scope = getattr(ctx.request, "scope", None)
    principal = scope.get(_PRINCIPAL) if isinstance(scope, dict) else None
    return principal if isinstance(principal, Principal) else None


class _BearerGate:
    """Pure ASGI: every HTTP request needs a valid Bearer token (401 in the REST format
    otherwise, 429 once its address was refused too often); its principal goes into the
    request's scope for the tool call. A token holds at most ``streams`` requests open
    (429 beyond)."""

    def __init__(self, app: ASGIApp, gate: Gate, streams: int) -> None:
        self._app = app
        self._gate = gate
        self._streams = streams
        self._open: Counter[str] = Counter()
        self._lock = threading.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        header = Headers(scope=scope).get("authorization")
        client = scope.get("client")
        address = client[0] if client else None
        try:
            principal = await anyio.to_thread.run_sync(self._gate.principal, header, address)
            holder = self._hold(principal)
        except DualtrackError as exc:
            await error_response(exc)(scope, receive, send)
            return
        scope[_PRINCIPAL] = principal
        try:
            await self._app(scope, receive, send)
        finally:
            with self._lock:
                self._open[holder] -= 1
                if self._open[holder] <= 0:
                    del self._open[holder]

    def _hold(self, principal: Principal) -> str:
        """Count one more open request of the principal's token, or :class:`RateLimited`."""
        holder = principal.token_id or f"{principal.user_id}\x1f{principal.agent_id}"
        with self._lock:
            if self._open[holder] >= self._streams:
                raise RateLimited(
                    f"this token holds {self._streams} open requests already", retry_after_s=1
                )
            self._open[holder] += 1
        return holder


def run_stdio(
    token: str | None, settings: Settings | None = None, service: ServiceSettings | None = None
) -> None:
    """Serve over stdio for the user and agent of ``token``.

    The token is verified before serving: a bad one raises :class:`Unauthorized`
    (:func:`main` prints it and exits 1). Startup output goes to stderr, never into
    the protocol's stdout.
    """
    if not token:
        raise Unauthorized("set DUALTRACK_MCP_TOKEN to the token this server acts for")
    with redirect_stdout(sys.stderr):
        mem = MemoryClient(settings or Settings.from_env()).start()
    try:
        mcp = DualtrackMcp(mem, service or ServiceSettings(), stdio_token=token)
        mcp.stdio_principal()
        anyio.run(mcp.serve_stdio)
    finally:
        mem.close()


def run_http(
    host: str,
    port: int,
    settings: Settings | None = None,
    service: ServiceSettings | None = None,
) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` (uvicorn) until interrupted."""
    import uvicorn
    from uvicorn.config import LOGGING_CONFIG

    from service.log_format import json_log_config

    svc = service or ServiceSettings()
    logs = json_log_config(LOGGING_CONFIG) if svc.log_format == "json" else LOGGING_CONFIG
    mem = MemoryClient(settings or Settings.from_env()).start()
    try:
        mcp = DualtrackMcp(mem, svc, owns_client=True)
    except BaseException:
        mem.close()
        raise
    uvicorn.run(  # X-Forwarded-For is the app's to trust (trusted_proxies), not uvicorn's
        mcp.http_app(host=host),
        host=host,
        port=port,
        log_level="info",
        log_config=logs,
        proxy_headers=False,
    )


def main(http: tuple[str, int] | None = None) -> None:
    """Run the server as this process until it is stopped: ``dualtrack mcp``, and
    ``python -m service.mcp_server`` (stdio).

    Over stdio (``http`` None) for the token in ``DUALTRACK_MCP_TOKEN``, else streamable
    HTTP at ``http = (host, port)``. Invalid service settings or a refused token end it
    with one line on stderr and status 1; SIGTERM and SIGHUP with status 0
    (:mod:`service.shutdown`).
    """
    try:
        service = ServiceSettings()
    except ValueError as exc:
        _exit_with(f"invalid service settings: {exc}")
    exit_cleanly_on_signals()
    try:
        if http is None:
            run_stdio(os.environ.get("DUALTRACK_MCP_TOKEN"), service=service)
        else:
            run_http(*http, service=service)
    except DualtrackError as exc:
        _exit_with(f"[{exc.code}] {exc.message}")


def _exit_with(error: str) -> NoReturn:
    """End the process with ``error`` on stderr (stdout is the protocol's) and status 1."""
    Console(stderr=True).print(f"[red]error[/red] {escape(error)}")
    raise SystemExit(1)


if __name__ == "__main__":  # pragma: no cover
    main()
