"""The agent loop: pi's agent-loop.test.ts scenarios, plus bad input, failures and abort."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from pi_host.agent import (
    ABORTED_MESSAGE,
    AfterToolCallContext,
    AfterToolCallResult,
    AgentContext,
    AgentLoopConfig,
    BeforeToolCallContext,
    BeforeToolCallResult,
    Tool,
    ToolCallContext,
    TurnContext,
    TurnUpdate,
    run_agent_loop,
    run_agent_loop_continue,
)
from pi_host.messages import (
    AgentEvent,
    AgentMessage,
    AssistantMessage,
    AssistantMessageEvent,
    CustomMessage,
    DoneEvent,
    ErrorEvent,
    Message,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    StartEvent,
    TextContent,
    TextDeltaEvent,
    TextStartEvent,
    ToolCall,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    ToolResult,
    ToolResultMessage,
    TurnEndEvent,
    UserMessage,
)
from pi_host.providers import AbortSignal, LlmContext, Model, StreamOptions
from pi_host.providers._faux import FauxProvider, faux_assistant_message
from tests.agent_support import text_of

MODEL = Model(
    id="mock",
    name="mock",
    api="openai-responses",
    provider="openai",
    base_url="https://example.invalid",
    context_window=8192,
    max_tokens=2048,
)


# -- helpers ------------------------------------------------------------------------------


def assistant(content: list[Any] | str, stop_reason: str = "stop", **extra: Any) -> AssistantMessage:
    blocks = [TextContent(text=content)] if isinstance(content, str) else content
    return AssistantMessage(
        content=blocks,
        api="openai-responses",
        provider="openai",
        model="mock",
        stop_reason=stop_reason,
        **extra,
    )


def call(id: str, value: Any, name: str = "echo") -> ToolCall:
    return ToolCall(id=id, name=name, arguments={"value": value})


def user(text: str) -> UserMessage:
    return UserMessage(content=text)


Reply = AssistantMessage | Callable[[LlmContext], AssistantMessage]


class MockStream:
    """pi's MockAssistantStream: each call answers with the next reply as a single final event."""

    def __init__(self, *replies: Reply, repeat_last: bool = False) -> None:
        self.replies = list(replies)
        self.repeat_last = repeat_last
        self.contexts: list[LlmContext] = []
        self.options: list[StreamOptions] = []

    @property
    def calls(self) -> int:
        return len(self.contexts)

    def __call__(self, model: Model, context: LlmContext, options: StreamOptions) -> AsyncIterator[Any]:
        self.contexts.append(context)
        self.options.append(options)
        reply = self.replies[0] if self.repeat_last and len(self.replies) == 1 else self.replies.pop(0)
        return self._events(reply if isinstance(reply, AssistantMessage) else reply(context))

    async def _events(self, message: AssistantMessage) -> AsyncIterator[AssistantMessageEvent]:
        await anyio.lowlevel.checkpoint()
        if message.stop_reason in ("error", "aborted"):
            yield ErrorEvent(reason=message.stop_reason, error=message)  # type: ignore[arg-type]
        else:
            yield DoneEvent(reason=message.stop_reason, message=message)  # type: ignore[arg-type]


class Recorder:
    def __init__(self) -> None:
        self.events: list[AgentEvent] = []

    async def __call__(self, event: AgentEvent) -> None:
        self.events.append(event)

    @property
    def types(self) -> list[str]:
        return [event.type for event in self.events]

    def of(self, kind: type[Any]) -> list[Any]:
        return [event for event in self.events if isinstance(event, kind)]


async def identity(messages: list[AgentMessage]) -> list[Message]:
    return [m for m in messages if m.role in ("user", "assistant", "toolResult")]  # type: ignore[misc]


def config(stream: Any, **options: Any) -> AgentLoopConfig:
    options.setdefault("convert_to_llm", identity)
    return AgentLoopConfig(model=MODEL, stream_fn=stream, **options)


class Value(BaseModel):
    value: str


def echo_tool(
    executed: list[Any] | None = None,
    *,
    name: str = "echo",
    run: Callable[[Value, ToolCallContext], Any] | None = None,
    terminate: Callable[[Value], bool | None] | None = None,
    **extra: Any,
) -> Tool[Value]:
    async def execute(params: Value, ctx: ToolCallContext) -> ToolResult:
        if executed is not None:
            executed.append(params.value)
        if run is not None:
            await run(params, ctx)
        return ToolResult(
            content=[TextContent(text=f"echoed: {params.value}")],
            details={"value": params.value},
            terminate=terminate(params) if terminate else None,
        )

    return Tool(name=name, description=f"{name} tool", parameters=Value, execute=execute, **extra)


# -- pi agent-loop.test.ts ----------------------------------------------------------------


async def test_basic_prompt_returns_user_and_assistant() -> None:
    recorder = Recorder()
    stream = MockStream(assistant("Hi there!"))
    messages = await run_agent_loop(
        [user("Hello")], AgentContext("You are helpful."), config(stream), recorder
    )
    assert [m.role for m in messages] == ["user", "assistant"]
    assert recorder.types == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]
    assert stream.contexts[0].system_prompt == "You are helpful."


async def test_custom_message_filtered_by_custom_convert_to_llm() -> None:
    notification = CustomMessage(custom_type="notification", content="This is a notification", display=True)
    seen: list[Message] = []

    async def convert(messages: list[AgentMessage]) -> list[Message]:
        seen[:] = [m for m in messages if m.role in ("user", "assistant", "toolResult")]  # type: ignore[misc]
        return list(seen)

    stream = MockStream(assistant("Response"))
    await run_agent_loop(
        [user("Hello")],
        AgentContext("You are helpful.", [notification]),
        config(stream, convert_to_llm=convert),
        Recorder(),
    )
    assert [m.role for m in seen] == ["user"]
    assert [m.role for m in stream.contexts[0].messages] == ["user"]


