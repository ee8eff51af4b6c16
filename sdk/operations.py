"""The operations an agent calls, each declared once: every transport is derived from here.

An :class:`Operation` names the SDK member it runs (``"write"``, ``"facts.put"``), its
REST route (method, path, tag and route name, whose ``<tag>_<route>`` is the operation
id, summary, description, status), the token scope it needs, its request and answer
models (:mod:`sdk.wire`), the checks the remote client runs before sending, how the
answer reads back into SDK values, and its MCP tool, if it has one. From this table
:mod:`service.operations` builds the REST routes and :mod:`service.mcp_server` the MCP
tools; the remote clients' methods (:mod:`sdk.remote_async`, and :mod:`sdk.remote`
generated from it) send ``OPERATION.call(user_id, **arguments)``.

A request model's fields are the SDK method's keyword arguments
(:meth:`~sdk.wire.Body.sdk_args`), so a new parameter is a field of the model and
a parameter of the protocol (:mod:`sdk.api`) and of the implementation: no transport
names it. This module imports no engine (the thin client ships it).
"""

from __future__ import annotations

import re
import string
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from pydantic import BaseModel, ValidationError

from policies.business import BusinessEntityType, check_entity_id
from policies.confidence import feedback_action
from policies.errors import InvalidField
from policies.lifecycle import require_policy
from policies.profile_fields import validate_changes
from policies.validation import (
    MAX_QUERY_BYTES,
    check_choice,
    check_device_field,
    check_field_length,
    check_int,
    check_session_id,
    check_source,
    check_text,
    check_uuid,
)
from sdk._remote_base import SANDBOX_HEADER, Call, read_context, read_hits, read_session
from sdk.wire import (
    ContextBody,
    ContextOut,
    DeviceRegister,
    DeviceVerify,
    DiscardOut,
    EndSessionArgs,
    ExportOut,
    FactPut,
    FeedbackBody,
    FeedbackOut,
    ForgetArgs,
    ForgetOut,
    LinkCreate,
    LinkEnd,
    MergeBody,
    MergeOut,
    ProfilePatch,
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
from values.context import MemoryContext
from values.feedback import FeedbackResult
from values.hits import SearchResults
from values.records import BusinessLink, Device, Fact, FragmentRecord, Profile
from values.sessions import SessionRecord, Turn, TurnsAppended

__all__ = [
    "OPERATIONS",
    "Operation",
    "Query",
    "Tool",
]

T = TypeVar("T")

_READ, _WRITE, _ERASE, _EXPORT = "memory:read", "memory:write", "memory:erase", "account:export"
"""The token scopes (``service.auth.Scope`` values)."""

_HEX = frozenset(string.hexdigits)
_PARAM = re.compile(r"\{(\w+)(?::\w+)?\}")


@dataclass(frozen=True)
class Query:
    """A query parameter of a route: an integer (within ``ge``..``le``) or a flag."""

    name: str
    kind: type[int] | type[bool]
    default: int | bool
    ge: int | None = None
    le: int | None = None


@dataclass(frozen=True)
class Tool:
    """An operation's MCP tool: its name, description and hints; its arguments and result
    are the operation's request and answer models unless given."""

    name: str
    description: str
    read_only: bool
    idempotent: bool
    destructive: bool = False
    arguments: type[BaseModel] | None = None
    result: type[BaseModel] | None = None
    answer: Callable[[Any], BaseModel] | None = None
    """The result model from the SDK's result (default: the operation's ``answer``)."""


@dataclass(frozen=True)
class Operation(Generic[T]):
    """One operation of the contract: its SDK member, REST route, scope, models, remote
    checks and reader, and MCP tool."""

    name: str
    """The SDK member, dotted for a sub-client's (``facts.put``)."""
    method: str
    path: str
    """The REST path; ``{name}`` (``{name:path}``) parameters are SDK arguments."""
    tag: str
    route: str
    """The route's name: the operation id is ``<tag>_<route>``."""
    scope: str
    summary: str
    doc: str
    read: Callable[[str, Any], T]
    """Remote: the SDK's result from the user and the answer's decoded JSON."""
    body: type[BaseModel] | None = None
    response: Any = None
    """The REST answer's model (``response_model``)."""
    status: int = 200
    query: tuple[Query, ...] = ()
    answer: Callable[[Any], Any] | None = None
    """The REST (and MCP) answer from the SDK's result (default: the result itself)."""
    missing: str | None = None
    """REST: a ``None`` or ``False`` result is 404 ``record_not_found`` with this message;
    remote: that answer is ``None`` (``False`` for a 204 route)."""
    check: Callable[..., dict[str, Any]] | None = None
    """Remote: the in-process checks on the arguments, before anything is sent; returns
    the arguments to send (canonical)."""
    invoke: Callable[..., Any] | None = None
    """In process: ``invoke(client, user_id, **arguments)`` when it is not the member."""
    sandbox: bool = False
    """The route works in the sandbox the header names (required; ``sandbox_id``)."""
    if_match: str | None = None
    """The argument sent as the ``If-Match`` version."""
    raw_body: bool = False
    """Remote: the arguments left are the JSON body as given (checked by ``check``)."""
    tool: Tool | None = None
    responses: Mapping[int | str, dict[str, Any]] = field(default_factory=dict)
    remote: Callable[..., Call[T]] | None = None
    """Remote: builds the call itself (an operation without a route of its own)."""
    remote_note: str = ""
    """Remote: what the remote clients' docstring adds to the protocol's."""

    @property
    def path_params(self) -> list[str]:
        """The names of the path's parameters, in order."""
        return _PARAM.findall(self.path)

    def run(self, client: Any, user_id: str, arguments: Mapping[str, Any]) -> Any:
        """Run the operation in process on ``client`` (a :class:`~sdk.client.MemoryClient`)."""
        if self.invoke is not None:
            return self.invoke(client, user_id, **arguments)
        member = client
        for part in self.name.split("."):
            member = getattr(member, part)
        return member(user_id, **arguments)

    def call(self, user_id: str, /, **arguments: Any) -> Call[T]:
        """The request of the REST contract for these SDK arguments (remote clients)."""
        if self.remote is not None:
            return self.remote(user_id, **arguments)
        args = self.check(**arguments) if self.check is not None else dict(arguments)
        headers: dict[str, str] = {}
        if self.sandbox:
            headers[SANDBOX_HEADER] = str(args.pop("sandbox_id"))
        if self.if_match is not None:
            headers["If-Match"] = f'"{args.pop(self.if_match)}"'
        path = _PARAM.sub(lambda m: _segment(args.pop(m.group(1))), self.path)
        params = {
            q.name: str(value).lower() if q.kind is bool else str(value)
            for q in self.query
            if (value := args.pop(q.name, q.default)) or q.kind is int
        }
        body: Any = None
        if self.raw_body:
            body = args
        elif self.body is not None:
            body = _body(self.body, **args)
        missing: Callable[[], Any] | None = None
        if self.missing is not None:
            missing = _false if self.status == 204 else _none
        return Call(
            user_id,
            self.method,
            path,
            lambda data: self.read(user_id, data),
            body,
            params or None,
            headers,
            missing,
        )


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


def _segment(value: object) -> str:
    """A path segment, percent-encoded whole."""
    return quote(str(value), safe="")


def _session(session_id: object) -> str:
    checked = check_session_id(session_id)
    if not checked:
        raise InvalidField("session_id is empty", field="session_id")
    return checked


def _fingerprint(fp: object) -> str:
    if not isinstance(fp, str) or len(fp) != 64 or not set(fp) <= _HEX:
        raise InvalidField("fingerprint must be 64 hex digits (SHA-256)", field="fingerprint")
    return fp.lower()


def _key(key: object) -> str:
    if not isinstance(key, str):
        raise InvalidField("key must be a string", field="key")
    if not check_field_length("key", key, 128).strip():
        raise InvalidField("fact key is empty", field="key")
    return key


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


def _check_profile_update(*, expected_version: int, **changes: object) -> dict[str, Any]:
    check_int(expected_version, "expected_version", low=1, high=2**31)
    validate_changes(changes)
    return {"expected_version": expected_version, **changes}


def _check_device_register(*, device_id: str, os: str, browser: str) -> dict[str, Any]:
    return {
        "device_id": device_id,
        "os": check_device_field("os", os),
        "browser": check_device_field("browser", browser),
    }


def _check_fingerprint(*, fingerprint: str, **rest: Any) -> dict[str, Any]:
    return {"fingerprint": _fingerprint(fingerprint), **rest}


def _check_link_add(*, entity_type: str, entity_id: str, **rest: Any) -> dict[str, Any]:
    kind = check_choice(BusinessEntityType, entity_type, "entity_type")
    entity_id = check_entity_id(kind, check_field_length("entity_id", entity_id, 128))
    return {"entity_type": kind, "entity_id": entity_id, **rest}


def _check_link_id(*, link_id: uuid.UUID, **rest: Any) -> dict[str, Any]:
    return {"link_id": check_uuid(link_id, "link_id"), **rest}


def _check_fact_put(*, key: str, lifecycle_policy: Any, **rest: Any) -> dict[str, Any]:
    require_policy(lifecycle_policy)
    source = check_source(rest.pop("source", ""))
    return {"key": _key(key), "lifecycle_policy": lifecycle_policy, "source": source, **rest}


def _check_key(*, key: str) -> dict[str, Any]:
    return {"key": _key(key)}


def _check_memory_id(*, memory_id: uuid.UUID | str, **rest: Any) -> dict[str, Any]:
    return {"memory_id": check_uuid(memory_id, "memory_id"), **rest}


def _check_memory_list(*, limit: int = 100, offset: int = 0) -> dict[str, Any]:
    check_int(limit, "limit", low=1, high=1000)
    check_int(offset, "offset", low=0, high=2**31)
    return {"limit": limit, "offset": offset}


def _check_write(*, text: str, lifecycle_policy: Any, **rest: Any) -> dict[str, Any]:
    text = check_text(text)
    require_policy(lifecycle_policy)
    return {"text": text, "lifecycle_policy": lifecycle_policy, **rest}


def _check_search(*, query: str, intents: Any = None, **rest: Any) -> dict[str, Any]:
    query = check_text(query, field="query", max_bytes=MAX_QUERY_BYTES)
    if isinstance(intents, str):
        raise InvalidField("intents must be a list of intent names", field="intents")
    return {"query": query, "intents": None if intents is None else list(intents), **rest}


def _check_context(*, query: str, **rest: Any) -> dict[str, Any]:
    return {"query": check_text(query, field="query"), **rest}


def _check_transcript(*, session_id: str, transcript: Any) -> dict[str, Any]:
    return {"session_id": _session(session_id), "transcript": _turns(transcript, "transcript")}


def _check_turns(*, session_id: str, turns: Any) -> dict[str, Any]:
    return {"session_id": _session(session_id), "turns": _turns(turns, "turns")}


def _check_session(*, session_id: str, **rest: Any) -> dict[str, Any]:
    return {"session_id": _session(session_id), **rest}


def _check_merge(*, session_id: str, sandbox_id: uuid.UUID, memory_ids: Any) -> dict[str, Any]:
    session = _session(session_id)
    if isinstance(memory_ids, str) or not isinstance(memory_ids, Iterable):
        raise InvalidField("memory_ids must be a list of memory ids", field="memory_ids")
    ids = [check_uuid(i, "memory_ids") for i in memory_ids]
    return {"session_id": session, "sandbox_id": sandbox_id, "memory_ids": ids}


def _check_feedback(*, memory_id: uuid.UUID | str, action: str) -> dict[str, Any]:
    return {"memory_id": check_uuid(memory_id, "memory_id"), "action": feedback_action(action)}


# --------------------------------------------------------------------------- readers


def _model(model: type[BaseModel]) -> Callable[[str, Any], Any]:
    return lambda _user, data: model.model_validate(data)


def _models(model: type[BaseModel]) -> Callable[[str, Any], Any]:
    return lambda _user, data: [model.model_validate(item) for item in data]


def _true(_user: str, _data: Any) -> bool:
    return True


def _false() -> bool:
    return False


def _none() -> None:
    return None


def _turns_appended(user_id: str, data: Any) -> TurnsAppended:
    out = TurnsAppendedOut.model_validate(data)
    record = None if out.record is None else read_session(user_id, out.record)
    return TurnsAppended(memory_ids=out.memory_ids, record=record)


def _valid_now(client: Any, user_id: str, valid_now: bool = False) -> Any:
    return client.links.valid_now(user_id) if valid_now else client.links.list(user_id)


def _links_valid_now(user_id: str, /, *, entity_type: str | None = None) -> Call[Any]:
    """``GET /v1/links?valid_now=true``, of ``entity_type`` only if given."""
    wanted = (
        None
        if entity_type is None
        else check_choice(BusinessEntityType, entity_type, "entity_type")
    )

    def read(data: Any) -> list[BusinessLink]:
        links = [BusinessLink.model_validate(item) for item in data]
        return [link for link in links if wanted is None or link.entity_type == wanted]

    return Call(user_id, "GET", "/v1/links", read, params={"valid_now": "true"})


# --------------------------------------------------------------------------- the table

_NEEDS_HEADER: dict[int | str, dict[str, Any]] = {
    400: {"description": "invalid_field: the X-Dualtrack-Sandbox header is missing"}
}

PROFILES_ENSURE: Operation[Profile] = Operation(
    "profiles.ensure",
    "PUT",
    "/v1/profile",
    "profile",
    "ensure",
    _WRITE,
    "Create the token's user (idempotent)",
    "The profile, created with defaults if the user is new.",
    _model(Profile),
    response=Profile,
)
PROFILES_GET: Operation[Profile] = Operation(
    "profiles.get",
    "GET",
    "/v1/profile",
    "profile",
    "get",
    _READ,
    "Read the token's profile",
    "404 ``user_not_found`` until PUT created the user.",
    _model(Profile),
    response=Profile,
)
PROFILES_UPDATE: Operation[Profile] = Operation(
    "profiles.update",
    "PATCH",
    "/v1/profile",
    "profile",
    "patch",
    _WRITE,
    "Update the profile if If-Match carries its current version",
    "412 ``version_conflict`` with ``current_version`` when the version is stale.",
    _model(Profile),
    body=ProfilePatch,
    response=Profile,
    check=_check_profile_update,
    if_match="expected_version",
    raw_body=True,
    responses={412: {"description": "version_conflict: If-Match is not the current version"}},
)
DEVICES_REGISTER: Operation[Device] = Operation(
    "devices.register",
    "POST",
    "/v1/devices",
    "devices",
    "register",
    _WRITE,
    "Record a sign-in from a device",
    "The device (untrusted until verified twice); registering again refreshes it.",
    _model(Device),
    body=DeviceRegister,
    response=Device,
    check=_check_device_register,
)
DEVICES_LIST: Operation[list[Device]] = Operation(
    "devices.list",
    "GET",
    "/v1/devices",
    "devices",
    "list",
    _READ,
    "List the user's devices",
    "Most recently active first.",
    _models(Device),
    response=list[Device],
)
DEVICES_VERIFY: Operation[Device] = Operation(
    "devices.verify",
    "POST",
    "/v1/devices/{fingerprint}/verify",
    "devices",
    "verify",
    _WRITE,
    "Count a verification of a device",
    "Trusted after the second success; 404 ``record_not_found`` for another user's device.",
    _model(Device),
    body=DeviceVerify,
    response=Device,
    check=_check_fingerprint,
)
DEVICES_REMOVE: Operation[bool] = Operation(
    "devices.remove",
    "DELETE",
    "/v1/devices/{fingerprint}",
    "devices",
    "remove",
    _WRITE,
    "Forget a device",
    "204, or 404 if the user has no such device.",
    _true,
    status=204,
    missing="no such device for this user",
    check=_check_fingerprint,
)
LINKS_ADD: Operation[BusinessLink] = Operation(
    "links.add",
    "POST",
    "/v1/links",
    "links",
    "add",
    _WRITE,
    "Link the user to a business entity",
    "``effective_to`` absent: open-ended.",
    _model(BusinessLink),
    body=LinkCreate,
    response=BusinessLink,
    check=_check_link_add,
)
LINKS_LIST: Operation[list[BusinessLink]] = Operation(
    "links.list",
    "GET",
    "/v1/links",
    "links",
    "list",
    _READ,
    "List the user's business links",
    "Every link, past, present and future; ``valid_now=true``: those valid at this moment.",
    _models(BusinessLink),
    response=list[BusinessLink],
    query=(Query("valid_now", bool, False),),
    invoke=_valid_now,
)
LINKS_END: Operation[BusinessLink] = Operation(
    "links.end",
    "POST",
    "/v1/links/{link_id}/end",
    "links",
    "end",
    _WRITE,
    "Close a business link",
    "Close the link at ``at`` (default now); 404 ``record_not_found`` for another user's.",
    _model(BusinessLink),
    body=LinkEnd,
    response=BusinessLink,
    check=_check_link_id,
)
LINKS_REMOVE: Operation[bool] = Operation(
    "links.remove",
    "DELETE",
    "/v1/links/{link_id}",
    "links",
    "remove",
    _WRITE,
    "Delete a business link",
    "204, or 404 if the user has no such link.",
    _true,
    status=204,
    missing="no such link for this user",
    check=_check_link_id,
)
FACTS_PUT: Operation[Fact] = Operation(
    "facts.put",
    "PUT",
    "/v1/facts/{key:path}",
    "facts",
    "put",
    _WRITE,
    "Create or replace a fact",
    "PII in ``value`` is vaulted and stored masked; SENSITIVE takes only a vault reference.",
    _model(Fact),
    body=FactPut,
    response=Fact,
    check=_check_fact_put,
)
FACTS_LIST: Operation[list[Fact]] = Operation(
    "facts.list",
    "GET",
    "/v1/facts",
    "facts",
    "list",
    _READ,
    "List the user's live facts",
    "Every live fact of the user.",
    _models(Fact),
    response=list[Fact],
)
FACTS_GET: Operation[Fact | None] = Operation(
    "facts.get",
    "GET",
    "/v1/facts/{key:path}",
    "facts",
    "get",
    _READ,
    "Read one fact",
    "The live fact (reading an IMPLICIT one renews its TTL); 404 ``record_not_found``.",
    _model(Fact),
    response=Fact,
    missing="no such fact for this user",
    check=_check_key,
)
FACTS_DELETE: Operation[bool] = Operation(
    "facts.delete",
    "DELETE",
    "/v1/facts/{key:path}",
    "facts",
    "delete",
    _WRITE,
    "Delete a fact",
    "204, or 404 if the user has no such fact.",
    _true,
    status=204,
    missing="no such fact for this user",
    check=_check_key,
)
WRITE: Operation[uuid.UUID] = Operation(
    "write",
    "POST",
    "/v1/memories",
    "memories",
    "write",
    _WRITE,
    "Write one memory",
    "Store one memory under its (required) lifecycle policy.",
    lambda _user, data: WriteResponse.model_validate(data).memory_id,
    body=WriteRequest,
    response=WriteResponse,
    status=201,
    answer=lambda memory_id: WriteResponse(memory_id=memory_id),
    check=_check_write,
    tool=Tool(
        "remember",
        "Store one memory of the user this connection acts for. lifecycle_policy is required: "
        "explicit (the user asked to remember it; permanent), implicit (inferred; expires "
        "unless used), sensitive (holds personal data; encrypted), business (mirrors an order, "
        "refund or ticket; checked against its system before use). Personal data in the text "
        "is masked in what is stored. Returns the memory id.",
        read_only=False,
        idempotent=False,
    ),
)
MEMORIES_LIST: Operation[list[FragmentRecord]] = Operation(
    "memories.list",
    "GET",
    "/v1/memories",
    "memories",
    "list",
    _READ,
    "List memories",
    "The user's visible memories, newest first.",
    _models(FragmentRecord),
    response=list[FragmentRecord],
    query=(Query("limit", int, 100, ge=1, le=1000), Query("offset", int, 0, ge=0, le=2**31)),
    check=_check_memory_list,
)
MEMORIES_GET: Operation[FragmentRecord | None] = Operation(
    "memories.get",
    "GET",
    "/v1/memories/{memory_id}",
    "memories",
    "get",
    _READ,
    "Read a memory",
    "One visible memory; 404 ``record_not_found`` otherwise (another user's included).",
    _model(FragmentRecord),
    response=FragmentRecord,
    missing="no such memory for this user",
    check=_check_memory_id,
)
MEMORIES_DELETE: Operation[bool] = Operation(
    "memories.delete",
    "DELETE",
    "/v1/memories/{memory_id}",
    "memories",
    "delete",
    _WRITE,
    "Delete a memory",
    "Delete one visible memory completely; 404 if there is none.",
    _true,
    status=204,
    missing="no such memory for this user",
    check=_check_memory_id,
)
SEARCH: Operation[SearchResults] = Operation(
    "search",
    "POST",
    "/v1/search",
    "memories",
    "search",
    _READ,
    "Hybrid search",
    "Hybrid search of the token's user (masked query, user-filtered).",
    lambda _user, data: read_hits(SearchOut.model_validate(data)),
    body=SearchBody,
    response=SearchOut,
    answer=SearchOut.of,
    check=_check_search,
    remote_note="``.degraded`` is set when a fallback index answered.",
    tool=Tool(
        "recall",
        "Hybrid (keyword + vector) search of the user's live memories, best first; texts are "
        "masked. `degraded` is true when a fallback index answered.",
        read_only=True,
        idempotent=True,
    ),
)
BUILD_CONTEXT: Operation[MemoryContext] = Operation(
    "build_context",
    "POST",
    "/v1/context",
    "context",
    "build",
    _READ,
    "Build the memory block for a prompt",
    "Profile, facts, verified business items, relevant records (within the header's\n"
    "sandbox, if any) and pending questions, cut to ``max_tokens``; masked texts only.",
    lambda _user, data: read_context(ContextOut.model_validate(data)),
    body=ContextBody,
    response=ContextOut,
    answer=ContextOut.of,
    check=_check_context,
    tool=Tool(
        "context",
        "The user's long-term memory block for a prompt about `query`: profile, facts, "
        "business items with their verified state, relevant records and questions to confirm, "
        "cut to max_tokens. Place `text` right after the system prompt.",
        read_only=True,
        idempotent=True,
    ),
)
APPEND_TURNS: Operation[TurnsAppended] = Operation(
    "append_turns",
    "POST",
    "/v1/sessions/{session_id}/turns",
    "sessions",
    "append_turns",
    _WRITE,
    "Keep new turns of a long session",
    "A memory id per non-empty turn; ``record`` once enough turns were gathered.",
    _turns_appended,
    body=TurnsBody,
    response=TurnsAppendedOut,
    answer=TurnsAppendedOut.of,
    check=_check_turns,
)
END_SESSION: Operation[SessionRecord] = Operation(
    "end_session",
    "POST",
    "/v1/sessions/{session_id}/end",
    "sessions",
    "end",
    _WRITE,
    "End a session: store its record and update the profile",
    "The record (masked summary, intent, entities; never a clear PII value).",
    lambda user, data: read_session(user, SessionOut.model_validate(data)),
    body=TranscriptBody,
    response=SessionOut,
    answer=SessionOut.of,
    check=_check_transcript,
    remote_note="Over HTTP the summary's ``pii`` is empty: clear PII stays in the service.",
    tool=Tool(
        "end_session",
        "End a session: its transcript becomes an interaction record (masked summary, intent, "
        "entities) and updates the user's profile. Calling it again with nothing new writes "
        "nothing and returns the last record.",
        read_only=False,
        idempotent=True,
        arguments=EndSessionArgs,
    ),
)
SANDBOX_OPEN: Operation[SandboxOut] = Operation(
    "sandboxes.open",
    "POST",
    "/v1/sessions/{session_id}/sandbox",
    "sandboxes",
    "open",
    _WRITE,
    "Open (or resume) the session's sandbox",
    "The session's active sandbox, created on first use.",
    _model(SandboxOut),
    response=SandboxOut,
    answer=SandboxOut.of,
    check=_check_session,
)
SANDBOX_FORK: Operation[SandboxOut] = Operation(
    "sandboxes.fork",
    "POST",
    "/v1/sessions/{session_id}/sandbox/fork",
    "sandboxes",
    "fork",
    _WRITE,
    "Archive the sandbox, start a clean one",
    "The new active sandbox; the old one is archived (kept, never searched).",
    _model(SandboxOut),
    response=SandboxOut,
    answer=SandboxOut.of,
    check=_check_session,
)
SANDBOX_MERGE: Operation[list[uuid.UUID]] = Operation(
    "sandboxes.merge",
    "POST",
    "/v1/sessions/{session_id}/sandbox/merge",
    "sandboxes",
    "merge",
    _WRITE,
    "Promote memories of the header's sandbox into long-term memory",
    "The ids merged; 409 ``sandbox_closed`` if the sandbox is no longer the active one.",
    lambda _user, data: MergeOut.model_validate(data).merged,
    body=MergeBody,
    response=MergeOut,
    answer=lambda merged: MergeOut(merged=merged),
    check=_check_merge,
    sandbox=True,
    responses=_NEEDS_HEADER,
)
SANDBOX_DISCARD: Operation[int] = Operation(
    "sandboxes.discard",
    "POST",
    "/v1/sessions/{session_id}/sandbox/discard",
    "sandboxes",
    "discard",
    _WRITE,
    "Delete what the header's sandbox holds unmerged, and close it",
    "How many memories were deleted.",
    lambda _user, data: DiscardOut.model_validate(data).discarded,
    response=DiscardOut,
    answer=lambda count: DiscardOut(discarded=count),
    check=_check_session,
    sandbox=True,
    responses=_NEEDS_HEADER,
)
FEEDBACK: Operation[FeedbackResult] = Operation(
    "feedback",
    "POST",
    "/v1/feedback",
    "feedback",
    "report",
    _WRITE,
    "Report a behaviour event",
    "Update the memory's confidence; 404 ``record_not_found`` if the user has no such\n"
    "visible, live memory (another user's included).",
    lambda _user, data: FeedbackResult(**FeedbackOut.model_validate(data).model_dump()),
    body=FeedbackBody,
    response=FeedbackOut,
    answer=FeedbackOut.of,
    check=_check_feedback,
    tool=Tool(
        "feedback",
        "Report a behaviour event on one of the user's memories (click, skip, confirm, reject, "
        "ignore); it moves the memory's confidence. A reject retires the memory.",
        read_only=False,
        idempotent=False,
    ),
)
EXPORT_USER: Operation[dict[str, Any]] = Operation(
    "export_user",
    "GET",
    "/v1/export",
    "account",
    "export",
    _EXPORT,
    "Export everything about the user",
    "Profile, devices, links, facts, PII (decrypted: the user's own), memories. Audited.\n\n"
    "Needs ``account:export`` (no agent holds it by default: the export is the user's own\n"
    "data-portability request) and is limited to one per user every\n"
    "``DUALTRACK_EXPORT_INTERVAL_S`` (429).",
    lambda _user, data: dict(data),
    response=ExportOut,
)
FORGET_USER: Operation[bool] = Operation(
    "forget_user",
    "DELETE",
    "/v1/me",
    "account",
    "erase",
    _ERASE,
    "Erase everything about the user",
    "Idempotent: 204 whether or not anything was stored. Needs ``memory:erase``.",
    _true,
    status=204,
    remote_note="Over HTTP: ``True`` once the service erased (its 204 does not say whether "
    "anything was stored); the token needs ``memory:erase``.",
    tool=Tool(
        "forget",
        "Erase everything stored about the user this connection acts for. Irreversible.",
        read_only=False,
        idempotent=True,
        destructive=True,
        arguments=ForgetArgs,
        result=ForgetOut,
        answer=lambda erased: ForgetOut(erased=erased),
    ),
)

OPERATIONS: tuple[Operation[Any], ...] = (
    PROFILES_ENSURE,
    PROFILES_GET,
    PROFILES_UPDATE,
    DEVICES_REGISTER,
    DEVICES_LIST,
    DEVICES_VERIFY,
    DEVICES_REMOVE,
    LINKS_ADD,
    LINKS_LIST,
    LINKS_END,
    LINKS_REMOVE,
    FACTS_PUT,
    FACTS_LIST,
    FACTS_GET,
    FACTS_DELETE,
    WRITE,
    MEMORIES_LIST,
    MEMORIES_GET,
    MEMORIES_DELETE,
    SEARCH,
    BUILD_CONTEXT,
    APPEND_TURNS,
    END_SESSION,
    SANDBOX_OPEN,
    SANDBOX_FORK,
    SANDBOX_MERGE,
    SANDBOX_DISCARD,
    FEEDBACK,
    EXPORT_USER,
    FORGET_USER,
)
"""Every operation with a REST route, in the order the app includes them."""

LINKS_VALID_NOW: Operation[list[BusinessLink]] = Operation(
    "links.valid_now",
    LINKS_LIST.method,
    LINKS_LIST.path,
    LINKS_LIST.tag,
    LINKS_LIST.route,
    LINKS_LIST.scope,
    LINKS_LIST.summary,
    LINKS_LIST.doc,
    _models(BusinessLink),
    remote=_links_valid_now,
)
"""``links.valid_now``: :data:`LINKS_LIST` with ``valid_now=true``, of one entity type if
asked (filtered by the remote client); it has no route of its own."""
