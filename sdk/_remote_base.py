"""What the sync and async remote clients share: the wire.

Each SDK call becomes a :class:`Call` (built by its operation,
:meth:`sdk.operations.Operation.call`, which runs the in-process checks first):
the user it acts for, the route of the REST contract, its JSON body, and how to
read the answer. :func:`request` adds the user's bearer token (refusing a token
of another user) and the active sandbox; :func:`result` reads the answer or
raises the error class the server named. ``remote.py`` and ``remote_async.py``
only send.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import Callable, Mapping
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import httpx

from policies.errors import (
    Conflict,
    DualtrackError,
    InvalidInput,
    NotFound,
    error_class_for_code,
)
from policies.validation import check_user_id
from sdk.errors import ServiceUnavailable, TokenUserMismatch
from sdk.wire import ContextOut, SearchOut, SessionOut
from values.context import ContextItem, MemoryContext, Section
from values.entities import Entity
from values.hits import MemoryHit, SearchResults
from values.sessions import Intent, Outcome, SessionRecord, SessionSummary

__all__ = [
    "SANDBOX_HEADER",
    "Call",
    "Request",
    "TokenProvider",
    "read_context",
    "read_hits",
    "read_session",
    "request",
    "result",
]

T = TypeVar("T")
TokenProvider = Callable[[str], str]
"""``user_id -> bearer token`` (a JWT whose ``sub`` is that user)."""

SANDBOX_HEADER = "X-Dualtrack-Sandbox"


@dataclass(frozen=True)
class Call(Generic[T]):
    """One SDK call as a request of the REST contract, and how to read its answer."""

    user_id: str
    method: str
    path: str
    read: Callable[[Any], T]
    """From the answer's decoded JSON (``None`` for a 204)."""
    body: Any = None
    params: Mapping[str, str] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    missing: Callable[[], T] | None = None
    """The result when the server answers ``record_not_found`` (a get or delete of
    nothing), as the in-process client returns ``None`` or ``False``."""


@dataclass(frozen=True)
class Request:
    """What goes on the wire for a call."""

    method: str
    path: str
    headers: dict[str, str]
    json: Any
    params: Mapping[str, str] | None


# --------------------------------------------------------------------------- sandbox


@dataclass
class ActiveRemoteSandbox:
    """The sandbox a remote ``with client.sandbox(...)`` block works in (changes on fork)."""

    user_id: str
    session_id: str
    sandbox_id: uuid.UUID


_ACTIVE: ContextVar[ActiveRemoteSandbox | None] = ContextVar(
    "dualtrack_remote_sandbox", default=None
)
"""Per thread and asyncio task, like ``sandbox.current`` in process; a separate variable,
so a client and a service in one process never read each other's."""


def enter_sandbox(active: ActiveRemoteSandbox) -> Token[ActiveRemoteSandbox | None]:
    """Send ``active``'s id with every request for its user until :func:`leave_sandbox`."""
    return _ACTIVE.set(active)


def leave_sandbox(token: Token[ActiveRemoteSandbox | None]) -> None:
    """Restore the sandbox that was active before :func:`enter_sandbox`."""
    _ACTIVE.reset(token)


# --------------------------------------------------------------------------- the wire


def token_subject(token: str) -> str | None:
    """The ``sub`` claim of a JWT, read without verifying it (only to compare users:
    the service verifies every token)."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError, binascii.Error):
        return None
    sub = claims.get("sub") if isinstance(claims, dict) else None
    return sub if isinstance(sub, str) else None


def request(call: Call[Any], token_provider: TokenProvider) -> Request:
    """The request for ``call``: its user's token and the user's active sandbox, if any.

    Raises :class:`InvalidUserId` for a malformed user id and
    :class:`TokenUserMismatch` when the token provided is not the user's.
    """
    user_id = check_user_id(call.user_id)
    token = token_provider(user_id)
    if not isinstance(token, str) or token_subject(token) != user_id:
        raise TokenUserMismatch(
            "the token provided for this user carries another user (or none)", field="token"
        )
    headers = {"Authorization": f"Bearer {token}", **call.headers}
    active = _ACTIVE.get()
    if SANDBOX_HEADER not in headers and active is not None and active.user_id == user_id:
        headers[SANDBOX_HEADER] = str(active.sandbox_id)
    return Request(call.method, call.path, headers, call.body, call.params)


def unreachable(exc: httpx.HTTPError) -> ServiceUnavailable:
    """The error for a request that got no answer (refused, reset, timed out)."""
    return ServiceUnavailable(
        f"the dualtrack service did not answer ({type(exc).__name__})", cause=type(exc).__name__
    )


def result(call: Call[T], response: httpx.Response) -> T:
    """The call's result from the answer, or the typed error the answer names."""
    if response.is_success:
        if response.status_code == 204 or not response.content:
            return call.read(None)
        try:
            data = response.json()
        except ValueError:
            raise ServiceUnavailable("the service answered with a body that is not JSON") from None
        return call.read(data)
    error = _error(response)
    if call.missing is not None and error.code == "record_not_found":
        return call.missing()
    raise error


