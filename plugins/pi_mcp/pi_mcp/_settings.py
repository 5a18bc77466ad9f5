"""The plugin's ``mcp`` section of ``settings.json``."""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

__all__ = ["DEFAULT_TOOL_TIMEOUT_MS", "McpSettings", "tool_timeout_seconds"]

DEFAULT_TOOL_TIMEOUT_MS = 30_000


class McpSettings(BaseModel):
    """``"mcp": {...}`` in ``settings.json``.

    :ivar servers: more servers, in ``.mcp.json``'s ``mcpServers`` format.
    :ivar startup: ``"lazy"`` starts the servers when the first prompt needs their tools;
        ``"eager"`` starts them in the background as the session starts.
    :ivar tool_timeout_ms: how long one tool call may take (``MCP_TOOL_TIMEOUT`` wins).
    :ivar startup_timeout_ms: how long a server may take to start and list its tools.
    :ivar restart_backoff_ms: after a server failed to start, how long until a use (a prompt,
        a call of one of its tools, a tool search) starts it again; doubled after each further
        failed start, up to 5 minutes. ``0`` tries on every use.
    :ivar tool_search_threshold: above this many MCP tools, the model gets one search tool
        instead of every schema, and a tool's schema is loaded when the search finds it.
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    servers: dict[str, Any] = Field(default_factory=dict)
    startup: Literal["lazy", "eager"] = "lazy"
    tool_timeout_ms: int = Field(default=DEFAULT_TOOL_TIMEOUT_MS, gt=0)
    startup_timeout_ms: int = Field(default=30_000, gt=0)
    restart_backoff_ms: int = Field(default=10_000, ge=0)
    tool_search_threshold: int = Field(default=40, ge=0)


def tool_timeout_seconds(settings: McpSettings, environ: dict[str, str] | None = None) -> tuple[float, str]:
    """The per-call timeout and where it came from (``MCP_TOOL_TIMEOUT`` ms, else the setting).

    A malformed ``MCP_TOOL_TIMEOUT`` is ignored for the setting, and the source says so.
    """
    env = os.environ if environ is None else environ
    raw = env.get("MCP_TOOL_TIMEOUT")
    if raw:
        try:
            value = int(raw)
        except ValueError:
            value = 0
        if value > 0:
            return value / 1000, "MCP_TOOL_TIMEOUT"
        return (
            settings.tool_timeout_ms / 1000,
            f"mcp.toolTimeoutMs (MCP_TOOL_TIMEOUT={raw!r} is not a positive integer)",
        )
    return settings.tool_timeout_ms / 1000, "mcp.toolTimeoutMs"
