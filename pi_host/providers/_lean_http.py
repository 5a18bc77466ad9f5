"""A lean HTTP/1.1 client for the providers' one request shape: h11 over an asyncio protocol.

Why not httpx for everything. A streamed reply is thousands of small body chunks, and httpx
hands each one down httpx → httpcore → anyio stream → h11 and back, with an anyio cancel scope
per read so that an abort can interrupt it: about two thirds of the provider's per-delta cost.
A warm request pays the same layers once more, and a one-shot run pays ~70 ms to import
httpx and httpcore. Here a :class:`_Connection` is an :class:`asyncio.Protocol` that feeds the
bytes the event loop hands it straight to h11, and a read in flight is a plain future that
the run's :class:`AbortSignal` wakes itself (no cancel scope per read); everything that has
already arrived is read in one go.

What it serves (:func:`lean_transport_applies`): an asyncio event loop, ``http`` or ``https``
(TLS with certificate verification, the CA bundle chosen as httpx chooses it), no proxy in the
environment, a plain URL, and ``PI_HOST_LEAN_HTTP`` not ``0``. Anything else goes through
httpx (:class:`._http.HttpxTransport` decides). Where a provider could tell them apart it
behaves as httpx does: the same default request headers, gzip and deflate bodies, one
keep-alive pool per event loop (idle connections expire after 5 s and close when the loop
ends), connect/read/write timeouts, and network failures worded exactly as the httpx path
words them (the tests run every fault through both).
"""

from __future__ import annotations

import asyncio
import functools
import os
import socket
import ssl
import weakref
import zlib
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Literal
from urllib.parse import urlsplit

import h11

from ._abort import AbortSignal
from ._errors import http_error_message, parse_retry_after
from ._http import (
    Aborted,
    HttpRequest,
    ProviderFailure,
    ResponseStream,
    describe_transport_error,
    should_retry_header,
    tls_context,
)
from ._json_body import JsonBody

__all__ = ["LEAN_HTTP_ENV", "LeanTransport", "lean_transport_applies"]

#: Idle keep-alive connections older than this are closed instead of reused (httpx's default).
_KEEPALIVE_EXPIRY_S = 5.0
#: Received bytes beyond which the connection stops reading until the consumer catches up.
_READ_HIGH_WATER = 256 * 1024
#: Bytes of a request handed to the transport at a time; the next slice waits until its buffer
#: drains (asyncio's high-water mark), so a large body is never copied whole into it.
_WRITE_SLICE = 256 * 1024
#: httpx's default request headers (``accept-encoding`` lists the decoders we have).
_DEFAULT_HEADERS = (
    ("accept", "*/*"),
    ("accept-encoding", "gzip, deflate"),
    ("connection", "keep-alive"),
)
_PROXY_VARIABLES = frozenset({"http_proxy", "https_proxy", "all_proxy"})


# -- the failures httpx would raise, under the names describe_transport_error reads ---------


class ConnectError(Exception):
    """The connection could not be made (httpx's ``ConnectError``)."""


class ConnectTimeout(Exception):
    """Connecting (or the TLS handshake) timed out."""


class ReadError(Exception):
    """The connection broke while reading."""


class ReadTimeout(Exception):
    """No data arrived within the read timeout."""


class WriteTimeout(Exception):
    """The request could not be written within the write timeout."""


class RemoteProtocolError(Exception):
    """The server broke HTTP/1.1 (or hung up mid-message)."""


class LocalProtocolError(Exception):
    """The request cannot be sent as HTTP/1.1 (an illegal header name or value)."""


#: ``0`` sends every request through httpx (a way out should the lean client not suit a server).
LEAN_HTTP_ENV = "PI_HOST_LEAN_HTTP"


def lean_transport_applies(url: str) -> bool:
    """Whether the lean client serves ``url`` in this task (else httpx does; see the module doc)."""
    if os.environ.get(LEAN_HTTP_ENV) == "0":
        return False
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False  # not asyncio (trio): httpx runs on any backend
    if not url.isascii() or not url.isprintable() or " " in url:
        return False  # httpx normalises and quotes such URLs; leave that to it
    if any(name.lower() in _PROXY_VARIABLES for name in os.environ):
        return False  # httpx honours proxies from the environment
    parts = _split(url)
    return parts is not None


