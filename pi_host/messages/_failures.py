"""Classify failed replies as pi does: context overflow, transient, or permanent.

:func:`is_context_overflow` and :func:`is_transient_error` implement pi's rules (pi-ai's
``isContextOverflow`` and its auto-retry test) over an :class:`AssistantMessage`, so a
compaction or retry plugin decides exactly as pi would; :func:`classify_error` gives the one
answer a policy needs. The patterns are interface facts: the texts providers send and the
texts pi's transports produce.
"""

from __future__ import annotations

import functools
import re

from ._content import AssistantMessage, ErrorClass

__all__ = ["OVERFLOW_PATTERNS", "classify_error", "is_context_overflow", "is_transient_error"]

_I = re.IGNORECASE

# The patterns are compiled on first use: only a failed reply is matched against them, and
# compiling them all was a tenth of the providers' import.
_OVERFLOW_SOURCES = (
    r"prompt is too long",  # Anthropic token overflow
    r"request_too_large",  # Anthropic request size overflow (HTTP 413)
    r"input is too long for requested model",  # Amazon Bedrock
    r"exceeds the context window",  # OpenAI
    # OpenAI-compatible servers, LiteLLM
    r"exceeds (?:the )?(?:model'?s )?maximum context length(?: of [\d,]+ tokens?|\s*\([\d,]+\))",
    r"input token count.*exceeds the maximum",  # Google
    r"maximum prompt length is \d+",  # xAI
    r"reduce the length of the messages",  # Groq
    r"maximum context length is \d+ tokens",  # OpenRouter, vLLM
    r"exceeds (?:the )?maximum allowed input length of [\d,]+ tokens?",  # Poolside via OpenRouter
    r"input \(\d+ tokens\) is longer than the model'?s context length \(\d+ tokens\)",  # Together
    r"exceeds the limit of \d+",  # GitHub Copilot
    r"exceeds the available context size",  # llama.cpp
    r"greater than the context length",  # LM Studio
    r"context window exceeds limit",  # MiniMax
    r"exceeded model token limit",  # Kimi For Coding
    r"too large for model with \d+ maximum context length",  # Mistral
    r"model_context_window_exceeded",  # z.ai
    r"prompt too long; exceeded (?:max )?context length",  # Ollama
    r"context[_ ]length[_ ]exceeded",  # generic
    r"too many tokens",  # generic
    r"token limit exceeded",  # generic
    r"^4(?:00|13)\s*(?:status code)?\s*\(no body\)",  # Cerebras
)

# Texts that look like overflow ("too many tokens") but are throttling.
_NOT_OVERFLOW_SOURCE = r"^(?:Throttling error|Service unavailable):|rate limit|too many requests"

# Usage limits and billing: retrying cannot help.
_PERMANENT_SOURCE = (
    r"GoUsageLimitError|FreeUsageLimitError|Monthly usage limit reached|available balance|"
    r"insufficient_quota|out of budget|quota exceeded|billing"
)

_TRANSIENT_SOURCE = (
    r"overloaded|rate.?limit|too many requests|429|500|502|503|504|service.?unavailable|server.?error|"
    r"internal.?error|provider.?returned.?error|network.?error|connection.?error|connection.?refused|"
    r"connection.?lost|other side closed|fetch failed|upstream.?connect|reset before headers|"
    r"socket hang up|timed? out|timeout|terminated|websocket.?closed|websocket.?error|ended without|"
    r"stream ended before message_stop|http2 request did not get a response|retry delay|"
    r"you can retry your request|try your request again|please retry your request"
)


@functools.cache
def _overflow_patterns() -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(source, _I) for source in _OVERFLOW_SOURCES)


@functools.cache
def _pattern(source: str) -> re.Pattern[str]:
    return re.compile(source, _I)


#: Provider error texts that mean "the prompt does not fit the context window" (compiled when
#: first read, by the module's ``__getattr__``).
OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...]


def __getattr__(name: str) -> tuple[re.Pattern[str], ...]:
    if name == "OVERFLOW_PATTERNS":
        return _overflow_patterns()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def is_context_overflow(message: AssistantMessage, context_window: int | None = None) -> bool:
    """Whether ``message`` failed (or silently degraded) because the context did not fit.

    Three cases, as pi: an ``error`` whose text matches an overflow pattern and no throttling
    pattern; a ``stop`` whose input (plus cache reads) exceeds ``context_window`` (z.ai accepts
    overflow silently); a ``length`` stop with no output and input filling 99 % of the window
    (Xiaomi MiMo truncates the input). The last two need ``context_window``.
    """
    error = message.error_message
    if (
        message.stop_reason == "error"
        and error
        and not _pattern(_NOT_OVERFLOW_SOURCE).search(error)
        and any(pattern.search(error) for pattern in _overflow_patterns())
    ):
        return True
    if context_window:
        usage = message.usage
        input_tokens = usage.input + usage.cache_read
        if message.stop_reason == "stop" and input_tokens > context_window:
            return True
        if message.stop_reason == "length" and usage.output == 0 and input_tokens >= context_window * 0.99:
            return True
    return False


def is_transient_error(message: AssistantMessage, context_window: int | None = None) -> bool:
    """Whether a failed reply is worth trying again: overloads, rate limits, 5xx, network,
    timeouts (pi's auto-retry test).

    Only ``error`` replies with an ``error_message`` qualify. Context overflow is not
    transient (the same request fails again until the context shrinks), and neither are
    usage limits or billing problems.
    """
    error = message.error_message
    if message.stop_reason != "error" or not error:
        return False
    if is_context_overflow(message, context_window):
        return False
    if _pattern(_PERMANENT_SOURCE).search(error):
        return False
    return _pattern(_TRANSIENT_SOURCE).search(error) is not None


def classify_error(message: AssistantMessage, context_window: int | None = None) -> ErrorClass | None:
    """``"context_overflow"``, ``"transient"`` or ``"permanent"`` for a failed reply, ``None``
    for one that did not fail.

    With ``context_window`` an overflow the provider accepted silently is recognised too
    (from the usage; see :func:`is_context_overflow`), even on a reply that did not fail.
    """
    if is_context_overflow(message, context_window):
        return "context_overflow"
    if message.stop_reason != "error":
        return None
    return "transient" if is_transient_error(message, context_window) else "permanent"
