"""Classify failed replies as pi does: context overflow, retryable, or final; and word the errors.

:func:`is_context_overflow` and :func:`is_retryable_error` implement pi's rules (pi-ai's
``isContextOverflow`` and the auto-retry test) over an :class:`AssistantMessage`, so the
compaction and retry plugins decide exactly as pi would. The patterns are interface facts: the
texts providers send and the texts pi's transports produce.

The provider transports word HTTP failures the way pi's SDK-based transports do
(``"429 {...body...}"`` for Anthropic, ``"429 <error.message>"`` for OpenAI-compatible servers),
so classification, session files and user-visible errors match pi's.

A ``Retry-After`` given by the server is kept on the failed message as the extra JSON field
``retryAfterMs`` (milliseconds); read it with :func:`retry_after_ms`.
"""

from __future__ import annotations

import email.utils
import functools
import json
import re
import time
from collections.abc import Mapping
from typing import Any, Literal

from pi_host.messages import AssistantMessage

__all__ = [
    "OVERFLOW_PATTERNS",
    "RETRY_AFTER_FIELD",
    "http_error_message",
    "is_context_overflow",
    "is_retryable_error",
    "parse_retry_after",
    "redact",
    "retry_after_ms",
]

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
_NEVER_RETRY_SOURCE = (
    r"GoUsageLimitError|FreeUsageLimitError|Monthly usage limit reached|available balance|"
    r"insufficient_quota|out of budget|quota exceeded|billing"
)

_RETRYABLE_SOURCE = (
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


#: The extra JSON field of a failed :class:`AssistantMessage` that holds the server's retry delay.
RETRY_AFTER_FIELD = "retryAfterMs"


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


def is_retryable_error(message: AssistantMessage, context_window: int | None = None) -> bool:
    """Whether a failed reply is worth retrying: overloads, rate limits, 5xx, network, timeouts.

    Only ``error`` replies with an ``error_message`` qualify. Context overflow is never retried
    (compaction handles it), and neither are usage limits or billing problems.
    """
    error = message.error_message
    if message.stop_reason != "error" or not error:
        return False
    if is_context_overflow(message, context_window):
        return False
    if _pattern(_NEVER_RETRY_SOURCE).search(error):
        return False
    return _pattern(_RETRYABLE_SOURCE).search(error) is not None


def retry_after_ms(message: AssistantMessage) -> int | None:
    """The retry delay the server asked for with a failed ``message``, in milliseconds."""
    extra = message.model_extra or {}
    value = extra.get(RETRY_AFTER_FIELD)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> int | None:
    """Milliseconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)."""
    lowered = {key.lower(): value for key, value in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        try:
            value = float(raw_ms)
        except ValueError:
            value = -1.0
        if value >= 0:
            return round(value)
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        seconds = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError):
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    return max(0, round(seconds * 1000))


def http_error_message(status: int, body: str, style: Literal["anthropic", "openai"]) -> str:
    """Word an HTTP error response the way pi's transports report it.

    ``anthropic``: the status and the whole JSON body, compact (``400 {"type":"error",...}``).
    ``openai``: the status and ``error.message`` of the body, or the JSON of ``error``.
    A body that is not JSON is quoted as text; an empty one gives ``"<status> status code (no body)"``.
    """
    text = body.strip()
    parsed: Any = None
    if text:
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
    if parsed is None:
        detail: str | None = text or None
    elif style == "anthropic":
        detail = _describe(parsed)
    else:
        error = parsed.get("error") if isinstance(parsed, dict) else None
        detail = _describe(error) if error is not None else None
    return f"{status} {detail}" if detail else f"{status} status code (no body)"


def _describe(error: Any) -> str:
    message = error.get("message") if isinstance(error, dict) else None
    if isinstance(message, str) and message:
        return message
    if message:
        return _compact(message)
    return _compact(error)


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def redact(text: str, *secrets: str | None) -> str:
    """Replace every occurrence of each secret (of four characters or more) with ``***``."""
    for secret in secrets:
        if secret and len(secret) >= 4 and secret in text:
            text = text.replace(secret, "***")
    return text