@functools.lru_cache(maxsize=64)
def _split(url: str) -> tuple[bool, str, int, str, str] | None:
    """``(tls, host, port, host header, target)`` of a plain http(s) URL, else ``None``."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc:
        return None
    tls = parts.scheme == "https"
    default = 443 if tls else 80
    host = parts.hostname
    authority = f"[{host}]" if ":" in host else host
    if port is not None and port != default:
        authority = f"{authority}:{port}"
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return tls, host, port or default, authority, target


class LeanTransport:
    """POST JSON over the lean client and stream the body (a :class:`._http.Transport`).

    Call only where :func:`lean_transport_applies`. :meth:`watch` makes the body reads of the
    returned stream abortable by the signal without a cancel scope per read.
    """

    def __init__(self, error_style: Literal["anthropic", "openai"]) -> None:
        self._error_style: Literal["anthropic", "openai"] = error_style

    async def open(self, request: HttpRequest) -> ResponseStream:
        split = _split(request.url)
        assert split is not None, "lean_transport_applies() was not checked"
        tls, host, port, authority, target = split
        timeout = request.timeout_s or _DEFAULT_TIMEOUT_S
        body = JsonBody(request.body)
        headers = _request_headers(authority, body.length, request.headers)
        pool = await _pool()
        key = (tls, host, port)
        connection = pool.acquire(key)
        try:
            if connection is None:
                connection = await _connect(host, port, tls, min(timeout, _CONNECT_TIMEOUT_S))
            connection.read_timeout = timeout
            status, response_headers = await connection.send_request(target, headers, body, timeout)
        except BaseException as exc:
            if connection is not None:
                connection.close()
            if isinstance(exc, _NETWORK_ERRORS):
                raise ProviderFailure(describe_transport_error(exc, streaming=False)) from exc
            raise
        stream = _LeanResponseStream(status, response_headers, connection, pool, key)
        if status < 400:
            return stream
        try:
            text = (await stream.read_all()).decode("utf-8", "replace")
        except ProviderFailure:  # the body broke off: the status alone speaks
            text = ""
        finally:
            await stream.aclose()
        raise ProviderFailure(
            http_error_message(status, text, self._error_style),
            status=status,
            retry_after_ms=parse_retry_after(response_headers),
            should_retry=should_retry_header(response_headers),
        )


_DEFAULT_TIMEOUT_S = 600.0
_CONNECT_TIMEOUT_S = 30.0
_NETWORK_ERRORS = (
    ConnectError,
    ConnectTimeout,
    ReadError,
    ReadTimeout,
    WriteTimeout,
    RemoteProtocolError,
    LocalProtocolError,
)


def _request_headers(authority: str, length: int, own: Mapping[str, str]) -> list[tuple[str, str]]:
    """httpx's default headers, then the request's own, which replace a default of the same name.

    As in httpx, the request's headers are sent as given, names that differ only in case
    included.
    """
    defaults = dict(_DEFAULT_HEADERS)
    given: list[tuple[str, str]] = []
    for name, value in own.items():
        key = name.lower()
        if key in ("host", "content-length"):
            continue  # both describe this request; ours are right
        defaults.pop(key, None)
        given.append((name, value))
    return [("host", authority), *defaults.items(), ("content-length", str(length)), *given]


def _header_dict(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    """Response headers as httpx's ``dict(response.headers)``: lower-case names, repeats joined."""
    encoding = "ascii"
    for candidate in ("ascii", "utf-8"):
        try:
            for name, value in raw:
                name.decode(candidate)
                value.decode(candidate)
        except UnicodeDecodeError:
            continue
        encoding = candidate
        break
    else:
        encoding = "iso-8859-1"
    headers: dict[str, str] = {}
    for name, value in raw:
        key = name.decode(encoding).lower()
        text = value.decode(encoding)
        headers[key] = f"{headers[key]}, {text}" if key in headers else text
    return headers


# -- connecting -----------------------------------------------------------------------------


