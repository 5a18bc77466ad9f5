"""The streaming loop shared by the HTTP providers: request, SSE, events, and every way to fail.

A provider supplies a ``prepare`` coroutine (build the request, run ``on_payload``, pick the
transport, create its SSE-to-events mapper); :func:`drive_stream` does the rest and keeps the
:class:`~pi_host.providers.StreamFn` contract: it never raises (outer cancellation aside), yields
``start`` once the server accepted the request, and ends with exactly one ``done`` or ``error``.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pi_host.messages import AssistantMessageEvent

from ._abort import AbortSignal
from ._builder import ReplyBuilder
from ._env_keys import env_api_key
from ._errors import RETRY_AFTER_FIELD, redact
from ._http import (
    Aborted,
    HttpRequest,
    ProviderFailure,
    ResponseStream,
    Transport,
    abortable,
    open_with_retries,
)
from ._sse import ServerSentEvent, SSEDecoder
from ._types import Model, StreamOptions

__all__ = [
    "ABORTED_MESSAGE",
    "Prepared",
    "StreamMapper",
    "drive_stream",
    "payload_to_send",
    "required_api_key",
]

#: The error message of an aborted reply (pi's text).
ABORTED_MESSAGE = "Request was aborted"


class StreamMapper(Protocol):
    """Maps one wire format's SSE events to pi's events."""

    def handle(self, sse: ServerSentEvent) -> Sequence[AssistantMessageEvent]: ...

    def finish(self) -> Sequence[AssistantMessageEvent]:
        """Events due at the end of the body; raises :class:`ProviderFailure` if it ended early."""
        ...


@dataclass(frozen=True)
class Prepared:
    """What ``prepare`` hands the driver. ``secrets`` are scrubbed from every error message."""

    transport: Transport
    request: HttpRequest
    mapper: StreamMapper
    secrets: tuple[str, ...] = ()


def required_api_key(model: Model, options: StreamOptions) -> str:
    """The request's API key: ``options.api_key``, else the provider's environment variable.

    :raises ProviderFailure: when there is neither (pi's "No API key for provider" error).
    """
    api_key = options.api_key or env_api_key(model.provider)
    if not api_key:
        raise ProviderFailure(f"No API key for provider: {model.provider}")
    return api_key


async def payload_to_send(signal: AbortSignal, params: Any, model: Model, options: StreamOptions) -> Any:
    """The request body to send: ``params``, or what ``options.on_payload`` returned instead
    (awaited until the abort signal fires; ``None`` keeps ``params``)."""
    if options.on_payload is None:
        return params
    replacement = await abortable(signal, options.on_payload(params, model))
    return params if replacement is None else replacement


async def drive_stream(
    model: Model,
    options: StreamOptions,
    builder: ReplyBuilder,
    prepare: Callable[[AbortSignal], Awaitable[Prepared]],
) -> AsyncIterator[AssistantMessageEvent]:
    """Run one streaming request and yield pi's events (see the module docstring)."""
    signal = options.signal or AbortSignal()
    secrets: tuple[str | None, ...] = (options.api_key,)
    response: ResponseStream | None = None
    try:
        prepared = await prepare(signal)
        secrets = (*secrets, *prepared.secrets)
        response = await open_with_retries(
            prepared.transport, prepared.request, signal=signal, max_retries=options.max_retries
        )
        if options.on_response is not None:
            await abortable(signal, options.on_response(response.status, dict(response.headers), model))
        yield builder.start()
        mapper = prepared.mapper
        decoder = SSEDecoder()
        watch = getattr(response, "watch", None)
        if watch is not None:
            # The stream wakes its own reads on abort: no cancel scope per chunk.
            watch(signal)
            read = response.next_chunk
        else:
            read = functools.partial(_abortable_read, signal, response)
        while True:
            chunk = await read()
            if chunk is None:
                break
            for sse in decoder.feed(chunk):
                for event in mapper.handle(sse):
                    yield event
        for sse in decoder.close():
            for event in mapper.handle(sse):
                yield event
        for event in mapper.finish():
            yield event
        if signal.aborted:
            raise Aborted
        if builder.stop_reason in ("error", "aborted"):
            raise ProviderFailure(builder.error_message or "Provider returned an error stop reason")
        yield builder.done()
    except Aborted:
        yield builder.fail("aborted", ABORTED_MESSAGE)
    except ProviderFailure as failure:
        if failure.retry_after_ms is not None:
            builder.extra[RETRY_AFTER_FIELD] = failure.retry_after_ms
        if signal.aborted:
            yield builder.fail("aborted", ABORTED_MESSAGE)
        else:
            yield builder.fail("error", redact(failure.message, *secrets))
    except Exception as exc:
        # A bug of ours or of a hook must still end the stream as pi's contract says.
        detail = redact(str(exc) or type(exc).__name__, *secrets)
        yield builder.fail("aborted" if signal.aborted else "error", detail)
    finally:
        if response is not None:
            await response.aclose()


async def _abortable_read(signal: AbortSignal, response: ResponseStream) -> bytes | None:
    return await abortable(signal, response.next_chunk())
