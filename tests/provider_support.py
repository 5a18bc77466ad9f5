"""Helpers shared by the provider tests."""

from __future__ import annotations

import time

import anyio

from pi_host.messages import AssistantMessageEvent
from pi_host.providers import AbortSignal, LlmContext, Model, StreamFn, StreamOptions

__all__ = ["abort_after_first_delta"]


async def abort_after_first_delta(
    stream: StreamFn, model: Model, context: LlmContext, api_key: str
) -> tuple[list[AssistantMessageEvent], float]:
    """Stream until the first ``text_delta``, then abort.

    :returns: every event the stream produced, and the seconds it took to end after the abort.
    """
    signal = AbortSignal()
    first_delta = anyio.Event()
    events: list[AssistantMessageEvent] = []
    aborted_at = 0.0

    async def consume() -> None:
        async for event in stream(model, context, StreamOptions(api_key=api_key, signal=signal)):
            events.append(event)
            if event.type == "text_delta":
                first_delta.set()

    async def abort() -> None:
        nonlocal aborted_at
        await first_delta.wait()
        aborted_at = time.perf_counter()
        signal.abort()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(consume)
            group.start_soon(abort)
    return events, time.perf_counter() - aborted_at