async def _connect(host: str, port: int, tls: bool, timeout: float) -> _Connection:
    """Open a connection (TLS for https), failing as httpx's connect (on anyio) fails."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(timeout):
            _, protocol = await loop.create_connection(
                lambda: _Connection(loop),
                host,
                port,
                ssl=tls_context() if tls else None,
                server_hostname=host if tls else None,
                happy_eyeballs_delay=0.25,
            )
    except TimeoutError as exc:
        raise ConnectTimeout("") from exc
    except (socket.gaierror, ssl.SSLError, ssl.CertificateError) as exc:
        raise ConnectError(str(exc)) from exc
    except OSError as exc:
        # anyio tries every address and reports this when none answered.
        raise ConnectError("All connection attempts failed") from exc
    return protocol


# -- one connection -------------------------------------------------------------------------


class _Connection(asyncio.Protocol):
    """One keep-alive connection: the event loop's bytes go to h11; a reader awaits a future."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._transport: asyncio.Transport | None = None
        self.h11 = h11.Connection(h11.CLIENT)
        self._received: list[bytes] = []
        self._buffered = 0
        self._reading_paused = False
        self._eof = False
        self._lost: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._wait_started = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._drained: asyncio.Future[None] | None = None
        self._writing_paused = False
        self.aborted = False
        self.read_timeout = _DEFAULT_TIMEOUT_S
        self.idle_since = 0.0

    # -- asyncio.Protocol ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        self._received.append(data)
        self._buffered += len(data)
        if self._buffered > _READ_HIGH_WATER and self._transport is not None:
            # A consumer slower than the server: let TCP hold the rest, as httpx's reads do.
            self._transport.pause_reading()
            self._reading_paused = True
        self._wake()

    def eof_received(self) -> bool | None:
        self._eof = True
        self._wake()
        return None  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self._eof = True
        self._lost = exc
        self._transport = None
        self._wake()
        drained = self._drained
        if drained is not None and not drained.done():
            drained.set_result(None)

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        drained = self._drained
        if drained is not None and not drained.done():
            drained.set_result(None)

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _check_timeout(self) -> None:
        """The read timeout's timer: one per connection, re-armed rather than made per read."""
        self._timer = None
        waiter = self._waiter
        if waiter is None or waiter.done():
            return  # no read waiting; the next one arms the timer again
        deadline = self._wait_started + self.read_timeout
        if self._loop.time() >= deadline:
            waiter.set_exception(ReadTimeout(""))
        else:
            self._timer = self._loop.call_at(deadline, self._check_timeout)

    def abort(self) -> None:
        """Wake a read in flight; it raises :class:`Aborted` (the signal's listener)."""
        self.aborted = True
        self._wake()

    # -- state -----------------------------------------------------------------------------

    @property
    def reusable(self) -> bool:
        """Idle, still open, and nothing unexpected arrived since the last response."""
        return self._transport is not None and not self._eof and not self._received

    def stop_timer(self) -> None:
        timer = self._timer
        if timer is not None:
            self._timer = None
            timer.cancel()

    def close(self) -> None:
        self.stop_timer()
        transport = self._transport
        if transport is not None:
            self._transport = None
            transport.abort()

    # -- I/O -------------------------------------------------------------------------------

    async def send_request(
        self, target: str, headers: list[tuple[str, str]], body: JsonBody, timeout: float
    ) -> tuple[int, dict[str, str]]:
        """Write the request; return the response's status and headers."""
        connection = self.h11
        try:
            head = connection.send(h11.Request(method="POST", target=target, headers=headers))
        except h11.LocalProtocolError as exc:
            raise LocalProtocolError(str(exc)) from exc
        # (h11 returns None only for a ConnectionClosed event.)
        await self._write_body(head or b"", body, timeout)
        # A server may answer (an error) before reading all of the request; as httpx does, a
        # failed write is not an error until reading the response fails too.
        while True:
            event = await self.next_event()
            if type(event) is h11.Response:
                return event.status_code, _header_dict(event.headers.raw_items())

    async def _write_body(self, head: bytes, body: JsonBody, timeout: float) -> None:
        """Write the request's head and body; the head goes out with the body's first chunk.

        The body is encoded as it is written, a chunk at a time (see JsonBody): whole, a
        10 MB request (a long resumed session) existed twice while it was encoded, and then
        for the whole write. A chunk the socket does not take at once is copied into the
        transport's buffer; the next one waits until that drains. The head and a small body
        leave in one send: two woke the server twice, and cost a system call more per request.
        """
        connection = self.h11
        for chunk in body.chunks(_WRITE_SLICE):
            for piece in connection.send_with_data_passthrough(h11.Data(data=chunk)) or ():
                if head:
                    piece, head = head + piece, b""
                if await self._write(piece, timeout):
                    return
        end = connection.send(h11.EndOfMessage()) or b""
        await self._write(head + end, timeout)

    async def _write(self, data: bytes, timeout: float) -> bool:
        """Hand ``data`` to the transport a slice at a time, waiting while its buffer is full.

        :returns: True if the connection is closed (the server's answer, if any, is read next).
        """
        view = memoryview(data)
        for start in range(0, len(view), _WRITE_SLICE):
            transport = self._transport
            if transport is None:
                return True
            transport.write(view[start : start + _WRITE_SLICE])
            if self._writing_paused:
                await self._drain(timeout)
        return self._transport is None

    async def _drain(self, timeout: float) -> None:
        self._drained = self._loop.create_future()
        try:
            async with asyncio.timeout(timeout):
                await self._drained
        except TimeoutError as exc:
            raise WriteTimeout("") from exc
        finally:
            self._drained = None

    async def next_event(self) -> h11.Event | type[h11.PAUSED]:
        """h11's next event, reading as needed. :raises Aborted: once :meth:`abort` was called."""
        connection = self.h11
        while True:
            if self.aborted:
                raise Aborted
            try:
                event = connection.next_event()
            except h11.RemoteProtocolError as exc:
                raise RemoteProtocolError(str(exc)) from exc
            if event is h11.NEED_DATA:
                await self._receive()
                continue
            return event  # type: ignore[return-value]  # NEED_DATA is handled above

    async def _receive(self) -> None:
        """Feed h11 everything received so far, waiting for it if there is nothing yet."""
        if not self._received and not self._eof:
            loop = self._loop
            waiter = self._waiter = loop.create_future()
            started = self._wait_started = loop.time()
            timer = self._timer
            if timer is None or timer.when() > started + self.read_timeout:
                if timer is not None:
                    timer.cancel()  # armed for a longer timeout than this request's
                self._timer = loop.call_at(started + self.read_timeout, self._check_timeout)
            try:
                await waiter
            finally:
                self._waiter = None
            if self.aborted:
                raise Aborted
        received = self._received
        if received:
            data = received[0] if len(received) == 1 else b"".join(received)
            received.clear()
            self._buffered = 0
            if self._reading_paused and self._transport is not None:
                self._reading_paused = False
                self._transport.resume_reading()
            self.h11.receive_data(data)
            return
        if self._lost is not None:
            # What anyio reports (and httpx words) for a reset connection: a bare ReadError.
            raise ReadError("") from self._lost
        if self.h11.their_state is h11.SEND_RESPONSE:
            raise RemoteProtocolError("Server disconnected without sending a response.")
        self.h11.receive_data(b"")


