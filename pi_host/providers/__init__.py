"""Layer 2, providers: the stream-function contract, models, the registry and error classes.

Provider implementations (the ``anthropic`` SDK, httpx for OpenAI-compatible servers) are
imported lazily, on first use, never by ``import pi_host``.
"""

from __future__ import annotations

from ._abort import AbortedError, AbortSignal
from ._errors import is_context_overflow, is_retryable_error, retry_after_ms
from ._faux import (
    FAUX_ABORTED_MESSAGE,
    FAUX_NO_MORE_RESPONSES,
    FauxProvider,
    FauxReply,
    FauxRequest,
    FauxScriptError,
    FauxState,
    faux_assistant_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
    load_faux_script,
)
from ._types import (
    THINKING_LEVELS,
    LlmContext,
    Model,
    ModelCost,
    Provider,
    StreamFn,
    StreamOptions,
    ThinkingLevel,
    ToolSpec,
)

__all__ = [
    "FAUX_ABORTED_MESSAGE",
    "FAUX_NO_MORE_RESPONSES",
    "THINKING_LEVELS",
    "AbortSignal",
    "AbortedError",
    "FauxProvider",
    "FauxReply",
    "FauxRequest",
    "FauxScriptError",
    "FauxState",
    "LlmContext",
    "Model",
    "ModelCost",
    "Provider",
    "StreamFn",
    "StreamOptions",
    "ThinkingLevel",
    "ToolSpec",
    "faux_assistant_message",
    "faux_text",
    "faux_thinking",
    "faux_tool_call",
    "is_context_overflow",
    "is_retryable_error",
    "load_faux_script",
    "retry_after_ms",
]