async def test_transform_context_runs_before_convert_to_llm() -> None:
    transformed: list[AgentMessage] = []
    converted: list[Message] = []
    signals: list[AbortSignal] = []

    async def transform(messages: list[AgentMessage], signal: AbortSignal) -> list[AgentMessage]:
        signals.append(signal)
        transformed[:] = messages[-2:]
        return list(transformed)

    async def convert(messages: list[AgentMessage]) -> list[Message]:
        converted[:] = await identity(messages)
        return list(converted)

    history: list[AgentMessage] = [
        user("old message 1"),
        assistant("old response 1"),
        user("old message 2"),
        assistant("old response 2"),
    ]
    signal = AbortSignal()
    await run_agent_loop(
        [user("new message")],
        AgentContext("", history),
        config(MockStream(assistant("Response")), transform_context=transform, convert_to_llm=convert),
        Recorder(),
        signal,
    )
    assert len(transformed) == 2
    assert len(converted) == 2
    assert signals == [signal]


async def test_tool_call_and_result() -> None:
    executed: list[Any] = []
    recorder = Recorder()
    stream = MockStream(assistant([call("tool-1", "hello")], "toolUse"), assistant("done"))
    messages = await run_agent_loop(
        [user("echo something")], AgentContext(tools=[echo_tool(executed)]), config(stream), recorder
    )
    assert executed == ["hello"]
    (start,) = recorder.of(ToolExecutionStartEvent)
    (end,) = recorder.of(ToolExecutionEndEvent)
    assert (start.tool_call_id, start.tool_name, start.args) == ("tool-1", "echo", {"value": "hello"})
    assert end.is_error is False
    assert end.result.content == [TextContent(text="echoed: hello")]
    assert [m.role for m in messages] == ["user", "assistant", "toolResult", "assistant"]
    # Sequence B: the tool turn, then a text turn.
    assert recorder.types == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "tool_execution_start",
        "tool_execution_end",
        "message_start",
        "message_end",
        "turn_end",
        "turn_start",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]
    result = messages[2]
    assert isinstance(result, ToolResultMessage)
    assert result.tool_call_id == "tool-1" and result.details == {"value": "hello"}
    assert [m.role for m in stream.contexts[1].messages] == ["user", "assistant", "toolResult"]


async def test_before_tool_call_mutated_args_execute_without_revalidation() -> None:
    executed: list[Any] = []

    async def before(ctx: BeforeToolCallContext, signal: AbortSignal) -> None:
        ctx.args.value = 123  # type: ignore[attr-defined]  # the schema says str: not revalidated

    stream = MockStream(assistant([call("tool-1", "hello")], "toolUse"), assistant("done"))
    await run_agent_loop(
        [user("echo")],
        AgentContext(tools=[echo_tool(executed)]),
        config(stream, before_tool_call=before),
        Recorder(),
    )
    assert executed == [123]


async def test_before_tool_call_replaced_args_execute_without_revalidation() -> None:
    executed: list[Any] = []

    async def before(ctx: BeforeToolCallContext, signal: AbortSignal) -> BeforeToolCallResult:
        assert ctx.tool_call.id == "tool-1" and ctx.assistant_message.stop_reason == "toolUse"
        assert [m.role for m in ctx.context.messages] == ["user", "assistant"]
        return BeforeToolCallResult(args=Value.model_construct(value=456))

    stream = MockStream(assistant([call("tool-1", "hello")], "toolUse"), assistant("done"))
    await run_agent_loop(
        [user("echo")],
        AgentContext(tools=[echo_tool(executed)]),
        config(stream, before_tool_call=before),
        Recorder(),
    )
    assert executed == [456]


class Replace(BaseModel):
    oldText: str  # pi's wire names
    newText: str


class Edits(BaseModel):
    edits: list[Replace]


async def test_prepare_arguments_folds_legacy_arguments_before_validation() -> None:
    executed: list[list[Replace]] = []

    def prepare(raw: dict[str, Any]) -> dict[str, Any]:
        if isinstance(raw.get("oldText"), str) and isinstance(raw.get("newText"), str):
            return {"edits": [*raw.get("edits", []), {"oldText": raw["oldText"], "newText": raw["newText"]}]}
        return raw

    async def execute(params: Edits, ctx: ToolCallContext) -> ToolResult:
        executed.append(params.edits)
        return ToolResult.text(f"edited {len(params.edits)}")

    tool = Tool(
        name="edit", description="Edit tool", parameters=Edits, execute=execute, prepare_arguments=prepare
    )
    legacy = ToolCall(id="tool-1", name="edit", arguments={"oldText": "before", "newText": "after"})
    recorder = Recorder()
    stream = MockStream(assistant([legacy], "toolUse"), assistant("done"))
    await run_agent_loop([user("edit")], AgentContext(tools=[tool]), config(stream), recorder)
    assert executed == [[Replace(oldText="before", newText="after")]]
    # Events carry the model's raw arguments.
    assert recorder.of(ToolExecutionStartEvent)[0].args == {"oldText": "before", "newText": "after"}


async def test_parallel_tool_end_in_completion_order_results_in_source_order() -> None:
    release = anyio.Event()
    state = {"first_resolved": False, "parallel_observed": False}

    async def run(params: Value, ctx: ToolCallContext) -> None:
        if params.value == "first":
            await release.wait()
            state["first_resolved"] = True
        else:
            state["parallel_observed"] = not state["first_resolved"]
            release.set()

    recorder = Recorder()
    stream = MockStream(
        assistant([call("tool-1", "first"), call("tool-2", "second")], "toolUse"), assistant("done")
    )
    await run_agent_loop(
        [user("echo both")],
        AgentContext(tools=[echo_tool(run=run)]),
        config(stream, tool_execution="parallel"),
        recorder,
    )
    assert state["parallel_observed"] is True
    assert [e.tool_call_id for e in recorder.of(ToolExecutionEndEvent)] == ["tool-2", "tool-1"]
    result_ends = [
        e.message.tool_call_id for e in recorder.of(MessageEndEvent) if e.message.role == "toolResult"
    ]
    assert result_ends == ["tool-1", "tool-2"]
    (turn_end, _) = recorder.of(TurnEndEvent)
    assert [r.tool_call_id for r in turn_end.tool_results] == ["tool-1", "tool-2"]
    # Preflight announces every call before any tool finishes.
    kinds = [e.type for e in recorder.events if e.type.startswith("tool_execution")]
    assert kinds == [
        "tool_execution_start",
        "tool_execution_start",
        "tool_execution_end",
        "tool_execution_end",
    ]