_BY_STATUS: dict[int, type[DualtrackError]] = {
    400: InvalidInput,
    404: NotFound,
    409: Conflict,
    412: Conflict,
    422: InvalidInput,
}


def _error(response: httpx.Response) -> DualtrackError:
    """The SDK error registered under the answer's code (its nearest base by HTTP status
    for a code this process does not know); the server's code is kept in details."""
    status = response.status_code
    try:
        payload = response.json()["error"]
        code, message = payload["code"], payload["message"]
        if not isinstance(code, str) or not isinstance(message, str):
            raise TypeError(code)
    except (ValueError, KeyError, TypeError):
        if status >= 500:
            return ServiceUnavailable(f"the service answered HTTP {status}", status=status)
        return DualtrackError(f"the service answered HTTP {status}", status=status)
    cls = error_class_for_code(code)
    if cls is DualtrackError and code != DualtrackError.code:
        cls = _BY_STATUS.get(status, ServiceUnavailable if status == 503 else DualtrackError)
    details: dict[str, Any] = {"status": status}
    if code != cls.code:
        details["code"] = code
    if "current_version" in payload:
        details["current_version"] = payload["current_version"]
    retry_after = response.headers.get("Retry-After", "")
    if retry_after.isdigit():
        details["retry_after_s"] = float(retry_after)
    # built without the class's own __init__: a few take keyword fields instead of a message
    error = cls.__new__(cls)
    DualtrackError.__init__(error, message, **details)
    return error


# --------------------------------------------------------------------------- readers


def read_session(user_id: str, out: SessionOut) -> SessionRecord:
    """The SDK's record from the answer's (its summary's ``pii`` stays server-side)."""
    summary = SessionSummary(
        user_id=user_id,
        session_id=out.session_id,
        intent=Intent(out.intent),
        intent_confidence=out.intent_confidence,
        entities=[Entity(e.type, e.text, e.start, e.end) for e in out.entities],
        occurred_at=out.occurred_at,
        summary_text=out.summary,
        language="zh" if out.language == "zh" else "en",
        pii=[],  # clear PII never leaves the service
        outcomes=tuple(Outcome(o) for o in out.outcomes),
    )
    return SessionRecord(memory_id=out.memory_id, summary=summary)


def read_hits(out: SearchOut) -> SearchResults:
    """The SDK's hits from the answer's (``.degraded`` set)."""
    hits = SearchResults(
        MemoryHit(
            memory_id=h.memory_id,
            text=h.text,
            score=h.score,
            intent=h.intent,
            entities=h.entities,
            occurred_at=h.occurred_at,
            metadata=h.metadata,
            policy=h.policy,
            kind=h.kind,
            session_id=h.session_id,
            keyword_score=h.keyword_score,
            vector_score=h.vector_score,
            status=h.status,
            confidence=h.confidence,
        )
        for h in out.hits
    )
    hits.degraded = out.degraded
    return hits


def read_context(out: ContextOut) -> MemoryContext:
    """The SDK's context from the answer's."""
    items = [ContextItem(Section(i.section), i.text, i.ref, i.status) for i in out.items]
    return MemoryContext(
        text=out.text, tokens=out.tokens, items=items, omitted=out.omitted, degraded=out.degraded
    )
