"""Who may call, checked before anything else: the REST routes (before their body is
read) and every MCP request go through one :class:`Gate`.

In order: the bearer token is verified (401; the refusals an address gets are
limited, 429 beyond ``unauthorized_burst``), the route's scope is checked (403),
the agent's bucket is charged (429), and a scope limited per user is charged for
the token's user (``account:export``: one export per ``export_interval_s``).
The address is the connection's peer, or the client a trusted proxy names
(``trusted_proxies``, applied by uvicorn's ``ProxyHeadersMiddleware``).
"""

from __future__ import annotations

from service.auth import Principal, Scope, TokenVerifier
from service.errors import Unauthorized
from service.ratelimit import Limit, RateLimits
from service.settings import ServiceSettings

__all__ = ["Gate"]


class Gate:
    """The token check, the scope check and the rate limits of one app."""

    def __init__(
        self, service: ServiceSettings, verifier: TokenVerifier, limits: RateLimits
    ) -> None:
        self.verifier = verifier
        self.limits = limits
        self._requests = Limit(
            "requests", service.rate_per_s, service.rate_burst, "too many requests for this agent"
        )
        self._unauthorized = Limit(
            "unauthorized",
            service.unauthorized_per_s,
            service.unauthorized_burst,
            "too many refused tokens from this address",
        )
        self._per_user = {
            Scope.EXPORT: Limit(
                "export",
                1.0 / service.export_interval_s,
                1,
                f"one export per user every {service.export_interval_s:g} s",
                claimed=True,
            )
        }

    def principal(self, authorization: str | None, address: str | None) -> Principal:
        """The verified principal; :class:`Unauthorized`, or :class:`RateLimited` once the
        address was refused too often."""
        try:
            return self.verifier.verify(authorization)
        except Unauthorized:
            self.limits.take(self._unauthorized, address or "unknown")
            raise

    def admit(self, principal: Principal, scope: Scope) -> None:
        """Check ``scope`` (:class:`Forbidden`) and charge the agent's bucket, and the
        user's if the scope is limited per user (:class:`RateLimited`)."""
        principal.require(scope)
        self.limits.take(self._requests, principal.agent_id or f"user:{principal.user_id}")
        per_user = self._per_user.get(scope)
        if per_user is not None:
            self.limits.take(per_user, principal.user_id)

    def enter(self, authorization: str | None, address: str | None, scope: Scope) -> Principal:
        """:meth:`principal`, then :meth:`admit` for ``scope``."""
        principal = self.principal(authorization, address)
        self.admit(principal, scope)
        return principal