# -- a response -----------------------------------------------------------------------------


class _LeanResponseStream:
    """The body of one response; back to the pool once read to its end, closed otherwise."""

    def __init__(
        self,
        status: int,
        headers: dict[str, str],
        connection: _Connection,
        pool: _Pool,
        key: tuple[bool, str, int],
    ) -> None:
        self.status = status
        self.headers: Mapping[str, str] = headers
        self._connection: _Connection | None = connection
        self._pool = pool
        self._key = key
        self._unwatch: Callable[[], None] | None = None
        self._decoder = _decoder(headers.get("content-encoding", ""))

    def watch(self, signal: AbortSignal) -> None:
        """Let ``signal`` abort the body reads (a read in flight, or the next one)."""
        connection = self._connection
        if connection is not None:
            self._unwatch = signal.on_abort(connection.abort)

    async def next_chunk(self) -> bytes | None:
        """All body bytes that have arrived (waiting for some), ``None`` at the end.

        :raises Aborted: once the watched signal aborted.
        :raises ProviderFailure: when the connection breaks.
        """
        connection = self._connection
        if connection is None:
            return self._flush()
        try:
            chunks: list[bytes] = []
            h11_connection = connection.h11
            while True:
                event = await connection.next_event() if not chunks else h11_connection.next_event()
                kind = type(event)
                if kind is h11.Data:
                    data = event.data  # type: ignore[union-attr]
                    chunks.append(data if type(data) is bytes else bytes(data))
                    continue
                if kind is h11.EndOfMessage or event is h11.PAUSED:
                    self._release()
                    if not chunks:
                        return self._flush()
                break  # NEED_DATA after some data: hand over what there is
        except (h11.RemoteProtocolError, RemoteProtocolError, ReadError, ReadTimeout) as exc:
            self._discard()
            raise ProviderFailure(describe_transport_error(_public(exc), streaming=True)) from exc
        except BaseException:
            self._discard()
            raise
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        decoder = self._decoder
        return data if decoder is None else decoder.decompress(data)

    def _flush(self) -> bytes | None:
        decoder = self._decoder
        if decoder is None:
            return None
        self._decoder = None
        rest = decoder.flush()
        return rest or None

    async def read_all(self) -> bytes:
        parts: list[bytes] = []
        while (chunk := await self.next_chunk()) is not None:
            parts.append(chunk)
        return b"".join(parts)

    def _release(self) -> None:
        """The response ended: pool the connection if h11 says it can carry another request."""
        connection = self._connection
        self._connection = None
        self._stop_watching()
        if connection is None:
            return
        state = connection.h11
        # Bytes after the end of the response would be taken for the next one: never reuse.
        if state.our_state is h11.DONE and state.their_state is h11.DONE and not state.trailing_data[0]:
            state.start_next_cycle()
            self._pool.release(self._key, connection)
        else:
            connection.close()

    def _discard(self) -> None:
        connection = self._connection
        self._connection = None
        self._stop_watching()
        if connection is not None:
            connection.close()

    def _stop_watching(self) -> None:
        unwatch = self._unwatch
        if unwatch is not None:
            self._unwatch = None
            unwatch()

    async def aclose(self) -> None:
        """Close the connection unless the body was read to its end (no await: never blocks)."""
        self._discard()


