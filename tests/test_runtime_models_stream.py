"""The session's stream function and the provider stream it wraps."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio

from pi_host.messages import AssistantMessage, AssistantMessageEvent, DoneEvent
from pi_host.providers import LlmContext, Model, Provider, StreamOptions
from pi_host.providers._registry import ModelRegistry
from pi_host.runtime._models import ModelResolver

MODEL = Model(id="m", api="closing-test", provider="closing-test")


def test_closing_the_session_stream_closes_the_provider_stream_at_once(tmp_path: Path) -> None:
    """The agent loop closes the stream after ``done``: the provider's cleanup runs right then,
    not later from asyncio's finalizer hook (a self-pipe wake-up and a task per request)."""
    closed: list[str] = []

    async def stream(
        model: Model, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        try:
            message = AssistantMessage(api=model.api, provider=model.provider, model=model.id)
            yield DoneEvent(reason="stop", message=message)
            yield DoneEvent(reason="stop", message=message)  # never reached
        finally:
            closed.append("provider")

    provider = Provider(api=MODEL.api, stream=stream, requires_auth=False)
    resolver = ModelResolver(ModelRegistry.create(tmp_path), {MODEL.api: provider})

    async def main() -> None:
        events = resolver.stream(MODEL, LlmContext(), StreamOptions())
        first = await anext(aiter(events))
        assert first.type == "done"
        await events.aclose()  # type: ignore[attr-defined]  # an async generator
        assert closed == ["provider"]

    anyio.run(main)