async def test_steering_is_injected_after_all_tool_calls_of_the_batch() -> None:
    executed: list[Any] = []
    delivered = False

    async def steering() -> list[AgentMessage]:
        nonlocal delivered
        if len(executed) >= 1 and not delivered:
            delivered = True
            return [user("interrupt")]
        return []

    recorder = Recorder()
    stream = MockStream(
        assistant([call("tool-1", "first"), call("tool-2", "second")], "toolUse"), assistant("done")
    )
    await run_agent_loop(
        [user("start")],
        AgentContext(tools=[echo_tool(executed)]),
        config(stream, tool_execution="sequential", get_steering_messages=steering),
        recorder,
    )
    assert executed == ["first", "second"]
    assert [e.is_error for e in recorder.of(ToolExecutionEndEvent)] == [False, False]
    starts = []
    for event in recorder.of(MessageStartEvent):
        if event.message.role == "toolResult":
            starts.append(f"tool:{event.message.tool_call_id}")
        elif event.message.role == "user":
            starts.append(event.message.content)
    assert starts == ["start", "tool:tool-1", "tool:tool-2", "interrupt"]
    assert any(m.role == "user" and m.content == "interrupt" for m in stream.contexts[1].messages)


def overlap_probe() -> tuple[Callable[[Value, ToolCallContext], Any], dict[str, bool]]:
    """A tool body whose 'first' call yields to the loop repeatedly: any overlap is observed."""
    state = {"first_resolved": False, "parallel_observed": False}

    async def run(params: Value, ctx: ToolCallContext) -> None:
        if params.value == "first":
            for _ in range(20):
                await anyio.lowlevel.checkpoint()
            state["first_resolved"] = True
        elif not state["first_resolved"]:
            state["parallel_observed"] = True

    return run, state


async def test_sequential_execution_mode_forces_sequential_batch() -> None:
    run, state = overlap_probe()
    recorder = Recorder()
    stream = MockStream(
        assistant([call("tool-1", "first", "slow"), call("tool-2", "second", "slow")], "toolUse"),
        assistant("done"),
    )
    tool = echo_tool(name="slow", run=run, execution_mode="sequential")
    await run_agent_loop([user("run both")], AgentContext(tools=[tool]), config(stream), recorder)
    assert state["parallel_observed"] is False
    result_ends = [
        e.message.tool_call_id for e in recorder.of(MessageEndEvent) if e.message.role == "toolResult"
    ]
    assert result_ends == ["tool-1", "tool-2"]
    # Sequential: each call's result message follows its own end event.
    kinds = [
        e.type for e in recorder.events if e.type.startswith("tool_execution") or e.type == "message_end"
    ]
    assert kinds[1:] == [
        "message_end",
        "tool_execution_start",
        "tool_execution_end",
        "message_end",
        "tool_execution_start",
        "tool_execution_end",
        "message_end",
        "message_end",
    ]


async def test_one_sequential_tool_makes_the_whole_batch_sequential() -> None:
    order: list[str] = []
    release_checkpoints = 20

    async def slow(params: Value, ctx: ToolCallContext) -> None:
        order.append(f"slow:{params.value}")
        for _ in range(release_checkpoints):
            await anyio.lowlevel.checkpoint()

    async def fast(params: Value, ctx: ToolCallContext) -> None:
        order.append(f"fast:{params.value}")

    tools = [echo_tool(name="slow", run=slow, execution_mode="sequential"), echo_tool(name="fast", run=fast)]
    stream = MockStream(
        assistant([call("tool-1", "a", "slow"), call("tool-2", "b", "fast")], "toolUse"), assistant("ok")
    )
    await run_agent_loop([user("run both")], AgentContext(tools=tools), config(stream), Recorder())
    assert order == ["slow:a", "fast:b"]


async def test_all_parallel_tools_run_in_parallel() -> None:
    release = anyio.Event()
    state = {"parallel_observed": False}

    async def run(params: Value, ctx: ToolCallContext) -> None:
        if params.value == "first":
            await release.wait()
        else:
            state["parallel_observed"] = True
            release.set()

    stream = MockStream(
        assistant([call("tool-1", "first"), call("tool-2", "second")], "toolUse"), assistant("done")
    )
    tool = echo_tool(run=run, execution_mode="parallel")
    await run_agent_loop([user("echo both")], AgentContext(tools=[tool]), config(stream), Recorder())
    assert state["parallel_observed"] is True


async def test_config_tool_execution_sequential() -> None:
    run, state = overlap_probe()
    stream = MockStream(
        assistant([call("tool-1", "first"), call("tool-2", "second")], "toolUse"), assistant("done")
    )
    await run_agent_loop(
        [user("x")],
        AgentContext(tools=[echo_tool(run=run)]),
        config(stream, tool_execution="sequential"),
        Recorder(),
    )
    assert state["parallel_observed"] is False


async def test_prepare_next_turn_new_context_is_used_for_the_next_request() -> None:
    prepared = False

    async def prepare(turn: TurnContext, signal: AbortSignal) -> TurnUpdate | None:
        nonlocal prepared
        if prepared:
            return None
        prepared = True
        context = AgentContext("second prompt", list(turn.context.messages), turn.context.tools)
        return TurnUpdate(context=context)

    stream = MockStream(assistant([call("tool-1", "hello")], "toolUse"), assistant("done"))
    await run_agent_loop(
        [user("echo")],
        AgentContext("first prompt", tools=[echo_tool()]),
        config(stream, prepare_next_turn=prepare),
        Recorder(),
    )
    assert stream.calls == 2
    assert [c.system_prompt for c in stream.contexts] == ["first prompt", "second prompt"]


async def test_prepare_next_turn_switches_model_and_thinking_level() -> None:
    other = MODEL.model_copy(update={"id": "other"})
    models: list[str] = []
    reasoning: list[Any] = []
    updates = iter([TurnUpdate(model=other, thinking_level="high"), TurnUpdate(thinking_level="off"), None])

    async def prepare(turn: TurnContext, signal: AbortSignal) -> TurnUpdate | None:
        return next(updates)

    def record(context: LlmContext) -> AssistantMessage:
        return (
            assistant([call(f"tool-{len(models)}", "x")], "toolUse") if len(models) < 3 else assistant("end")
        )

    stream = MockStream(record, record, record)
    original = stream.__call__

    def spy(model: Model, context: LlmContext, options: StreamOptions) -> Any:
        models.append(model.id)
        reasoning.append(options.reasoning)
        return original(model, context, options)

    await run_agent_loop(
        [user("x")],
        AgentContext(tools=[echo_tool()]),
        config(spy, prepare_next_turn=prepare, reasoning="low"),
        Recorder(),
    )
    assert models == ["mock", "other", "other"]
    assert reasoning == ["low", "high", None]


