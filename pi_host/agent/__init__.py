"""Layer 4, the agent: tool definitions, the turn loop and the stateful Agent.

The loop knows no session, no mode and no plugin by name: the runtime above wires plugins in
through the loop's callbacks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_host import _lazy

from ._agent import (
    UNKNOWN_MODEL,
    Agent,
    AgentBusyError,
    AgentError,
    AgentState,
    Listener,
    PromptInput,
)
from ._limits import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES
from ._loop import (
    ABORTED_MESSAGE,
    AgentContext,
    AgentLoopConfig,
    ConvertToLlm,
    Emit,
    GetApiKey,
    MessageSource,
    PrepareNextTurn,
    ShouldStopAfterTurn,
    TransformContext,
    TurnContext,
    TurnUpdate,
    default_convert_to_llm,
    run_agent_loop,
    run_agent_loop_continue,
)
from ._queue import MessageQueue, QueueMode
from ._tools import Tool, ToolArgumentsError, ToolCallContext, ToolError, ToolExecutionMode

if TYPE_CHECKING:
    from ._middleware import ToolInvocation, ToolMiddleware, ToolMiddlewareError, ToolNext
    from ._tool_hooks import (
        AfterToolCall,
        AfterToolCallContext,
        AfterToolCallResult,
        BeforeToolCall,
        BeforeToolCallContext,
        BeforeToolCallResult,
    )
    from ._truncate import (
        TruncatedBy,
        TruncationResult,
        format_size,
        truncate_head,
        truncate_line,
        truncate_tail,
    )

__all__ = [
    "ABORTED_MESSAGE",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "UNKNOWN_MODEL",
    "AfterToolCall",
    "AfterToolCallContext",
    "AfterToolCallResult",
    "Agent",
    "AgentBusyError",
    "AgentContext",
    "AgentError",
    "AgentLoopConfig",
    "AgentState",
    "BeforeToolCall",
    "BeforeToolCallContext",
    "BeforeToolCallResult",
    "ConvertToLlm",
    "Emit",
    "GetApiKey",
    "Listener",
    "MessageQueue",
    "MessageSource",
    "PrepareNextTurn",
    "PromptInput",
    "QueueMode",
    "ShouldStopAfterTurn",
    "Tool",
    "ToolArgumentsError",
    "ToolCallContext",
    "ToolError",
    "ToolExecutionMode",
    "ToolInvocation",
    "ToolMiddleware",
    "ToolMiddlewareError",
    "ToolNext",
    "TransformContext",
    "TruncatedBy",
    "TruncationResult",
    "TurnContext",
    "TurnUpdate",
    "default_convert_to_llm",
    "format_size",
    "run_agent_loop",
    "run_agent_loop_continue",
    "truncate_head",
    "truncate_line",
    "truncate_tail",
]

#: Names imported on first access: a run that calls no tool never creates the tool-call
#: callback classes, and one whose tools cut no output never loads the truncation code (its
#: limits are in :mod:`._limits`).
_LAZY: dict[str, str] = {
    "AfterToolCall": "_tool_hooks",
    "AfterToolCallContext": "_tool_hooks",
    "AfterToolCallResult": "_tool_hooks",
    "BeforeToolCall": "_tool_hooks",
    "BeforeToolCallContext": "_tool_hooks",
    "BeforeToolCallResult": "_tool_hooks",
    "ToolInvocation": "_middleware",
    "ToolMiddleware": "_middleware",
    "ToolMiddlewareError": "_middleware",
    "ToolNext": "_middleware",
    "TruncatedBy": "_truncate",
    "TruncationResult": "_truncate",
    "format_size": "_truncate",
    "truncate_head": "_truncate",
    "truncate_line": "_truncate",
    "truncate_tail": "_truncate",
}


__getattr__, __dir__ = _lazy.lazy_exports(__name__, _LAZY, __all__)
