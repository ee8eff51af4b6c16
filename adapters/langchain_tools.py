"""LangChain tools over the one client (``dualtrack-memory[langchain]``).

``memory_tools(client, user_id=..., lifecycle_policy=...)`` gives ``remember``,
``search_memories`` and ``build_context`` as ``StructuredTool`` objects for any
LangChain or LangGraph agent, bound to the user and policy the caller names
(:mod:`adapters.tool_specs`). ``langchain-mcp-adapters`` requires ``mcp<2`` and
cannot be installed beside dualtrack's MCP server: these tools are the way in.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from langchain_core.tools import BaseTool, StructuredTool

from adapters.tool_specs import TOOL_SPECS, MemoryTools, ToolSpec
from policies.lifecycle import LifecyclePolicy

if TYPE_CHECKING:
    from sdk.api import MemoryAPI

__all__ = ["memory_tools"]


def memory_tools(
    client: MemoryAPI,
    *,
    user_id: str,
    lifecycle_policy: LifecyclePolicy,
    max_tokens: int = 600,
    session_id: str | None = None,
) -> list[BaseTool]:
    """The memory tools for ``user_id``; ``remember`` writes under ``lifecycle_policy``."""
    tools = MemoryTools(
        client,
        user_id=user_id,
        lifecycle_policy=lifecycle_policy,
        max_tokens=max_tokens,
        session_id=session_id,
    )
    return [_tool(tools, spec) for spec in TOOL_SPECS]


def _tool(tools: MemoryTools, spec: ToolSpec[Any]) -> BaseTool:
    def run(**arguments: Any) -> str:
        return tools.invoke(spec, arguments)

    async def arun(**arguments: Any) -> str:
        return await asyncio.to_thread(tools.invoke, spec, arguments)

    return StructuredTool.from_function(
        func=run,
        coroutine=arun,
        name=spec.name,
        description=spec.description,
        args_schema=spec.arguments,
    )