async def test_should_stop_after_turn_ends_the_run_after_the_tool_turn() -> None:
    executed: list[Any] = []
    polls = {"steering": 0, "follow_up": 0}
    seen: dict[str, Any] = {}

    async def steering() -> list[AgentMessage]:
        polls["steering"] += 1
        return []

    async def follow_up() -> list[AgentMessage]:
        polls["follow_up"] += 1
        return [user("follow up should stay queued")]

    async def should_stop(turn: TurnContext, signal: AbortSignal) -> bool:
        assert turn.message.role == "assistant"
        seen["results"] = [r.tool_call_id for r in turn.tool_results]
        seen["roles"] = [m.role for m in turn.context.messages]
        return True

    recorder = Recorder()
    stream = MockStream(assistant([call("tool-1", "hello")], "toolUse"), assistant("should not run"))
    messages = await run_agent_loop(
        [user("echo something")],
        AgentContext(tools=[echo_tool(executed)]),
        config(
            stream,
            get_steering_messages=steering,
            get_follow_up_messages=follow_up,
            should_stop_after_turn=should_stop,
        ),
        recorder,
    )
    assert stream.calls == 1
    assert executed == ["hello"]
    assert polls == {"steering": 1, "follow_up": 0}
    assert seen == {"results": ["tool-1"], "roles": ["user", "assistant", "toolResult"]}
    assert [m.role for m in messages] == ["user", "assistant", "toolResult"]
    # Sequence C.
    assert recorder.types == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "tool_execution_start",
        "tool_execution_end",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]


async def test_all_terminating_results_stop_after_the_batch() -> None:
    recorder = Recorder()
    stream = MockStream(assistant([call("tool-1", "hello")], "toolUse"), repeat_last=True)
    messages = await run_agent_loop(
        [user("echo")], AgentContext(tools=[echo_tool(terminate=lambda p: True)]), config(stream), recorder
    )
    assert stream.calls == 1
    assert [m.role for m in messages] == ["user", "assistant", "toolResult"]
    assert len(recorder.of(TurnEndEvent)) == 1


async def test_mixed_terminate_in_a_parallel_batch_continues() -> None:
    stream = MockStream(
        assistant([call("tool-1", "first"), call("tool-2", "second")], "toolUse"), assistant("done")
    )
    tool = echo_tool(terminate=lambda p: p.value == "first")
    messages = await run_agent_loop(
        [user("echo both")], AgentContext(tools=[tool]), config(stream, tool_execution="parallel"), Recorder()
    )
    assert stream.calls == 2
    assert [m.role for m in messages] == ["user", "assistant", "toolResult", "toolResult", "assistant"]


async def test_after_tool_call_can_terminate_the_batch() -> None:
    async def after(ctx: AfterToolCallContext, signal: AbortSignal) -> AfterToolCallResult:
        return AfterToolCallResult(terminate=True)

    stream = MockStream(assistant([call("tool-1", "hello")], "toolUse"), repeat_last=True)
    await run_agent_loop(
        [user("x")], AgentContext(tools=[echo_tool()]), config(stream, after_tool_call=after), Recorder()
    )
    assert stream.calls == 1


async def test_terminated_batch_still_polls_follow_ups() -> None:
    follow_ups = [[user("more")], []]

    async def follow_up() -> list[AgentMessage]:
        return follow_ups.pop(0)

    stream = MockStream(assistant([call("tool-1", "x")], "toolUse"), assistant("after follow-up"))
    messages = await run_agent_loop(
        [user("go")],
        AgentContext(tools=[echo_tool(terminate=lambda p: True)]),
        config(stream, get_follow_up_messages=follow_up),
        Recorder(),
    )
    assert [m.role for m in messages] == ["user", "assistant", "toolResult", "user", "assistant"]


async def test_continue_with_empty_context_raises() -> None:
    with pytest.raises(ValueError, match=r"^Cannot continue: no messages in context$"):
        await run_agent_loop_continue(AgentContext("You are helpful."), config(MockStream()), Recorder())


async def test_continue_from_assistant_tail_raises() -> None:
    recorder = Recorder()
    with pytest.raises(ValueError, match=r"^Cannot continue from message role: assistant$"):
        await run_agent_loop_continue(
            AgentContext("", [user("hi"), assistant("yo")]), config(MockStream()), recorder
        )
    assert recorder.events == []


async def test_continue_emits_no_events_for_existing_messages() -> None:
    recorder = Recorder()
    context = AgentContext("You are helpful.", [user("Hello")])
    messages = await run_agent_loop_continue(context, config(MockStream(assistant("Response"))), recorder)
    assert [m.role for m in messages] == ["assistant"]
    assert [e.message.role for e in recorder.of(MessageEndEvent)] == ["assistant"]
    # Sequence D.
    assert recorder.types == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]
    assert len(context.messages) == 1  # the caller's context is not mutated


async def test_continue_from_a_custom_message_converted_to_user() -> None:
    hook = CustomMessage(custom_type="hook", content="Hook content")

    async def convert(messages: list[AgentMessage]) -> list[Message]:
        out: list[Message] = []
        for m in messages:
            if isinstance(m, CustomMessage):
                out.append(UserMessage(content=m.content, timestamp=m.timestamp))
            elif m.role in ("user", "assistant", "toolResult"):
                out.append(m)  # type: ignore[arg-type]
        return out

    stream = MockStream(assistant("Response to custom message"))
    messages = await run_agent_loop_continue(
        AgentContext("You are helpful.", [hook]), config(stream, convert_to_llm=convert), Recorder()
    )
    assert [m.role for m in messages] == ["assistant"]
    assert stream.contexts[0].messages[0].content == "Hook content"


# -- the provider request -----------------------------------------------------------------


