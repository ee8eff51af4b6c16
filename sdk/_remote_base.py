"""What the sync and async remote clients share: every request, built once.

Each SDK call becomes a :class:`Call`: the user it acts for, the route of the
REST contract, its JSON body, and how to read the answer. Building a call
runs the checks the in-process client runs before its stores are touched
(text, ids, policy, profile fields), so bad input raises the same typed error
on both clients and never leaves the process. :func:`request` adds the
user's bearer token (refusing a token of another user) and the active
sandbox; :func:`result` reads the answer or raises the error class the server
named. ``remote.py`` and ``remote_async.py`` only send.
"""

from __future__ import annotations

import base64
import binascii
import json
import string
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ValidationError

from policies.business import BusinessEntityType, check_entity_id
from policies.confidence import feedback_action
from policies.errors import (
    Conflict,
    DualtrackError,
    InvalidField,
    InvalidInput,
    NotFound,
    error_class_for_code,
)
from policies.lifecycle import LifecyclePolicy, require_policy
from policies.profile_fields import validate_changes
from policies.ttl import MemoryKind
from policies.validation import (
    MAX_QUERY_BYTES,
    check_choice,
    check_device_field,
    check_field_length,
    check_int,
    check_session_id,
    check_source,
    check_text,
    check_user_id,
    check_uuid,
)
from sdk.errors import ServiceUnavailable, TokenUserMismatch
from sdk.wire import (
    ContextBody,
    ContextOut,
    DeviceRegister,
    DeviceVerify,
    DiscardOut,
    FactPut,
    FeedbackBody,
    FeedbackOut,
    LinkCreate,
    LinkEnd,
    MergeBody,
    MergeOut,
    SandboxOut,
    SearchBody,
    SearchOut,
    SessionOut,
    TranscriptBody,
    TurnIn,
    TurnsAppendedOut,
    TurnsBody,
    WriteRequest,
    WriteResponse,
)
from values.context import ContextItem, MemoryContext, Section
from values.entities import Entity
from values.feedback import FeedbackResult
from values.hits import MemoryHit, SearchResults
from values.records import BusinessLink, Device, Fact, FragmentRecord, Profile
from values.sessions import Intent, Outcome, SessionRecord, SessionSummary, Turn, TurnsAppended

__all__ = ["SANDBOX_HEADER", "Call", "Request", "TokenProvider", "request", "result"]

T = TypeVar("T")
TokenProvider = Callable[[str], str]
"""``user_id -> bearer token`` (a JWT whose ``sub`` is that user)."""

SANDBOX_HEADER = "X-Dualtrack-Sandbox"
_HEX = frozenset(string.hexdigits)


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


# --------------------------------------------------------------------------- checks


def _body(model: type[BaseModel], **fields: Any) -> Any:
    """``model``'s JSON from ``fields``; a wrong type or value is :class:`InvalidField`
    naming the field only (its value may be PII), as in process."""
    try:
        built = model(**fields)
    except ValidationError as exc:
        loc = exc.errors()[0]["loc"]
        where = str(loc[0]) if loc else "input"
        raise InvalidField(f"{where} has the wrong type or value", field=where) from None
    return built.model_dump(mode="json", exclude_defaults=True)


def _segment(value: str) -> str:
    """A path segment, percent-encoded whole."""
    return quote(value, safe="")


def _session(session_id: object) -> str:
    checked = check_session_id(session_id)
    if not checked:
        raise InvalidField("session_id is empty", field="session_id")
    return _segment(checked)


def _fingerprint(fp: object) -> str:
    if not isinstance(fp, str) or len(fp) != 64 or not set(fp) <= _HEX:
        raise InvalidField("fingerprint must be 64 hex digits (SHA-256)", field="fingerprint")
    return fp.lower()


def _key(key: object) -> str:
    if not isinstance(key, str):
        raise InvalidField("key must be a string", field="key")
    if not check_field_length("key", key, 128).strip():
        raise InvalidField("fact key is empty", field="key")
    return _segment(key)


def _turns(turns: object, name: str) -> list[dict[str, Any]]:
    if isinstance(turns, str | bytes) or not isinstance(turns, Iterable):
        raise InvalidField(f"{name} must be a sequence of Turn", field=name)
    out = list(turns)
    if not all(isinstance(t, Turn) for t in out):
        raise InvalidField(f"{name} must be a sequence of Turn", field=name)
    for position, turn in enumerate(out):
        check_text(turn.text, field=f"{name}[{position}].text", allow_empty=True)
    wire: list[dict[str, Any]] = [_body(TurnIn, role=t.role, text=t.text, time=t.time) for t in out]
    return wire


