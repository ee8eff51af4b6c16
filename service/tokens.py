"""Development tokens: what ``dualtrack token`` prints (HS256 with the configured secret)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

import jwt

from policies.errors import ConfigurationError
from policies.scope import UserScope
from service.settings import ServiceSettings

__all__ = ["mint"]


def mint(
    settings: ServiceSettings,
    *,
    sub: str,
    agent: str | None,
    scopes: Iterable[str],
    ttl: timedelta = timedelta(hours=1),
    now: datetime | None = None,
) -> str:
    """A signed token for ``sub`` acting through ``agent`` with ``scopes``.

    Raises :class:`ConfigurationError` without ``DUALTRACK_JWT_SECRET`` and
    :class:`InvalidUserId` for a malformed sub or agent.
    """
    if settings.jwt_secret is None:
        raise ConfigurationError("set DUALTRACK_JWT_SECRET to mint development tokens")
    UserScope(sub, agent)
    at = now or datetime.now(UTC)
    claims: dict[str, object] = {
        "sub": sub,
        "scope": " ".join(sorted(set(scopes))),
        "iat": int(at.timestamp()),
        "exp": int((at + ttl).timestamp()),
        "jti": uuid.uuid4().hex,
    }
    if agent is not None:
        claims["azp"] = agent
    if settings.jwt_issuer is not None:
        claims["iss"] = settings.jwt_issuer
    if settings.jwt_audience is not None:
        claims["aud"] = settings.jwt_audience
    return jwt.encode(claims, settings.jwt_secret.get_secret_value(), algorithm="HS256")