async def test_request_carries_tools_options_and_a_fresh_api_key_per_call() -> None:
    keys = iter(["key-1", None])
    providers: list[str] = []

    async def get_api_key(provider: str) -> str | None:
        providers.append(provider)
        return next(keys)

    async def on_payload(payload: Any, model: Model) -> Any:
        return None

    stream = MockStream(assistant([call("tool-1", "x")], "toolUse"), assistant("done"))
    await run_agent_loop(
        [user("x")],
        AgentContext("sys", tools=[echo_tool()]),
        config(
            stream,
            get_api_key=get_api_key,
            api_key="fallback",
            session_id="session-1",
            reasoning="medium",
            on_payload=on_payload,
            stream_options=StreamOptions(max_tokens=77, session_id="ignored"),
        ),
        Recorder(),
    )
    assert providers == ["openai", "openai"]
    assert [o.api_key for o in stream.options] == ["key-1", "fallback"]
    first = stream.options[0]
    assert (first.session_id, first.reasoning, first.max_tokens, first.on_payload) == (
        "session-1",
        "medium",
        77,
        on_payload,
    )
    assert isinstance(first.signal, AbortSignal)
    (spec,) = stream.contexts[0].tools
    assert spec.name == "echo" and spec.parameters["properties"]["value"]["type"] == "string"


async def test_message_update_carries_partial_and_raw_stream_event() -> None:
    partial = assistant([])

    async def events(model: Model, context: LlmContext, options: StreamOptions) -> AsyncIterator[Any]:
        yield StartEvent(partial=partial)
        grown = partial.model_copy(update={"content": [TextContent(text="")]})
        yield TextStartEvent(content_index=0, partial=grown)
        grown = partial.model_copy(update={"content": [TextContent(text="Done")]})
        yield TextDeltaEvent(content_index=0, delta="Done", partial=grown)
        yield DoneEvent(reason="stop", message=grown)

    recorder = Recorder()
    await run_agent_loop([user("x")], AgentContext(), config(events), recorder)
    updates = recorder.of(MessageUpdateEvent)
    assert [u.assistant_message_event.type for u in updates] == ["text_start", "text_delta"]
    assert updates[-1].message.content == [TextContent(text="Done")]
    assert updates[-1].assistant_message_event.partial is updates[-1].message
    starts = [e for e in recorder.of(MessageStartEvent) if e.message.role == "assistant"]
    assert len(starts) == 1 and starts[0].message is partial


async def test_error_reply_ends_the_run_without_tools_or_polls() -> None:
    polls: list[str] = []

    async def steering() -> list[AgentMessage]:
        polls.append("steering")
        return []

    async def follow_up() -> list[AgentMessage]:
        polls.append("follow_up")
        return []

    executed: list[Any] = []
    failed = assistant([call("tool-1", "x")], "error", error_message="boom")
    recorder = Recorder()
    messages = await run_agent_loop(
        [user("x")],
        AgentContext(tools=[echo_tool(executed)]),
        config(MockStream(failed), get_steering_messages=steering, get_follow_up_messages=follow_up),
        recorder,
    )
    assert executed == [] and polls == ["steering"]
    assert messages[-1] is failed
    assert recorder.types[-2:] == ["turn_end", "agent_end"]
    assert recorder.of(TurnEndEvent)[0].tool_results == []


async def test_stream_function_raising_on_call_becomes_an_error_reply() -> None:
    def explode(model: Model, context: LlmContext, options: StreamOptions) -> AsyncIterator[Any]:
        raise RuntimeError("provider exploded")

    recorder = Recorder()
    messages = await run_agent_loop([user("hello")], AgentContext(), config(explode), recorder)
    reply = messages[-1]
    assert isinstance(reply, AssistantMessage)
    assert (reply.stop_reason, reply.error_message) == ("error", "provider exploded")
    assert (reply.api, reply.provider, reply.model) == ("openai-responses", "openai", "mock")
    # Sequence E.
    assert recorder.types == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]


async def test_stream_raising_mid_stream_keeps_the_partial() -> None:
    async def events(model: Model, context: LlmContext, options: StreamOptions) -> AsyncIterator[Any]:
        partial = assistant([TextContent(text="half an ans")])
        yield StartEvent(partial=partial)
        raise ConnectionError()

    recorder = Recorder()
    messages = await run_agent_loop([user("x")], AgentContext(), config(events), recorder)
    reply = messages[-1]
    assert isinstance(reply, AssistantMessage)
    assert reply.stop_reason == "error" and reply.error_message == "ConnectionError"
    assert reply.content == [TextContent(text="half an ans")]
    assert [e.message.role for e in recorder.of(MessageStartEvent)] == ["user", "assistant"]


async def test_stream_ending_without_a_final_event_is_an_error_reply() -> None:
    async def events(model: Model, context: LlmContext, options: StreamOptions) -> AsyncIterator[Any]:
        yield StartEvent(partial=assistant([]))

    messages = await run_agent_loop([user("x")], AgentContext(), config(events), Recorder())
    reply = messages[-1]
    assert isinstance(reply, AssistantMessage) and reply.stop_reason == "error"
    assert reply.error_message == "The provider stream ended without a done or error event"


async def test_length_stop_with_tool_calls_still_executes_them_as_pi_073_does() -> None:
    # pi 0.80.4 refuses to run tool calls from a length-truncated reply; 0.73, the version
    # this port follows, runs them.
    executed: list[Any] = []
    stream = MockStream(assistant([call("tool-1", "hel")], "length"), assistant("done"))
    await run_agent_loop([user("x")], AgentContext(tools=[echo_tool(executed)]), config(stream), Recorder())
    assert executed == ["hel"]


# -- polling ------------------------------------------------------------------------------


async def test_steering_polled_at_start_and_after_every_turn_follow_ups_only_at_the_end() -> None:
    log: list[str] = []
    follow_ups = [[user("follow")], []]

    async def steering() -> list[AgentMessage]:
        log.append("steering")
        return []

    async def follow_up() -> list[AgentMessage]:
        log.append("follow_up")
        return follow_ups.pop(0)

    stream = MockStream(assistant([call("tool-1", "x")], "toolUse"), assistant("one"), assistant("two"))
    messages = await run_agent_loop(
        [user("go")],
        AgentContext(tools=[echo_tool()]),
        config(stream, get_steering_messages=steering, get_follow_up_messages=follow_up),
        Recorder(),
    )
    assert log == ["steering", "steering", "steering", "follow_up", "steering", "follow_up"]
    assert [m.role for m in messages] == ["user", "assistant", "toolResult", "assistant", "user", "assistant"]


