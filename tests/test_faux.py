"""The faux provider: scripted replies streamed like a real provider, and JSON scripts."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import anyio
import pytest

from pi_host.messages import (
    AssistantMessage,
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    Usage,
    UserMessage,
)
from pi_host.providers import AbortSignal, LlmContext, Model, Provider, StreamOptions, ToolSpec
from pi_host.providers._faux import (
    FAUX_NO_MORE_RESPONSES,
    FauxProvider,
    FauxReply,
    FauxScriptError,
    FauxState,
    faux_assistant_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
    load_faux_script,
)

CONTEXT = LlmContext(system_prompt="sys", messages=[UserMessage(content="hi")])


async def collect(
    faux: FauxProvider, context: LlmContext = CONTEXT, options: StreamOptions | None = None
) -> list[AssistantMessageEvent]:
    return [event async for event in faux.stream(faux.model, context, options or StreamOptions())]


def final(events: list[AssistantMessageEvent]) -> AssistantMessage:
    last = events[-1]
    if isinstance(last, DoneEvent):
        return last.message
    assert isinstance(last, ErrorEvent)
    return last.error


# -- the model ----------------------------------------------------------------------------


def test_default_model_is_pi_s_faux_model() -> None:
    faux = FauxProvider()
    model = faux.model
    assert (model.id, model.name, model.api, model.provider) == ("faux-1", "Faux Model", "faux", "faux")
    assert (model.input, model.context_window, model.max_tokens) == (["text", "image"], 128_000, 16_384)
    assert model.base_url == "http://localhost:0" and model.reasoning is False
    assert faux.get_model() is model and faux.get_model("faux-1") is model and faux.get_model("nope") is None


def test_custom_models_and_provider_registration() -> None:
    faux = FauxProvider(
        api="faux:test", provider="scripted", models=[{"id": "r1", "reasoning": True}, {"id": "r2"}]
    )
    assert [m.id for m in faux.models] == ["r1", "r2"]
    assert faux.models[0].name == "r1" and faux.models[0].reasoning is True
    assert {m.api for m in faux.models} == {"faux:test"} and {m.provider for m in faux.models} == {"scripted"}
    provider = faux.as_provider()
    assert isinstance(provider, Provider) and provider.api == "faux:test" and provider.load() == faux.stream


# -- streaming ----------------------------------------------------------------------------


async def test_text_reply_streams_start_deltas_end_done() -> None:
    faux = FauxProvider([faux_assistant_message("hello world, this is faux")], seed=1)
    events = await collect(faux)
    kinds = [e.type for e in events]
    assert kinds[:2] == ["start", "text_start"] and kinds[-2:] == ["text_end", "done"]
    deltas = [e for e in events if e.type == "text_delta"]
    assert "".join(d.delta for d in deltas) == "hello world, this is faux"  # type: ignore[union-attr]
    assert all(12 <= len(d.delta) <= 20 for d in deltas[:-1])  # type: ignore[union-attr]
    # Every partial holds the text so far.
    so_far = ""
    for delta in deltas:
        so_far += delta.delta  # type: ignore[union-attr]
        assert delta.partial.content == [TextContent(text=so_far)]
    message = final(events)
    assert (message.api, message.provider, message.model, message.stop_reason) == (
        "faux",
        "faux",
        "faux-1",
        "stop",
    )
    assert message.content == [TextContent(text="hello world, this is faux")]
    assert events[0].partial.content == []  # type: ignore[union-attr]


async def test_seeded_chunking_is_reproducible() -> None:
    text = "x" * 200

    async def chunks(seed: int) -> list[int]:
        faux = FauxProvider([faux_assistant_message(text)], seed=seed)
        return [len(e.delta) for e in await collect(faux) if e.type == "text_delta"]  # type: ignore[union-attr]

    assert await chunks(7) == await chunks(7)


async def test_thinking_text_and_tool_call_blocks_in_order() -> None:
    call = faux_tool_call("bash", {"command": "ls -la /tmp", "timeout": 5}, id="call-1")
    faux = FauxProvider(
        [faux_assistant_message([faux_thinking("plan"), faux_text("Running."), call], stop_reason="toolUse")],
        token_size=(1, 1),
    )
    events = await collect(faux)
    kinds = [e.type for e in events]
    assert kinds == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_end",
        "text_start",
        "text_delta",
        "text_delta",
        "text_end",
        "toolcall_start",
        *["toolcall_delta"] * math.ceil(len(json.dumps(call.arguments, separators=(",", ":"))) / 4),
        "toolcall_end",
        "done",
    ]
    deltas = [e for e in events if isinstance(e, ToolCallDeltaEvent)]
    assert "".join(d.delta for d in deltas) == '{"command":"ls -la /tmp","timeout":5}'
    # Arguments are parsed best-effort while they stream.
    partial_args = [d.partial.content[2].arguments for d in deltas]  # type: ignore[union-attr]
    assert partial_args[0] == {}
    assert {"command": "ls -"} in partial_args  # a string cut mid-way is kept
    assert partial_args[-1] == {"command": "ls -la /tmp", "timeout": 5}
    end = next(e for e in events if isinstance(e, ToolCallEndEvent))
    assert end.tool_call == call and end.content_index == 2
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.reason == "toolUse"
    assert done.message.content == [ThinkingContent(thinking="plan"), TextContent(text="Running."), call]


async def test_empty_text_streams_one_empty_delta() -> None:
    events = await collect(FauxProvider([faux_assistant_message("")]))
    assert [e.type for e in events] == ["start", "text_start", "text_delta", "text_end", "done"]


async def test_scripted_error_reply_ends_with_an_error_event() -> None:
    failed = faux_assistant_message("partial", stop_reason="error", error_message="overloaded")
    events = await collect(FauxProvider([failed]))
    last = events[-1]
    assert isinstance(last, ErrorEvent) and last.reason == "error"
    assert last.error.error_message == "overloaded" and last.error.content == [TextContent(text="partial")]


async def test_scripted_error_without_content_still_starts() -> None:
    failed = faux_assistant_message([], stop_reason="error", error_message="overloaded")
    events = await collect(FauxProvider([failed]))
    assert [e.type for e in events] == ["start", "error"]


async def test_empty_queue_gives_an_error_reply() -> None:
    faux = FauxProvider()
    events = await collect(faux)
    assert [e.type for e in events] == ["error"]
    message = final(events)
    assert (message.stop_reason, message.error_message) == ("error", FAUX_NO_MORE_RESPONSES)
    assert FAUX_NO_MORE_RESPONSES == "No more faux responses queued"
    assert (message.api, message.provider, message.model, message.content) == ("faux", "faux", "faux-1", [])
    assert faux.call_count == 1


async def test_queue_management_and_call_recording() -> None:
    faux = FauxProvider([faux_assistant_message("a")])
    assert faux.pending_response_count == 1
    faux.append_responses([faux_assistant_message("b"), faux_assistant_message("c")])
    assert faux.pending_response_count == 3
    faux.set_responses([faux_assistant_message("only")])
    assert faux.pending_response_count == 1
    options = StreamOptions(session_id="s")
    stream = faux.stream(faux.model, CONTEXT, options)
    # The step is consumed and the call recorded when the stream function is called.
    assert (faux.pending_response_count, faux.call_count) == (0, 1)
    assert faux.requests[0].context is CONTEXT and faux.requests[0].options is options
    message = final([event async for event in stream])
    assert message.content == [TextContent(text="only")]


async def test_factories_sync_and_async_see_the_request() -> None:
    seen: list[tuple[str, int, str]] = []

    def sync_factory(
        context: LlmContext, options: StreamOptions, state: FauxState, model: Model
    ) -> AssistantMessage:
        seen.append((context.system_prompt, state.call_count, model.id))
        return faux_assistant_message("sync")

    async def async_factory(
        context: LlmContext, options: StreamOptions, state: FauxState, model: Model
    ) -> FauxReply:
        await anyio.lowlevel.checkpoint()
        seen.append((context.system_prompt, state.call_count, model.id))
        return FauxReply(faux_assistant_message("async"))

    faux = FauxProvider([sync_factory, async_factory])
    assert final(await collect(faux)).content == [TextContent(text="sync")]
    assert final(await collect(faux)).content == [TextContent(text="async")]
    assert seen == [("sys", 1, "faux-1"), ("sys", 2, "faux-1")]


async def test_a_raising_factory_becomes_an_error_reply() -> None:
    def broken(*args: Any) -> AssistantMessage:
        raise RuntimeError("factory failed")

    def wrong(*args: Any) -> Any:
        return "not a message"

    faux = FauxProvider([broken, wrong])
    assert final(await collect(faux)).error_message == "factory failed"
    assert (
        final(await collect(faux)).error_message
        == "a faux step must give an AssistantMessage or FauxReply, not str"
    )


async def test_on_response_is_called_with_status_200() -> None:
    calls: list[tuple[int, dict[str, str], str]] = []

    async def on_response(status: int, headers: dict[str, str], model: Model) -> None:
        calls.append((status, headers, model.id))

    await collect(FauxProvider([faux_assistant_message("x")]), options=StreamOptions(on_response=on_response))
    assert calls == [(200, {}, "faux-1")]


async def test_abort_before_the_request_gives_an_aborted_error_without_start() -> None:
    signal = AbortSignal()
    signal.abort()
    events = await collect(FauxProvider([faux_assistant_message("x")]), options=StreamOptions(signal=signal))
    assert [e.type for e in events] == ["error"]
    message = final(events)
    assert (message.stop_reason, message.error_message, message.content) == (
        "aborted",
        "Request was aborted",
        [],
    )


async def test_abort_between_chunks_keeps_the_partial() -> None:
    signal = AbortSignal()
    faux = FauxProvider([faux_assistant_message("aaaabbbbccccdddd")], token_size=(1, 1))
    events = []
    async for event in faux.stream(faux.model, CONTEXT, StreamOptions(signal=signal)):
        events.append(event)
        if event.type == "text_delta":
            signal.abort()
    last = events[-1]
    assert isinstance(last, ErrorEvent) and last.reason == "aborted"
    assert last.error.content == [TextContent(text="aaaa")]
    assert last.error.error_message == "Request was aborted"


async def test_abort_interrupts_a_slow_chunk_delay() -> None:
    signal = AbortSignal()
    faux = FauxProvider([faux_assistant_message("slow reply")], tokens_per_second=0.001)
    events: list[AssistantMessageEvent] = []

    async def consume() -> None:
        async for event in faux.stream(faux.model, CONTEXT, StreamOptions(signal=signal)):
            events.append(event)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(consume)
            while not events:
                await anyio.lowlevel.checkpoint()
            signal.abort()
    assert [e.type for e in events] == ["start", "text_start", "error"]
    assert final(events).stop_reason == "aborted"


async def test_chunk_delay_paces_the_stream() -> None:
    faux = FauxProvider([FauxReply(faux_assistant_message("abcdefgh"), chunk_delay=0.02)], token_size=(1, 1))
    start = anyio.current_time()
    events = await collect(faux)
    assert anyio.current_time() - start >= 0.04  # two chunks
    assert final(events).content == [TextContent(text="abcdefgh")]


# -- usage --------------------------------------------------------------------------------


async def test_usage_estimate_is_a_token_per_four_characters() -> None:
    context = LlmContext(
        system_prompt="be brief",
        messages=[UserMessage(content="hello")],
        tools=[ToolSpec(name="t", description="d", parameters={})],
    )
    message = final(await collect(FauxProvider([faux_assistant_message("four")]), context))
    prompt = 'system:be brief\n\nuser:hello\n\ntools:[{"name":"t","description":"d","parameters":{}}]'
    assert message.usage.input == math.ceil(len(prompt) / 4)
    assert message.usage.output == 1
    assert message.usage.total_tokens == message.usage.input + 1
    assert message.usage.cost.total == 0


async def test_session_id_simulates_prompt_caching() -> None:
    faux = FauxProvider(
        [faux_assistant_message("a"), faux_assistant_message("b"), faux_assistant_message("c")]
    )
    first_context = LlmContext(system_prompt="x" * 40, messages=[UserMessage(content="one")])
    second_context = LlmContext(
        system_prompt="x" * 40, messages=[UserMessage(content="one"), UserMessage(content="two")]
    )
    options = StreamOptions(session_id="s1")
    first = final(await collect(faux, first_context, options)).usage
    second = final(await collect(faux, second_context, options)).usage
    assert (first.cache_read, first.cache_write) == (0, first.input)
    assert second.cache_read == math.ceil(len("system:" + "x" * 40 + "\n\nuser:one") / 4)
    prompt_tokens = math.ceil(len("system:" + "x" * 40 + "\n\nuser:one\n\nuser:two") / 4)
    assert second.cache_write > 0 and second.input == prompt_tokens - second.cache_read
    uncached = final(
        await collect(faux, second_context, StreamOptions(session_id="s1", cache_retention="none"))
    )
    assert (uncached.usage.cache_read, uncached.usage.cache_write) == (0, 0)


async def test_reply_usage_override() -> None:
    usage = Usage(input=100, output=7, total_tokens=107)
    message = final(await collect(FauxProvider([FauxReply(faux_assistant_message("x"), usage=usage)])))
    assert message.usage == usage


def test_helpers() -> None:
    first, second = faux_tool_call("a", {}), faux_tool_call("a", {})
    assert first.id != second.id
    assert faux_tool_call("a", {"k": 1}, id="fixed") == ToolCall(id="fixed", name="a", arguments={"k": 1})
    message = faux_assistant_message(
        faux_text("one block"), stop_reason="length", response_id="r1", timestamp=5
    )
    assert (message.content, message.stop_reason, message.response_id, message.timestamp) == (
        [TextContent(text="one block")],
        "length",
        "r1",
        5,
    )


# -- JSON scripts -------------------------------------------------------------------------


def write(tmp_path: Path, data: Any, name: str = "script.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


async def test_script_replies_in_every_form(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        [
            {"text": "hello"},
            {"thinking": "hmm", "text": "answer"},
            {"toolCalls": [{"name": "bash", "arguments": {"command": "ls"}}], "text": "optional"},
            {"toolCalls": [{"name": "read", "id": "mine"}]},
            {"error": "overloaded"},
            {
                "text": "counted",
                "usage": {"input": 10, "output": 2, "totalTokens": 12},
                "stopReason": "length",
            },
            {"text": "paced", "delayMs": 1},
        ],
    )
    faux = load_faux_script(path)
    assert faux.pending_response_count == 7
    replies = [final(await collect(faux)) for _ in range(7)]
    assert replies[0].content == [TextContent(text="hello")] and replies[0].stop_reason == "stop"
    assert replies[1].content == [ThinkingContent(thinking="hmm"), TextContent(text="answer")]
    assert replies[2].content == [
        TextContent(text="optional"),
        ToolCall(id="faux_2_0", name="bash", arguments={"command": "ls"}),
    ]
    assert replies[2].stop_reason == "toolUse"
    assert replies[3].content == [ToolCall(id="mine", name="read", arguments={})]
    assert (replies[4].stop_reason, replies[4].error_message, replies[4].content) == (
        "error",
        "overloaded",
        [],
    )
    assert replies[5].stop_reason == "length" and replies[5].usage == Usage(
        input=10, output=2, total_tokens=12
    )
    assert replies[6].content == [TextContent(text="paced")]
    exhausted = final(await collect(faux))
    assert exhausted.stop_reason == "error"
    assert exhausted.error_message == (
        f"No more faux responses queued: all 7 replies of the faux script {path} were used"
    )


async def test_script_options_are_passed_on(tmp_path: Path) -> None:
    faux = load_faux_script(write(tmp_path, [{"text": "x" * 40}]), token_size=(10, 10))
    deltas = [e for e in await collect(faux) if e.type == "text_delta"]
    assert len(deltas) == 1


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ("[{", "is not valid JSON: Expecting property name enclosed in double quotes (line 1, column 3)"),
        ({"text": "hi"}, "must be a JSON list of replies, not a JSON object"),
        ([{"text": "ok"}, "hi"], "entry [1]: a reply must be a JSON object, not a JSON string"),
        ([{"tool_calls": []}], "entry [0]: unknown key 'tool_calls' (expected any of: text, thinking, "),
        ([{"usage": {}}], "entry [0]: a reply needs at least one of text, thinking, toolCalls or error"),
        ([{"text": 5}], "entry [0]: 'text' must be a string, not a JSON number"),
        ([{"toolCalls": {"name": "x"}}], "entry [0]: 'toolCalls' must be a list, not a JSON object"),
        (
            [{"toolCalls": [{"arguments": {}}]}],
            'entry [0]: toolCalls[0] must be an object with a string "name"',
        ),
        (
            [{"toolCalls": [{"name": "x", "arguments": []}]}],
            "entry [0]: toolCalls[0].arguments must be an object",
        ),
        ([{"toolCalls": [{"name": "x", "id": 3}]}], "entry [0]: toolCalls[0].id must be a string"),
        (
            [{"text": "x", "stopReason": "done"}],
            "entry [0]: 'stopReason' must be one of stop, length, toolUse",
        ),
        ([{"text": "x", "usage": {"input": "many"}}], "entry [0]: invalid 'usage' at input: Input should be"),
        (
            [{"text": "x", "delayMs": -1}],
            "entry [0]: 'delayMs' must be a number of milliseconds >= 0, not -1",
        ),
    ],
)
def test_malformed_scripts_name_the_file_and_the_entry(tmp_path: Path, data: Any, problem: str) -> None:
    path = write(tmp_path, data)
    with pytest.raises(FauxScriptError) as caught:
        load_faux_script(path)
    message = str(caught.value)
    assert str(path) in message
    assert problem in message


def test_missing_script_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(
        FauxScriptError, match=r"cannot read faux script .*nope\.json: No such file or directory"
    ):
        load_faux_script(missing)
