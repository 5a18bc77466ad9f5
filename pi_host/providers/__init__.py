"""Layer 2, providers: the stream-function contract, models, the registry and error classes.

Provider implementations (the ``anthropic`` SDK, httpx for OpenAI-compatible servers) are
imported lazily, on first use, never by ``import pi_host``.
"""

from __future__ import annotations

from ._abort import AbortedError, AbortSignal
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
    "THINKING_LEVELS",
    "AbortSignal",
    "AbortedError",
    "LlmContext",
    "Model",
    "ModelCost",
    "Provider",
    "StreamFn",
    "StreamOptions",
    "ThinkingLevel",
    "ToolSpec",
]
