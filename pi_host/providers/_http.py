"""What the streaming providers share below their wire formats: transports, failures, aborts.

A transport sends one JSON request and hands back a :class:`ResponseStream` (status, headers,
body chunks). :class:`HttpxTransport` is the lean one: the h11 client of :mod:`._lean_http`
where it applies, httpx elsewhere; the Anthropic SDK transport lives in ``_anthropic`` and
adapts the SDK to the same shape. Transports never let a network
exception escape: an HTTP error status, a refused connection, a timeout or a connection lost
mid-stream all become a :class:`ProviderFailure` whose message is what the user will read
(and what :mod:`._errors` classifies).

Abort: every network await runs inside ``signal.scope()`` (:func:`abortable`), one await at a
time, never across a ``yield`` of the provider's event generator, so an abort cancels the read
in flight and never the consumer's code between events; a stream that can ``watch`` the signal
itself (the lean client of :mod:`._lean_http`) is spared the scope per read.
"""

from __future__ import annotations

import asyncio
import functools
import os
import random
import ssl
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

import anyio

from ._abort import AbortSignal
from ._errors import http_error_message, parse_retry_after

if TYPE_CHECKING:
    import httpx

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "Aborted",
    "HttpRequest",
    "HttpxTransport",
    "ProviderFailure",
    "ResponseStream",
    "Transport",
    "abortable",
    "describe_transport_error",
    "open_with_retries",
    "retry_delay_s",
    "should_retry_header",
    "tls_context",
    "user_agent",
]

T = TypeVar("T")

#: Retry delays the transport honours by itself; a longer ``Retry-After`` ends the attempt and is
#: left to the retry plugin (it is kept on the failed message).
_MAX_INLINE_RETRY_DELAY_S = 60.0
_DEFAULT_TIMEOUT_S = 600.0
# Idle connections kept per pool (httpx's default is 20): one per concurrent session, up to this.
_KEEP_ALIVE_CONNECTIONS = 100
_CONNECT_TIMEOUT_S = 30.0


class Aborted(Exception):
    """The run's :class:`AbortSignal` fired while the provider was waiting."""


class ProviderFailure(Exception):
    """A failed request or stream, worded for the user.

    ``retry_after_ms`` is how long the server asked to wait (``retry-after-ms`` /
    ``retry-after``), ``should_retry`` its ``x-should-retry`` verdict (None when it gave none).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after_ms: int | None = None,
        should_retry: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retry_after_ms = retry_after_ms
        self.should_retry = should_retry


def should_retry_header(headers: Mapping[str, str]) -> bool | None:
    """The server's ``x-should-retry`` verdict: True, False, or None when it gave none."""
    for key, value in headers.items():
        if key.lower() == "x-should-retry":
            verdict = value.strip().lower()
            return True if verdict == "true" else False if verdict == "false" else None
    return None


@dataclass(frozen=True)
class HttpRequest:
    """One JSON POST."""

    url: str
    headers: dict[str, str]
    body: Any
    timeout_s: float | None = None


class ResponseStream(Protocol):
    """A successful (2xx) response whose body is read chunk by chunk.

    A stream may also offer ``watch(signal)``: after it, its reads end with :class:`Aborted`
    when ``signal`` aborts, so the driver need not wrap each read in :func:`abortable`.
    """

    status: int
    headers: Mapping[str, str]

    async def next_chunk(self) -> bytes | None:
        """The next body chunk, ``None`` at the end. :raises ProviderFailure: on connection loss."""
        ...

    async def aclose(self) -> None: ...


class Transport(Protocol):
    """Sends a request; returns a 2xx :class:`ResponseStream` or raises :class:`ProviderFailure`."""

    async def open(self, request: HttpRequest) -> ResponseStream: ...


@functools.cache
def user_agent() -> str:
    """``pi-host/<version>``, the User-Agent of the lean transports."""
    import pi_host

    return f"pi-host/{pi_host.__version__}"


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The verifying TLS context of every https request of the process (both HTTP clients).

    Loading the CA bundle takes ~30 ms, so it is done once, and only when an https URL needs
    it. The bundle is chosen as httpx chooses it: ``SSL_CERT_FILE``, else ``SSL_CERT_DIR``,
    else certifi's.
    """
    if cafile := os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=cafile)
    if capath := os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=capath)
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


async def abortable(signal: AbortSignal, awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` so that aborting ``signal`` cancels it. :raises Aborted: on abort."""
    with signal.scope():
        return await awaitable
    # Only reached when the scope swallowed an abort's cancellation.
    raise Aborted


