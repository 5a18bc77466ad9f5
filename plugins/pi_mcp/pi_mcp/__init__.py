"""pi-mcp: MCP servers' tools, prompts and resources in pi-host, on the official MCP SDK.

Install it and describe servers in Claude Code's ``.mcp.json`` format — in
``<agent dir>/mcp.json``, in the ``mcp.servers`` settings section, or (trusted projects
only) in ``<project>/.mcp.json`` and ``<project>/.pi/mcp.json``::

    {"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]},
        "docs":  {"type": "http", "url": "https://example.test/mcp",
                  "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}
    }}

Each tool becomes ``mcp__<server>__<tool>``; ``/mcp`` shows the servers. See
``docs/user-guide/mcp.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._cli import main as cli_main
from ._config import PROJECT_FILES, USER_FILE, ConfigProblem, LoadedConfig, ServerConfig, expand, load_config
from ._plugin import (
    manager_of,
    pi_before_agent_start,
    pi_register_commands,
    pi_register_settings,
    pi_session_shutdown,
    pi_session_start,
    prompt_arguments,
)
from ._settings import DEFAULT_TOOL_TIMEOUT_MS, McpSettings, tool_timeout_seconds

if TYPE_CHECKING:
    from ._tools import McpArguments, convert_result, is_offered, tool_name

__all__ = [
    "DEFAULT_TOOL_TIMEOUT_MS",
    "PROJECT_FILES",
    "USER_FILE",
    "ConfigProblem",
    "LoadedConfig",
    "McpArguments",
    "McpSettings",
    "ServerConfig",
    "cli_main",
    "convert_result",
    "expand",
    "is_offered",
    "load_config",
    "manager_of",
    "pi_before_agent_start",
    "pi_register_commands",
    "pi_register_settings",
    "pi_session_shutdown",
    "pi_session_start",
    "prompt_arguments",
    "tool_name",
    "tool_timeout_seconds",
]

# The tool adapters import pi-host's agent layer: loaded on first use, so importing the
# entry point (which `pi-host --help` and every start do) stays as light as promised.
_FROM_TOOLS = frozenset({"McpArguments", "convert_result", "is_offered", "tool_name"})


def __getattr__(name: str) -> Any:
    if name in _FROM_TOOLS:
        from . import _tools

        return getattr(_tools, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