async def test_steering_messages_start_a_new_turn_with_their_events() -> None:
    queue = [[user("steer me")], []]

    async def steering() -> list[AgentMessage]:
        return queue.pop(0) if queue else []

    recorder = Recorder()
    stream = MockStream(assistant("a"), assistant("b"))
    await run_agent_loop(
        [user("go")], AgentContext(), config(stream, get_steering_messages=steering), recorder
    )
    # The initial poll's steering message joins the first turn, right after the prompt.
    assert recorder.types[:6] == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
    ]
    assert [m.role for m in stream.contexts[0].messages] == ["user", "user"]
    assert stream.calls == 1


# -- bad input from the model ---------------------------------------------------------------


async def test_wrong_type_arguments_give_a_model_visible_error_and_the_run_goes_on() -> None:
    executed: list[Any] = []
    recorder = Recorder()
    stream = MockStream(assistant([call("tool-1", 5)], "toolUse"), assistant("sorry"))
    messages = await run_agent_loop(
        [user("x")], AgentContext(tools=[echo_tool(executed)]), config(stream), recorder
    )
    assert executed == []
    (end,) = recorder.of(ToolExecutionEndEvent)
    text = end.result.content[0].text
    assert end.is_error is True
    assert text.startswith('Validation failed for tool "echo":\n  - value: ')
    assert text.endswith('Received arguments:\n{\n  "value": 5\n}')
    result = messages[2]
    assert isinstance(result, ToolResultMessage) and result.is_error and text_of(result) == text
    assert stream.calls == 2 and stream.contexts[1].messages[-1] == result


async def test_missing_argument_names_the_path() -> None:
    recorder = Recorder()
    bad = ToolCall(id="tool-1", name="echo", arguments={"valu": "typo"})
    stream = MockStream(assistant([bad], "toolUse"), assistant("ok"))
    await run_agent_loop([user("x")], AgentContext(tools=[echo_tool()]), config(stream), recorder)
    text = recorder.of(ToolExecutionEndEvent)[0].result.content[0].text
    assert "  - value: Field required" in text and '"valu": "typo"' in text


async def test_unknown_tool_is_an_error_result() -> None:
    recorder = Recorder()
    stream = MockStream(
        assistant([call("tool-1", "x", "nope"), call("tool-2", "y")], "toolUse"), assistant("ok")
    )
    messages = await run_agent_loop([user("x")], AgentContext(tools=[echo_tool()]), config(stream), recorder)
    first, second = messages[2], messages[3]
    assert isinstance(first, ToolResultMessage) and isinstance(second, ToolResultMessage)
    assert (first.tool_name, first.is_error, text_of(first)) == ("nope", True, "Tool nope not found")
    assert first.details == {}
    assert (second.is_error, text_of(second)) == (False, "echoed: y")
    # The immediate error ends during preflight, before the real call executes.
    assert [e.tool_call_id for e in recorder.of(ToolExecutionEndEvent)] == ["tool-1", "tool-2"]
    assert stream.calls == 2


async def test_tool_that_raises_gives_an_error_result_with_its_message() -> None:
    async def boom(params: Value, ctx: ToolCallContext) -> None:
        raise FileNotFoundError("no such file: a.txt")

    recorder = Recorder()
    stream = MockStream(assistant([call("tool-1", "x")], "toolUse"), assistant("ok"))
    messages = await run_agent_loop(
        [user("x")], AgentContext(tools=[echo_tool(run=boom)]), config(stream), recorder
    )
    result = messages[2]
    assert isinstance(result, ToolResultMessage)
    assert (result.is_error, text_of(result), result.details) == (True, "no such file: a.txt", {})
    assert recorder.of(ToolExecutionEndEvent)[0].is_error is True
    assert messages[-1].role == "assistant" and stream.calls == 2


async def test_tool_raising_without_a_message_reports_the_exception_type() -> None:
    async def boom(params: Value, ctx: ToolCallContext) -> None:
        raise KeyError()

    stream = MockStream(assistant([call("tool-1", "x")], "toolUse"), assistant("ok"))
    messages = await run_agent_loop(
        [user("x")], AgentContext(tools=[echo_tool(run=boom)]), config(stream), Recorder()
    )
    assert text_of(messages[2]) == "KeyError"


async def test_tool_returning_the_wrong_type_is_an_error_result() -> None:
    async def execute(params: Value, ctx: ToolCallContext) -> Any:
        return "plain string"

    tool = Tool(name="echo", description="", parameters=Value, execute=execute)
    stream = MockStream(assistant([call("tool-1", "x")], "toolUse"), assistant("ok"))
    messages = await run_agent_loop([user("x")], AgentContext(tools=[tool]), config(stream), Recorder())
    assert text_of(messages[2]) == "Tool echo returned str; execute() must return a ToolResult"


async def test_before_tool_call_block_with_reason_and_default() -> None:
    executed: list[Any] = []

    async def before(ctx: BeforeToolCallContext, signal: AbortSignal) -> BeforeToolCallResult | None:
        if ctx.tool_call.id == "tool-1":
            return BeforeToolCallResult(block=True, reason="Not allowed: rm -rf")
        return BeforeToolCallResult(block=True)

    stream = MockStream(assistant([call("tool-1", "a"), call("tool-2", "b")], "toolUse"), assistant("ok"))
    messages = await run_agent_loop(
        [user("x")],
        AgentContext(tools=[echo_tool(executed)]),
        config(stream, before_tool_call=before),
        Recorder(),
    )
    assert executed == []
    assert [(m.is_error, text_of(m)) for m in messages[2:4]] == [  # type: ignore[union-attr]
        (True, "Not allowed: rm -rf"),
        (True, "Tool execution was blocked"),
    ]


async def test_before_tool_call_raising_is_an_error_result() -> None:
    async def before(ctx: BeforeToolCallContext, signal: AbortSignal) -> None:
        raise PermissionError("policy check failed")

    stream = MockStream(assistant([call("tool-1", "a")], "toolUse"), assistant("ok"))
    messages = await run_agent_loop(
        [user("x")], AgentContext(tools=[echo_tool()]), config(stream, before_tool_call=before), Recorder()
    )
    assert text_of(messages[2]) == "policy check failed"


