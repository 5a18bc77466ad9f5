"""The anthropic-messages provider over real HTTP against a local Anthropic-speaking server.

Every streaming test runs through every transport (the lean HTTP client, httpx, the official
SDK): they share the wire mapping and must behave identically.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import weakref
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from pi_host.messages import (
    AssistantMessage,
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from pi_host.providers import (
    AbortSignal,
    LlmContext,
    Model,
    ModelCost,
    StreamOptions,
    ToolSpec,
    _anthropic_wire,
)
from pi_host.providers._anthropic import TRANSPORT_ENV, stream
from pi_host.providers._anthropic_wire import build_request, convert_messages, normalize_tool_call_id
from pi_host.providers._errors import is_context_overflow, is_transient_error, retry_after_ms
from pi_host.providers._lean_http import LEAN_HTTP_ENV
from tests.fakeservers import (
    AnthropicServer,
    Reply,
    anthropic_error,
    anthropic_events,
    anthropic_reply,
    sse_event,
)
from tests.provider_support import abort_after_first_delta

API_KEY = "sk-ant-api03-SECRET-test-key-0123456789"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


#: The ways a request can go: the lean HTTP client (the default), httpx, the official SDK.
TRANSPORTS = {
    "lean": {TRANSPORT_ENV: "httpx"},
    "httpx": {TRANSPORT_ENV: "httpx", LEAN_HTTP_ENV: "0"},
    "sdk": {TRANSPORT_ENV: "sdk"},
}


def use_transport(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.delenv(LEAN_HTTP_ENV, raising=False)
    for variable, value in TRANSPORTS[name].items():
        monkeypatch.setenv(variable, value)


@pytest.fixture(params=list(TRANSPORTS))
def transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    use_transport(monkeypatch, request.param)
    return str(request.param)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_OAUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_CUSTOM_HEADERS",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[AnthropicServer]:
    with AnthropicServer() as running:
        yield running


def sonnet(server: AnthropicServer | None = None, **update: Any) -> Model:
    model = Model(
        id="claude-sonnet-4-5",
        name="Claude Sonnet 4.5",
        api="anthropic-messages",
        provider="anthropic",
        base_url=server.base_url if server else "https://api.anthropic.com",
        reasoning=True,
        input=["text", "image"],
        cost=ModelCost(input=3, output=15, cache_read=0.3, cache_write=3.75),
        context_window=200_000,
        max_tokens=64_000,
    )
    return model.model_copy(update=update)


def context(
    *messages: Any, system: str = "You are helpful.", tools: list[ToolSpec] | None = None
) -> LlmContext:
    return LlmContext(
        system_prompt=system, messages=list(messages or [UserMessage(content="Hi")]), tools=tools or []
    )


async def collect(model: Model, ctx: LlmContext, **options: Any) -> list[AssistantMessageEvent]:
    options.setdefault("api_key", API_KEY)
    # Each test scripts the server's answers one by one: the transport's quick retries of
    # failed requests are off unless a test asks for them (tests/test_provider_retries.py).
    options.setdefault("max_retries", 0)
    return [event async for event in stream(model, ctx, StreamOptions(**options))]


def final(events: list[AssistantMessageEvent]) -> AssistantMessage:
    last = events[-1]
    assert isinstance(last, DoneEvent | ErrorEvent)
    terminal = [e for e in events if isinstance(e, DoneEvent | ErrorEvent)]
    assert len(terminal) == 1, "exactly one done or error event"
    return last.message if isinstance(last, DoneEvent) else last.error


def types(events: list[AssistantMessageEvent]) -> list[str]:
    return [event.type for event in events]


READ_TOOL = ToolSpec(
    name="read",
    description="Read a file",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


# -- streaming ---------------------------------------------------------------------------------


async def test_text_reply_split_into_single_bytes(server: AnthropicServer, transport: str) -> None:
    server.enqueue(
        anthropic_reply(
            "Hello, wörld! ✨", chunk_size=4, split=1, usage={"input_tokens": 12, "output_tokens": 7}
        )
    )
    events = await collect(sonnet(server), context())
    assert types(events) == [
        "start",
        "text_start",
        "text_delta",
        "text_delta",
        "text_delta",
        "text_delta",
        "text_end",
        "done",
    ]
    deltas = [e.delta for e in events if e.type == "text_delta"]
    assert deltas == ["Hell", "o, w", "örld", "! ✨"]
    message = final(events)
    assert message.content == [TextContent(text="Hello, wörld! ✨")]
    assert message.stop_reason == "stop"
    assert message.response_id == "msg_fake01"
    assert (message.usage.input, message.usage.output, message.usage.total_tokens) == (12, 7, 19)
    assert message.usage.cost.total == pytest.approx(12 * 3e-6 + 7 * 15e-6)
    assert events[3].partial.content == [TextContent(text="Hello, w")]  # each partial is a snapshot


async def test_awkward_chunk_sizes_and_pauses(server: AnthropicServer, transport: str) -> None:
    server.enqueue(
        anthropic_reply(
            "The quick brown fox jumps over the lazy dog",
            chunk_size=5,
            split=[7, 1, 13, 2],
            split_pause=0.001,
        )
    )
    message = final(await collect(sonnet(server), context()))
    assert message.content == [TextContent(text="The quick brown fox jumps over the lazy dog")]


async def test_thinking_redacted_thinking_text_and_several_tool_calls(
    server: AnthropicServer, transport: str
) -> None:
    server.enqueue(
        anthropic_reply(
            [
                {"type": "thinking", "thinking": "The user wants two files.", "signature": "EqQBCgIYAhIM"},
                {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw"},
                {"type": "text", "text": "Reading both."},
                {"type": "tool_use", "id": "toolu_01A", "name": "read", "input": {"path": "a.txt"}},
                {
                    "type": "tool_use",
                    "id": "toolu_01B",
                    "name": "read",
                    "input": {"path": "b.txt", "limit": 20},
                },
            ],
            stop_reason="tool_use",
            chunk_size=3,
            split=11,
        )
    )
    events = await collect(sonnet(server), context(tools=[READ_TOOL]), reasoning="medium")
    message = final(events)
    assert message.stop_reason == "toolUse"
    assert message.content == [
        ThinkingContent(thinking="The user wants two files.", thinking_signature="EqQBCgIYAhIM"),
        ThinkingContent(
            thinking="[Reasoning redacted]",
            thinking_signature="EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw",
            redacted=True,
        ),
        TextContent(text="Reading both."),
        ToolCall(id="toolu_01A", name="read", arguments={"path": "a.txt"}),
        ToolCall(id="toolu_01B", name="read", arguments={"path": "b.txt", "limit": 20}),
    ]
    ends = [e for e in events if e.type == "toolcall_end"]
    assert [e.content_index for e in ends] == [3, 4]
    assert ends[1].tool_call == ToolCall(
        id="toolu_01B", name="read", arguments={"path": "b.txt", "limit": 20}
    )
    # Partial arguments grow while the JSON streams in.
    partial_args = [
        e.partial.content[4].arguments for e in events if e.type == "toolcall_delta" and e.content_index == 4
    ]
    assert {"path": "b"} in partial_args or {"path": "b."} in partial_args
    assert partial_args[-1] == {"path": "b.txt", "limit": 20}
    thinking_end = next(e for e in events if e.type == "thinking_end")
    assert thinking_end.content == "The user wants two files."


@pytest.mark.parametrize(
    ("wire", "expected"),
    [
        ("end_turn", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "toolUse"),
        ("stop_sequence", "stop"),
        ("pause_turn", "stop"),
    ],
)
async def test_stop_reasons(server: AnthropicServer, transport: str, wire: str, expected: str) -> None:
    server.enqueue(anthropic_reply("ok", stop_reason=wire))
    events = await collect(sonnet(server), context())
    assert isinstance(events[-1], DoneEvent)
    assert events[-1].reason == expected
    assert final(events).stop_reason == expected


@pytest.mark.parametrize("wire", ["refusal", "sensitive"])
async def test_refusal_stop_reasons_end_as_errors(server: AnthropicServer, transport: str, wire: str) -> None:
    server.enqueue(anthropic_reply("I can't help with that.", stop_reason=wire))
    events = await collect(sonnet(server), context())
    message = final(events)
    assert isinstance(events[-1], ErrorEvent)
    assert message.stop_reason == "error"
    assert message.error_message == f"Provider stop_reason: {wire}"
    assert message.content == [TextContent(text="I can't help with that.")]
    assert not is_transient_error(message)


async def test_unknown_stop_reason_is_an_error(server: AnthropicServer, transport: str) -> None:
    server.enqueue(anthropic_reply("ok", stop_reason="brand_new_reason"))
    message = final(await collect(sonnet(server), context()))
    assert message.stop_reason == "error"
    assert message.error_message == "Unhandled stop reason: brand_new_reason"


async def test_usage_with_cache_reads_and_writes(server: AnthropicServer, transport: str) -> None:
    usage = {
        "input_tokens": 100,
        "output_tokens": 50,
        "cache_read_input_tokens": 2000,
        "cache_creation_input_tokens": 300,
    }
    server.enqueue(anthropic_reply("cached", usage=usage))
    message = final(await collect(sonnet(server), context()))
    assert message.usage.model_dump(exclude={"cost"}) == {
        "input": 100,
        "output": 50,
        "cache_read": 2000,
        "cache_write": 300,
        "total_tokens": 2450,
    }
    cost = message.usage.cost
    assert (cost.input, cost.output, cost.cache_read, cost.cache_write) == pytest.approx(
        (100 * 3e-6, 50 * 15e-6, 2000 * 0.3e-6, 300 * 3.75e-6)
    )
    assert cost.total == pytest.approx(cost.input + cost.output + cost.cache_read + cost.cache_write)


async def test_empty_message_is_a_valid_reply(server: AnthropicServer, transport: str) -> None:
    server.enqueue(anthropic_reply([]))
    events = await collect(sonnet(server), context())
    assert types(events) == ["start", "done"]
    assert final(events).content == []


async def test_both_transports_emit_identical_events(
    server: AnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = [
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        {"type": "text", "text": "Hello"},
        {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "x"}},
    ]
    runs = []
    for name in TRANSPORTS:
        use_transport(monkeypatch, name)
        server.enqueue(anthropic_reply(script, stop_reason="tool_use", chunk_size=2))
        events = await collect(sonnet(server), context(tools=[READ_TOOL]))
        runs.append([_without_timestamp(e.to_json_dict()) for e in events])
    assert runs[0] == runs[1] == runs[2]
    first, second, third = (request.json() for request in server.requests)
    assert first == second == third


def _without_timestamp(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_timestamp(v) for k, v in value.items() if k != "timestamp"}
    if isinstance(value, list):
        return [_without_timestamp(v) for v in value]
    return value


# -- faults ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "retryable", "overflow"),
    [
        (
            anthropic_error(429, "Number of request tokens has exceeded your per-minute rate limit"),
            True,
            False,
        ),
        (anthropic_error(529, "Overloaded"), True, False),
        (anthropic_error(500, "Internal server error"), True, False),
        (anthropic_error(401, "invalid x-api-key"), False, False),
        (anthropic_error(400, "prompt is too long: 213462 tokens > 200000 maximum"), False, True),
        (anthropic_error(413, "Request exceeds the maximum size"), False, True),
        (
            anthropic_error(
                400, "Your credit balance is too low to access the Anthropic API. Go to Plans & Billing."
            ),
            False,
            False,
        ),
    ],
    ids=["429", "529", "500", "401", "400-overflow", "413", "400-billing"],
)
async def test_http_errors(
    server: AnthropicServer, transport: str, reply: Reply, retryable: bool, overflow: bool
) -> None:
    server.enqueue(reply)
    events = await collect(sonnet(server), context())
    assert types(events) == ["error"]
    message = final(events)
    assert message.stop_reason == "error"
    assert reply.body is not None
    body = json.dumps(json.loads(reply.body), separators=(",", ":"))
    assert message.error_message == f"{reply.status} {body}"
    assert is_transient_error(message, 200_000) is retryable
    assert is_context_overflow(message, 200_000) is overflow


async def test_retry_after_is_kept_on_the_message(server: AnthropicServer, transport: str) -> None:
    server.enqueue(anthropic_error(429, "rate limited", headers={"retry-after": "7"}))
    message = final(await collect(sonnet(server), context()))
    assert retry_after_ms(message) == 7000
    assert json.loads(message.to_json())["retryAfterMs"] == 7000
    server.enqueue(anthropic_error(429, "rate limited", headers={"retry-after-ms": "1500"}))
    assert retry_after_ms(final(await collect(sonnet(server), context()))) == 1500


async def test_transport_retries_when_asked(server: AnthropicServer, transport: str) -> None:
    server.enqueue(
        anthropic_error(529, "Overloaded", headers={"retry-after-ms": "1"}), anthropic_reply("finally")
    )
    message = final(await collect(sonnet(server), context(), max_retries=2))
    assert message.content == [TextContent(text="finally")]
    assert len(server.requests) == 2


async def test_two_quick_retries_by_default(server: AnthropicServer, transport: str) -> None:
    server.enqueue(
        anthropic_error(529, "Overloaded", headers={"retry-after-ms": "1"}),
        anthropic_error(529, "Overloaded", headers={"retry-after-ms": "1"}),
        anthropic_reply("third time"),
    )
    message = final(await collect(sonnet(server), context(), max_retries=None))
    assert message.content == [TextContent(text="third time")]
    assert len(server.requests) == 3


async def test_sse_error_event_mid_stream(server: AnthropicServer, transport: str) -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    pieces = anthropic_events([{"type": "text", "text": "Partial answer"}], stop=False)
    server.enqueue(Reply(pieces=[*pieces, sse_event("error", error)]))
    events = await collect(sonnet(server), context())
    message = final(events)
    assert isinstance(events[-1], ErrorEvent)
    assert message.stop_reason == "error"
    assert message.error_message == json.dumps(error)
    assert message.content == [TextContent(text="Partial answer")]
    assert is_transient_error(message)


async def test_connection_dropped_mid_stream(server: AnthropicServer, transport: str) -> None:
    server.enqueue(anthropic_reply("This answer will be cut off in the middle", chunk_size=4, drop_after=6))
    events = await collect(sonnet(server), context())
    message = final(events)
    assert message.stop_reason == "error"
    assert message.error_message is not None
    assert message.error_message.startswith("Connection lost while streaming the response")
    assert message.content and isinstance(message.content[0], TextContent)
    assert message.content[0].text.startswith("This")
    assert is_transient_error(message)


async def test_stream_ending_before_message_stop(server: AnthropicServer, transport: str) -> None:
    server.enqueue(anthropic_reply("truncated", stop=False, chunked=False))
    message = final(await collect(sonnet(server), context()))
    assert message.error_message == "Anthropic stream ended before message_stop"
    assert message.content == [TextContent(text="truncated")]
    assert is_transient_error(message)


async def test_empty_body(server: AnthropicServer, transport: str) -> None:
    server.enqueue(Reply(pieces=[]))
    events = await collect(sonnet(server), context())
    assert types(events) == ["start", "error"]
    message = final(events)
    assert message.error_message == "Anthropic stream ended without a message_start event"
    assert is_transient_error(message)


async def test_malformed_sse_data(server: AnthropicServer, transport: str) -> None:
    pieces = anthropic_events([{"type": "text", "text": "Hi"}])
    broken = (
        b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": nope}\n\n'
    )
    server.enqueue(Reply(pieces=[*pieces[:4], broken, *pieces[4:]]))
    message = final(await collect(sonnet(server), context()))
    assert message.stop_reason == "error"
    assert message.error_message is not None
    assert message.error_message.startswith("Could not parse Anthropic SSE event content_block_delta:")
    assert not is_transient_error(message)


async def test_junk_lines_and_unknown_events_are_ignored(server: AnthropicServer, transport: str) -> None:
    pieces = anthropic_events([{"type": "text", "text": "Fine"}])
    junk = [
        b"this line has no colon at all\n",
        b": a comment\n\n",
        sse_event("mystery_event", {"type": "mystery"}),
    ]
    server.enqueue(Reply(pieces=[pieces[0], *junk, *pieces[1:]]))
    message = final(await collect(sonnet(server), context()))
    assert message.content == [TextContent(text="Fine")]
    assert message.stop_reason == "stop"


async def test_tool_call_arguments_that_are_not_valid_json(server: AnthropicServer, transport: str) -> None:
    # As in pi, a sloppy argument text is not a stream failure: the arguments are repaired or
    # parsed as far as they go, and the tool's validation reports what is missing to the model.
    server.enqueue(
        anthropic_reply(
            [
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "read",
                    "input_json": '{"path": "C:\\dir\\x.txt", "limit": 1',
                },
                {"type": "tool_use", "id": "toolu_2", "name": "read", "input_json": "not json at all"},
            ],
            stop_reason="tool_use",
        )
    )
    events = await collect(sonnet(server), context(tools=[READ_TOOL]))
    message = final(events)
    assert isinstance(events[-1], DoneEvent)
    assert message.content == [
        ToolCall(id="toolu_1", name="read", arguments={"path": "C:\\dir\\x.txt", "limit": 1}),
        ToolCall(id="toolu_2", name="read", arguments={}),
    ]


async def test_connection_refused(transport: str) -> None:
    with AnthropicServer() as closed:
        url = closed.base_url
    model = sonnet().model_copy(update={"base_url": url})
    events = await collect(model, context())
    message = final(events)
    assert types(events) == ["error"]
    assert message.error_message is not None
    assert message.error_message.startswith("Connection error")
    assert is_transient_error(message)


async def test_missing_api_key(transport: str) -> None:
    events = await collect(sonnet(), context(), api_key=None)
    assert final(events).error_message == "No API key for provider: anthropic"


async def test_api_key_from_environment(
    server: AnthropicServer, transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    server.enqueue(anthropic_reply("ok"))
    await collect(sonnet(server), context(), api_key=None)
    assert server.requests[0].headers["x-api-key"] == "sk-ant-from-env"


# -- abort -------------------------------------------------------------------------------------


async def test_abort_mid_stream_stops_at_once(server: AnthropicServer, transport: str) -> None:
    # The server sends the first token, then stalls; the abort must not wait for more.
    pieces = anthropic_events([{"type": "text", "text": "one two three four"}], chunk_size=4)
    first_delta_at = next(i for i, piece in enumerate(pieces) if b"text_delta" in piece)
    server.enqueue(Reply(pieces=pieces[: first_delta_at + 1], hang=True))
    events, elapsed = await abort_after_first_delta(stream, sonnet(server), context(), API_KEY)
    assert elapsed < 10  # the server never sends the rest: a stop, not a speed, is checked
    assert isinstance(events[-1], ErrorEvent)
    assert events[-1].reason == "aborted"
    message = final(events)
    assert message.stop_reason == "aborted"
    assert message.error_message == "Request was aborted"
    assert message.content == [TextContent(text="one ")]


async def test_abort_while_waiting_for_the_first_byte(server: AnthropicServer, transport: str) -> None:
    server.enqueue(anthropic_reply("late", ttft=30.0))
    signal = AbortSignal()

    async def abort_when_requested() -> None:
        await anyio.to_thread.run_sync(server.wait_for_requests, 1)
        signal.abort()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(abort_when_requested)
            events = await collect(sonnet(server), context(), signal=signal)
    assert final(events).stop_reason == "aborted"


async def test_already_aborted_signal(server: AnthropicServer, transport: str) -> None:
    signal = AbortSignal()
    signal.abort()
    events = await collect(sonnet(server), context(), signal=signal)
    assert types(events) == ["error"]
    assert final(events).stop_reason == "aborted"


async def test_consumer_breaking_early_releases_the_connection(
    server: AnthropicServer, transport: str
) -> None:
    server.enqueue(
        anthropic_reply("a long story " * 20, chunk_size=3, latency=0.001), anthropic_reply("again")
    )
    generator = stream(sonnet(server), context(), StreamOptions(api_key=API_KEY))
    async for event in generator:
        if event.type == "text_delta":
            break
    await generator.aclose()  # type: ignore[attr-defined]
    assert final(await collect(sonnet(server), context())).content == [TextContent(text="again")]


# -- hooks -------------------------------------------------------------------------------------


async def test_on_payload_replacement_and_on_response(server: AnthropicServer, transport: str) -> None:
    server.enqueue(anthropic_reply("ok", headers={"x-request-id": "req_1"}))
    seen: dict[str, Any] = {}

    async def on_payload(payload: Any, model: Model) -> Any:
        seen["payload"] = payload
        return {**payload, "metadata": {"user_id": "u-1"}}

    async def on_response(status: int, headers: dict[str, str], model: Model) -> None:
        seen["status"], seen["header"] = status, headers.get("x-request-id")

    await collect(sonnet(server), context(), on_payload=on_payload, on_response=on_response)
    assert seen["payload"]["model"] == "claude-sonnet-4-5"
    assert server.requests[0].json()["metadata"] == {"user_id": "u-1"}
    assert (seen["status"], seen["header"]) == (200, "req_1")


async def test_a_hook_that_raises_ends_the_stream_as_an_error(
    server: AnthropicServer, transport: str
) -> None:
    async def on_payload(payload: Any, model: Model) -> Any:
        raise RuntimeError("policy plugin exploded")

    events = await collect(sonnet(server), context(), on_payload=on_payload)
    assert final(events).error_message == "policy plugin exploded"
    assert server.requests == []


# -- the request -------------------------------------------------------------------------------


async def test_conversation_round_trips_without_loss(server: AnthropicServer, transport: str) -> None:
    messages: list[Any] = [
        UserMessage(
            content=[
                TextContent(text="What is in this picture?"),
                ImageContent(data=PNG, mime_type="image/png"),
            ]
        ),
        AssistantMessage(
            content=[
                ThinkingContent(thinking="Let me look at the files.", thinking_signature="sig-A"),
                ThinkingContent(
                    thinking="[Reasoning redacted]", thinking_signature="opaque-B", redacted=True
                ),
                TextContent(text="I'll check two files."),
                ToolCall(id="toolu_01", name="read", arguments={"path": "a.txt"}),
                ToolCall(id="toolu_02", name="read", arguments={"path": "img.png", "nested": {"k": [1, 2]}}),
            ],
            api="anthropic-messages",
            provider="anthropic",
            model="claude-sonnet-4-5",
            stop_reason="toolUse",
        ),
        ToolResultMessage(
            tool_call_id="toolu_01", tool_name="read", content=[TextContent(text="alpha\nbeta")]
        ),
        ToolResultMessage(
            tool_call_id="toolu_02",
            tool_name="read",
            content=[ImageContent(data=PNG, mime_type="image/png")],
            is_error=False,
        ),
        AssistantMessage(  # another provider's reply: thinking becomes text, the id is normalised
            content=[
                ThinkingContent(thinking="Other model's reasoning", thinking_signature="reasoning_content"),
                ToolCall(id="call_9|fc_abc+/=", name="ls", arguments={}),
            ],
            api="openai-completions",
            provider="local",
            model="qwen",
            stop_reason="toolUse",
        ),
        ToolResultMessage(
            tool_call_id="call_9|fc_abc+/=",
            tool_name="ls",
            content=[TextContent(text="denied")],
            is_error=True,
        ),
        AssistantMessage(
            content=[TextContent(text="half a sent")], stop_reason="aborted", provider="anthropic"
        ),
        UserMessage(content="Thanks, continue."),
    ]
    server.enqueue(anthropic_reply("Done."))
    await collect(sonnet(server), context(*messages, tools=[READ_TOOL]), reasoning="high")
    body = server.requests[0].json()
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    ephemeral = {"type": "ephemeral"}
    assert body == {
        "model": "claude-sonnet-4-5",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "What is in this picture?"}, image]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Let me look at the files.", "signature": "sig-A"},
                    {"type": "redacted_thinking", "data": "opaque-B"},
                    {"type": "text", "text": "I'll check two files."},
                    {"type": "tool_use", "id": "toolu_01", "name": "read", "input": {"path": "a.txt"}},
                    {
                        "type": "tool_use",
                        "id": "toolu_02",
                        "name": "read",
                        "input": {"path": "img.png", "nested": {"k": [1, 2]}},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_01",
                        "content": "alpha\nbeta",
                        "is_error": False,
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_02",
                        "content": [{"type": "text", "text": "(see attached image)"}, image],
                        "is_error": False,
                    },
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Other model's reasoning"},
                    {"type": "tool_use", "id": "call_9_fc_abc___", "name": "ls", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "call_9_fc_abc___",
                        "content": "denied",
                        "is_error": True,
                    }
                ],
            },
            {
                "role": "user",
                "content": [{"type": "text", "text": "Thanks, continue.", "cache_control": ephemeral}],
            },
        ],
        "max_tokens": 48_384,
        "stream": True,
        "system": [{"type": "text", "text": "You are helpful.", "cache_control": ephemeral}],
        "tools": [
            {
                "name": "read",
                "description": "Read a file",
                "eager_input_streaming": True,
                "input_schema": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"],
                },
                "cache_control": ephemeral,
            }
        ],
        "thinking": {"type": "enabled", "budget_tokens": 16_384, "display": "summarized"},
    }
    headers = server.requests[0].headers
    assert headers["anthropic-version"] == "2023-06-01"
    assert headers["x-api-key"] == API_KEY
    assert "authorization" not in headers
    assert headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"


async def test_a_streamed_reply_replays_exactly(server: AnthropicServer, transport: str) -> None:
    script = [
        {"type": "thinking", "thinking": "Plan: read it.", "signature": "sig-xyz"},
        {"type": "text", "text": "Reading."},
        {
            "type": "tool_use",
            "id": "toolu_77",
            "name": "read",
            "input": {"path": "ü.txt", "flags": [True, None]},
        },
    ]
    server.enqueue(anthropic_reply(script, stop_reason="tool_use", chunk_size=3), anthropic_reply("ok"))
    reply = final(await collect(sonnet(server), context(tools=[READ_TOOL]), reasoning="low"))
    result = ToolResultMessage(tool_call_id="toolu_77", tool_name="read", content=[TextContent(text="data")])
    await collect(
        sonnet(server), context(UserMessage(content="Hi"), reply, result, tools=[READ_TOOL]), reasoning="low"
    )
    replayed = server.requests[1].json()["messages"][1]
    assert replayed == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Plan: read it.", "signature": "sig-xyz"},
            {"type": "text", "text": "Reading."},
            {
                "type": "tool_use",
                "id": "toolu_77",
                "name": "read",
                "input": {"path": "ü.txt", "flags": [True, None]},
            },
        ],
    }


async def test_oauth_tokens_speak_like_claude_code(server: AnthropicServer, transport: str) -> None:
    token = "sk-ant-oat01-SUBSCRIPTION-token"
    server.enqueue(
        anthropic_reply(
            [{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "x"}}],
            stop_reason="tool_use",
        )
    )
    events = await collect(sonnet(server), context(tools=[READ_TOOL]), api_key=token)
    assert final(events).content == [ToolCall(id="toolu_1", name="read", arguments={"path": "x"})]
    request = server.requests[0]
    assert request.headers["authorization"] == f"Bearer {token}"
    assert "x-api-key" not in request.headers
    assert request.headers["user-agent"].startswith("claude-cli/")
    assert request.headers["anthropic-beta"].startswith("claude-code-20250219,oauth-2025-04-20")
    body = request.json()
    assert body["system"][0]["text"] == "You are Claude Code, Anthropic's official CLI for Claude."
    assert body["system"][1]["text"] == "You are helpful."
    assert body["tools"][0]["name"] == "Read"


async def test_custom_headers_reach_the_server(server: AnthropicServer, transport: str) -> None:
    server.enqueue(anthropic_reply("ok"))
    model = sonnet(server, headers={"x-portkey-api-key": "pk-1"})
    await collect(model, context(), headers={"x-trace": "t-9"})
    headers = server.requests[0].headers
    assert (headers["x-portkey-api-key"], headers["x-trace"]) == ("pk-1", "t-9")


async def test_api_key_never_leaks_into_events(server: AnthropicServer, transport: str) -> None:
    echo = f"invalid x-api-key: {API_KEY}"
    server.enqueue(
        anthropic_error(401, echo),
        Reply(
            pieces=[
                *anthropic_events([{"type": "text", "text": "x"}], stop=False),
                sse_event("error", {"type": "error", "error": {"message": echo}}),
            ]
        ),
        Reply(pieces=[b"event: content_block_start\ndata: {" + API_KEY.encode() + b"\n\n"]),
        anthropic_reply("fine"),
    )
    dumped = []
    for _ in range(4):
        events = await collect(sonnet(server), context())
        dumped += [event.to_json() for event in events]
    assert all(API_KEY not in text for text in dumped)
    assert "***" in dumped[0]
    assert all(request.headers["x-api-key"] == API_KEY for request in server.requests)


# -- request building (no network) ------------------------------------------------------------


@pytest.mark.parametrize(
    ("level", "budget", "max_tokens"),
    [
        ("minimal", 1024, 33_024),
        ("low", 2048, 34_048),
        ("medium", 8192, 40_192),
        ("high", 16_384, 48_384),
        ("xhigh", 16_384, 48_384),
    ],
)
def test_thinking_budgets(level: str, budget: int, max_tokens: int) -> None:
    params = build_request(
        sonnet(), context(), StreamOptions(reasoning=level, temperature=0.5), API_KEY
    ).params  # type: ignore[arg-type]
    assert params["thinking"] == {"type": "enabled", "budget_tokens": budget, "display": "summarized"}
    assert params["max_tokens"] == max_tokens
    assert "temperature" not in params


def test_budget_shrinks_when_max_tokens_is_small() -> None:
    model = sonnet(max_tokens=10_000)
    params = build_request(model, context(), StreamOptions(reasoning="high"), API_KEY).params
    assert params["max_tokens"] == 10_000
    assert params["thinking"]["budget_tokens"] == 10_000 - 1024


def test_custom_budgets() -> None:
    options = StreamOptions(reasoning="medium", thinking_budgets={"medium": 3000}, max_tokens=1000)
    params = build_request(sonnet(), context(), options, API_KEY).params
    assert (params["thinking"]["budget_tokens"], params["max_tokens"]) == (3000, 4000)


def test_reasoning_off_disables_thinking_and_keeps_temperature() -> None:
    params = build_request(
        sonnet(), context(), StreamOptions(reasoning="off", temperature=0.2), API_KEY
    ).params
    assert params["thinking"] == {"type": "disabled"}
    assert params["temperature"] == 0.2
    assert params["max_tokens"] == 32_000
    plain = Model(
        id="claude-3-haiku-20240307", api="anthropic-messages", provider="anthropic", max_tokens=4096
    )
    assert "thinking" not in build_request(plain, context(), StreamOptions(), API_KEY).params


@pytest.mark.parametrize(
    ("level", "effort"),
    [("minimal", "low"), ("low", "low"), ("medium", "medium"), ("high", "high"), ("xhigh", "max")],
)
def test_adaptive_thinking_uses_efforts(level: str, effort: str) -> None:
    opus = Model(
        id="claude-opus-4-6",
        api="anthropic-messages",
        provider="anthropic",
        reasoning=True,
        max_tokens=128_000,
        thinking_level_map={"xhigh": "max"},
    )
    request = build_request(opus, context(), StreamOptions(reasoning=level), API_KEY)  # type: ignore[arg-type]
    assert request.params["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert request.params["output_config"] == {"effort": effort}
    assert "anthropic-beta" not in request.headers


def test_cache_retention() -> None:
    long = build_request(sonnet(), context(), StreamOptions(cache_retention="long"), API_KEY).params
    assert long["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    none = build_request(sonnet(), context(), StreamOptions(cache_retention="none"), API_KEY).params
    assert "cache_control" not in none["system"][0]
    assert none["messages"] == [{"role": "user", "content": "Hi"}]


def test_compat_without_eager_tool_streaming_uses_the_beta_header() -> None:
    model = sonnet(compat={"supportsEagerToolInputStreaming": False})
    request = build_request(model, context(tools=[READ_TOOL]), StreamOptions(), API_KEY)
    assert "eager_input_streaming" not in request.params["tools"][0]
    assert (
        request.headers["anthropic-beta"]
        == "fine-grained-tool-streaming-2025-05-14,interleaved-thinking-2025-05-14"
    )


def test_pydantic_schema_definitions_survive() -> None:
    schema = {
        "type": "object",
        "properties": {"edits": {"type": "array", "items": {"$ref": "#/$defs/Edit"}}},
        "required": ["edits"],
        "$defs": {"Edit": {"type": "object", "properties": {"old": {"type": "string"}}}},
    }
    tool = ToolSpec(name="edit", description="Edit", parameters=schema)
    sent = build_request(sonnet(), context(tools=[tool]), StreamOptions(), API_KEY).params["tools"][0][
        "input_schema"
    ]
    assert sent["$defs"] == schema["$defs"]


def test_tool_call_id_normalisation() -> None:
    assert normalize_tool_call_id("call_abc|fc_123+/=") == "call_abc_fc_123___"
    assert len(normalize_tool_call_id("x" * 500)) == 64
    assert normalize_tool_call_id("toolu_01-ok") == "toolu_01-ok"


def test_lone_surrogates_are_dropped() -> None:
    params = build_request(
        sonnet(), context(UserMessage(content="bad \ud83d text 🙈")), StreamOptions(), API_KEY
    ).params
    assert params["messages"][0]["content"][0]["text"] == "bad  text 🙈"


def test_importing_the_provider_loads_neither_sdk_nor_httpx() -> None:
    code = (
        "import sys, pi_host.builtins.providers, pi_host.providers._anthropic;"
        "print(sorted(m for m in ('anthropic', 'httpx', 'httpx2') if m in sys.modules))"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "[]"


def test_a_one_shot_stream_does_not_import_the_sdk(tmp_path: Any) -> None:
    script = tmp_path / "one_shot.py"
    script.write_text(
        "import sys, anyio\n"
        "from tests.fakeservers import AnthropicServer, anthropic_reply\n"
        "from pi_host.providers import Model, LlmContext, StreamOptions\n"
        "from pi_host.messages import UserMessage\n"
        "from pi_host.providers._anthropic import stream\n"
        "async def main():\n"
        "    with AnthropicServer([anthropic_reply('hi')]) as server:\n"
        "        model = Model(id='m', api='anthropic-messages', provider='anthropic',"
        " base_url=server.base_url)\n"
        "        events = [e async for e in stream(model, LlmContext(messages=[UserMessage(content='x')]),"
        " StreamOptions(api_key='k'))]\n"
        "        print(events[-1].type, 'anthropic' in sys.modules)\n"
        "anyio.run(main)\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != TRANSPORT_ENV}
    output = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=True, env=env
    ).stdout
    assert output.strip() == "done False"


def _fresh_messages(model: Model, messages: list[Any], **options: Any) -> list[dict[str, Any]]:
    """What convert_messages gives with nothing remembered from earlier requests."""
    saved = _anthropic_wire._wire_memo
    _anthropic_wire._wire_memo = _anthropic_wire._WireMemo()
    try:
        return convert_messages(messages, model, **options)
    finally:
        _anthropic_wire._wire_memo = saved


def test_a_growing_history_converts_as_if_each_request_were_the_first() -> None:
    model = sonnet()
    cache = {"type": "ephemeral"}
    call = ToolCall(id="toolu_1", name="read", arguments={"path": "a"})
    history: list[Any] = [UserMessage(content="Hi")]
    grown = [
        AssistantMessage(content=[TextContent(text="Reading."), call], stop_reason="toolUse"),
        ToolResultMessage(tool_call_id="toolu_1", tool_name="read", content=[TextContent(text="a")]),
        ToolResultMessage(tool_call_id="toolu_2", tool_name="read", content=[TextContent(text="b")]),
        AssistantMessage(content=[TextContent(text="Done.")]),
        UserMessage(content=[TextContent(text="More"), TextContent(text="please")]),
    ]
    for message in grown:
        history.append(message)
        for options in ({"cache_control": cache}, {}, {"oauth": True, "cache_control": cache}):
            sent = convert_messages(history, model, **options)
            assert sent == _fresh_messages(model, history, **options)
            # The last message's cache_control went to a copy, never to what is remembered.
            assert "cache_control" not in json.dumps(convert_messages(history, model))
    assert convert_messages(history, model) == _fresh_messages(model, history)


def test_interleaved_conversations_each_reuse_their_own_wire_forms() -> None:
    # Many sessions in one process (issue 21): one conversation's request must not make the
    # other's next request convert its whole history again, nor be served the other's forms.
    model = sonnet()
    first: list[Any] = [UserMessage(content="first"), AssistantMessage(content=[TextContent(text="one")])]
    second: list[Any] = [UserMessage(content="second"), AssistantMessage(content=[TextContent(text="two")])]
    sent_first = convert_messages(first, model)
    sent_second = convert_messages(second, model)
    first.append(UserMessage(content="first again"))
    second.append(UserMessage(content="second again"))
    again_first = convert_messages(first, model)
    again_second = convert_messages(second, model)
    assert all(again is before for again, before in zip(again_first, sent_first, strict=False))
    assert all(again is before for again, before in zip(again_second, sent_second, strict=False))
    assert again_first == _fresh_messages(model, first)
    assert again_second == _fresh_messages(model, second)


def test_a_finished_conversation_leaves_nothing_remembered() -> None:
    model = sonnet()
    message = UserMessage(content="a closed session's prompt")
    convert_messages([message], model)
    alive = weakref.ref(message)
    remembered = len(_anthropic_wire._wire_memo)
    del message
    gc.collect()
    assert alive() is None
    assert len(_anthropic_wire._wire_memo) == remembered - 1
