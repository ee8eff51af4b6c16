"""What a route needs per request: the verified principal and a client acting for it.

Routes are synchronous functions (FastAPI runs them in its thread pool, as
the SDK is synchronous); :meth:`Caller.run` enters the request's sandbox (the
``X-Dualtrack-Sandbox`` header) in the same thread as the SDK call, so the
ContextVar is set exactly where it is read. A header naming a sandbox that is
not the token's user's and agent's is answered 404 ``sandbox_not_found``,
whatever the route.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Header, Request

from policies.errors import InvalidField
from policies.validation import check_uuid
from sandbox.current import ActiveSandbox, enter, leave
from sdk.client import MemoryClient
from service.auth import Principal, Scope, TokenVerifier
from service.ratelimit import RateLimiter

__all__ = ["Caller", "caller", "eraser", "ops_caller", "reader", "writer"]

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


def _caller(scope: Scope) -> Callable[..., Caller]:
    def dependency(
        request: Request,
        authorization: Annotated[str | None, Header()] = None,
        x_dualtrack_sandbox: Annotated[str | None, Header()] = None,
    ) -> Caller:
        state = request.app.state
        verifier: TokenVerifier = state.verifier
        principal = verifier.verify(authorization)
        principal.require(scope)
        limiter: RateLimiter = state.limiter
        limiter.take(principal.agent_id or f"user:{principal.user_id}")
        return Caller(
            principal, _agent_client(state, principal.agent_id), _sandbox(x_dualtrack_sandbox)
        )

    return dependency


reader = Annotated[Caller, Depends(_caller(Scope.READ))]
writer = Annotated[Caller, Depends(_caller(Scope.WRITE))]
eraser = Annotated[Caller, Depends(_caller(Scope.ERASE))]
ops_caller = Annotated[Caller, Depends(_caller(Scope.OPS))]
caller = _caller
