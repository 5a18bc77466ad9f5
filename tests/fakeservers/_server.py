"""A scriptable HTTP/1.1 server on 127.0.0.1 for provider, CLI and benchmark tests.

The server is written directly on TCP (anyio) rather than on an HTTP framework because the
tests need control that frameworks hide: the exact bytes of every write, writes split at any
byte, pauses before the first byte and between "tokens", a connection dropped mid-body, a body
that never ends. Each request consumes one :class:`Reply` from the queue, in order.

It runs in a background thread with its own event loop (an anyio blocking portal), so a
synchronous test, an async test on any loop, a subprocess under test and a benchmark can all
talk to it.
"""

from __future__ import annotations

import inspect
import json
import socket
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import anyio
import anyio.abc
import anyio.to_thread
from anyio.from_thread import BlockingPortal, start_blocking_portal
from anyio.streams.buffered import BufferedByteReceiveStream

__all__ = ["TIMING_KEYS", "FakeServer", "RecordedRequest", "Reply", "Responder"]

_MAX_HEADER_BYTES = 64 * 1024


@dataclass
class Reply:
    """One scripted response.

    :param status: the HTTP status.
    :param headers: extra response headers.
    :param body: a whole body (error replies); ``pieces`` is ignored when set.
    :param pieces: the body as a sequence of pieces, each written as one unit (an SSE event,
        a "token"); ``latency`` separates pieces, ``split`` cuts each piece further.
    :param ttft: seconds to wait before the first body byte (time to first token).
    :param latency: seconds to wait between pieces.
    :param split: ``None`` writes each piece whole; an int writes it in slices of that many bytes;
        a list of ints gives the slice sizes, cycled.
    :param split_pause: seconds to wait between the slices of one piece (so that the client's
        reads really see the split).
    :param chunked: ``Transfer-Encoding: chunked`` (real servers); ``False`` ends the body by
        closing the connection.
    :param drop_after: close the connection abruptly after this many pieces.
    :param hang: after the pieces, keep the connection open, sending nothing, until the server
        closes.
    :param hold_before: with ``release``, wait before writing the piece of this number until
        ``release`` is set: a test that sends a program commands mid-stream lets the stream go on
        once they are answered, so that what the program writes does not depend on the machine's
        speed.
    :param release: the event ``hold_before`` waits for (set from the test's thread).
    :param coalesce: write consecutive pieces together, in writes of at least this many bytes,
        instead of one write per piece. The bytes are the same; a throughput benchmark uses it so
        that the client, not the server's per-write cost, sets the rate. Only without
        ``latency``, ``split`` and ``drop_after``, whose point is one write per piece.
    """

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    pieces: Sequence[bytes] = ()
    ttft: float = 0.0
    latency: float = 0.0
    split: int | list[int] | None = None
    split_pause: float = 0.0
    chunked: bool = True
    drop_after: int | None = None
    hang: bool = False
    content_type: str = "text/event-stream"
    coalesce: int | None = None
    hold_before: int | None = None
    release: threading.Event | None = None

    def __post_init__(self) -> None:
        if (self.hold_before is None) != (self.release is None):
            raise ValueError("hold_before and release go together")
        if self.coalesce and (self.latency or self.split or self.drop_after is not None):
            raise ValueError("coalesce cannot be combined with latency, split or drop_after")

    @classmethod
    def json(cls, status: int, payload: Any, headers: dict[str, str] | None = None) -> Reply:
        """A non-streaming JSON reply (what APIs send for errors)."""
        return cls(
            status=status,
            headers=dict(headers or {}),
            body=json.dumps(payload).encode(),
            content_type="application/json",
        )

    @classmethod
    def text(cls, status: int, text: str, headers: dict[str, str] | None = None) -> Reply:
        """A non-streaming plain-text (or empty) reply."""
        return cls(status=status, headers=dict(headers or {}), body=text.encode(), content_type="text/plain")


@dataclass(frozen=True)
class RecordedRequest:
    """What the server received."""

    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


Responder: TypeAlias = Callable[
    [RecordedRequest], "Reply | dict[str, Any] | Awaitable[Reply | dict[str, Any]]"
]
"""``respond(request) -> reply``: a server's reply computed from the request (sync or async)."""


