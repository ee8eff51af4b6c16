"""OpenAI Agents SDK function tools over the one client (``dualtrack-memory[openai-agents]``).

``function_tools(client, user_id=..., lifecycle_policy=...)`` gives ``remember``,
``search_memories`` and ``build_context`` as ``FunctionTool`` objects for an
``Agent(tools=...)``, bound to the user and policy the caller names
(:mod:`adapters.tool_specs`); a synchronous client runs in a worker thread.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from agents import FunctionTool, RunContextWrapper, Tool

from adapters.tool_specs import TOOL_SPECS, MemoryTools, ToolSpec
from policies.lifecycle import LifecyclePolicy

if TYPE_CHECKING:
    from sdk.api import MemoryAPI

__all__ = ["function_tools"]


def function_tools(
    client: MemoryAPI,
    *,
    user_id: str,
    lifecycle_policy: LifecyclePolicy,
    max_tokens: int = 600,
    session_id: str | None = None,
) -> list[Tool]:
    """The memory tools for ``user_id``; ``remember`` writes under ``lifecycle_policy``."""
    tools = MemoryTools(
        client,
        user_id=user_id,
        lifecycle_policy=lifecycle_policy,
        max_tokens=max_tokens,
        session_id=session_id,
    )
    return [_tool(tools, spec) for spec in TOOL_SPECS]


def _tool(tools: MemoryTools, spec: ToolSpec[Any]) -> FunctionTool:
    async def invoke(_: RunContextWrapper[Any], arguments: str) -> str:
        return await asyncio.to_thread(tools.invoke, spec, arguments)

    return FunctionTool(
        name=spec.name,
        description=spec.description,
        params_json_schema=spec.json_schema(),
        on_invoke_tool=invoke,
        strict_json_schema=False,
    )