def describe_transport_error(exc: BaseException, *, streaming: bool) -> str:
    """Word a network failure (httpx, or the SDK's httpx2, or an ``OSError``) for the user.

    The words carry the markers the retry classifier looks for: ``timed out``,
    ``Connection error``, ``Connection lost``.
    """
    name = type(exc).__name__
    detail = str(exc) or name
    if "Timeout" in name or isinstance(exc, TimeoutError):
        return f"Request timed out ({detail})" if detail != name else "Request timed out"
    if streaming or name in ("RemoteProtocolError", "ReadError"):
        return f"Connection lost while streaming the response: {detail}"
    return f"Connection error: {detail}"


DEFAULT_MAX_RETRIES = 2
"""Quick retries of a request that failed before its reply began, when the settings set none
(``retry.provider.maxRetries``): the official SDKs' default, which pi runs with."""

_INITIAL_RETRY_DELAY_S = 0.5
_MAX_RETRY_DELAY_S = 8.0


def retry_delay_s(attempt: int, retry_after_ms: int | None, jitter: float) -> float:
    """How long to wait before retry number ``attempt + 1``, as the official SDKs wait.

    The server's ``retry-after-ms`` / ``retry-after`` when it gave one; else 0.5 s doubling
    per attempt, capped at 8 s, shortened by up to a quarter (``jitter`` in [0, 1)) so that
    clients failed by the same overload do not all come back at once.
    """
    if retry_after_ms is not None:
        return retry_after_ms / 1000
    return min(_INITIAL_RETRY_DELAY_S * 2.0**attempt, _MAX_RETRY_DELAY_S) * (1 - 0.25 * jitter)


async def open_with_retries(
    transport: Transport,
    request: HttpRequest,
    *,
    signal: AbortSignal,
    max_retries: int | None = None,
    sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
    jitter: Callable[[], float] = random.random,
) -> ResponseStream:
    """Open ``request``, retrying a failure before the reply began as the official SDKs do.

    Retried: connection errors and timeouts, and the statuses 408, 409, 429 and 5xx (529
    overloaded among them), unless the server's ``x-should-retry`` says otherwise either way;
    at most ``max_retries`` times (None: :data:`DEFAULT_MAX_RETRIES`), waiting as
    :func:`retry_delay_s` says. A server asking for more than 60 s ends the attempt at once,
    its wish kept on the failure for the agent-level retry. An abort ends the wait. Every
    transport (the lean client, httpx, the Anthropic SDK with its own retries off) goes
    through here, so a retry behaves the same whichever carried the request; once the reply's
    first byte has arrived nothing is retried here.
    """
    if not request.url.lower().startswith(("http://", "https://")):
        # Not worth a retry, nor a connection attempt: the model's base URL is wrong.
        raise ProviderFailure(
            f"Invalid request URL {request.url!r}: the model's base URL needs http:// or https://"
        )
    limit = DEFAULT_MAX_RETRIES if max_retries is None else max_retries
    attempt = 0
    while True:
        try:
            return await abortable(signal, transport.open(request))
        except ProviderFailure as failure:
            if attempt >= limit or not _worth_retrying(failure):
                raise
            delay = retry_delay_s(attempt, failure.retry_after_ms, jitter())
            if delay > _MAX_INLINE_RETRY_DELAY_S:
                raise
            attempt += 1
            await abortable(signal, sleep(delay))


def _worth_retrying(failure: ProviderFailure) -> bool:
    if failure.should_retry is not None:
        return failure.should_retry
    if failure.status is None:
        return True  # connection errors and timeouts
    return failure.status in (408, 409, 429) or failure.status >= 500


# -- the lean transport ---------------------------------------------------------------------


#: One client per asyncio event loop and kind of target (plain HTTP, TLS), so that a process
#: builds one client and reuses its connections instead of building both per request.
_pooled: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[bool, httpx.AsyncClient]] = (
    weakref.WeakKeyDictionary()
)
# The async generators that close the pooled clients (see _pooled_client), kept alive here.
_closers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, list[AsyncGenerator[None, None]]] = (
    weakref.WeakKeyDictionary()
)


def _new_client(tls: bool) -> httpx.AsyncClient:
    import httpx

    return httpx.AsyncClient(
        follow_redirects=False,
        # Plain-HTTP targets (local servers) need no certificates at all.
        verify=tls_context() if tls else False,
        # The pool is the event loop's, so every session of the process draws on it: httpx's
        # default of 100 connections made the 101st concurrent stream wait for another
        # session's to end. No cap, as the lean client and pi's (undici's) have none.
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=_KEEP_ALIVE_CONNECTIONS),
    )