class FakeServer(AbstractContextManager["FakeServer"]):
    """Serve scripted replies on ``127.0.0.1:<port>`` (an ephemeral port by default).

    Use as a context manager, or call :meth:`start` and :meth:`close`. Subclasses turn
    high-level step descriptions (dicts) into :class:`Reply` objects in :meth:`render`.

    :param replies: the initial queue.
    :param repeat: serve the last reply again when the queue runs dry (benchmarks); otherwise an
        empty queue answers 500 ``No more scripted replies``.
    :param respond: compute each reply from its request instead of taking the next one from
        the queue, for many clients at once whose requests arrive in no fixed order (sessions
        sharing one process, a benchmark). Sync or async; it runs on the server's event loop,
        so an async one may wait (for other requests, a test's signal) without blocking the
        others. Returns a :class:`Reply` or a step :meth:`render` knows.
    """

    def __init__(
        self,
        replies: Iterable[Reply | dict[str, Any]] = (),
        *,
        port: int = 0,
        repeat: bool = False,
        respond: Responder | None = None,
    ) -> None:
        self._respond_to = respond
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._port_wanted = port
        self._repeat = repeat
        self._last: Reply | None = None
        self._respond_to = respond
        self.requests: list[RecordedRequest] = []
        self._request_event = threading.Condition(self._lock)
        self._portal_cm: AbstractContextManager[BlockingPortal] | None = None
        self._portal: BlockingPortal | None = None
        self._stop: anyio.Event | None = None
        self._done: threading.Event = threading.Event()
        self.port = 0
        self.enqueue(*replies)

    # -- scripting -------------------------------------------------------------------------

    def render(self, step: dict[str, Any]) -> Reply:
        """Turn a high-level step into a :class:`Reply` (subclasses know their wire format)."""
        return reply_from_dict(step)

    def enqueue(self, *steps: Reply | dict[str, Any]) -> None:
        """Append replies to the script."""
        rendered = [step if isinstance(step, Reply) else self.render(step) for step in steps]
        with self._lock:
            self._queue.extend(rendered)

    async def _reply_to(self, request: RecordedRequest) -> Reply:
        if self._respond_to is None:
            return self._next_reply()
        step = self._respond_to(request)
        if inspect.isawaitable(step):
            step = await step
        return step if isinstance(step, Reply) else self.render(step)

    def _next_reply(self) -> Reply:
        with self._lock:
            if self._queue:
                self._last = self._queue.popleft()
                return self._last
            if self._repeat and self._last is not None:
                return self._last
        return Reply.json(
            500, {"error": {"type": "fake_server_error", "message": "No more scripted replies"}}
        )

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> list[RecordedRequest]:
        """Block until ``count`` requests arrived. :raises TimeoutError: if they did not."""
        with self._request_event:
            if not self._request_event.wait_for(lambda: len(self.requests) >= count, timeout):
                raise TimeoutError(f"expected {count} requests, got {len(self.requests)}")
            return list(self.requests)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    # -- life cycle ------------------------------------------------------------------------

    def start(self) -> FakeServer:
        self._portal_cm = start_blocking_portal(backend="asyncio")
        self._portal = self._portal_cm.__enter__()
        listener = self._portal.call(self._listen)
        self.port = listener.extra(anyio.abc.SocketAttribute.local_port)
        self._portal.start_task_soon(self._serve, listener)
        return self

    def close(self) -> None:
        if self._portal is None or self._portal_cm is None:
            return
        self._portal.call(self._shutdown)
        self._done.wait(5)
        self._portal_cm.__exit__(None, None, None)
        self._portal = None
        self._portal_cm = None

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def _listen(self) -> anyio.abc.SocketListener:
        self._stop = anyio.Event()
        return await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=self._port_wanted)

    async def _shutdown(self) -> None:
        assert self._stop is not None
        self._stop.set()

    async def _serve(self, listener: anyio.abc.SocketListener) -> None:
        assert self._stop is not None
        try:
            async with anyio.create_task_group() as group:

                async def accept() -> None:
                    await listener.serve(self._handle, task_group=group)

                group.start_soon(accept)
                await self._stop.wait()
                group.cancel_scope.cancel()
        finally:
            await listener.aclose()
            self._done.set()

    # -- one connection --------------------------------------------------------------------

    async def _handle(self, stream: anyio.abc.SocketStream) -> None:
        raw = stream.extra(anyio.abc.SocketAttribute.raw_socket)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        reader = BufferedByteReceiveStream(stream)
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    return
                with self._request_event:
                    self.requests.append(request)
                    self._request_event.notify_all()
                keep_alive = await self._respond(stream, await self._reply_to(request))
                if not keep_alive:
                    return
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, ConnectionError):
            return
        finally:
            await stream.aclose()

    async def _respond(self, stream: anyio.abc.SocketStream, reply: Reply) -> bool:
        streaming = reply.body is None
        lines = [
            f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Status')}",
            f"content-type: {reply.content_type}",
        ]
        if not streaming:
            assert reply.body is not None
            lines.append(f"content-length: {len(reply.body)}")
        elif reply.chunked:
            lines.append("transfer-encoding: chunked")
        else:
            lines.append("connection: close")
        if streaming:
            lines.append("cache-control: no-cache")
        lines.extend(f"{name}: {value}" for name, value in reply.headers.items())
        await stream.send(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        if not streaming:
            assert reply.body is not None
            if reply.body:
                await stream.send(reply.body)
            return True
        if reply.ttft:
            await anyio.sleep(reply.ttft)
        if reply.coalesce:
            for batch in _batches(reply.pieces, reply.coalesce):
                await stream.send(_frame(batch) if reply.chunked else batch)
            return await self._end_body(stream, reply)
        for number, piece in enumerate(reply.pieces):
            if reply.drop_after is not None and number >= reply.drop_after:
                _abort_connection(stream)
                return False
            if number == reply.hold_before and reply.release is not None:
                # Abandoned on cancel: a server closing mid-hold does not wait for the test.
                await anyio.to_thread.run_sync(reply.release.wait, abandon_on_cancel=True)
            if number and reply.latency:
                await anyio.sleep(reply.latency)
            for part_number, part in enumerate(_slices(piece, reply.split)):
                if part_number and reply.split_pause:
                    await anyio.sleep(reply.split_pause)
                await stream.send(_frame(part) if reply.chunked else part)
        if reply.drop_after is not None and reply.drop_after <= len(reply.pieces):
            _abort_connection(stream)
            return False
        return await self._end_body(stream, reply)

    async def _end_body(self, stream: anyio.abc.SocketStream, reply: Reply) -> bool:
        if reply.hang:
            await anyio.sleep_forever()
        if reply.chunked:
            await stream.send(b"0\r\n\r\n")
            return True
        return False


def _abort_connection(stream: anyio.abc.SocketStream) -> None:
    # SO_LINGER 0 makes close() send a reset: the client sees the connection die mid-body.
    raw = stream.extra(anyio.abc.SocketAttribute.raw_socket)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")


def _frame(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _batches(pieces: Sequence[bytes], size: int) -> Iterator[bytes]:
    batch: list[bytes] = []
    length = 0
    for piece in pieces:
        batch.append(piece)
        length += len(piece)
        if length >= size:
            yield b"".join(batch)
            batch, length = [], 0
    if batch:
        yield b"".join(batch)


def _slices(piece: bytes, split: int | list[int] | None) -> Iterator[bytes]:
    if not split:
        yield piece
        return
    sizes = [split] if isinstance(split, int) else split
    position = 0
    turn = 0
    while position < len(piece):
        size = max(1, sizes[turn % len(sizes)])
        yield piece[position : position + size]
        position += size
        turn += 1


async def _read_request(reader: BufferedByteReceiveStream) -> RecordedRequest | None:
    try:
        head = await reader.receive_until(b"\r\n\r\n", _MAX_HEADER_BYTES)
    except anyio.IncompleteRead:
        return None
    request_line, *header_lines = head.decode("latin-1").split("\r\n")
    method, path, _version = request_line.split(" ", 2)
    headers: dict[str, str] = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    body = await reader.receive_exactly(length) if length else b""
    return RecordedRequest(method=method, path=path, headers=headers, body=body)


def reply_from_dict(step: dict[str, Any]) -> Reply:
    """A :class:`Reply` from a JSON-friendly dict (script files): the generic keys only."""
    options = {key: step[key] for key in TIMING_KEYS if key in step}
    headers = dict(step.get("headers", {}))
    if "body" in step:
        body = step["body"]
        if isinstance(body, str):
            return Reply(
                status=step.get("status", 200), headers=headers, body=body.encode(), content_type="text/plain"
            )
        return Reply.json(step.get("status", 200), body, headers)
    if "sse" in step:
        pieces = (
            [piece.encode() for piece in step["sse"]]
            if isinstance(step["sse"], list)
            else [step["sse"].encode()]
        )
        return Reply(status=step.get("status", 200), headers=headers, pieces=pieces, **options)
    raise ValueError(f"cannot render step without 'body', 'sse' or a wire-format 'reply': {step!r}")


#: The step keys every server's ``render`` passes on to :class:`Reply` unchanged.
TIMING_KEYS = ("ttft", "latency", "split", "split_pause", "chunked", "drop_after", "hang", "coalesce")

_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    413: "Payload Too Large",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    529: "Overloaded",
}
