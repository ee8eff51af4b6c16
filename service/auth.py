"""Verified tokens: the user is the JWT's ``sub``, the agent its ``azp`` (or ``client_id``).

A user id in a path, query or body is never trusted for user routes: every
route takes the user from :class:`Principal`, built here from a token whose
signature (HS256 with ``DUALTRACK_JWT_SECRET``, or RS256/ES256 with a
configured public key or JWKS file), ``exp`` (required), ``nbf``, issuer and
audience (when configured) all check out, and whose ``jti`` is not revoked.
``alg: none`` and any algorithm not configured are refused. Scopes (the
``scope`` claim, space separated, or ``scp``): ``memory:read``,
``memory:write``, ``memory:erase``, ``account:export`` (the user's export, PII in
clear: for the user's own data-portability request, never an agent's default),
and ``ops`` for ops routes. The ``Authorization`` scheme is case-insensitive
(RFC 7235): ``bearer`` is ``Bearer``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import jwt
from jwt import PyJWK, PyJWKSet
from jwt.types import Options

from policies.errors import InvalidUserId
from policies.scope import UserScope
from service.errors import Forbidden, Unauthorized
from service.settings import ServiceSettings

__all__ = ["Principal", "Scope", "TokenVerifier"]


class Scope(StrEnum):
    """What a token may do."""

    READ = "memory:read"
    WRITE = "memory:write"
    ERASE = "memory:erase"
    EXPORT = "account:export"
    OPS = "ops"


@dataclass(frozen=True)
class Principal:
    """Who calls: the user (``sub``), the agent (``azp``/``client_id``), scopes, token id."""

    user_id: str
    agent_id: str | None
    scopes: frozenset[str]
    token_id: str | None
    expires_at: datetime

    def require(self, scope: Scope) -> None:
        """Raise :class:`Forbidden` unless the token carries ``scope``."""
        if scope.value not in self.scopes:
            raise Forbidden(f"this token lacks the {scope.value} scope")


def _expiry(exp: object) -> datetime:
    """The token's ``exp`` as a time; :class:`Unauthorized` for one no clock can reach."""
    try:
        return datetime.fromtimestamp(int(exp), UTC)  # type: ignore[call-overload]
    except (OverflowError, OSError, ValueError, TypeError):
        raise Unauthorized("the token's exp is not a time") from None


class TokenVerifier:
    """Checks bearer tokens against the configured keys and the revocation list."""

    def __init__(self, settings: ServiceSettings, revoked: Callable[[], frozenset[str]]) -> None:
        self._settings = settings
        self._revoked_source = revoked
        self._revoked: frozenset[str] = frozenset()
        self._revoked_at = 0.0
        self._lock = threading.Lock()
        self._keys = self._load_keys(settings)
        if not self._keys:
            raise Unauthorized("no token key is configured (DUALTRACK_JWT_SECRET or a public key)")

    @staticmethod
    def _load_keys(s: ServiceSettings) -> dict[str, list[Any]]:
        """Algorithm -> candidate keys (a JWKS adds its keys under their own algorithm)."""
        keys: dict[str, list[Any]] = {}
        if s.jwt_secret is not None:
            keys["HS256"] = [s.jwt_secret.get_secret_value()]
        if s.jwt_public_key_file is not None:
            pem = s.jwt_public_key_file.read_text(encoding="utf-8")
            for alg in ("RS256", "ES256"):
                keys.setdefault(alg, []).append(pem)
        if s.jwt_jwks_file is not None:
            data = json.loads(s.jwt_jwks_file.read_text(encoding="utf-8"))
            for jwk in PyJWKSet.from_dict(data).keys:
                named = jwk.algorithm_name
                for name in [named] if named in ("RS256", "ES256") else ["RS256", "ES256"]:
                    keys.setdefault(name, []).append(jwk)
        return keys

    def revoked(self) -> frozenset[str]:
        """The revocation list, re-read at most every ``revocation_refresh_s``."""
        now = time.monotonic()
        if now - self._revoked_at >= self._settings.revocation_refresh_s:
            with self._lock:
                if now - self._revoked_at >= self._settings.revocation_refresh_s:
                    self._revoked = self._revoked_source()
                    self._revoked_at = now
        return self._revoked

    def forget_cache(self) -> None:
        """Re-read the revocation list on the next check (after a revocation here)."""
        self._revoked_at = 0.0

    def verify(self, authorization: str | None) -> Principal:
        """The principal of an ``Authorization: Bearer <jwt>`` header, or :class:`Unauthorized`."""
        scheme, _, token = (authorization or "").strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise Unauthorized("a Bearer token is required")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise Unauthorized("the token is malformed") from None
        alg = header.get("alg")
        candidates = self._keys.get(alg) if isinstance(alg, str) else None
        if not candidates or not isinstance(alg, str):
            raise Unauthorized("the token's algorithm is not accepted")
        claims = self._decode(token, alg, candidates, header.get("kid"))
        return self._principal(claims)

    def _decode(self, token: str, alg: str, keys: list[Any], kid: object) -> dict[str, Any]:
        s = self._settings
        options: Options = {
            "require": ["exp", "sub"],
            "verify_aud": s.jwt_audience is not None,
        }
        chosen = [k for k in keys if not isinstance(k, PyJWK) or kid is None or k.key_id == kid]
        error: Exception | None = None
        for key in chosen:
            try:
                decoded: dict[str, Any] = jwt.decode(
                    token,
                    key.key if isinstance(key, PyJWK) else key,
                    algorithms=[alg],
                    audience=s.jwt_audience,
                    issuer=s.jwt_issuer,
                    leeway=s.jwt_leeway_s,
                    options=options,
                )
                return decoded
            except jwt.ExpiredSignatureError:
                raise Unauthorized("the token has expired") from None
            except jwt.ImmatureSignatureError:
                raise Unauthorized("the token is not valid yet") from None
            except (jwt.InvalidAudienceError, jwt.InvalidIssuerError):
                raise Unauthorized("the token is for another audience or issuer") from None
            except jwt.PyJWTError as exc:
                error = exc
        raise Unauthorized("the token's signature or claims are invalid") from error

    def _principal(self, claims: dict[str, Any]) -> Principal:
        jti = claims.get("jti")
        if jti is not None and (not isinstance(jti, str) or jti in self.revoked()):
            raise Unauthorized("the token was revoked")
        agent = claims.get("azp") or claims.get("client_id")
        raw = claims.get("scope", claims.get("scp", ""))
        scopes = raw.split() if isinstance(raw, str) else raw if isinstance(raw, list) else []
        try:
            sub = claims["sub"]
            if not isinstance(sub, str) or (agent is not None and not isinstance(agent, str)):
                raise Unauthorized("the token's sub and azp must be strings")
            UserScope(sub, agent)  # the same id rules as every store call
        except InvalidUserId:
            raise Unauthorized("the token's sub or azp is not a valid id") from None
        return Principal(
            user_id=sub,
            agent_id=agent,
            scopes=frozenset(str(x) for x in scopes),
            token_id=jti,
            expires_at=_expiry(claims["exp"]),
        )
