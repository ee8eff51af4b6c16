"""The MCP server's resources and prompts, beside its tools (:mod:`service.mcp_server`).

Resources (read with the ``memory:read`` scope, for the token's user; no URI names a user):

- ``dualtrack://profile``: the profile, as ``GET /v1/profile`` returns it (JSON);
- ``dualtrack://context/{query}``: the long-term memory block for ``query``
  (URL-encoded), as the ``context`` tool builds it (600 tokens), as plain text.

Prompts (``memory:read``):

- ``answer_with_memory(question)``: the memory block for the question, then the question;
- ``end_of_session(session_id)``: tells the assistant to call ``end_session`` with the
  transcript and ``remember`` what the user asked to keep.

Every description is fixed text (no user, no memory). Results are ``private`` and
immediately stale for a client's cache (the MCP defaults). A refused or failed read is
an MCP error whose data is the REST error body ``{"error": {"code", "message"}}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar
from urllib.parse import unquote

import mcp_types as types
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from policies.errors import InvalidInput, NotFound
from sdk.client import MemoryClient
from sdk.schemas import ContextBody

__all__ = [
    "CONTEXT_TEMPLATE",
    "PROFILE_URI",
    "PROMPTS",
    "RESOURCES",
    "RESOURCE_TEMPLATES",
    "ResourceNotFound",
    "get_prompt",
    "read_resource",
]

PROFILE_URI = "dualtrack://profile"
CONTEXT_PREFIX = "dualtrack://context/"
CONTEXT_TEMPLATE = CONTEXT_PREFIX + "{query}"

M = TypeVar("M", bound=BaseModel)


class ResourceNotFound(NotFound):
    """No resource or prompt of that name (the URI or name is not repeated: it may hold text)."""

    code = "resource_not_found"


RESOURCES = (
    types.Resource(
        name="profile",
        uri=PROFILE_URI,
        title="The user's profile",
        description="Profile of the user this connection acts for: language, timezone, "
        "notification preferences, attributes (masked) and summary.",
        mime_type="application/json",
    ),
)
RESOURCE_TEMPLATES = (
    types.ResourceTemplate(
        name="context",
        uri_template=CONTEXT_TEMPLATE,
        title="Long-term memory for a query",
        description="The user's long-term memory block for a URL-encoded query: profile, "
        "facts, business items with their verified state, relevant records, questions to "
        "confirm. Place it right after the system prompt.",
        mime_type="text/plain",
    ),
)


class AnswerArgs(BaseModel):
    """``answer_with_memory``: the user's question."""

    model_config = ConfigDict(extra="forbid")
    question: str = Field(min_length=1, max_length=4096)


class EndArgs(BaseModel):
    """``end_of_session``: the session that ends."""

    model_config = ConfigDict(extra="forbid")
    session_id: str = Field(min_length=1, max_length=128)


PROMPTS = (
    types.Prompt(
        name="answer_with_memory",
        title="Answer with long-term memory",
        description="The user's long-term memory for a question, then the question.",
        arguments=[
            types.PromptArgument(name="question", description="The user's question.", required=True)
        ],
    ),
    types.Prompt(
        name="end_of_session",
        title="Close a session into memory",
        description="Asks the assistant to end the session with end_session (its transcript "
        "becomes an interaction record and updates the profile) and remember what the user "
        "asked to keep.",
        arguments=[
            types.PromptArgument(
                name="session_id", description="The session that ends.", required=True
            )
        ],
    ),
)


def read_resource(mem: MemoryClient, user_id: str, uri: str) -> types.ReadResourceResult:
    """The resource at ``uri`` for ``user_id``; :class:`ResourceNotFound` for another URI."""
    if uri == PROFILE_URI:
        text = mem.profiles.get(user_id).model_dump_json()
        mime = "application/json"
    elif uri.startswith(CONTEXT_PREFIX):
        body = _valid(ContextBody, {"query": unquote(uri[len(CONTEXT_PREFIX) :])})
        text = mem.build_context(user_id, body.query, max_tokens=body.max_tokens).text
        mime = "text/plain"
    else:
        raise ResourceNotFound("no such resource")
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=text)]
    )


def get_prompt(
    mem: MemoryClient, user_id: str, name: str, arguments: Mapping[str, str] | None
) -> types.GetPromptResult:
    """The prompt ``name`` for ``user_id``; :class:`ResourceNotFound` for another name."""
    if name == "answer_with_memory":
        question = _valid(AnswerArgs, arguments).question
        block = mem.build_context(user_id, question).text
        return types.GetPromptResult(
            description="Long-term memory, then the question",
            messages=[_user(block), _user(question)],
        )
    if name == "end_of_session":
        session_id = _valid(EndArgs, arguments).session_id
        return types.GetPromptResult(
            description="Close the session into memory",
            messages=[
                _user(
                    f"This conversation is over. Call the end_session tool with session_id "
                    f"{session_id!r} and the whole transcript, every turn in order with its "
                    "role (user or assistant). Before that, call remember with "
                    "lifecycle_policy explicit for anything I asked you to remember."
                )
            ],
        )
    raise ResourceNotFound("no such prompt")


def _user(text: str) -> types.PromptMessage:
    return types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))


def _valid(model: type[M], arguments: Mapping[str, object] | None) -> M:
    """``arguments`` as ``model``; :class:`InvalidInput` naming the field, never its value."""
    try:
        return model.model_validate(dict(arguments or {}))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"][:2]) or "arguments"
        raise InvalidInput(f"{where}: {first['type']}") from None
