"""The memory tools, declared once for every framework (STYLE item 12).

:data:`TOOL_SPECS` names each tool, its description (fixed text: no user id, no
memory content, no personal data), its arguments (a pydantic model with
``extra="forbid"``: no argument names a user or a policy) and its call. A
:class:`MemoryTools` binds them to one client, one user and one lifecycle policy,
all given by the caller; :mod:`adapters.langchain_tools` and
:mod:`adapters.openai_agents_tools` only wrap :meth:`MemoryTools.invoke`.

A model's bad arguments come back to it as ``{"error": {"code", "message"}}`` (the
message names the field, never its value); every other error (an unknown user, an
unreachable store) is raised to the caller, never turned into an empty result.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from policies.errors import InvalidInput
from policies.lifecycle import LifecyclePolicy, require_policy

if TYPE_CHECKING:
    from sdk.api import MemoryAPI

__all__ = ["TOOL_SPECS", "ContextArgs", "MemoryTools", "RememberArgs", "SearchArgs", "ToolSpec"]

A = TypeVar("A", bound=BaseModel)


class RememberArgs(BaseModel):
    """``remember``: one thing to keep about the user."""

    model_config = ConfigDict(extra="forbid")
    text: str = Field(
        min_length=1, max_length=4096, description="What to remember, in the user's own words."
    )


class SearchArgs(BaseModel):
    """``search_memories``: a query and how many hits."""

    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1, max_length=4096, description="What to look for.")
    limit: int = Field(default=5, ge=1, le=20, description="How many memories, best first.")


class ContextArgs(BaseModel):
    """``build_context``: the question the context is for."""

    model_config = ConfigDict(extra="forbid")
    query: str = Field(
        min_length=1, max_length=4096, description="The user's current question or topic."
    )


@dataclass(frozen=True)
class ToolSpec(Generic[A]):
    """A tool: name, fixed description, argument model and call."""

    name: str
    description: str
    arguments: type[A]
    call: Callable[[MemoryTools, A], dict[str, Any]]

    def json_schema(self) -> dict[str, Any]:
        """The arguments' JSON schema (``additionalProperties`` false)."""
        return self.arguments.model_json_schema()


class MemoryTools:
    """The tools bound to ``client``, ``user_id`` and ``lifecycle_policy`` (all required,
    from the caller: the model can neither name another user nor pick a policy)."""

    def __init__(
        self,
        client: MemoryAPI,
        *,
        user_id: str,
        lifecycle_policy: LifecyclePolicy,
        max_tokens: int = 600,
        session_id: str | None = None,
    ) -> None:
        self.client = client
        self.user_id = user_id
        self.lifecycle_policy = require_policy(lifecycle_policy)
        self.max_tokens = max_tokens
        self.session_id = session_id

    def invoke(self, spec: ToolSpec[Any], arguments: Mapping[str, Any] | str) -> str:
        """Run ``spec`` on the model's ``arguments`` (a mapping or JSON text); the JSON answer."""
        try:
            raw = json.loads(arguments) if isinstance(arguments, str) else dict(arguments)
            try:
                args = spec.arguments.model_validate(raw)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"][:2]) or "arguments"
                raise InvalidInput(f"{where}: {first['type']}") from None
            out = spec.call(self, args)
        except json.JSONDecodeError:
            out = _error(InvalidInput("arguments: not JSON"))
        except InvalidInput as exc:
            out = _error(exc)
        return json.dumps(out, ensure_ascii=False, default=str)


def _error(exc: InvalidInput) -> dict[str, Any]:
    return {"error": {"code": exc.code, "message": exc.message}}


def _remember(tools: MemoryTools, a: RememberArgs) -> dict[str, Any]:
    memory_id = tools.client.write(
        tools.user_id, a.text, lifecycle_policy=tools.lifecycle_policy, session_id=tools.session_id
    )
    return {"memory_id": str(memory_id)}


def _search(tools: MemoryTools, a: SearchArgs) -> dict[str, Any]:
    hits = tools.client.search(tools.user_id, a.query, limit=a.limit)
    return {
        "hits": [
            {
                "memory_id": str(h.memory_id),
                "text": h.text,
                "score": round(h.score, 4),
                "occurred_at": h.occurred_at.isoformat(),
                "status": h.status,
            }
            for h in hits
        ],
        "degraded": hits.degraded,
    }


def _context(tools: MemoryTools, a: ContextArgs) -> dict[str, Any]:
    ctx = tools.client.build_context(tools.user_id, a.query, max_tokens=tools.max_tokens)
    return {"text": ctx.text, "tokens": ctx.tokens, "omitted": ctx.omitted}


TOOL_SPECS: tuple[ToolSpec[Any], ...] = (
    ToolSpec(
        "remember",
        "Store one thing about the user you are serving, to recall in later conversations. "
        "Personal data in the text is masked in what is stored. Returns the memory id.",
        RememberArgs,
        _remember,
    ),
    ToolSpec(
        "search_memories",
        "Hybrid (keyword + vector) search of the user's long-term memories, best first. "
        "Texts are masked; treat them as leads and confirm live order or refund state.",
        SearchArgs,
        _search,
    ),
    ToolSpec(
        "build_context",
        "The user's long-term memory block for the current question: profile, facts, "
        "business items, relevant records and questions to confirm, cut to a token budget.",
        ContextArgs,
        _context,
    ),
)