async def test_after_tool_call_overrides_field_by_field() -> None:
    seen: list[tuple[Any, bool]] = []

    async def after(ctx: AfterToolCallContext, signal: AbortSignal) -> AfterToolCallResult:
        seen.append((ctx.result.details, ctx.is_error))
        return AfterToolCallResult(content=[TextContent(text="redacted")], is_error=True)

    recorder = Recorder()
    stream = MockStream(assistant([call("tool-1", "secret")], "toolUse"), assistant("ok"))
    messages = await run_agent_loop(
        [user("x")], AgentContext(tools=[echo_tool()]), config(stream, after_tool_call=after), recorder
    )
    assert seen == [({"value": "secret"}, False)]
    result = messages[2]
    assert isinstance(result, ToolResultMessage)
    assert (text_of(result), result.details, result.is_error) == ("redacted", {"value": "secret"}, True)
    end = recorder.of(ToolExecutionEndEvent)[0]
    assert end.is_error is True and end.result.content == [TextContent(text="redacted")]


async def test_after_tool_call_raising_becomes_an_error_result() -> None:
    async def after(ctx: AfterToolCallContext, signal: AbortSignal) -> None:
        raise ValueError("audit log unavailable")

    stream = MockStream(assistant([call("tool-1", "a"), call("tool-2", "b")], "toolUse"), assistant("ok"))
    messages = await run_agent_loop(
        [user("x")], AgentContext(tools=[echo_tool()]), config(stream, after_tool_call=after), Recorder()
    )
    assert [text_of(m) for m in messages[2:4]] == ["audit log unavailable", "audit log unavailable"]
    assert stream.calls == 2


async def test_tool_updates_are_emitted_between_start_and_end() -> None:
    async def run(params: Value, ctx: ToolCallContext) -> None:
        await ctx.update(ToolResult.text("10%"))
        await ctx.update(ToolResult.text("90%"))

    recorder = Recorder()
    stream = MockStream(assistant([call("tool-1", "x")], "toolUse"), assistant("ok"))
    await run_agent_loop([user("x")], AgentContext(tools=[echo_tool(run=run)]), config(stream), recorder)
    kinds = [e.type for e in recorder.events if e.type.startswith("tool_execution")]
    assert kinds == [
        "tool_execution_start",
        "tool_execution_update",
        "tool_execution_update",
        "tool_execution_end",
    ]
    updates = recorder.of(ToolExecutionUpdateEvent)
    assert [u.partial_result.content[0].text for u in updates] == ["10%", "90%"]
    assert updates[0].args == {"value": "x"} and updates[0].tool_name == "echo"


async def test_tool_context_carries_cwd_session_and_signal(tmp_path: Any) -> None:
    seen: list[ToolCallContext] = []

    async def run(params: Value, ctx: ToolCallContext) -> None:
        seen.append(ctx)

    signal = AbortSignal()
    marker = object()
    stream = MockStream(assistant([call("tool-1", "x")], "toolUse"), assistant("ok"))
    await run_agent_loop(
        [user("x")],
        AgentContext(tools=[echo_tool(run=run)]),
        config(stream, cwd=str(tmp_path), session=marker),
        Recorder(),
        signal,
    )
    (ctx,) = seen
    assert (ctx.tool_call_id, ctx.cwd, ctx.session, ctx.signal) == ("tool-1", str(tmp_path), marker, signal)


async def test_listener_error_propagates_out_of_the_loop() -> None:
    async def emit(event: AgentEvent) -> None:
        if isinstance(event, ToolExecutionEndEvent):
            raise RuntimeError("listener broke")

    stream = MockStream(assistant([call("tool-1", "a"), call("tool-2", "b")], "toolUse"), assistant("ok"))
    with pytest.raises(RuntimeError, match="listener broke"):
        await run_agent_loop([user("x")], AgentContext(tools=[echo_tool()]), config(stream), emit)


# -- abort --------------------------------------------------------------------------------


async def test_abort_mid_stream_keeps_the_partial_reply() -> None:
    faux = FauxProvider(
        [faux_assistant_message("one two three four five six seven eight")], token_size=(1, 1)
    )
    signal = AbortSignal()
    recorder = Recorder()

    async def emit(event: AgentEvent) -> None:
        await recorder(event)
        if isinstance(event, MessageUpdateEvent) and event.assistant_message_event.type == "text_delta":
            signal.abort()

    messages = await run_agent_loop([user("count")], AgentContext(), config(faux.stream), emit, signal)
    reply = messages[-1]
    assert isinstance(reply, AssistantMessage)
    assert (reply.stop_reason, reply.error_message) == ("aborted", ABORTED_MESSAGE)
    assert reply.content == [TextContent(text="one ")]
    assert recorder.types[-3:] == ["message_end", "turn_end", "agent_end"]
    assert len(recorder.of(MessageUpdateEvent)) == 2  # text_start, one delta


async def test_abort_while_the_provider_awaits_cancels_it() -> None:
    started = anyio.Event()
    cancelled = False

    async def hang(model: Model, context: LlmContext, options: StreamOptions) -> AsyncIterator[Any]:
        nonlocal cancelled
        partial = assistant([TextContent(text="thinking about it")])
        yield StartEvent(partial=partial)
        started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled = True
            raise
        yield DoneEvent(reason="stop", message=partial)  # pragma: no cover

    signal = AbortSignal()
    result: list[AgentMessage] = []

    async def run() -> None:
        result.extend(await run_agent_loop([user("x")], AgentContext(), config(hang), Recorder(), signal))

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await started.wait()
        signal.abort()
    reply = result[-1]
    assert cancelled is True
    assert isinstance(reply, AssistantMessage)
    assert (reply.stop_reason, reply.error_message) == ("aborted", ABORTED_MESSAGE)
    assert reply.content == [TextContent(text="thinking about it")]


