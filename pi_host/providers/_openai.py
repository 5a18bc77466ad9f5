"""The ``openai-completions`` provider: OpenAI and every OpenAI-compatible server, over httpx.

The wire format lives in :mod:`._openai_wire`; this module sends it with the lean httpx
transport and the shared streaming driver (our own SSE decoder: chunks split anywhere, CRLF,
comments, ``data: [DONE]``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from pi_host.messages import AssistantMessageEvent

from ._abort import AbortSignal
from ._builder import ReplyBuilder
from ._driver import Prepared, drive_stream, payload_to_send, required_api_key
from ._http import HttpRequest, HttpxTransport, user_agent
from ._openai_wire import OpenAIStreamMapper, build_request
from ._types import LlmContext, Model, StreamOptions

__all__ = ["stream"]


def stream(model: Model, context: LlmContext, options: StreamOptions) -> AsyncIterator[AssistantMessageEvent]:
    """Stream one reply from a chat-completions endpoint (a :class:`StreamFn`)."""
    builder = ReplyBuilder(model)

    async def prepare(signal: AbortSignal) -> Prepared:
        api_key = required_api_key(model, options)
        request = build_request(model, context, options, api_key)
        params = await payload_to_send(signal, request.params, model, options)
        headers = {
            "content-type": "application/json",
            "accept": "application/json",
            "user-agent": user_agent(),
        }
        headers.update(request.headers)
        return Prepared(
            transport=HttpxTransport("openai"),
            request=HttpRequest(
                url=_completions_url(model.base_url),
                headers=headers,
                body=params,
                timeout_s=options.timeout_s,
            ),
            mapper=OpenAIStreamMapper(builder, api_key=api_key),
            secrets=(api_key,),
        )

    return drive_stream(model, options, builder, prepare)


def _completions_url(base_url: str) -> str:
    return f"{(base_url or 'https://api.openai.com/v1').rstrip('/')}/chat/completions"
