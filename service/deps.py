"""What a route needs per request: the verified principal and a client acting for it.

A route declares its caller with :data:`reader`, :data:`writer`, ... (a
:class:`Needs` of a scope). Its router's :class:`TokenFirstRoute` admits the caller
(:class:`~service.gate.Gate`: token, scope, rate limits) before FastAPI reads the
body, so a request without a valid token is 401 whatever its body holds, and marks
every answer ``Cache-Control: no-store`` (it holds the token user's data). In the
schema such a route requires the Bearer scheme (:data:`~service.openapi.BEARER`) and
declares the caller check's error answers.

Routes are synchronous functions (FastAPI runs them in its thread pool, as
the SDK is synchronous); :meth:`Caller.run` enters the request's sandbox (the
``X-Dualtrack-Sandbox`` header) in the same thread as the SDK call, so the
ContextVar is set exactly where it is read. A header naming a sandbox that is
not the token's user's and agent's is answered 404 ``sandbox_not_found``,
whatever the route.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

import anyio
from fastapi import Depends, Header, Request, Response, Security
from fastapi.dependencies.models import Dependant
from fastapi.security import HTTPAuthorizationCredentials

from policies.errors import InvalidField
from policies.validation import check_uuid
from sandbox.current import ActiveSandbox, enter, leave
from sdk.client import MemoryClient
from service.auth import Principal, Scope
from service.gate import Gate
from service.openapi import BEARER, ContractRoute

__all__ = [
    "Caller",
    "Needs",
    "TokenFirstRoute",
    "eraser",
    "exporter",
    "ops_caller",
    "reader",
    "writer",
]

T = TypeVar("T")


@dataclass(frozen=True)
class Caller:
    """A verified principal and the client that acts for its agent."""

    principal: Principal
    mem: MemoryClient
    sandbox_id: uuid.UUID | None

    @property
    def user_id(self) -> str:
        """The user of the token (``sub``), the only user a user route serves."""
        return self.principal.user_id

    def run(self, call: Callable[[MemoryClient], T]) -> T:
        """Run ``call`` with the request's sandbox current (when a header named one);
        :class:`SandboxNotFound` if it is not the caller's."""
        if self.sandbox_id is None:
            return call(self.mem)
        box = self.mem.sandboxes.get(self.user_id, self.sandbox_id)
        token = enter(ActiveSandbox(box.user_id, box.agent_id, box.session_id, box.id))
        try:
            return call(self.mem)
        finally:
            leave(token)


def _sandbox(value: str | None) -> uuid.UUID | None:
    if value is None or value == "":
        return None
    if len(value) > 64:
        raise InvalidField("X-Dualtrack-Sandbox must be a UUID", field="X-Dualtrack-Sandbox")
    return check_uuid(value, "X-Dualtrack-Sandbox")


def _agent_client(state: Any, agent_id: str | None) -> MemoryClient:
    """The client acting for ``agent_id``, made once per agent over the shared stores."""
    clients: dict[str | None, MemoryClient] = state.agent_clients
    client = clients.get(agent_id)
    if client is None:
        with state.agent_lock:
            client = clients.get(agent_id)
            if client is None:
                root: MemoryClient = state.mem
                client = clients[agent_id] = root.for_agent(agent_id)
    return client


_PRINCIPAL = "dualtrack.principal"
"""Request scope key of the principal :func:`admit` let in."""


async def admit(request: Request, scope: Scope) -> Principal:
    """The request's principal, admitted by the app's gate for ``scope`` (once)."""
    admitted = request.scope.get(_PRINCIPAL)
    if isinstance(admitted, Principal):
        admitted.require(scope)
        return admitted
    gate: Gate = request.app.state.gate
    address = request.client.host if request.client else None
    principal = await anyio.to_thread.run_sync(
        gate.enter, request.headers.get("authorization"), address, scope
    )
    request.scope[_PRINCIPAL] = principal
    return principal


@dataclass(frozen=True)
class Needs:
    """The dependency of a route's caller: a token holding ``scope``."""

    scope: Scope

    async def __call__(
        self,
        request: Request,
        bearer: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)],
        x_dualtrack_sandbox: Annotated[str | None, Header()] = None,
    ) -> Caller:
        # ``bearer`` puts the scheme in the schema; the gate checks the header itself
        principal = await admit(request, self.scope)
        return Caller(
            principal,
            _agent_client(request.app.state, principal.agent_id),
            _sandbox(x_dualtrack_sandbox),
        )


def _needs(dependant: Dependant) -> Needs | None:
    for sub in dependant.dependencies:
        found = sub.call if isinstance(sub.call, Needs) else _needs(sub)
        if found is not None:
            return found
    return None


class TokenFirstRoute(ContractRoute):
    """A route whose caller (its :class:`Needs`) is admitted before the body is read, and
    whose answers are ``Cache-Control: no-store``; a route without one is left as is."""

    def caller_errors(self, dependant: Dependant) -> set[int]:
        """A caller's token (401), scope (403), rate (429), sandbox header (400, 404: as
        the user), and the stores behind every caller (503)."""
        return {400, 401, 403, 404, 429, 503} if _needs(dependant) is not None else set()

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        needs = _needs(self.dependant)
        if needs is None:
            return handler

        async def admitted(request: Request) -> Response:
            await admit(request, needs.scope)
            response = await handler(request)
            response.headers.setdefault("Cache-Control", "no-store")
            return response

        return admitted


reader = Annotated[Caller, Depends(Needs(Scope.READ))]
writer = Annotated[Caller, Depends(Needs(Scope.WRITE))]
eraser = Annotated[Caller, Depends(Needs(Scope.ERASE))]
exporter = Annotated[Caller, Depends(Needs(Scope.EXPORT))]
ops_caller = Annotated[Caller, Depends(Needs(Scope.OPS))]