# --------------------------------------------------------------------------- readers


def _session_record(user_id: str, out: SessionOut) -> SessionRecord:
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


def _hits(data: Any) -> SearchResults:
    out = SearchOut.model_validate(data)
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


def _context(data: Any) -> MemoryContext:
    out = ContextOut.model_validate(data)
    items = [ContextItem(Section(i.section), i.text, i.ref, i.status) for i in out.items]
    return MemoryContext(
        text=out.text, tokens=out.tokens, items=items, omitted=out.omitted, degraded=out.degraded
    )


def _list(model: type[BaseModel]) -> Callable[[Any], Any]:
    return lambda data: [model.model_validate(item) for item in data]


def _true(_: Any) -> bool:
    return True


def _false() -> bool:
    return False


def _none() -> None:
    return None


# --------------------------------------------------------------------------- calls


def profile_get(user_id: str) -> Call[Profile]:
    """``GET /v1/profile``."""
    return Call(user_id, "GET", "/v1/profile", Profile.model_validate)


def profile_ensure(user_id: str) -> Call[Profile]:
    """``PUT /v1/profile``."""
    return Call(user_id, "PUT", "/v1/profile", Profile.model_validate)


def profile_update(
    user_id: str, expected_version: int, changes: dict[str, object]
) -> Call[Profile]:
    """``PATCH /v1/profile`` with ``If-Match``; the fields are checked as in process."""
    check_int(expected_version, "expected_version", low=1, high=2**31)
    validate_changes(changes)
    headers = {"If-Match": f'"{expected_version}"'}
    return Call(user_id, "PATCH", "/v1/profile", Profile.model_validate, changes, None, headers)


def device_register(user_id: str, device_id: str, os: str, browser: str) -> Call[Device]:
    """``POST /v1/devices``."""
    body = _body(
        DeviceRegister,
        device_id=device_id,
        os=check_device_field("os", os),
        browser=check_device_field("browser", browser),
    )
    return Call(user_id, "POST", "/v1/devices", Device.model_validate, body)


def device_verify(user_id: str, fingerprint: str, succeeded: bool) -> Call[Device]:
    """``POST /v1/devices/{fingerprint}/verify``."""
    path = f"/v1/devices/{_fingerprint(fingerprint)}/verify"
    body = _body(DeviceVerify, succeeded=succeeded)
    return Call(user_id, "POST", path, Device.model_validate, body)


def device_list(user_id: str) -> Call[list[Device]]:
    """``GET /v1/devices``."""
    return Call(user_id, "GET", "/v1/devices", _list(Device))


def device_remove(user_id: str, fingerprint: str) -> Call[bool]:
    """``DELETE /v1/devices/{fingerprint}``: ``False`` on 404."""
    path = f"/v1/devices/{_fingerprint(fingerprint)}"
    return Call(user_id, "DELETE", path, _true, missing=_false)


def link_add(
    user_id: str,
    *,
    entity_type: str,
    entity_id: str,
    role: str,
    effective_from: datetime | None,
    effective_to: datetime | None,
) -> Call[BusinessLink]:
    """``POST /v1/links``."""
    kind = check_choice(BusinessEntityType, entity_type, "entity_type")
    body = _body(
        LinkCreate,
        entity_type=kind,
        entity_id=check_entity_id(kind, check_field_length("entity_id", entity_id, 128)),
        role=role,
        effective_from=effective_from,
        effective_to=effective_to,
    )
    return Call(user_id, "POST", "/v1/links", BusinessLink.model_validate, body)


def link_list(user_id: str, *, valid_now: bool, entity_type: str | None = None) -> Call[list[Any]]:
    """``GET /v1/links`` (``?valid_now=true``), of ``entity_type`` only if given."""
    wanted = (
        None
        if entity_type is None
        else check_choice(BusinessEntityType, entity_type, "entity_type")
    )

    def read(data: Any) -> list[BusinessLink]:
        links = [BusinessLink.model_validate(item) for item in data]
        return [link for link in links if wanted is None or link.entity_type == wanted]

    params = {"valid_now": "true"} if valid_now else None
    return Call(user_id, "GET", "/v1/links", read, params=params)


