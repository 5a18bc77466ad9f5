"""Layer 4, the agent: tool definitions, the turn loop and the stateful Agent.

The loop knows no session, no mode and no plugin by name: the runtime above wires plugins in
through the loop's callbacks.
"""

from __future__ import annotations

from ._agent import (
    UNKNOWN_MODEL,
    Agent,
    AgentBusyError,
    AgentError,
    AgentState,
    Listener,
    PromptInput,
)
from ._loop import (
    ABORTED_MESSAGE,
    AfterToolCall,
    AfterToolCallContext,
    AfterToolCallResult,
    AgentContext,
    AgentLoopConfig,
    BeforeToolCall,
    BeforeToolCallContext,
    BeforeToolCallResult,
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
from ._tools import Tool, ToolArgumentsError, ToolCallContext, ToolExecutionMode
from ._truncate import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
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
    "ToolExecutionMode",
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
