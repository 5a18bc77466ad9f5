"""OpenAI chat completions as a fake server: ``chat.completion.chunk`` SSE built from a reply description."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ._server import TIMING_KEYS, FakeServer, Reply, reply_from_dict

__all__ = ["OpenAIServer", "openai_chunks", "openai_error", "openai_reply"]


def _data(payload: Any) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return f"data: {data}\n\n".encode()


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def openai_chunks(
    *,
    content: str = "",
    reasoning: str = "",
    reasoning_field: str = "reasoning_content",
    tool_calls: Sequence[dict[str, Any]] = (),
    interleave: bool = False,
    finish_reason: str | None = "stop",
    usage: dict[str, Any] | None = None,
    model: str = "fake-model",
    completion_id: str = "chatcmpl-fake01",
    chunk_size: int = 8,
    done: bool = True,
) -> list[bytes]:
    """The SSE chunks of one streamed chat completion.

    Reasoning streams first (in ``reasoning_field``), then text, then tool calls. A tool call is
    ``{"id", "name", "arguments": {...} | "<raw JSON text>"}``; its arguments stream in
    ``chunk_size`` fragments, and ``interleave=True`` alternates the fragments of all calls.
    ``usage`` (``prompt_tokens``, ``completion_tokens``, ``prompt_tokens_details``) arrives in a
    final chunk with no choices, as with ``stream_options.include_usage``. ``done=False`` leaves
    out ``data: [DONE]``; ``finish_reason=None`` leaves out the finishing chunk.
    """

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _data(
            {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": 1_700_000_000,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
        )

    pieces = [chunk({"role": "assistant", "content": ""})]
    pieces += [chunk({reasoning_field: part}) for part in _chunks(reasoning, chunk_size)]
    pieces += [chunk({"content": part}) for part in _chunks(content, chunk_size)]
    streams: list[list[bytes]] = []
    for number, call in enumerate(tool_calls):
        arguments = call.get("arguments", {})
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
        head = chunk(
            {
                "tool_calls": [
                    {
                        "index": number,
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": call["name"], "arguments": ""},
                    }
                ]
            }
        )
        fragments = [
            chunk({"tool_calls": [{"index": number, "function": {"arguments": part}}]})
            for part in _chunks(raw, chunk_size)
        ]
        streams.append([head, *fragments])
    if interleave:
        longest = max((len(stream) for stream in streams), default=0)
        pieces += [stream[i] for i in range(longest) for stream in streams if i < len(stream)]
    else:
        pieces += [piece for stream in streams for piece in stream]
    if finish_reason is not None:
        pieces.append(chunk({}, finish_reason))
    if usage is not None:
        pieces.append(
            _data(
                {
                    "id": completion_id,
                    "object": "chat.completion.chunk",
                    "created": 1_700_000_000,
                    "model": model,
                    "choices": [],
                    "usage": usage,
                }
            )
        )
    if done:
        pieces.append(b"data: [DONE]\n\n")
    return pieces


def openai_reply(
    content: str = "",
    *,
    reasoning: str = "",
    tool_calls: Sequence[dict[str, Any]] = (),
    finish_reason: str | None = "stop",
    usage: dict[str, Any] | None = None,
    chunk_size: int = 8,
    interleave: bool = False,
    done: bool = True,
    model: str = "fake-model",
    **timing: Any,
) -> Reply:
    """A streamed completion. ``timing``: see :class:`Reply`."""
    pieces = openai_chunks(
        content=content,
        reasoning=reasoning,
        tool_calls=tool_calls,
        finish_reason=finish_reason,
        usage=usage,
        chunk_size=chunk_size,
        interleave=interleave,
        done=done,
        model=model,
    )
    return Reply(pieces=pieces, **timing)


def openai_error(
    status: int,
    message: str,
    *,
    type: str = "invalid_request_error",
    code: str | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    """An error response with OpenAI's body shape."""
    return Reply.json(
        status, {"error": {"message": message, "type": type, "param": None, "code": code}}, headers
    )


class OpenAIServer(FakeServer):
    """A fake ``POST /v1/chat/completions``; ``base_url`` (``…/v1``) is the models' ``baseUrl``."""

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def render(self, step: dict[str, Any]) -> Reply:
        """``{"reply": {"content", "reasoning", "tool_calls", "finish_reason", "usage", "chunk_size",
        "interleave"}, <timing>}``, ``{"error": {"status", "message", "type", "code"}}``, or the
        generic ``body`` / ``sse`` steps."""
        timing = {key: step[key] for key in TIMING_KEYS if key in step}
        if "reply" in step:
            reply = dict(step["reply"])
            return openai_reply(**reply, **timing)
        if "error" in step:
            error = step["error"]
            return openai_error(
                error["status"],
                error["message"],
                type=error.get("type", "invalid_request_error"),
                code=error.get("code"),
                headers=step.get("headers"),
            )
        return reply_from_dict(step)
