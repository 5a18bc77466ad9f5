"""Quick retries of a request that failed before its reply began, as the official SDKs retry:
the same over the lean client, httpx and the Anthropic SDK, against a real local server."""

from __future__ import annotations

import socket
from typing import Any

import anyio
import pytest

from pi_host.messages import TextContent
from pi_host.providers import AbortSignal, LlmContext, StreamOptions
from pi_host.providers._anthropic import AnthropicSdkTransport, stream
from pi_host.providers._http import (
    DEFAULT_MAX_RETRIES,
    Aborted,
    HttpRequest,
    HttpxTransport,
    ProviderFailure,
    Transport,
    open_with_retries,
    retry_delay_s,
)
from tests.fakeservers import AnthropicServer, anthropic_error, anthropic_reply
from tests.test_provider_anthropic import API_KEY, final, sonnet, use_transport


@pytest.fixture
def server() -> Any:
    with AnthropicServer() as running:
        yield running


@pytest.fixture(params=["lean", "httpx", "sdk"])
def transport_name(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    use_transport(monkeypatch, request.param)
    return str(request.param)


def transport_for(name: str, server: AnthropicServer) -> Transport:
    if name == "sdk":
        return AnthropicSdkTransport(api_key=API_KEY, oauth=False, base_url=server.base_url)
    return HttpxTransport("anthropic")


def request_to(server: AnthropicServer) -> HttpRequest:
    return HttpRequest(
        url=f"{server.base_url}/v1/messages",
        headers={"x-api-key": API_KEY, "anthropic-version": "2023-06-01"},
        body={"model": "m", "max_tokens": 10, "stream": True, "messages": []},
    )


class Sleeps:
    """Records the waits instead of waiting them (the policy is what is tested)."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


async def open_once(server: AnthropicServer, name: str, **options: Any) -> tuple[Any, Sleeps]:
    sleeps = Sleeps()
    response = await open_with_retries(
        transport_for(name, server),
        request_to(server),
        signal=AbortSignal(),
        sleep=sleeps,
        jitter=lambda: 0.5,
        **options,
    )
    await response.aclose()
    return response, sleeps


def test_the_backoff_is_the_sdks() -> None:
    assert DEFAULT_MAX_RETRIES == 2
    assert [retry_delay_s(n, None, 0.0) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert retry_delay_s(0, None, 0.999) == pytest.approx(0.5 * 0.75, rel=1e-3)  # jitter: up to -25 %
    assert retry_delay_s(3, 250, 0.5) == 0.25  # the server's wish, as given


async def test_two_overloads_then_a_reply(server: AnthropicServer, transport_name: str) -> None:
    server.enqueue(
        anthropic_error(529, "Overloaded"), anthropic_error(529, "Overloaded"), anthropic_reply("hi")
    )
    response, sleeps = await open_once(server, transport_name)
    assert response.status == 200
    assert len(server.requests) == 3
    assert sleeps.waits == [0.5 * 0.875, 1.0 * 0.875]


async def test_retry_after_is_honoured(server: AnthropicServer, transport_name: str) -> None:
    server.enqueue(
        anthropic_error(429, "slow down", headers={"retry-after-ms": "250"}),
        anthropic_error(429, "slow down", headers={"retry-after": "2"}),
        anthropic_reply("hi"),
    )
    _, sleeps = await open_once(server, transport_name)
    assert sleeps.waits == [0.25, 2.0]


async def test_a_wait_longer_than_a_minute_is_left_to_the_agent(
    server: AnthropicServer, transport_name: str
) -> None:
    server.enqueue(anthropic_error(429, "quota", headers={"retry-after": "3600"}), anthropic_reply("no"))
    with pytest.raises(ProviderFailure) as raised:
        await open_once(server, transport_name)
    assert raised.value.retry_after_ms == 3_600_000
    assert len(server.requests) == 1


async def test_x_should_retry_overrides_the_status(server: AnthropicServer, transport_name: str) -> None:
    server.enqueue(anthropic_error(529, "Overloaded", headers={"x-should-retry": "false"}))
    with pytest.raises(ProviderFailure):
        await open_once(server, transport_name)
    assert len(server.requests) == 1
    server.enqueue(
        anthropic_error(400, "try again", headers={"x-should-retry": "true"}), anthropic_reply("yes")
    )
    response, _ = await open_once(server, transport_name)
    assert response.status == 200 and len(server.requests) == 3


async def test_client_errors_are_not_retried(server: AnthropicServer, transport_name: str) -> None:
    server.enqueue(anthropic_error(401, "bad key"))
    with pytest.raises(ProviderFailure):
        await open_once(server, transport_name)
    assert len(server.requests) == 1


async def test_max_retries_bounds_the_attempts(server: AnthropicServer, transport_name: str) -> None:
    server.enqueue(*[anthropic_error(503, "unavailable") for _ in range(4)])
    with pytest.raises(ProviderFailure):
        await open_once(server, transport_name, max_retries=3)
    assert len(server.requests) == 4
    server.enqueue(anthropic_error(503, "unavailable"))
    with pytest.raises(ProviderFailure):
        await open_once(server, transport_name, max_retries=0)
    assert len(server.requests) == 5


async def test_a_refused_connection_is_retried(transport_name: str) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sleeps = Sleeps()
    request = HttpRequest(url=f"http://127.0.0.1:{port}/v1/messages", headers={"x-api-key": API_KEY}, body={})
    transport: Transport = (
        AnthropicSdkTransport(api_key=API_KEY, oauth=False, base_url=f"http://127.0.0.1:{port}")
        if transport_name == "sdk"
        else HttpxTransport("anthropic")
    )
    with pytest.raises(ProviderFailure, match="Connection error"):
        await open_with_retries(transport, request, signal=AbortSignal(), sleep=sleeps, jitter=lambda: 0.0)
    assert sleeps.waits == [0.5, 1.0]


async def test_an_abort_ends_the_wait(server: AnthropicServer, transport_name: str) -> None:
    server.enqueue(anthropic_error(529, "Overloaded", headers={"retry-after": "30"}), anthropic_reply("no"))
    signal = AbortSignal()

    async def abort_then_wait(seconds: float) -> None:
        signal.abort()
        await anyio.sleep(seconds)

    with anyio.fail_after(10):
        with pytest.raises(Aborted):
            await open_with_retries(
                transport_for(transport_name, server),
                request_to(server),
                signal=signal,
                sleep=abort_then_wait,
            )
    assert len(server.requests) == 1


async def test_a_reply_that_broke_off_is_not_retried(server: AnthropicServer, transport_name: str) -> None:
    server.enqueue(
        anthropic_reply("This answer will be cut off", chunk_size=4, drop_after=3), anthropic_reply("no")
    )
    events = [
        event
        async for event in stream(
            sonnet(server), LlmContext(messages=[]), StreamOptions(api_key=API_KEY, max_retries=2)
        )
    ]
    message = final(events)
    assert message.stop_reason == "error" and len(server.requests) == 1


async def test_the_stream_retries_by_default(server: AnthropicServer, transport_name: str) -> None:
    server.enqueue(
        anthropic_error(529, "Overloaded", headers={"retry-after-ms": "1"}),
        anthropic_error(529, "Overloaded", headers={"retry-after-ms": "1"}),
        anthropic_reply("after two overloads"),
    )
    events = [
        event
        async for event in stream(sonnet(server), LlmContext(messages=[]), StreamOptions(api_key=API_KEY))
    ]
    assert final(events).content == [TextContent(text="after two overloads")]
    assert len(server.requests) == 3