def _public(exc: BaseException) -> BaseException:
    if isinstance(exc, h11.RemoteProtocolError):
        return RemoteProtocolError(str(exc))
    return exc


class _Decompressor:
    """gzip or deflate (zlib-wrapped or raw, as httpx's decoder accepts) for one body."""

    def __init__(self, encoding: str) -> None:
        self._gzip = encoding == "gzip"
        self._object = zlib.decompressobj(zlib.MAX_WBITS | 16 if self._gzip else zlib.MAX_WBITS)
        self._first = True

    def decompress(self, data: bytes) -> bytes:
        try:
            if self._first and not self._gzip:
                self._first = False
                try:
                    return self._object.decompress(data)
                except zlib.error:
                    self._object = zlib.decompressobj(-zlib.MAX_WBITS)
            return self._object.decompress(data)
        except zlib.error as exc:
            raise ProviderFailure(describe_transport_error(_DecodingError(str(exc)), streaming=True)) from exc

    def flush(self) -> bytes:
        return self._object.flush()


class _DecodingError(Exception):
    pass


def _decoder(encoding: str) -> _Decompressor | None:
    encoding = encoding.strip().lower()
    if encoding in ("gzip", "deflate"):
        return _Decompressor(encoding)
    return None


# -- the pool -------------------------------------------------------------------------------


class _Pool:
    """Idle connections of one event loop, by (tls, host, port); closed when the loop ends."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._idle: dict[tuple[bool, str, int], list[_Connection]] = {}

    def acquire(self, key: tuple[bool, str, int]) -> _Connection | None:
        idle = self._idle.get(key)
        now = self._loop.time()
        while idle:
            connection = idle.pop()
            if connection.reusable and now - connection.idle_since <= _KEEPALIVE_EXPIRY_S:
                return connection
            connection.close()
        return None

    def release(self, key: tuple[bool, str, int], connection: _Connection) -> None:
        connection.stop_timer()
        connection.aborted = False
        connection.idle_since = self._loop.time()
        self._idle.setdefault(key, []).append(connection)

    def close(self) -> None:
        for connections in self._idle.values():
            for connection in connections:
                connection.close()
        self._idle.clear()


_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Pool] = weakref.WeakKeyDictionary()
# The async generators that close the pools at the end of their loop (see _pool), kept here.
_closers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncGenerator[None, None]] = (
    weakref.WeakKeyDictionary()
)


async def _pool() -> _Pool:
    """The running loop's pool, closed from the loop's ``shutdown_asyncgens()``.

    ``asyncio.run``, anyio and pytest-asyncio all finalise async generators before closing the
    loop, so no idle connection outlives its loop.
    """
    loop = asyncio.get_running_loop()
    pool = _pools.get(loop)
    if pool is None:
        pool = _pools[loop] = _Pool(loop)
        closer = _close_at_loop_end(pool)
        await closer.asend(None)  # started, so the loop finalises it at shutdown
        _closers[loop] = closer
    return pool


async def _close_at_loop_end(pool: _Pool) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        pool.close()
