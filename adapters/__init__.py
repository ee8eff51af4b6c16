"""Framework adapters over the one client, each an optional extra importing its framework
only in its own module:

- :mod:`adapters.langgraph_store` (``dualtrack-memory[langgraph]``): ``DualtrackStore``,
  LangGraph's ``BaseStore`` (LangMem's memory tools run on it);
- :mod:`adapters.langchain_tools` (``[langchain]``): ``memory_tools``, LangChain tools;
- :mod:`adapters.openai_agents_tools` (``[openai-agents]``): ``function_tools``, OpenAI
  Agents SDK function tools.

Every adapter takes the user from its caller (a constructor argument or the namespace
the caller's config builds), never from model output, and holds no policy of its own.
This face imports no framework.
"""

from adapters.errors import NamespaceWithoutUser
from adapters.namespaces import USER, NamespaceLayout, PolicyByPrefix
from adapters.tool_specs import TOOL_SPECS, MemoryTools, ToolSpec

__all__ = [
    "TOOL_SPECS",
    "USER",
    "MemoryTools",
    "NamespaceLayout",
    "NamespaceWithoutUser",
    "PolicyByPrefix",
    "ToolSpec",
]
