"""Error classification (pi's overflow and retry rules) and the wording of HTTP failures."""

from __future__ import annotations

import email.utils
from typing import Any

import pytest

from pi_host.messages import AssistantMessage, Usage
from pi_host.messages._failures import OVERFLOW_PATTERNS
from pi_host.providers._errors import (
    http_error_message,
    is_context_overflow,
    is_transient_error,
    parse_retry_after,
    redact,
    retry_after_ms,
)


def failed(text: str, **fields: Any) -> AssistantMessage:
    return AssistantMessage(stop_reason="error", error_message=text, **fields)


# Real texts, one per provider pattern (pi's overflow.ts lists where each comes from).
OVERFLOWS = [
    '400 {"type":"error","error":{"type":"invalid_request_error",'
    '"message":"prompt is too long: 213462 tokens > 200000 maximum"}}',
    '413 {"error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}',
    "ValidationException: Input is too long for requested model.",
    "Your input exceeds the context window of this model. Please adjust your input and try again.",
    "litellm.ContextWindowExceededError: prompt exceeds the model's maximum context length of 8,192 tokens",
    "Requested input exceeds maximum context length (8192)",
    "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575).",
    "This model's maximum prompt length is 131072 but the request contains 537812 tokens.",
    "Please reduce the length of the messages or completion.",
    "This endpoint's maximum context length is 200000 tokens. However, you requested about 250000 tokens",
    "Prompt exceeds maximum allowed input length of 128,000 tokens",
    "Input (140000 tokens) is longer than the model's context length (131072 tokens).",
    "prompt token count of 140000 exceeds the limit of 128000",
    "the request exceeds the available context size, try increasing it",
    "tokens to keep from the initial prompt is greater than the context length",
    "invalid params, context window exceeds limit",
    "Your request exceeded model token limit: 262144 (requested: 300000)",
    "Prompt contains 140000 tokens, too large for model with 131072 maximum context length",
    "model_context_window_exceeded",
    "prompt too long; exceeded max context length by 2048 tokens",
    "prompt too long; exceeded context length by 12 tokens",
    "context_length_exceeded",
    "Context length exceeded for this model",
    "Too many tokens in request",
    "Token limit exceeded",
    "400 status code (no body)",
    "413 (no body)",
]


@pytest.mark.parametrize("text", OVERFLOWS)
def test_overflow_texts(text: str) -> None:
    message = failed(text)
    assert is_context_overflow(message)
    assert not is_transient_error(message), "overflow is compaction's job, never retried"


def test_every_overflow_pattern_has_an_example() -> None:
    for pattern in OVERFLOW_PATTERNS:
        assert any(pattern.search(text) for text in OVERFLOWS), pattern.pattern


@pytest.mark.parametrize(
    "text",
    [
        "Throttling error: Too many tokens, please wait before trying again.",
        "Service unavailable: too many tokens in flight",
        "ThrottlingException: rate limit: too many tokens",
        "429 Too many requests: too many tokens per minute",
    ],
)
def test_throttling_is_not_overflow(text: str) -> None:
    assert not is_context_overflow(failed(text))


def test_overflow_needs_an_error() -> None:
    assert not is_context_overflow(AssistantMessage(stop_reason="stop", error_message="prompt is too long"))
    assert not is_context_overflow(AssistantMessage(stop_reason="error"))


def test_silent_overflow() -> None:
    over = AssistantMessage(stop_reason="stop", usage=Usage(input=100_000, cache_read=30_000))
    assert is_context_overflow(over, 128_000)
    assert not is_context_overflow(over, 200_000)
    assert not is_context_overflow(over)  # without a window it cannot be told


def test_length_stop_with_a_full_window() -> None:
    filled = AssistantMessage(stop_reason="length", usage=Usage(input=127_000, output=0, cache_read=0))
    assert is_context_overflow(filled, 128_000)
    assert not is_context_overflow(
        filled.model_copy(update={"usage": Usage(input=127_000, output=5)}), 128_000
    )
    assert not is_context_overflow(filled, 200_000)


RETRYABLE = [
    '529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    "Rate limit reached for gpt-4o",
    "rate_limit_error",
    "429 Too Many Requests",
    "500 Internal Server Error",
    "502 Bad Gateway",
    "503 Service Unavailable",
    "504 Gateway Timeout",
    "service_unavailable",
    "server_error",
    "internal error",
    "Provider returned error",
    "network error",
    "Connection error: All connection attempts failed",
    "connect ECONNREFUSED: connection refused",
    "Connection lost while streaming the response: peer closed connection",
    "other side closed",
    "fetch failed",
    "upstream connect error or disconnect/reset before headers",
    "socket hang up",
    "Request timed out",
    "ReadTimeout: timeout",
    "terminated",
    "websocket closed",
    "WebSocket error",
    "OpenAI-compatible stream ended without a finish_reason or [DONE]",
    "Anthropic stream ended before message_stop",
    "http2 request did not get a response",
    "retry delay exceeded",
    "You can retry your request",
    "Please try your request again later",
    "please retry your request",
]


