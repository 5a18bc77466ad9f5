"""Layer 4, the agent: tool definitions, the turn loop and the stateful Agent.

The loop knows no session, no mode and no plugin by name: the runtime above wires plugins in
through the loop's callbacks.
"""

from __future__ import annotations

from ._tools import Tool, ToolArgumentsError, ToolCallContext, ToolExecutionMode

__all__ = ["Tool", "ToolArgumentsError", "ToolCallContext", "ToolExecutionMode"]