def link_end(user_id: str, link_id: uuid.UUID, at: datetime | None) -> Call[BusinessLink]:
    """``POST /v1/links/{link_id}/end``."""
    path = f"/v1/links/{check_uuid(link_id, 'link_id')}/end"
    return Call(user_id, "POST", path, BusinessLink.model_validate, _body(LinkEnd, at=at))


def link_remove(user_id: str, link_id: uuid.UUID) -> Call[bool]:
    """``DELETE /v1/links/{link_id}``: ``False`` on 404."""
    path = f"/v1/links/{check_uuid(link_id, 'link_id')}"
    return Call(user_id, "DELETE", path, _true, missing=_false)


def fact_put(
    user_id: str,
    key: str,
    value: Any,
    *,
    lifecycle_policy: LifecyclePolicy,
    confidence: float,
    source: str,
) -> Call[Fact]:
    """``PUT /v1/facts/{key}``; ``lifecycle_policy`` is required."""
    require_policy(lifecycle_policy)
    path = f"/v1/facts/{_key(key)}"
    body = _body(
        FactPut,
        value=value,
        lifecycle_policy=lifecycle_policy,
        confidence=confidence,
        source=check_source(source),
    )
    return Call(user_id, "PUT", path, Fact.model_validate, body)


def fact_get(user_id: str, key: str) -> Call[Fact | None]:
    """``GET /v1/facts/{key}``: ``None`` on 404."""
    return Call(user_id, "GET", f"/v1/facts/{_key(key)}", Fact.model_validate, missing=_none)


def fact_list(user_id: str) -> Call[list[Fact]]:
    """``GET /v1/facts``."""
    return Call(user_id, "GET", "/v1/facts", _list(Fact))


def fact_delete(user_id: str, key: str) -> Call[bool]:
    """``DELETE /v1/facts/{key}``: ``False`` on 404."""
    return Call(user_id, "DELETE", f"/v1/facts/{_key(key)}", _true, missing=_false)


def memory_get(user_id: str, memory_id: uuid.UUID | str) -> Call[FragmentRecord | None]:
    """``GET /v1/memories/{memory_id}``: ``None`` on 404."""
    path = f"/v1/memories/{check_uuid(memory_id, 'memory_id')}"
    return Call(user_id, "GET", path, FragmentRecord.model_validate, missing=_none)


def memory_list(user_id: str, limit: int, offset: int) -> Call[list[FragmentRecord]]:
    """``GET /v1/memories?limit=&offset=``."""
    check_int(limit, "limit", low=1, high=1000)
    check_int(offset, "offset", low=0, high=2**31)
    params = {"limit": str(limit), "offset": str(offset)}
    return Call(user_id, "GET", "/v1/memories", _list(FragmentRecord), params=params)


def memory_delete(user_id: str, memory_id: uuid.UUID | str) -> Call[bool]:
    """``DELETE /v1/memories/{memory_id}``: ``False`` on 404."""
    path = f"/v1/memories/{check_uuid(memory_id, 'memory_id')}"
    return Call(user_id, "DELETE", path, _true, missing=_false)


def write(
    user_id: str,
    text: str,
    *,
    lifecycle_policy: LifecyclePolicy,
    session_id: str | None,
    occurred_at: datetime | None,
    metadata: dict[str, Any] | None,
    kind: MemoryKind,
    private: bool,
) -> Call[uuid.UUID]:
    """``POST /v1/memories``; ``lifecycle_policy`` is required."""
    text = check_text(text)
    require_policy(lifecycle_policy)
    body = _body(
        WriteRequest,
        text=text,
        lifecycle_policy=lifecycle_policy,
        session_id=session_id,
        occurred_at=occurred_at,
        metadata=metadata,
        kind=kind,
        private=private,
    )
    return Call(
        user_id, "POST", "/v1/memories", lambda d: WriteResponse.model_validate(d).memory_id, body
    )


def search(
    user_id: str,
    query: str,
    *,
    limit: int,
    alpha: float | None,
    preset: str | None,
    intents: Iterable[str] | None,
    occurred_after: datetime | None,
    occurred_before: datetime | None,
    session_id: str | None,
) -> Call[SearchResults]:
    """``POST /v1/search``."""
    query = check_text(query, field="query", max_bytes=MAX_QUERY_BYTES)
    if isinstance(intents, str):
        raise InvalidField("intents must be a list of intent names", field="intents")
    body = _body(
        SearchBody,
        query=query,
        limit=limit,
        alpha=alpha,
        preset=preset,
        intents=None if intents is None else list(intents),
        occurred_after=occurred_after,
        occurred_before=occurred_before,
        session_id=session_id,
    )
    return Call(user_id, "POST", "/v1/search", _hits, body)