@pytest.mark.parametrize("text", RETRYABLE)
def test_retryable_texts(text: str) -> None:
    assert is_transient_error(failed(text))


@pytest.mark.parametrize(
    "text",
    [
        "429 You exceeded your current quota, please check your plan and billing details.",
        "insufficient_quota",
        "Monthly usage limit reached",
        "Your available balance is too low (rate limit)",
        "GoUsageLimitError: 429",
        "FreeUsageLimitError: overloaded",
        "out of budget",
        "quota exceeded: 503",
        '401 {"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}',
        '400 {"type":"error","error":{"type":"invalid_request_error","message":"messages: field required"}}',
        "Provider stop_reason: refusal",
    ],
)
def test_not_retryable(text: str) -> None:
    assert not is_transient_error(failed(text))


def test_only_errors_are_retried() -> None:
    assert not is_transient_error(AssistantMessage(stop_reason="aborted", error_message="Request timed out"))
    assert not is_transient_error(AssistantMessage(stop_reason="stop"))
    assert not is_transient_error(AssistantMessage(stop_reason="error"))


# -- wording -----------------------------------------------------------------------------------


def test_anthropic_http_errors_quote_the_whole_body() -> None:
    body = '{\n  "type": "error",\n  "error": {"type": "overloaded_error", "message": "Overloaded"}\n}'
    assert (
        http_error_message(529, body, "anthropic")
        == '529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    )
    assert http_error_message(500, '{"message": "proxy says no"}', "anthropic") == "500 proxy says no"
    assert http_error_message(502, "<html>bad gateway</html>", "anthropic") == "502 <html>bad gateway</html>"
    assert http_error_message(413, "", "anthropic") == "413 status code (no body)"
    assert http_error_message(400, '{"e": "ünïcode"}', "anthropic") == '400 {"e":"ünïcode"}'


def test_openai_http_errors_quote_the_error_message() -> None:
    assert (
        http_error_message(429, '{"error": {"message": "Slow down", "code": "rate"}}', "openai")
        == "429 Slow down"
    )
    assert http_error_message(400, '{"error": "prompt too long"}', "openai") == '400 "prompt too long"'
    assert http_error_message(400, '{"error": {"code": 400}}', "openai") == '400 {"code":400}'
    assert http_error_message(404, '{"detail": "Not Found"}', "openai") == "404 status code (no body)"
    assert http_error_message(503, "upstream down", "openai") == "503 upstream down"


def test_retry_after_headers() -> None:
    assert parse_retry_after({"Retry-After": "12"}) == 12_000
    assert parse_retry_after({"retry-after": "1.5"}) == 1500
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 250
    assert parse_retry_after({"retry-after-ms": "junk", "retry-after": "2"}) == 2000
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after({"retry-after": date}, now=now) == 30_000
    assert parse_retry_after({"retry-after": email.utils.formatdate(now - 30, usegmt=True)}, now=now) == 0
    assert parse_retry_after({"retry-after": "whenever"}) is None
    assert parse_retry_after({}) is None


def test_retry_after_on_messages() -> None:
    assert retry_after_ms(AssistantMessage(stop_reason="error", retryAfterMs=4000)) == 4000
    assert retry_after_ms(AssistantMessage.model_validate_json('{"role":"assistant","retryAfterMs":7}')) == 7
    assert retry_after_ms(AssistantMessage(stop_reason="error")) is None
    assert retry_after_ms(AssistantMessage(stop_reason="error", retryAfterMs="soon")) is None


def test_redact() -> None:
    assert redact("key sk-123456 leaked twice: sk-123456", "sk-123456") == "key *** leaked twice: ***"
    assert redact("short keys stay: abc", "abc") == "short keys stay: abc"
    assert redact("nothing", None, "") == "nothing"


def test_failure_fields_a_retry_policy_reads_are_public() -> None:
    """Regression (#14): status, retry-after and the error class of a failed reply are
    public fields and functions of the top-level API, so a third-party retry plugin needs no
    private module and no copy of pi's patterns."""
    import pi_host

    limited = failed(
        '429 {"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}', retryAfterMs=2500
    )
    assert (limited.http_status, limited.retry_after, limited.error_class) == (429, 2.5, "transient")
    overflow = failed("400 prompt is too long: 213462 tokens > 200000 maximum")
    assert (overflow.http_status, overflow.error_class) == (400, "context_overflow")
    invalid = failed('400 {"type":"error","error":{"type":"invalid_request_error","message":"bad"}}')
    assert (invalid.http_status, invalid.retry_after, invalid.error_class) == (400, None, "permanent")
    network = failed("Connection error.")
    assert (network.http_status, network.error_class) == (None, "transient")
    assert AssistantMessage(stop_reason="stop").error_class is None
    assert pi_host.classify_error(overflow) == "context_overflow"
    assert pi_host.is_transient_error(limited) and pi_host.is_context_overflow(overflow)
    silent = AssistantMessage(stop_reason="stop", usage=Usage(input=300_000))
    assert pi_host.classify_error(silent, 200_000) == "context_overflow"
