"""The openai-completions provider over real HTTP against a local server speaking it; the SSE decoder."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

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
from pi_host.providers import LlmContext, Model, ModelCost, StreamOptions, ToolSpec
from pi_host.providers._errors import is_context_overflow, is_transient_error, retry_after_ms
from pi_host.providers._lean_http import LEAN_HTTP_ENV
from pi_host.providers._openai import stream
from pi_host.providers._openai_wire import build_request, resolve_compat
from pi_host.providers._sse import ServerSentEvent, SSEDecoder
from tests.fakeservers import OpenAIServer, Reply, openai_chunks, openai_error, openai_reply
from tests.provider_support import abort_after_first_delta

API_KEY = "sk-proj-SECRET-openai-key-9876543210"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


@pytest.fixture(autouse=True, params=["lean", "httpx"])
def clean_env(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs through both HTTP clients (the lean one, and httpx)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv(LEAN_HTTP_ENV, raising=False)
    if request.param == "httpx":
        monkeypatch.setenv(LEAN_HTTP_ENV, "0")


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as running:
        yield running


def local(server: OpenAIServer | None = None, **update: Any) -> Model:
    """A local OpenAI-compatible model, as a models.json entry would describe it."""
    model = Model(
        id="qwen2.5-coder:7b",
        name="Qwen Coder",
        api="openai-completions",
        provider="local",
        base_url=server.base_url if server else "http://localhost:11434/v1",
        reasoning=False,
        input=["text", "image"],
        cost=ModelCost(input=1, output=2, cache_read=0.5),
        context_window=32_768,
        max_tokens=8192,
    )
    return model.model_copy(update=update)


def context(*messages: Any, system: str = "Be brief.", tools: list[ToolSpec] | None = None) -> LlmContext:
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
    terminal = [e for e in events if isinstance(e, DoneEvent | ErrorEvent)]
    assert len(terminal) == 1 and terminal[0] is events[-1]
    last = events[-1]
    return last.message if isinstance(last, DoneEvent) else last.error  # type: ignore[union-attr]


def types(events: list[AssistantMessageEvent]) -> list[str]:
    return [event.type for event in events]


READ_TOOL = ToolSpec(
    name="read",
    description="Read a file",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


# -- the SSE decoder ---------------------------------------------------------------------------


def decode(chunks: list[bytes]) -> list[ServerSentEvent]:
    decoder = SSEDecoder()
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    return events + decoder.close()


SAMPLE = (
    "\ufeff: keep-alive comment\r\n"
    "event: message_start\r\n"
    'data: {"a": 1}\r\n'
    "\r\n"
    "data: line one\n"
    "data:line two\n"
    "id: 7\n"
    "retry: 3000\n"
    "\n"
    "event: ping\r"
    "data: é€😀\r"
    "\r"
    "data: [DONE]\n\n"
).encode()
EXPECTED = [
    ServerSentEvent(event="message_start", data='{"a": 1}'),
    ServerSentEvent(event=None, data="line one\nline two", id="7", retry=3000),
    ServerSentEvent(event="ping", data="é€😀", id="7"),
    ServerSentEvent(event=None, data="[DONE]", id="7"),
]


def test_sse_decoder_whole() -> None:
    assert decode([SAMPLE]) == EXPECTED


def test_sse_decoder_split_at_every_byte_boundary() -> None:
    for cut in range(1, len(SAMPLE)):
        assert decode([SAMPLE[:cut], SAMPLE[cut:]]) == EXPECTED, cut


def test_sse_decoder_one_byte_at_a_time() -> None:
    assert decode([bytes([b]) for b in SAMPLE]) == EXPECTED


@given(st.lists(st.integers(min_value=1, max_value=len(SAMPLE)), max_size=20))
def test_sse_decoder_random_splits(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    pieces = [SAMPLE[a:b] for a, b in zip([0, *points], [*points, len(SAMPLE)], strict=True)]
    assert decode(pieces) == EXPECTED


def test_sse_decoder_flushes_an_unterminated_last_event() -> None:
    assert decode([b"data: tail"]) == [ServerSentEvent(event=None, data="tail")]
    assert decode([b"data: a\n\n", b""]) == [ServerSentEvent(event=None, data="a")]


def test_sse_decoder_ignores_unknown_fields_and_blank_events() -> None:
    assert decode([b"garbage line\nfoo: bar\n\n\n\ndata: x\n\n"]) == [ServerSentEvent(event=None, data="x")]


# -- streaming ---------------------------------------------------------------------------------


async def test_text_reply_with_usage_split_into_bytes(server: OpenAIServer) -> None:
    usage = {"prompt_tokens": 120, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 100}}
    server.enqueue(openai_reply("Hello from the local model", chunk_size=5, usage=usage, split=1))
    events = await collect(local(server), context())
    assert types(events)[:3] == ["start", "text_start", "text_delta"]
    assert types(events)[-2:] == ["text_end", "done"]
    message = final(events)
    assert message.content == [TextContent(text="Hello from the local model")]
    assert message.stop_reason == "stop"
    assert message.response_id == "chatcmpl-fake01"
    assert (
        message.usage.input,
        message.usage.cache_read,
        message.usage.output,
        message.usage.total_tokens,
    ) == (
        20,
        100,
        9,
        129,
    )
    assert message.usage.cost.total == pytest.approx(20e-6 + 100 * 0.5e-6 + 9 * 2e-6)
    assert json.loads(message.to_json())["responseModel"] == "fake-model"


async def test_crlf_comments_and_awkward_splits(server: OpenAIServer) -> None:
    pieces = [
        piece.replace(b"\n", b"\r\n") for piece in openai_chunks(content="CRLF works fine", chunk_size=3)
    ]
    server.enqueue(Reply(pieces=[b": ping\r\n\r\n", *pieces], split=[2, 5, 1, 9], split_pause=0.001))
    assert final(await collect(local(server), context())).content == [TextContent(text="CRLF works fine")]


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning", "reasoning_text"])
async def test_reasoning_fields(server: OpenAIServer, field: str) -> None:
    server.enqueue(
        Reply(pieces=openai_chunks(reasoning="Think first.", reasoning_field=field, content="Answer."))
    )
    events = await collect(local(server, reasoning=True), context(), reasoning="medium")
    message = final(events)
    assert message.content == [
        ThinkingContent(thinking="Think first.", thinking_signature=field),
        TextContent(text="Answer."),
    ]
    assert types(events)[-3:] == ["thinking_end", "text_end", "done"]


async def test_interleaved_tool_calls(server: OpenAIServer) -> None:
    calls = [
        {"id": "call_A", "name": "read", "arguments": {"path": "src/main.py", "limit": 50}},
        {"id": "call_B", "name": "read", "arguments": {"path": "README.md"}},
        {"id": "call_C", "name": "ls", "arguments": {}},
    ]
    server.enqueue(
        openai_reply(
            "Let me look.", tool_calls=calls, interleave=True, chunk_size=4, finish_reason="tool_calls"
        )
    )
    events = await collect(local(server), context(tools=[READ_TOOL]))
    message = final(events)
    assert message.stop_reason == "toolUse"
    assert message.content == [
        TextContent(text="Let me look."),
        ToolCall(id="call_A", name="read", arguments={"path": "src/main.py", "limit": 50}),
        ToolCall(id="call_B", name="read", arguments={"path": "README.md"}),
        ToolCall(id="call_C", name="ls", arguments={}),
    ]
    # Fragments of different calls arrived interleaved and were kept apart by index.
    delta_order = [e.content_index for e in events if e.type == "toolcall_delta"]
    assert delta_order[:6] == [1, 2, 3, 1, 2, 3]
    ends = [(e.content_index, e.tool_call.id) for e in events if e.type == "toolcall_end"]
    assert ends == [(1, "call_A"), (2, "call_B"), (3, "call_C")]


@pytest.mark.parametrize(
    ("finish", "expected"),
    [("stop", "stop"), ("length", "length"), ("tool_calls", "toolUse"), ("function_call", "toolUse")],
)
async def test_finish_reasons(server: OpenAIServer, finish: str, expected: str) -> None:
    server.enqueue(openai_reply("ok", finish_reason=finish))
    events = await collect(local(server), context())
    assert isinstance(events[-1], DoneEvent)
    assert events[-1].reason == expected


@pytest.mark.parametrize("finish", ["content_filter", "network_error", "something_new"])
async def test_error_finish_reasons(server: OpenAIServer, finish: str) -> None:
    server.enqueue(openai_reply("partial", finish_reason=finish))
    message = final(await collect(local(server), context()))
    assert message.stop_reason == "error"
    assert message.error_message == f"Provider finish_reason: {finish}"
    assert message.content == [TextContent(text="partial")]


async def test_finish_without_done_marker_is_fine(server: OpenAIServer) -> None:
    server.enqueue(openai_reply("no done marker", done=False, chunked=False))
    assert final(await collect(local(server), context())).stop_reason == "stop"


async def test_usage_not_reported(server: OpenAIServer) -> None:
    server.enqueue(openai_reply("no usage"))
    message = final(await collect(local(server), context()))
    assert message.usage.total_tokens == 0


# -- faults ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "message", "retryable", "overflow"),
    [
        (
            openai_error(
                429, "Rate limit reached for gpt-4o in organization org-x on tokens per min.", type="requests"
            ),
            "429 Rate limit reached for gpt-4o in organization org-x on tokens per min.",
            True,
            False,
        ),
        (
            openai_error(500, "The server had an error while processing your request.", type="server_error"),
            "500 The server had an error while processing your request.",
            True,
            False,
        ),
        (
            openai_error(401, "Incorrect API key provided: sk-proj-***3210.", type="invalid_request_error"),
            "401 Incorrect API key provided: sk-proj-***3210.",
            False,
            False,
        ),
        (
            openai_error(
                400,
                "This model's maximum context length is 128000 tokens. However, your messages resulted in "
                "130512 tokens. Please reduce the length of the messages.",
                code="context_length_exceeded",
            ),
            "400 This model's maximum context length is 128000 tokens. However, your messages resulted in "
            "130512 tokens. Please reduce the length of the messages.",
            False,
            True,
        ),
        (
            Reply.json(
                400,
                {
                    "error": {
                        "code": 400,
                        "message": "the request exceeds the available context size, try increasing it",
                        "type": "exceed_context_size_error",
                    }
                },
            ),
            "400 the request exceeds the available context size, try increasing it",
            False,
            True,
        ),
        (
            Reply.json(500, {"error": "prompt too long; exceeded max context length by 4 tokens"}),
            '500 "prompt too long; exceeded max context length by 4 tokens"',
            False,
            True,
        ),
        (
            openai_error(
                429,
                "You exceeded your current quota, please check your plan and billing details.",
                code="insufficient_quota",
            ),
            "429 You exceeded your current quota, please check your plan and billing details.",
            False,
            False,
        ),
        (Reply.text(502, "<html>Bad Gateway</html>"), "502 <html>Bad Gateway</html>", True, False),
        (Reply.text(413, ""), "413 status code (no body)", False, True),
    ],
    ids=[
        "429",
        "500",
        "401",
        "400-overflow",
        "llama.cpp-overflow",
        "ollama-overflow",
        "quota",
        "502-html",
        "413-no-body",
    ],
)
async def test_http_errors(
    server: OpenAIServer, reply: Reply, message: str, retryable: bool, overflow: bool
) -> None:
    server.enqueue(reply)
    events = await collect(local(server), context())
    assert types(events) == ["error"]
    failed = final(events)
    assert failed.error_message == message
    assert is_transient_error(failed, 32_768) is retryable
    assert is_context_overflow(failed, 32_768) is overflow


async def test_retry_after(server: OpenAIServer) -> None:
    server.enqueue(openai_error(429, "slow down", headers={"retry-after": "3"}))
    assert retry_after_ms(final(await collect(local(server), context()))) == 3000


async def test_error_chunk_mid_stream(server: OpenAIServer) -> None:
    pieces = openai_chunks(content="Half an ans", finish_reason=None, done=False)
    error = {
        "error": {"message": "Provider returned error", "code": 502, "metadata": {"raw": "upstream timeout"}}
    }
    server.enqueue(Reply(pieces=[*pieces, f"data: {json.dumps(error)}\n\n".encode()]))
    message = final(await collect(local(server), context()))
    assert message.error_message == "Provider returned error\nupstream timeout"
    assert message.content == [TextContent(text="Half an ans")]
    assert is_transient_error(message)


async def test_connection_dropped_mid_stream(server: OpenAIServer) -> None:
    server.enqueue(openai_reply("this will be cut", chunk_size=3, drop_after=3))
    message = final(await collect(local(server), context()))
    assert message.stop_reason == "error"
    assert message.error_message is not None
    assert message.error_message.startswith("Connection lost while streaming the response")
    assert is_transient_error(message)


async def test_stream_cut_without_finish_or_done(server: OpenAIServer) -> None:
    server.enqueue(openai_reply("cut short", finish_reason=None, done=False, chunked=False))
    message = final(await collect(local(server), context()))
    assert message.error_message == "OpenAI-compatible stream ended without a finish_reason or [DONE]"
    assert message.content == [TextContent(text="cut short")]
    assert is_transient_error(message)


async def test_empty_body(server: OpenAIServer) -> None:
    server.enqueue(Reply(pieces=[]))
    message = final(await collect(local(server), context()))
    assert message.error_message == "OpenAI-compatible stream ended without any data"
    assert is_transient_error(message)


async def test_malformed_chunk(server: OpenAIServer) -> None:
    pieces = openai_chunks(content="ok")
    server.enqueue(Reply(pieces=[pieces[0], b"data: {not json}\n\n", *pieces[1:]]))
    message = final(await collect(local(server), context()))
    assert message.error_message is not None
    assert message.error_message.startswith("Could not parse SSE chunk as JSON:")
    assert message.error_message.endswith("data={not json}")


async def test_tool_call_arguments_that_are_not_valid_json(server: OpenAIServer) -> None:
    calls = [{"id": "call_1", "name": "read", "arguments": '{"path": "a.txt", "extra": tru'}]
    server.enqueue(openai_reply(tool_calls=calls, finish_reason="tool_calls"))
    message = final(await collect(local(server), context(tools=[READ_TOOL])))
    assert message.stop_reason == "toolUse"
    assert message.content == [ToolCall(id="call_1", name="read", arguments={"path": "a.txt"})]


async def test_abort_mid_stream_stops_at_once(server: OpenAIServer) -> None:
    pieces = openai_chunks(content="first second third", chunk_size=6)
    server.enqueue(Reply(pieces=pieces[:2], hang=True))
    events, elapsed = await abort_after_first_delta(stream, local(server), context(), API_KEY)
    assert elapsed < 10  # the server never sends the rest: a stop, not a speed, is checked
    message = final(events)
    assert (message.stop_reason, message.error_message) == ("aborted", "Request was aborted")
    assert message.content == [TextContent(text="first ")]


async def test_missing_api_key() -> None:
    message = final(await collect(local(), context(), api_key=None))
    assert message.error_message == "No API key for provider: local"


async def test_api_key_never_leaks(server: OpenAIServer) -> None:
    echo = f"Incorrect API key provided: {API_KEY}"
    server.enqueue(
        openai_error(401, echo),
        Reply(pieces=[f'data: {{"error": {{"message": "{echo}"}}}}\n\n'.encode()]),
        Reply(pieces=[f"data: {{{API_KEY}\n\n".encode()]),
    )
    dumped = []
    for _ in range(3):
        dumped += [event.to_json() for event in await collect(local(server), context())]
    assert all(API_KEY not in text for text in dumped)
    assert all(request.headers["authorization"] == f"Bearer {API_KEY}" for request in server.requests)


# -- the request -------------------------------------------------------------------------------


async def test_conversation_round_trips_without_loss(server: OpenAIServer) -> None:
    messages: list[Any] = [
        UserMessage(
            content=[TextContent(text="Describe this."), ImageContent(data=PNG, mime_type="image/png")]
        ),
        AssistantMessage(
            content=[
                ThinkingContent(thinking="Need the file.", thinking_signature="reasoning_content"),
                TextContent(text="Reading it."),
                ToolCall(id="call_1", name="read", arguments={"path": "a.txt", "opts": {"n": [1, 2]}}),
                ToolCall(id="call_2", name="screenshot", arguments={}),
            ],
            api="openai-completions",
            provider="local",
            model="qwen2.5-coder:7b",
            stop_reason="toolUse",
        ),
        ToolResultMessage(tool_call_id="call_1", tool_name="read", content=[TextContent(text="one\ntwo")]),
        ToolResultMessage(
            tool_call_id="call_2",
            tool_name="screenshot",
            content=[TextContent(text="captured"), ImageContent(data=PNG, mime_type="image/png")],
        ),
        AssistantMessage(
            content=[ToolCall(id="call_3", name="ls", arguments={})], stop_reason="toolUse", provider="local"
        ),
        UserMessage(content="And now?"),
    ]
    server.enqueue(openai_reply("Done."))
    await collect(local(server), context(*messages, tools=[READ_TOOL]))
    body = server.requests[0].json()
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
    assert body == {
        "model": "qwen2.5-coder:7b",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Describe this."}, image]},
            {
                "role": "assistant",
                "content": "Reading it.",
                "reasoning_content": "Need the file.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "read", "arguments": '{"path": "a.txt", "opts": {"n": [1, 2]}}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "screenshot", "arguments": "{}"},
                    },
                ],
            },
            {"role": "tool", "content": "one\ntwo", "tool_call_id": "call_1"},
            {"role": "tool", "content": "captured", "tool_call_id": "call_2"},
            {
                "role": "user",
                "content": [{"type": "text", "text": "Attached image(s) from tool result:"}, image],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_3", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "content": "No result provided", "tool_call_id": "call_3"},
            {"role": "user", "content": "And now?"},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "store": False,
        "max_completion_tokens": 8192,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "read",
                    "description": "Read a file",
                    "parameters": READ_TOOL.parameters,
                    "strict": False,
                },
            }
        ],
    }
    assert server.requests[0].path == "/v1/chat/completions"


async def test_a_streamed_reply_replays_exactly(server: OpenAIServer) -> None:
    calls = [{"id": "call_X", "name": "read", "arguments": {"path": "ü.txt"}}]
    server.enqueue(
        openai_reply("On it.", reasoning="Plan.", tool_calls=calls, finish_reason="tool_calls"),
        openai_reply("ok"),
    )
    model = local(server, reasoning=True)
    reply = final(await collect(model, context(tools=[READ_TOOL]), reasoning="low"))
    result = ToolResultMessage(tool_call_id="call_X", tool_name="read", content=[TextContent(text="data")])
    await collect(
        model, context(UserMessage(content="Hi"), reply, result, tools=[READ_TOOL]), reasoning="low"
    )
    sent = server.requests[1].json()["messages"]
    assert sent[2] == {
        "role": "assistant",
        "content": "On it.",
        "reasoning_content": "Plan.",
        "tool_calls": [
            {
                "id": "call_X",
                "type": "function",
                "function": {"name": "read", "arguments": '{"path": "ü.txt"}'},
            }
        ],
    }
    assert sent[3] == {"role": "tool", "content": "data", "tool_call_id": "call_X"}


def _request(model: Model, ctx: LlmContext | None = None, **options: Any) -> dict[str, Any]:
    return build_request(model, ctx or context(), StreamOptions(**options), API_KEY).params


def test_developer_role_for_reasoning_models() -> None:
    assert _request(local(reasoning=True))["messages"][0]["role"] == "developer"
    assert _request(local(reasoning=False))["messages"][0]["role"] == "system"
    no_developer = local(reasoning=True, compat={"supportsDeveloperRole": False})
    assert _request(no_developer)["messages"][0]["role"] == "system"


def test_reasoning_effort_and_its_switches() -> None:
    model = local(reasoning=True)
    assert _request(model, reasoning="high")["reasoning_effort"] == "high"
    assert "reasoning_effort" not in _request(model)
    assert "reasoning_effort" not in _request(
        local(reasoning=True, compat={"supportsReasoningEffort": False}), reasoning="high"
    )
    mapped = local(reasoning=True, thinking_level_map={"minimal": None, "high": "max", "xhigh": "ultra"})
    assert _request(mapped, reasoning="minimal")["reasoning_effort"] == "low"  # clamped upward
    assert _request(mapped, reasoning="high")["reasoning_effort"] == "max"
    assert _request(mapped, reasoning="xhigh")["reasoning_effort"] == "ultra"
    assert "reasoning_effort" not in _request(local(reasoning=False), reasoning="high")


@pytest.mark.parametrize(
    ("thinking_format", "on", "off"),
    [
        ("qwen", {"enable_thinking": True}, {"enable_thinking": False}),
        (
            "qwen-chat-template",
            {"chat_template_kwargs": {"enable_thinking": True, "preserve_thinking": True}},
            {"chat_template_kwargs": {"enable_thinking": False, "preserve_thinking": True}},
        ),
        (
            "deepseek",
            {"thinking": {"type": "enabled"}, "reasoning_effort": "medium"},
            {"thinking": {"type": "disabled"}},
        ),
        ("openrouter", {"reasoning": {"effort": "medium"}}, {"reasoning": {"effort": "none"}}),
    ],
)
def test_thinking_formats(thinking_format: str, on: dict[str, Any], off: dict[str, Any]) -> None:
    model = local(reasoning=True, compat={"thinkingFormat": thinking_format})
    keys = ("enable_thinking", "chat_template_kwargs", "thinking", "reasoning_effort", "reasoning")
    assert {k: v for k, v in _request(model, reasoning="medium").items() if k in keys} == on
    assert {k: v for k, v in _request(model).items() if k in keys} == off


def test_compat_switches_for_local_servers() -> None:
    model = local(
        compat={
            "supportsUsageInStreaming": False,
            "maxTokensField": "max_tokens",
            "supportsStore": False,
            "supportsStrictMode": False,
            "requiresToolResultName": True,
            "requiresAssistantAfterToolResult": True,
        }
    )
    ctx = context(
        UserMessage(content="go"),
        AssistantMessage(
            content=[ToolCall(id="c1", name="read", arguments={})], stop_reason="toolUse", provider="local"
        ),
        ToolResultMessage(tool_call_id="c1", tool_name="read", content=[TextContent(text="r")]),
        UserMessage(content="next"),
        tools=[READ_TOOL],
    )
    params = _request(model, ctx, max_tokens=100)
    assert "stream_options" not in params and "store" not in params
    assert params["max_tokens"] == 100 and "max_completion_tokens" not in params
    assert "strict" not in params["tools"][0]["function"]
    assert params["messages"][2]["content"] == ""
    assert params["messages"][3] == {"role": "tool", "content": "r", "tool_call_id": "c1", "name": "read"}
    assert params["messages"][4] == {"role": "assistant", "content": "I have processed the tool results."}
    assert params["messages"][5] == {"role": "user", "content": "next"}


def test_thinking_as_text() -> None:
    model = local(compat={"requiresThinkingAsText": True})
    ctx = context(
        UserMessage(content="q"),
        AssistantMessage(
            content=[ThinkingContent(thinking="deep thought"), TextContent(text="answer")],
            provider="local",
            api="openai-completions",
            model="qwen2.5-coder:7b",
        ),
    )
    assert _request(model, ctx)["messages"][2]["content"] == [
        {"type": "text", "text": "deep thought"},
        {"type": "text", "text": "answer"},
    ]


def test_tools_are_sent_when_the_history_has_tool_use() -> None:
    ctx = context(
        UserMessage(content="go"),
        AssistantMessage(
            content=[ToolCall(id="c1", name="read", arguments={})], stop_reason="toolUse", provider="local"
        ),
        ToolResultMessage(tool_call_id="c1", tool_name="read", content=[TextContent(text="r")]),
    )
    assert _request(local(), ctx)["tools"] == []


def test_images_become_placeholders_for_text_only_models() -> None:
    ctx = context(
        UserMessage(content=[TextContent(text="see"), ImageContent(data=PNG, mime_type="image/png")])
    )
    content = _request(local(input=["text"]), ctx)["messages"][1]["content"]
    assert content == [
        {"type": "text", "text": "see"},
        {"type": "text", "text": "(image omitted: model does not support images)"},
    ]


def test_compat_is_detected_from_the_provider() -> None:
    assert (
        resolve_compat(local(provider="xai", base_url="https://api.x.ai/v1")).supports_reasoning_effort
        is False
    )
    deepseek = resolve_compat(local(provider="deepseek", base_url="https://api.deepseek.com"))
    assert (deepseek.thinking_format, deepseek.supports_developer_role) == ("deepseek", False)
    openrouter = resolve_compat(local(provider="openrouter", id="anthropic/claude-sonnet-4"))
    assert (openrouter.thinking_format, openrouter.cache_control_format) == ("openrouter", "anthropic")
    assert resolve_compat(local()).max_tokens_field == "max_completion_tokens"


def test_anthropic_style_cache_markers() -> None:
    model = local(compat={"cacheControlFormat": "anthropic"})
    params = _request(model, context(tools=[READ_TOOL]))
    assert params["messages"][0]["content"] == [
        {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}
    ]
    assert params["messages"][1]["content"] == [
        {"type": "text", "text": "Hi", "cache_control": {"type": "ephemeral"}}
    ]
    assert params["tools"][-1]["cache_control"] == {"type": "ephemeral"}


def test_prompt_cache_key_for_openai() -> None:
    openai = local(provider="openai", base_url="https://api.openai.com/v1")
    assert _request(openai, session_id="s-1")["prompt_cache_key"] == "s-1"
    assert "prompt_cache_key" not in _request(local(), session_id="s-1")
    long = _request(local(), session_id="s-1", cache_retention="long")
    assert (long["prompt_cache_key"], long["prompt_cache_retention"]) == ("s-1", "24h")


def test_custom_authorization_header_wins() -> None:
    request = build_request(
        local(headers={"authorization": "Token abc"}), context(), StreamOptions(), API_KEY
    )
    assert request.headers == {"authorization": "Token abc"}


async def test_events_equal_their_validated_selves(server: OpenAIServer) -> None:
    # Events are built without validation for speed; each must equal what validation would build.
    calls = [{"id": "c1", "name": "read", "arguments": {"path": "p"}}]
    usage = {"prompt_tokens": 3, "completion_tokens": 2}
    server.enqueue(
        openai_reply("text", reasoning="why", tool_calls=calls, finish_reason="tool_calls", usage=usage)
    )
    events = await collect(local(server, reasoning=True), context(), reasoning="low")
    assert len(events) > 8
    for event in events:
        assert type(event).model_validate_json(event.to_json()) == event