def build_context(user_id: str, query: str, max_tokens: int, records: int) -> Call[MemoryContext]:
    """``POST /v1/context``."""
    body = _body(
        ContextBody, query=check_text(query, field="query"), max_tokens=max_tokens, records=records
    )
    return Call(user_id, "POST", "/v1/context", _context, body)


def end_session(user_id: str, session_id: str, transcript: Sequence[Turn]) -> Call[SessionRecord]:
    """``POST /v1/sessions/{session_id}/end``."""
    path = f"/v1/sessions/{_session(session_id)}/end"
    body = _body(TranscriptBody, transcript=_turns(transcript, "transcript"))
    return Call(
        user_id,
        "POST",
        path,
        lambda d: _session_record(user_id, SessionOut.model_validate(d)),
        body,
    )


def append_turns(user_id: str, session_id: str, turns: Sequence[Turn]) -> Call[TurnsAppended]:
    """``POST /v1/sessions/{session_id}/turns``."""
    path = f"/v1/sessions/{_session(session_id)}/turns"

    def read(data: Any) -> TurnsAppended:
        out = TurnsAppendedOut.model_validate(data)
        record = None if out.record is None else _session_record(user_id, out.record)
        return TurnsAppended(memory_ids=out.memory_ids, record=record)

    return Call(user_id, "POST", path, read, _body(TurnsBody, turns=_turns(turns, "turns")))


def sandbox_open(user_id: str, session_id: str) -> Call[SandboxOut]:
    """``POST /v1/sessions/{session_id}/sandbox``."""
    path = f"/v1/sessions/{_session(session_id)}/sandbox"
    return Call(user_id, "POST", path, SandboxOut.model_validate)


def sandbox_fork(user_id: str, session_id: str) -> Call[SandboxOut]:
    """``POST /v1/sessions/{session_id}/sandbox/fork``."""
    path = f"/v1/sessions/{_session(session_id)}/sandbox/fork"
    return Call(user_id, "POST", path, SandboxOut.model_validate)


def sandbox_merge(
    user_id: str, session_id: str, sandbox_id: uuid.UUID, memory_ids: Iterable[uuid.UUID | str]
) -> Call[list[uuid.UUID]]:
    """``POST /v1/sessions/{session_id}/sandbox/merge`` naming the sandbox in the header."""
    path = f"/v1/sessions/{_session(session_id)}/sandbox/merge"
    if isinstance(memory_ids, str) or not isinstance(memory_ids, Iterable):
        raise InvalidField("memory_ids must be a list of memory ids", field="memory_ids")
    ids = [check_uuid(i, "memory_ids") for i in memory_ids]
    return Call(
        user_id,
        "POST",
        path,
        lambda d: MergeOut.model_validate(d).merged,
        _body(MergeBody, memory_ids=ids),
        headers={SANDBOX_HEADER: str(sandbox_id)},
    )


def sandbox_discard(user_id: str, session_id: str, sandbox_id: uuid.UUID) -> Call[int]:
    """``POST /v1/sessions/{session_id}/sandbox/discard`` naming the sandbox in the header."""
    path = f"/v1/sessions/{_session(session_id)}/sandbox/discard"
    return Call(
        user_id,
        "POST",
        path,
        lambda d: DiscardOut.model_validate(d).discarded,
        headers={SANDBOX_HEADER: str(sandbox_id)},
    )


def feedback(user_id: str, memory_id: uuid.UUID | str, action: str) -> Call[FeedbackResult]:
    """``POST /v1/feedback``."""
    body = _body(
        FeedbackBody, memory_id=check_uuid(memory_id, "memory_id"), action=feedback_action(action)
    )
    return Call(
        user_id,
        "POST",
        "/v1/feedback",
        lambda d: FeedbackResult(**FeedbackOut.model_validate(d).model_dump()),
        body,
    )


def export_user(user_id: str) -> Call[dict[str, Any]]:
    """``GET /v1/export``: the JSON as the service sends it."""
    return Call(user_id, "GET", "/v1/export", dict)


def forget_user(user_id: str) -> Call[bool]:
    """``DELETE /v1/me`` (needs the ``memory:erase`` scope)."""
    return Call(user_id, "DELETE", "/v1/me", _true)
