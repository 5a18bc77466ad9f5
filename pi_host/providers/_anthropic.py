"""The ``anthropic-messages`` provider: two transports over one wire mapping.

Why two transports. ``import anthropic`` (SDK 2.14) is the single largest start-up cost a
one-shot run could pay: measured here with compiled bytecode, 1.5-2.9 s and 80 MiB peak RSS
(the SDK builds hundreds of pydantic models at import), against 0.09 s and 23 MiB for httpx
and a few milliseconds for the lean h11 client (:mod:`._lean_http`). pi's *whole* one-shot
reply takes about 2.0 s, and pi-host must answer in a quarter of that. A one-shot process
that imports this provider and streams one reply from a local server takes 0.30 s through
the lean client, 0.36 s through httpx and 2.0 s through the SDK (``bench/bench_provider.py``).

So the request and the response mapping are written once, in :mod:`._anthropic_wire` (no SDK,
no I/O), and carried by either:

- ``sdk``: the official SDK (``AsyncAnthropic``): its client, auth, default headers, base URL
  and error types, with its own retries off (:func:`._http.open_with_retries` retries for both);
- ``httpx``: a plain HTTPS POST of the same JSON with the same headers, through the lean h11
  client where it applies (asyncio, no proxy) and httpx elsewhere (:class:`._http.HttpxTransport`).

Like pi, neither uses the SDK's event parsing: the raw SSE bytes go through our own decoder
and :class:`._anthropic_wire.AnthropicStreamMapper`, so both transports produce identical
events (the tests run every scenario through both and compare them). Both pin the API version
the mapping speaks (``2023-06-01``) and send API keys as ``x-api-key``, as pi does.

Which one runs: ``PI_HOST_ANTHROPIC_TRANSPORT`` = ``sdk`` | ``httpx`` | ``auto`` (default).
``auto`` uses the SDK once something imported it (:func:`warm_up` does, in a worker thread),
and ``httpx`` before that; pi-host's own modes never import it.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pi_host.messages import AssistantMessageEvent

from ._abort import AbortSignal
from ._anthropic_wire import ANTHROPIC_VERSION, AnthropicStreamMapper, build_request
from ._builder import ReplyBuilder
from ._driver import Prepared, drive_stream, payload_to_send, required_api_key
from ._errors import http_error_message, parse_retry_after
from ._http import (
    HttpRequest,
    HttpxTransport,
    ProviderFailure,
    ResponseStream,
    Transport,
    describe_transport_error,
    should_retry_header,
    user_agent,
)
from ._types import LlmContext, Model, StreamOptions

if TYPE_CHECKING:
    import ssl

    import anthropic

__all__ = ["TRANSPORT_ENV", "AnthropicSdkTransport", "stream", "transport_name", "warm_up"]

#: Selects the transport: ``sdk``, ``httpx`` or ``auto``.
TRANSPORT_ENV = "PI_HOST_ANTHROPIC_TRANSPORT"


def transport_name(env: Mapping[str, str] | None = None) -> Literal["sdk", "httpx"]:
    """The transport the next request will use (see the module docstring)."""
    choice = (os.environ if env is None else env).get(TRANSPORT_ENV, "auto").strip().lower()
    if choice == "sdk":
        return "sdk"
    if choice == "httpx":
        return "httpx"
    return "sdk" if "anthropic" in sys.modules else "httpx"


def warm_up() -> None:
    """Import the SDK now (blocking; run it in a worker thread) so ``auto`` switches to it."""
    import anthropic  # noqa: F401


def stream(model: Model, context: LlmContext, options: StreamOptions) -> AsyncIterator[AssistantMessageEvent]:
    """Stream one reply from an Anthropic Messages API endpoint (a :class:`StreamFn`)."""
    builder = ReplyBuilder(model)

    async def prepare(signal: AbortSignal) -> Prepared:
        api_key = required_api_key(model, options)
        request = build_request(model, context, options, api_key)
        params = await payload_to_send(signal, request.params, model, options)
        transport: Transport
        if transport_name() == "sdk":
            transport = AnthropicSdkTransport(
                api_key=api_key, oauth=request.is_oauth, base_url=model.base_url
            )
            headers = dict(request.headers)
        else:
            transport = HttpxTransport("anthropic")
            headers = {
                "content-type": "application/json",
                "anthropic-version": ANTHROPIC_VERSION,
                "user-agent": user_agent(),
                **request.headers,
            }
            if request.is_oauth:
                headers["authorization"] = f"Bearer {api_key}"
            else:
                headers["x-api-key"] = api_key
        mapper = AnthropicStreamMapper(builder, tools=context.tools, oauth=request.is_oauth, api_key=api_key)
        return Prepared(
            transport=transport,
            request=HttpRequest(
                url=_messages_url(model.base_url), headers=headers, body=params, timeout_s=options.timeout_s
            ),
            mapper=mapper,
            secrets=(api_key,),
        )

    return drive_stream(model, options, builder, prepare)


def _messages_url(base_url: str) -> str:
    return f"{(base_url or 'https://api.anthropic.com').rstrip('/')}/v1/messages"


@dataclass
class _SdkResponseStream:
    status: int
    headers: Mapping[str, str]
    _stream: Any  # anthropic.AsyncStream, whose parsed iteration we never start
    _client: anthropic.AsyncAnthropic

    def __post_init__(self) -> None:
        self._chunks = self._stream.response.aiter_bytes()

    async def next_chunk(self) -> bytes | None:
        import httpx2

        try:
            chunk: bytes = await self._chunks.__anext__()
            return chunk
        except StopAsyncIteration:
            return None
        except (httpx2.HTTPError, OSError) as exc:
            raise ProviderFailure(describe_transport_error(exc, streaming=True)) from exc

    async def aclose(self) -> None:
        import anyio

        with anyio.CancelScope(shield=True):
            try:
                await self._stream.response.aclose()
            finally:
                await self._client.close()


class AnthropicSdkTransport:
    """Send the request with the official SDK's ``AsyncAnthropic`` client (retries off).

    The body goes through ``client.post`` unchanged, so ``on_payload`` replacements and fields
    newer than the SDK's types reach the server as they are.
    """

    def __init__(self, *, api_key: str, oauth: bool, base_url: str) -> None:
        self._api_key = api_key
        self._oauth = oauth
        self._base_url = base_url or "https://api.anthropic.com"

    async def open(self, request: HttpRequest) -> ResponseStream:
        import anthropic

        # Pin the API version our mapping speaks, and send API keys as x-api-key, as pi does;
        # left alone, SDK 2.x would send its own newer version and a Bearer header.
        headers: dict[str, Any] = {**request.headers, "anthropic-version": ANTHROPIC_VERSION}
        if not self._oauth:
            headers["X-Api-Key"] = self._api_key
            headers["Authorization"] = anthropic.Omit()
        client = anthropic.AsyncAnthropic(
            api_key=None if self._oauth else self._api_key,
            auth_token=self._api_key if self._oauth else None,
            base_url=self._base_url,
            max_retries=0,
            timeout=request.timeout_s if request.timeout_s is not None else 600.0,
            default_headers=headers,
            # The SDK's own client loads the CA bundle on every construction (~100 ms); one
            # TLS context serves the whole process, and plain-HTTP targets need none.
            http_client=anthropic.DefaultAsyncHttpxClient(
                verify=_sdk_tls_context() if self._base_url.startswith("https:") else False
            ),
        )
        try:
            sdk_stream: Any = await client.post(
                "/v1/messages",
                cast_to=object,
                body=request.body,
                stream=True,
                stream_cls=anthropic.AsyncStream[object],
            )
        except BaseException as exc:
            import anyio

            with anyio.CancelScope(shield=True):
                await client.close()
            if isinstance(exc, anthropic.APIStatusError):
                raise ProviderFailure(
                    http_error_message(exc.status_code, _body_text(exc), "anthropic"),
                    status=exc.status_code,
                    retry_after_ms=parse_retry_after(exc.response.headers),
                    should_retry=should_retry_header(exc.response.headers),
                ) from exc
            if isinstance(exc, anthropic.APIConnectionError):
                raise ProviderFailure(
                    describe_transport_error(exc.__cause__ or exc, streaming=False)
                ) from exc
            raise
        response = sdk_stream.response
        return _SdkResponseStream(response.status_code, dict(response.headers), sdk_stream, client)


@functools.cache
def _sdk_tls_context() -> ssl.SSLContext:
    import httpx2

    return httpx2.create_ssl_context()


def _body_text(error: anthropic.APIStatusError) -> str:
    try:
        return error.response.text
    except Exception:  # the body was never read (a streamed error response)
        return ""