async def _pooled_client(tls: bool) -> tuple[httpx.AsyncClient, bool]:
    """The client for this event loop, and whether the caller owns it (must close it).

    Under asyncio the client lives as long as its event loop: an async generator started here
    closes it from the loop's ``shutdown_asyncgens()``, which ``asyncio.run``, anyio and
    pytest-asyncio all call before closing the loop, so no connection outlives its loop.
    Elsewhere (trio) each request gets a client of its own.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return _new_client(tls), True
    clients = _pooled.setdefault(loop, {})
    client = clients.get(tls)
    if client is None or client.is_closed:
        client = clients[tls] = _new_client(tls)
        closer = _close_at_loop_end(client)
        await closer.asend(None)  # started, so the loop finalises it at shutdown
        _closers.setdefault(loop, []).append(closer)
    return client, False


async def _close_at_loop_end(client: httpx.AsyncClient) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        await client.aclose()


@dataclass
class _HttpxResponseStream:
    status: int
    headers: Mapping[str, str]
    _response: httpx.Response
    _client: httpx.AsyncClient | None  # set when the stream owns (and closes) its client
    _chunks: AsyncIterator[bytes] = field(init=False)

    def __post_init__(self) -> None:
        self._chunks = self._response.aiter_bytes()

    async def next_chunk(self) -> bytes | None:
        import httpx

        try:
            return await self._chunks.__anext__()
        except StopAsyncIteration:
            return None
        except (httpx.HTTPError, OSError) as exc:
            raise ProviderFailure(describe_transport_error(exc, streaming=True)) from exc

    async def aclose(self) -> None:
        try:
            await _shielded_close(self._response.aclose())
        finally:
            if self._client is not None:
                await _shielded_close(self._client.aclose())


class HttpxTransport:
    """POST JSON and stream the body; error statuses become :class:`ProviderFailure`.

    The request goes through the lean h11 client (:mod:`._lean_http`) where it applies (an
    asyncio loop, no proxy), else through httpx. Either keeps one pool of connections per
    event loop (see :func:`_pooled_client`), so a warm process reuses its connections to a
    provider, as pi's HTTP stack does.

    :param error_style: how HTTP error bodies are worded (see :func:`._errors.http_error_message`).
    """

    def __init__(self, error_style: Literal["anthropic", "openai"]) -> None:
        self._error_style: Literal["anthropic", "openai"] = error_style

    async def open(self, request: HttpRequest) -> ResponseStream:
        from ._lean_http import LeanTransport, lean_transport_applies

        if lean_transport_applies(request.url):
            return await LeanTransport(self._error_style).open(request)
        return await self._open_with_httpx(request)

    async def _open_with_httpx(self, request: HttpRequest) -> ResponseStream:
        import httpx

        from ._json_body import JsonBody

        timeout = request.timeout_s or _DEFAULT_TIMEOUT_S
        client, owned = await _pooled_client(request.url.startswith("https:"))
        owner = client if owned else None
        # Encoded as it is sent, never whole (see JsonBody); with the length given, httpx sends
        # Content-Length as for a bytes body, not a chunked one.
        payload = JsonBody(request.body)

        async def chunks() -> AsyncIterator[bytes]:
            for chunk in payload.chunks():
                yield chunk

        try:
            http_request = client.build_request(
                "POST",
                request.url,
                content=chunks(),
                headers={
                    "content-type": "application/json",
                    "content-length": str(payload.length),
                    **request.headers,
                },
                timeout=httpx.Timeout(timeout, connect=min(timeout, _CONNECT_TIMEOUT_S)),
            )
            response = await client.send(http_request, stream=True)
        except BaseException as exc:
            if owner is not None:
                await _shielded_close(owner.aclose())
            if isinstance(exc, httpx.HTTPError):
                raise ProviderFailure(describe_transport_error(exc, streaming=False)) from exc
            raise
        if response.status_code < 400:
            return _HttpxResponseStream(response.status_code, dict(response.headers), response, owner)
        try:
            body = (await response.aread()).decode("utf-8", "replace")
        except httpx.HTTPError:
            body = ""
        finally:
            await _shielded_close(response.aclose())
            if owner is not None:
                await _shielded_close(owner.aclose())
        raise ProviderFailure(
            http_error_message(response.status_code, body, self._error_style),
            status=response.status_code,
            retry_after_ms=parse_retry_after(response.headers),
            should_retry=should_retry_header(response.headers),
        )


async def _shielded_close(closing: Awaitable[None]) -> None:
    with anyio.CancelScope(shield=True):
        await closing
