"""Layer 2, providers: the stream-function contract, models, the registry and error classes.

Provider implementations (the ``anthropic`` SDK, httpx for OpenAI-compatible servers) are
imported lazily, on first use, never by ``import pi_host``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._abort import AbortedError, AbortSignal
from ._auth import AuthStatus, AuthStorage
from ._catalog import builtin_models
from ._config_value import ConfigValueError
from ._cost import calculate_cost
from ._env_keys import env_api_key
from ._errors import is_context_overflow, is_transient_error, retry_after_ms
from ._paths import agent_dir
from ._registry import ModelRegistry, RequestAuth
from ._resolve import ModelResolution, ScopedModel, format_model_list
from ._thinking import clamp_thinking_level, supported_thinking_levels
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

if TYPE_CHECKING:
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

__all__ = [
    "FAUX_ABORTED_MESSAGE",
    "FAUX_NO_MORE_RESPONSES",
    "THINKING_LEVELS",
    "AbortSignal",
    "AbortedError",
    "AuthStatus",
    "AuthStorage",
    "ConfigValueError",
    "FauxProvider",
    "FauxReply",
    "FauxRequest",
    "FauxScriptError",
    "FauxState",
    "LlmContext",
    "Model",
    "ModelCost",
    "ModelRegistry",
    "ModelResolution",
    "Provider",
    "RequestAuth",
    "ScopedModel",
    "StreamFn",
    "StreamOptions",
    "ThinkingLevel",
    "ToolSpec",
    "agent_dir",
    "builtin_models",
    "calculate_cost",
    "clamp_thinking_level",
    "env_api_key",
    "faux_assistant_message",
    "faux_text",
    "faux_thinking",
    "faux_tool_call",
    "format_model_list",
    "is_context_overflow",
    "is_transient_error",
    "load_faux_script",
    "retry_after_ms",
    "supported_thinking_levels",
]

# The scripted faux provider is imported on first access (PEP 562): a run with another
# provider never needs it (the faux builtin registers its model from _faux_models).
_LAZY = frozenset(
    {
        "FAUX_ABORTED_MESSAGE",
        "FAUX_NO_MORE_RESPONSES",
        "FauxProvider",
        "FauxReply",
        "FauxRequest",
        "FauxScriptError",
        "FauxState",
        "faux_assistant_message",
        "faux_text",
        "faux_thinking",
        "faux_tool_call",
        "load_faux_script",
    }
)


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}._faux"), name)
    globals()[name] = value
    return value
