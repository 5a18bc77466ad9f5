"""Both HTTP clients keep one pool per event loop: connections are reused, then closed."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import anyio
import anyio.abc
import pytest

from pi_host.messages import DoneEvent, UserMessage
from pi_host.providers import LlmContext, Model, StreamOptions
from pi_host.providers._anthropic import TRANSPORT_ENV, stream
from pi_host.providers._lean_http import LEAN_HTTP_ENV
from tests.fakeservers import AnthropicServer, RecordedRequest, Reply, anthropic_reply


class CountingServer(AnthropicServer):
    """Counts the TCP connections it accepted and how many are still open."""

    def __init__(self) -> None:
        super().__init__()
        self.accepted = 0
        self.open = 0
        self._count_lock = threading.Lock()
        self.all_closed = threading.Event()

    async def _handle(self, stream: anyio.abc.SocketStream) -> None:
        with self._count_lock:
            self.accepted += 1
            self.open += 1
            self.all_closed.clear()
        try:
            await super()._handle(stream)
        finally:
            with self._count_lock:
                self.open -= 1
                if not self.open:
                    self.all_closed.set()


@pytest.fixture(params=["lean", "httpx"])
def server(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[CountingServer]:
    """A counting server, reached through either HTTP client (both pool their connections)."""
    monkeypatch.setenv(TRANSPORT_ENV, "httpx")
    monkeypatch.delenv(LEAN_HTTP_ENV, raising=False)
    if request.param == "httpx":
        monkeypatch.setenv(LEAN_HTTP_ENV, "0")
    with CountingServer() as running:
        yield running  # type: ignore[misc]


def model(server: AnthropicServer) -> Model:
    return Model(
        id="fake",
        name="Fake",
        api="anthropic-messages",
        provider="anthropic",
        base_url=server.base_url,
        context_window=200_000,
        max_tokens=1000,
    )


async def ask(server: AnthropicServer) -> DoneEvent:
    context = LlmContext(system_prompt="", messages=[UserMessage(content="Hi")], tools=[])
    events = [event async for event in stream(model(server), context, StreamOptions(api_key="key"))]
    assert isinstance(events[-1], DoneEvent), events[-1]
    return events[-1]


def test_requests_in_one_event_loop_share_a_keep_alive_connection(server: CountingServer) -> None:
    # Chunked replies (the fake server's default) leave the connection open, as real providers do.
    server.enqueue(anthropic_reply("one"), anthropic_reply("two"))

    async def main() -> list[str]:
        return [(await ask(server)).message.content[0].text for _ in range(2)]  # type: ignore[union-attr]

    assert anyio.run(main) == ["one", "two"]
    assert server.accepted == 1


def test_the_pooled_connection_is_closed_when_its_event_loop_ends(server: CountingServer) -> None:
    server.enqueue(anthropic_reply("one"), anthropic_reply("two"))
    anyio.run(ask, server)
    assert server.all_closed.wait(5), "the kept-alive connection outlived its event loop"
    # A new event loop gets a client (and a connection) of its own.
    anyio.run(ask, server)
    assert server.accepted == 2
    assert server.all_closed.wait(5)


async def test_a_closed_connection_is_replaced(server: CountingServer) -> None:
    # Without chunked encoding the server closes the connection after the body.
    server.enqueue(anthropic_reply("one", chunked=False), anthropic_reply("two", chunked=False))
    await ask(server)
    await ask(server)
    assert server.accepted == 2


def test_more_streams_at_once_than_a_default_pool_allows(monkeypatch: pytest.MonkeyPatch) -> None:
    # Many sessions in one process (issue 21): httpx's default pool opens 100 connections, so a
    # 101st session's request waited for another session's stream to end (up to the timeout).
    # The server answers no request before all of them arrived.
    count = 120
    arrived = 0
    all_arrived: anyio.Event | None = None

    async def respond(request: RecordedRequest) -> Reply:
        nonlocal arrived, all_arrived
        if all_arrived is None:
            all_arrived = anyio.Event()  # made on the server's loop
        arrived += 1
        if arrived == count:
            all_arrived.set()
        await all_arrived.wait()
        return anthropic_reply("together")

    for client in ("lean", "httpx"):
        arrived, all_arrived = 0, None
        monkeypatch.setenv(TRANSPORT_ENV, "httpx")
        monkeypatch.setenv(LEAN_HTTP_ENV, "0" if client == "httpx" else "1")
        with AnthropicServer(respond=respond) as server:

            async def main(server: AnthropicServer = server) -> list[DoneEvent]:
                done: list[DoneEvent] = []

                async def one() -> None:
                    done.append(await ask(server))

                with anyio.fail_after(60):
                    async with anyio.create_task_group() as tg:
                        for _ in range(count):
                            tg.start_soon(one)
                return done

            assert len(anyio.run(main)) == count, client