async def test_abort_never_interrupts_a_listener() -> None:
    signal = AbortSignal()
    listener_finished = anyio.Event()
    resume = anyio.Event()
    log: list[str] = []
    faux = FauxProvider([faux_assistant_message("a b c d e f g h")], token_size=(1, 1))

    async def emit(event: AgentEvent) -> None:
        if isinstance(event, MessageStartEvent) and event.message.role == "assistant" and not log:
            log.append("listener waiting")
            await resume.wait()  # the abort arrives while this listener awaits
            log.append("listener done")
            listener_finished.set()

    async def run() -> None:
        await run_agent_loop([user("x")], AgentContext(), config(faux.stream), emit, signal)

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        while not log:
            await anyio.lowlevel.checkpoint()
        signal.abort()
        resume.set()
    assert log == ["listener waiting", "listener done"]


async def test_abort_mid_tool_cancels_it_and_ends_with_an_aborted_reply() -> None:
    signal = AbortSignal()
    tool_started = anyio.Event()
    cancelled: list[str] = []
    polls: list[str] = []

    async def run_tool(params: Value, ctx: ToolCallContext) -> None:
        if params.value == "slow":
            await ctx.update(ToolResult.text("started"))
            tool_started.set()
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                cancelled.append(params.value)
                raise

    async def steering() -> list[AgentMessage]:
        polls.append("steering")
        return []

    faux = FauxProvider(
        [faux_assistant_message([call("tool-1", "fast"), call("tool-2", "slow")], stop_reason="toolUse")]
    )
    recorder = Recorder()
    result: list[AgentMessage] = []

    async def run() -> None:
        result.extend(
            await run_agent_loop(
                [user("x")],
                AgentContext(tools=[echo_tool(run=run_tool)]),
                config(faux.stream, get_steering_messages=steering),
                recorder,
                signal,
            )
        )

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await tool_started.wait()
        signal.abort()

    assert cancelled == ["slow"]
    assert [m.role for m in result] == ["user", "assistant", "toolResult", "toolResult", "assistant"]
    fast, slow, reply = result[2], result[3], result[4]
    assert (text_of(fast), fast.is_error) == ("echoed: fast", False)  # type: ignore[union-attr]
    assert (text_of(slow), slow.is_error) == ("Operation aborted", True)  # type: ignore[union-attr]
    assert isinstance(reply, AssistantMessage)
    assert (reply.stop_reason, reply.error_message, reply.content) == ("aborted", ABORTED_MESSAGE, [])
    assert faux.call_count == 1  # the aborted reply needs no provider request
    assert polls == ["steering"]  # queues are left alone after an abort
    assert len(recorder.of(ToolExecutionUpdateEvent)) == 1
    assert recorder.types[-6:] == [
        "turn_end",
        "turn_start",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]


async def test_abort_in_before_tool_call_blocks_every_remaining_call() -> None:
    signal = AbortSignal()
    executed: list[Any] = []

    async def before(ctx: BeforeToolCallContext, s: AbortSignal) -> None:
        s.abort()
        await anyio.sleep_forever()

    stream = MockStream(assistant([call("tool-1", "a"), call("tool-2", "b")], "toolUse"), assistant("unused"))
    messages = await run_agent_loop(
        [user("x")],
        AgentContext(tools=[echo_tool(executed)]),
        config(stream, before_tool_call=before),
        Recorder(),
        signal,
    )
    assert executed == []
    assert [text_of(m) for m in messages[2:4]] == ["Operation aborted", "Operation aborted"]
    assert messages[-1].stop_reason == "aborted"  # type: ignore[union-attr]
    assert stream.calls == 1


async def test_abort_during_transform_context_skips_the_request() -> None:
    signal = AbortSignal()

    async def transform(messages: list[AgentMessage], s: AbortSignal) -> list[AgentMessage]:
        s.abort()
        await anyio.sleep_forever()
        return messages  # pragma: no cover

    stream = MockStream(assistant("unused"))
    recorder = Recorder()
    messages = await run_agent_loop(
        [user("x")], AgentContext(), config(stream, transform_context=transform), recorder, signal
    )
    assert stream.calls == 0
    reply = messages[-1]
    assert isinstance(reply, AssistantMessage) and reply.stop_reason == "aborted"
    assert recorder.types[-4:] == ["message_start", "message_end", "turn_end", "agent_end"]


async def test_provider_reported_abort_is_used_as_is() -> None:
    aborted = assistant([TextContent(text="part")], "aborted", error_message="Request was aborted")
    messages = await run_agent_loop([user("x")], AgentContext(), config(MockStream(aborted)), Recorder())
    assert messages[-1] is aborted


async def test_stream_partial_is_in_context_while_streaming() -> None:
    seen: list[list[str]] = []
    faux = FauxProvider([faux_assistant_message("hello there")], token_size=(1, 1))

    async def transform(messages: list[AgentMessage], s: AbortSignal) -> list[AgentMessage]:
        seen.append([m.role for m in messages])
        return messages

    recorder = Recorder()
    await run_agent_loop(
        [user("x")], AgentContext(), config(faux.stream, transform_context=transform), recorder
    )
    assert seen == [["user"]]
    final = recorder.of(MessageEndEvent)[-1].message
    assert text_of(final) == "hello there"


def test_the_tool_call_callback_types_resolve_lazily_to_one_set_of_classes() -> None:
    import pi_host.agent
    from pi_host.agent import _tool_hooks

    for name in _tool_hooks.__all__:
        assert getattr(pi_host.agent, name) is getattr(_tool_hooks, name)
        assert name in pi_host.agent.__all__


# -- the emit sink may replace a message at its message_end ------------------------------------------


async def test_a_replacement_from_the_sink_is_returned_and_sent_and_a_wrong_one_is_refused() -> None:
    async def redact(event: AgentEvent) -> AgentMessage | None:
        if isinstance(event, MessageEndEvent) and text_of(event.message) == "secret":
            return user("[redacted]")
        return None

    stream = MockStream(assistant("ok"))
    messages = await run_agent_loop([user("secret")], AgentContext(), config(stream), redact)
    assert [text_of(m) for m in messages] == ["[redacted]", "ok"]
    assert [text_of(m) for m in stream.contexts[0].messages] == ["[redacted]"]

    async def wrong(event: AgentEvent) -> AgentMessage | None:
        return assistant("not a user message") if isinstance(event, MessageEndEvent) else None

    with pytest.raises(TypeError, match="replaced a UserMessage with AssistantMessage at message_end"):
        await run_agent_loop([user("hi")], AgentContext(), config(MockStream(assistant("ok"))), wrong)
