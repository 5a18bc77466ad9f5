"""The Anthropic Messages API as a fake server: SSE event sequences built from a reply description."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ._server import TIMING_KEYS, FakeServer, Reply, reply_from_dict

__all__ = [
    "AnthropicServer",
    "anthropic_error",
    "anthropic_events",
    "anthropic_reply",
    "sse_event",
]


def sse_event(name: str, payload: Any) -> bytes:
    """One SSE event as Anthropic writes it: ``event:`` line, ``data:`` line, blank line."""
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return f"event: {name}\ndata: {data}\n\n".encode()


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def anthropic_events(
    content: Sequence[dict[str, Any]],
    *,
    stop_reason: str | None = "end_turn",
    usage: dict[str, int] | None = None,
    message_id: str = "msg_fake01",
    model: str = "claude-fake",
    chunk_size: int = 8,
    ping: bool = True,
    stop: bool = True,
) -> list[bytes]:
    """The SSE events of one streamed reply.

    ``content`` blocks: ``{"type": "text", "text": ...}``, ``{"type": "thinking", "thinking": ...,
    "signature": ...}``, ``{"type": "redacted_thinking", "data": ...}``, ``{"type": "tool_use",
    "id": ..., "name": ..., "input": {...}}`` (or ``"input_json": "<raw text>"`` to stream
    arbitrary, possibly invalid, JSON). Text, thinking and tool input stream in
    ``chunk_size``-character deltas, one SSE event each.

    ``usage``: ``input_tokens``, ``output_tokens``, ``cache_read_input_tokens``,
    ``cache_creation_input_tokens``. ``stop=False`` leaves out ``message_delta`` and
    ``message_stop`` (a stream cut short).
    """
    usage = {"input_tokens": 10, "output_tokens": 5, **(usage or {})}
    start_usage = {
        "input_tokens": usage["input_tokens"],
        "cache_creation_input_tokens": usage.get("cache_creation_input_tokens", 0),
        "cache_read_input_tokens": usage.get("cache_read_input_tokens", 0),
        "output_tokens": 1,
    }
    events = [
        sse_event(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": start_usage,
                },
            },
        )
    ]
    if ping:
        events.append(sse_event("ping", {"type": "ping"}))
    for index, block in enumerate(content):
        kind = block["type"]
        if kind == "text":
            events.append(_block_start(index, {"type": "text", "text": ""}))
            events += [
                _delta(index, {"type": "text_delta", "text": part})
                for part in _chunks(block["text"], chunk_size)
            ]
        elif kind == "thinking":
            events.append(_block_start(index, {"type": "thinking", "thinking": "", "signature": ""}))
            events += [
                _delta(index, {"type": "thinking_delta", "thinking": part})
                for part in _chunks(block["thinking"], chunk_size)
            ]
            if block.get("signature"):
                events.append(_delta(index, {"type": "signature_delta", "signature": block["signature"]}))
        elif kind == "redacted_thinking":
            events.append(_block_start(index, {"type": "redacted_thinking", "data": block["data"]}))
        elif kind == "tool_use":
            events.append(
                _block_start(
                    index, {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
                )
            )
            raw = block["input_json"] if "input_json" in block else json.dumps(block.get("input", {}))
            events += [
                _delta(index, {"type": "input_json_delta", "partial_json": part})
                for part in _chunks(raw, chunk_size)
            ]
        else:
            raise ValueError(f"unknown content block type {kind!r}")
        events.append(sse_event("content_block_stop", {"type": "content_block_stop", "index": index}))
    if stop:
        events.append(
            sse_event(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": usage["output_tokens"]},
                },
            )
        )
        events.append(sse_event("message_stop", {"type": "message_stop"}))
    return events


def _block_start(index: int, block: dict[str, Any]) -> bytes:
    return sse_event(
        "content_block_start", {"type": "content_block_start", "index": index, "content_block": block}
    )


def _delta(index: int, delta: dict[str, Any]) -> bytes:
    return sse_event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})


def anthropic_reply(
    content: Sequence[dict[str, Any]] | str,
    *,
    stop_reason: str | None = "end_turn",
    usage: dict[str, int] | None = None,
    chunk_size: int = 8,
    stop: bool = True,
    **timing: Any,
) -> Reply:
    """A streamed reply; ``content`` may be a string (one text block). ``timing``: see :class:`Reply`."""
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    pieces = anthropic_events(blocks, stop_reason=stop_reason, usage=usage, chunk_size=chunk_size, stop=stop)
    return Reply(pieces=pieces, **timing)


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def anthropic_error(status: int, message: str, *, headers: dict[str, str] | None = None) -> Reply:
    """An error response with Anthropic's real body shape."""
    body = {"type": "error", "error": {"type": _ERROR_TYPES.get(status, "api_error"), "message": message}}
    return Reply.json(status, body, headers)


class AnthropicServer(FakeServer):
    """A fake ``POST /v1/messages``. Script steps: :class:`Reply`, or dicts (see :meth:`render`).

    ``base_url`` is what a model's ``baseUrl`` should be.
    """

    @property
    def base_url(self) -> str:
        return self.url

    def render(self, step: dict[str, Any]) -> Reply:
        """``{"reply": {"content": [...] | "text", "stop_reason", "usage", "chunk_size"}, <timing>}``,
        ``{"error": {"status", "message"}}``, or the generic ``body`` / ``sse`` steps."""
        timing = {key: step[key] for key in TIMING_KEYS if key in step}
        if "reply" in step:
            reply = step["reply"]
            return anthropic_reply(
                reply.get("content", ""),
                stop_reason=reply.get("stop_reason", "end_turn"),
                usage=reply.get("usage"),
                chunk_size=reply.get("chunk_size", 8),
                stop=reply.get("stop", True),
                **timing,
            )
        if "error" in step:
            error = step["error"]
            return anthropic_error(error["status"], error["message"], headers=step.get("headers"))
        return reply_from_dict(step)
