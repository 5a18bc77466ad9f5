"""Word provider errors as pi's transports do, read servers' retry-after headers, redact secrets.

The provider transports word HTTP failures the way pi's SDK-based transports do
(``"429 {...body...}"`` for Anthropic, ``"429 <error.message>"`` for OpenAI-compatible servers),
so classification (:mod:`pi_host.messages._failures`), session files and user-visible errors
match pi's.

A ``Retry-After`` given by the server is kept on the failed message as the extra JSON field
``retryAfterMs`` (milliseconds); plugins read it as :attr:`AssistantMessage.retry_after`.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Mapping
from typing import Any, Literal

from pi_host.messages import AssistantMessage
from pi_host.messages._failures import is_context_overflow, is_transient_error

__all__ = [
    "RETRY_AFTER_FIELD",
    "http_error_message",
    "is_context_overflow",
    "is_transient_error",
    "parse_retry_after",
    "redact",
    "retry_after_ms",
]

#: The extra JSON field of a failed :class:`AssistantMessage` that holds the server's retry delay.
RETRY_AFTER_FIELD = "retryAfterMs"


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
