"""The stateful Agent: pi's agent.test.ts scenarios, queues, listeners and failures."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from pi_host.agent import (
    UNKNOWN_MODEL,
    Agent,
    AgentBusyError,
    AgentError,
    Tool,
    ToolCallContext,
    TurnContext,
    TurnUpdate,
)
from pi_host.messages import (
    AgentEvent,
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    DoneEvent,
    ErrorEvent,
    ImageContent,
    StartEvent,
    TextContent,
    ToolCall,
    ToolExecutionEndEvent,
    ToolResult,
    UserMessage,
)
from pi_host.providers import AbortSignal, LlmContext, Model, StreamOptions
from tests.agent_support import text_of

PROMPT_BUSY = (
    "Agent is already processing a prompt. "
    "Use steer() or followUp() to queue messages, or wait for completion."
)
CONTINUE_BUSY = "Agent is already processing. Wait for completion before continuing."

MODEL = Model(id="mock", name="mock", api="openai-responses", provider="openai")


def reply(text: str = "ok", stop_reason: str = "stop", content: list[Any] | None = None) -> AssistantMessage:
    return AssistantMessage(
        content=content if content is not None else [TextContent(text=text)],
        api="openai-responses",
        provider="openai",
        model="mock",
        stop_reason=stop_reason,
    )


def tool_use(*calls: ToolCall) -> AssistantMessage:
    return reply(content=list(calls), stop_reason="toolUse")


class Stream:
    """Answers each call with the next reply as one final event; records what it was sent."""

    def __init__(self, *replies: AssistantMessage, default: AssistantMessage | None = None) -> None:
        self.replies = list(replies)
        self.default = default
        self.contexts: list[LlmContext] = []
        self.options: list[StreamOptions] = []

    @property
    def calls(self) -> int:
        return len(self.contexts)

    def __call__(self, model: Model, context: LlmContext, options: StreamOptions) -> AsyncIterator[Any]:
        self.contexts.append(context)
        self.options.append(options)
        message = self.replies.pop(0) if self.replies else self.default
        assert message is not None, "unexpected stream call"
        return self._events(message)

    async def _events(self, message: AssistantMessage) -> AsyncIterator[Any]:
        await anyio.lowlevel.checkpoint()
        if message.stop_reason in ("error", "aborted"):
            yield ErrorEvent(reason=message.stop_reason, error=message)  # type: ignore[arg-type]
        else:
            yield DoneEvent(reason=message.stop_reason, message=message)  # type: ignore[arg-type]


class Hanging:
    """Starts a reply, then waits until the request is aborted."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.signals: list[AbortSignal | None] = []

    def __call__(self, model: Model, context: LlmContext, options: StreamOptions) -> AsyncIterator[Any]:
        self.signals.append(options.signal)
        return self._events()

    async def _events(self) -> AsyncIterator[Any]:
        yield StartEvent(partial=reply(content=[]))
        self.started.set()
        await anyio.sleep_forever()
        yield ErrorEvent(reason="aborted", error=reply("never"))  # pragma: no cover


def unused_stream(model: Model, context: LlmContext, options: StreamOptions) -> AsyncIterator[Any]:
    raise AssertionError("Unexpected stream call")


class Events:
    def __init__(self, agent: Agent) -> None:
        self.events: list[AgentEvent] = []
        agent.subscribe(self)

    async def __call__(self, event: AgentEvent, signal: AbortSignal) -> None:
        self.events.append(event)

    @property
    def types(self) -> list[str]:
        return [event.type for event in self.events]


class Empty(BaseModel):
    pass


def tool(name: str, execute: Any) -> Tool[Empty]:
    return Tool(name=name, description=f"{name} tool", parameters=Empty, execute=execute)


# -- pi agent.test.ts ---------------------------------------------------------------------


def test_default_state() -> None:
    agent = Agent(stream_fn=unused_stream)
    state = agent.state
    assert state.system_prompt == ""
    assert state.model is UNKNOWN_MODEL
    assert (state.model.id, state.model.api, state.model.provider) == ("unknown", "unknown", "unknown")
    assert state.thinking_level == "off"
    assert state.tools == [] and state.messages == []
    assert state.is_streaming is False
    assert state.streaming_message is None
    assert state.pending_tool_calls == frozenset()
    assert state.error_message is None
    assert agent.signal is None


def test_custom_initial_state() -> None:
    agent = Agent(
        stream_fn=unused_stream,
        system_prompt="You are a helpful assistant.",
        model=MODEL,
        thinking_level="low",
    )
    assert agent.state.system_prompt == "You are a helpful assistant."
    assert agent.state.model is MODEL
    assert agent.state.thinking_level == "low"


async def test_subscribe_and_unsubscribe_state_mutations_emit_nothing() -> None:
    agent = Agent(stream_fn=Stream(default=reply()))
    seen: list[str] = []

    async def listener(event: AgentEvent, signal: AbortSignal) -> None:
        seen.append(event.type)

    unsubscribe = agent.subscribe(listener)
    assert seen == []
    agent.state.system_prompt = "Test prompt"
    assert seen == [] and agent.state.system_prompt == "Test prompt"
    unsubscribe()
    unsubscribe()  # idempotent
    await agent.prompt("hello")
    assert seen == []


async def test_thrown_stream_failure_emits_the_full_lifecycle() -> None:
    def explode(model: Model, context: LlmContext, options: StreamOptions) -> AsyncIterator[Any]:
        raise RuntimeError("provider exploded")

    agent = Agent(stream_fn=explode)
    events = Events(agent)
    await agent.prompt("hello")
    assert events.types == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]
    last = agent.state.messages[-1]
    assert isinstance(last, AssistantMessage)
    assert (last.stop_reason, last.error_message) == ("error", "provider exploded")
    assert agent.state.error_message == "provider exploded"
    assert agent.state.is_streaming is False


async def test_a_raising_callback_ends_the_run_with_a_failure_reply() -> None:
    async def transform(messages: list[AgentMessage], signal: AbortSignal) -> list[AgentMessage]:
        raise LookupError("context store offline")

    agent = Agent(stream_fn=unused_stream, model=MODEL, transform_context=transform)
    events = Events(agent)
    await agent.prompt("hello")
    assert events.types == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]
    failure = agent.state.messages[-1]
    assert isinstance(failure, AssistantMessage)
    assert failure.content == [TextContent(text="")]
    assert (failure.stop_reason, failure.error_message) == ("error", "context store offline")
    assert (failure.api, failure.provider, failure.model) == ("openai-responses", "openai", "mock")
    assert events.events[-1].messages == [failure]  # type: ignore[union-attr]
    assert [m.role for m in agent.state.messages] == ["user", "assistant"]


async def test_convert_to_llm_returning_a_non_provider_message_fails_the_run_clearly() -> None:
    async def convert(messages: list[AgentMessage]) -> list[Any]:
        return list(messages)  # forgot to convert the bash run

    agent = Agent(
        stream_fn=unused_stream, convert_to_llm=convert, messages=[BashExecutionMessage(command="ls")]
    )
    await agent.prompt("hello")
    assert agent.state.error_message == (
        "convert_to_llm must return user, assistant and tool-result messages, not BashExecutionMessage"
    )


async def test_prompt_waits_for_async_agent_end_listeners() -> None:
    barrier = anyio.Event()
    entered = anyio.Event()
    agent = Agent(stream_fn=Stream(reply("ok")))
    finished: list[str] = []

    async def listener(event: AgentEvent, signal: AbortSignal) -> None:
        if event.type == "agent_end":
            entered.set()
            await barrier.wait()
            finished.append("listener")

    agent.subscribe(listener)

    async def prompt() -> None:
        await agent.prompt("hello")
        finished.append("prompt")

    async with anyio.create_task_group() as group:
        group.start_soon(prompt)
        await entered.wait()
        assert finished == []
        assert agent.state.is_streaming is True
        barrier.set()
    assert finished == ["listener", "prompt"]
    assert agent.state.is_streaming is False


async def test_wait_for_idle_waits_for_a_slow_message_end_listener() -> None:
    barrier = anyio.Event()
    entered = anyio.Event()
    agent = Agent(stream_fn=Stream(reply("ok")))
    order: list[str] = []

    async def listener(event: AgentEvent, signal: AbortSignal) -> None:
        if event.type == "message_end" and event.message.role == "assistant":  # type: ignore[union-attr]
            entered.set()
            await barrier.wait()

    agent.subscribe(listener)

    async def idle() -> None:
        await agent.wait_for_idle()
        order.append("idle")

    async with anyio.create_task_group() as group:
        group.start_soon(agent.prompt, "hello")
        await entered.wait()
        group.start_soon(idle)
        await anyio.lowlevel.checkpoint()
        assert order == [] and agent.state.is_streaming is True
        barrier.set()
    assert order == ["idle"]
    assert agent.state.is_streaming is False
    await agent.wait_for_idle()  # idle: returns at once


async def test_listeners_receive_the_run_signal_and_abort_flips_it() -> None:
    stream = Hanging()
    agent = Agent(stream_fn=stream)
    received: list[AbortSignal] = []

    async def listener(event: AgentEvent, signal: AbortSignal) -> None:
        if event.type == "agent_start":
            received.append(signal)

    agent.subscribe(listener)
    async with anyio.create_task_group() as group:
        group.start_soon(agent.prompt, "hello")
        await stream.started.wait()
        (signal,) = received
        assert signal.aborted is False and agent.signal is signal and stream.signals == [signal]
        agent.abort()
    assert signal.aborted is True
    last = agent.state.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == "aborted"
    assert agent.state.error_message == "Request was aborted"


async def test_tool_update_after_the_tool_settled_is_ignored() -> None:
    contexts: list[ToolCallContext] = []

    async def execute(params: Empty, ctx: ToolCallContext) -> ToolResult:
        contexts.append(ctx)
        await ctx.update(ToolResult.text("running", {"status": "running"}))
        return ToolResult(content=[TextContent(text="ok")], details={"status": "done"}, terminate=True)

    agent = Agent(
        stream_fn=Stream(tool_use(ToolCall(id="call-1", name="delayed_tool", arguments={}))),
        tools=[tool("delayed_tool", execute)],
    )
    events = Events(agent)
    await agent.prompt("run tool")
    count = len(events.events)
    await contexts[0].update(ToolResult.text("late", {"status": "late"}))
    assert events.types.count("tool_execution_update") == 1
    assert len(events.events) == count


async def test_settled_parallel_tool_update_is_ignored_while_another_runs() -> None:
    slow_started = anyio.Event()
    settled_ended = anyio.Event()
    release = anyio.Event()
    contexts: list[ToolCallContext] = []

    async def settled(params: Empty, ctx: ToolCallContext) -> ToolResult:
        contexts.append(ctx)
        return ToolResult(content=[TextContent(text="done")], terminate=True)

    async def slow(params: Empty, ctx: ToolCallContext) -> ToolResult:
        slow_started.set()
        await release.wait()
        return ToolResult(content=[TextContent(text="done")], terminate=True)

    calls = [ToolCall(id="call-1", name="settled_tool"), ToolCall(id="call-2", name="slow_tool")]
    agent = Agent(
        stream_fn=Stream(tool_use(*calls)), tools=[tool("settled_tool", settled), tool("slow_tool", slow)]
    )
    events = Events(agent)

    async def on_end(event: AgentEvent, signal: AbortSignal) -> None:
        if isinstance(event, ToolExecutionEndEvent) and event.tool_call_id == "call-1":
            settled_ended.set()

    agent.subscribe(on_end)
    async with anyio.create_task_group() as group:
        group.start_soon(agent.prompt, "run tools")
        await slow_started.wait()
        await settled_ended.wait()
        before = len(events.events)
        await contexts[0].update(ToolResult.text("late"))
        assert len(events.events) == before
        release.set()
    assert "tool_execution_update" not in events.types


def test_state_accessors_copy_assigned_lists() -> None:
    agent = Agent(stream_fn=unused_stream)
    agent.state.system_prompt = "Custom prompt"
    agent.state.model = MODEL
    agent.state.thinking_level = "high"
    assert (agent.state.system_prompt, agent.state.model, agent.state.thinking_level) == (
        "Custom prompt",
        MODEL,
        "high",
    )
    tools = [tool("test", None)]
    agent.state.tools = tools
    assert agent.state.tools == tools and agent.state.tools is not tools
    messages: list[AgentMessage] = [UserMessage(content="Hello")]
    agent.state.messages = messages
    assert agent.state.messages == messages and agent.state.messages is not messages
    extra = reply("Hi")
    agent.state.messages.append(extra)
    assert len(agent.state.messages) == 2 and agent.state.messages[1] is extra
    agent.state.messages = []
    assert agent.state.messages == []
    with pytest.raises(AttributeError):
        agent.state.is_streaming = True  # type: ignore[misc]


def test_steer_and_follow_up_do_not_touch_the_transcript() -> None:
    agent = Agent(stream_fn=unused_stream)
    steering = UserMessage(content="Steering message")
    follow_up = UserMessage(content="Follow-up message")
    agent.steer(steering)
    agent.follow_up(follow_up)
    assert agent.state.messages == []
    assert agent.steering_queue == (steering,) and agent.follow_up_queue == (follow_up,)
    assert agent.has_queued_messages() is True


def test_abort_when_idle_is_a_no_op() -> None:
    Agent(stream_fn=unused_stream).abort()


async def test_prompt_while_streaming_raises_pi_s_message() -> None:
    stream = Hanging()
    agent = Agent(stream_fn=stream)
    async with anyio.create_task_group() as group:
        group.start_soon(agent.prompt, "First message")
        await stream.started.wait()
        assert agent.state.is_streaming is True
        with pytest.raises(AgentBusyError) as caught:
            await agent.prompt("Second message")
        assert str(caught.value) == PROMPT_BUSY
        agent.abort()
    assert [text_of(m) for m in agent.state.messages if m.role == "user"] == ["First message"]


async def test_continue_while_streaming_raises_pi_s_message() -> None:
    stream = Hanging()
    agent = Agent(stream_fn=stream)
    async with anyio.create_task_group() as group:
        group.start_soon(agent.prompt, "First message")
        await stream.started.wait()
        with pytest.raises(AgentBusyError) as caught:
            await agent.continue_()
        assert str(caught.value) == CONTINUE_BUSY
        agent.abort()


async def test_continue_from_assistant_tail_runs_a_queued_follow_up() -> None:
    stream = Stream(reply("Processed"))
    agent = Agent(stream_fn=stream, messages=[UserMessage(content="Initial"), reply("Initial response")])
    agent.follow_up(UserMessage(content=[TextContent(text="Queued follow-up")]))
    await agent.continue_()
    assert any(m.role == "user" and text_of(m) == "Queued follow-up" for m in agent.state.messages)
    assert agent.state.messages[-1].role == "assistant"
    assert agent.follow_up_queue == ()


async def test_continue_from_assistant_tail_keeps_one_at_a_time_steering() -> None:
    stream = Stream(reply("Processed 1"), reply("Processed 2"))
    agent = Agent(stream_fn=stream, messages=[UserMessage(content="Initial"), reply("Initial response")])
    agent.steer(UserMessage(content="Steering 1"))
    agent.steer(UserMessage(content="Steering 2"))
    await agent.continue_()
    assert [m.role for m in agent.state.messages[-4:]] == ["user", "assistant", "user", "assistant"]
    assert [text_of(m) for m in agent.state.messages[-4:]] == [
        "Steering 1",
        "Processed 1",
        "Steering 2",
        "Processed 2",
    ]
    assert stream.calls == 2


async def test_session_id_is_forwarded_and_can_change_between_prompts() -> None:
    stream = Stream(default=reply())
    agent = Agent(stream_fn=stream, session_id="session-abc")
    await agent.prompt("hello")
    assert stream.options[-1].session_id == "session-abc"
    agent.session_id = "session-def"
    assert agent.session_id == "session-def"
    await agent.prompt("hello again")
    assert stream.options[-1].session_id == "session-def"


# -- beyond pi's tests -----------------------------------------------------------------------


async def test_reset_clears_transcript_and_queues_and_refuses_during_a_run() -> None:
    stream = Hanging()
    agent = Agent(stream_fn=stream)
    async with anyio.create_task_group() as group:
        group.start_soon(agent.prompt, "Hello")
        await stream.started.wait()
        with pytest.raises(AgentBusyError, match="Wait for completion before resetting"):
            agent.reset()
        assert [m.role for m in agent.state.messages] == ["user"]
        agent.abort()
    agent.steer("later")
    agent.follow_up("much later")
    agent.reset()
    assert agent.state.messages == [] and agent.state.error_message is None
    assert agent.has_queued_messages() is False


async def test_continue_validations() -> None:
    agent = Agent(stream_fn=unused_stream)
    with pytest.raises(AgentError, match=r"^No messages to continue from$"):
        await agent.continue_()
    agent.state.messages = [reply("Hello")]
    with pytest.raises(AgentError, match=r"^Cannot continue from message role: assistant$"):
        await agent.continue_()


async def test_queue_mode_all_drains_everything_at_once() -> None:
    stream = Stream(reply("one"), reply("two"))
    agent = Agent(stream_fn=stream, steering_mode="all", messages=[UserMessage(content="hi"), reply("yo")])
    assert agent.steering_mode == "all" and agent.follow_up_mode == "one-at-a-time"
    agent.steer("a")
    agent.steer("b")
    await agent.continue_()
    assert [text_of(m) for m in agent.state.messages[2:]] == ["a", "b", "one"]
    assert stream.calls == 1


async def test_follow_ups_run_one_at_a_time_after_the_agent_would_stop() -> None:
    stream = Stream(reply("r1"), reply("r2"), reply("r3"))
    agent = Agent(stream_fn=stream)
    agent.follow_up("f1")
    agent.follow_up("f2")
    await agent.prompt("start")
    assert [text_of(m) for m in agent.state.messages] == ["start", "r1", "f1", "r2", "f2", "r3"]


async def test_steering_queued_during_a_tool_turn_is_sent_before_the_next_request() -> None:
    stream = Stream(tool_use(ToolCall(id="t1", name="work")), reply("done"))
    agent: Agent

    async def work(params: Empty, ctx: ToolCallContext) -> ToolResult:
        agent.steer("change of plan")
        return ToolResult.text("worked")

    agent = Agent(stream_fn=stream, tools=[tool("work", work)])
    await agent.prompt("go")
    assert [m.role for m in agent.state.messages] == ["user", "assistant", "toolResult", "user", "assistant"]
    assert text_of(stream.contexts[1].messages[-1]) == "change of plan"


async def test_drained_queue_messages_are_restored_when_the_run_fails_before_using_them() -> None:
    async def broken(event: AgentEvent, signal: AbortSignal) -> None:
        if event.type == "turn_start":
            raise RuntimeError("listener broke")

    stream = Stream(reply("one"))
    agent = Agent(stream_fn=stream, messages=[UserMessage(content="hi"), reply("yo")])
    agent.subscribe(broken)
    agent.steer("first")
    agent.steer("second")
    await agent.continue_()
    failure = agent.state.messages[-1]
    assert isinstance(failure, AssistantMessage) and failure.error_message == "listener broke"
    assert stream.calls == 0
    assert [text_of(m) for m in agent.steering_queue] == ["first", "second"]
    assert agent.state.is_streaming is False


async def test_clear_queues() -> None:
    agent = Agent(stream_fn=unused_stream)
    agent.steer("a")
    agent.follow_up("b")
    agent.clear_steering_queue()
    assert agent.steering_queue == () and agent.follow_up_queue != ()
    agent.steer("c")
    agent.clear_follow_up_queue()
    assert agent.follow_up_queue == () and agent.steering_queue != ()
    agent.follow_up("d")
    agent.clear_all_queues()
    assert agent.has_queued_messages() is False


async def test_prompt_forms_text_with_images_a_message_and_messages() -> None:
    stream = Stream(default=reply())
    agent = Agent(stream_fn=stream)
    image = ImageContent(data="aGVsbG8=", mime_type="image/png")
    await agent.prompt("look", images=[image])
    first = agent.state.messages[0]
    assert isinstance(first, UserMessage) and first.content == [TextContent(text="look"), image]
    message = UserMessage(content="as a message")
    await agent.prompt(message)
    assert agent.state.messages[2] is message
    batch = [UserMessage(content="one"), UserMessage(content="two")]
    await agent.prompt(batch)
    assert agent.state.messages[4:6] == batch
    assert [m.role for m in stream.contexts[-1].messages][-2:] == ["user", "user"]


async def test_thinking_level_maps_to_reasoning_and_off_to_none() -> None:
    stream = Stream(default=reply())
    agent = Agent(stream_fn=stream, thinking_level="medium")
    await agent.prompt("a")
    agent.state.thinking_level = "off"
    await agent.prompt("b")
    assert [o.reasoning for o in stream.options] == ["medium", None]


async def test_prepare_next_turn_and_should_stop_receive_the_run_signal() -> None:
    signals: list[AbortSignal] = []
    roles: list[list[str]] = []

    async def prepare(turn: TurnContext, signal: AbortSignal) -> TurnUpdate | None:
        signals.append(signal)
        return None

    async def should_stop(turn: TurnContext, signal: AbortSignal) -> bool:
        signals.append(signal)
        roles.append([m.role for m in turn.context.messages])
        return True

    async def noop(params: Empty, ctx: ToolCallContext) -> ToolResult:
        return ToolResult.text("tool complete")

    stream = Stream(tool_use(ToolCall(id="tool-1", name="noop")), default=reply("should not run"))
    agent = Agent(
        stream_fn=stream,
        tools=[tool("noop", noop)],
        prepare_next_turn=prepare,
        should_stop_after_turn=should_stop,
    )
    await agent.prompt("start")
    assert stream.calls == 1
    assert len(signals) == 2 and signals[0] is signals[1] and isinstance(signals[0], AbortSignal)
    assert roles == [["user", "assistant", "toolResult"]]


async def test_pending_tool_calls_and_streaming_message_track_the_run() -> None:
    snapshots: list[tuple[str, frozenset[str], str | None]] = []

    async def noop(params: Empty, ctx: ToolCallContext) -> ToolResult:
        return ToolResult.text("ok")

    stream = Stream(tool_use(ToolCall(id="c1", name="noop")), reply("done"))
    agent = Agent(stream_fn=stream, tools=[tool("noop", noop)])

    async def listener(event: AgentEvent, signal: AbortSignal) -> None:
        streaming = agent.state.streaming_message
        snapshots.append((event.type, agent.state.pending_tool_calls, streaming.role if streaming else None))

    agent.subscribe(listener)
    await agent.prompt("go")
    assert ("tool_execution_start", frozenset({"c1"}), None) in snapshots
    assert ("tool_execution_end", frozenset(), None) in snapshots
    assert snapshots[4] == ("message_start", frozenset(), "assistant")
    assert snapshots[5] == ("message_end", frozenset(), None)
    assert agent.state.streaming_message is None


async def test_default_convert_to_llm_turns_coding_roles_into_user_messages() -> None:
    stream = Stream(reply())
    bash = BashExecutionMessage(command="ls", output="a.txt", exit_code=0)
    agent = Agent(stream_fn=stream, messages=[bash])
    await agent.prompt("what is here?")
    sent = stream.contexts[0].messages
    assert [m.role for m in sent] == ["user", "user"]
    assert text_of(sent[0]) == "Ran `ls`\n```\na.txt\n```"


async def test_error_message_is_cleared_by_the_next_run() -> None:
    failed = reply("", "error")
    failed = failed.model_copy(update={"error_message": "overloaded"})
    stream = Stream(failed, reply("fine"))
    agent = Agent(stream_fn=stream)
    await agent.prompt("a")
    assert agent.state.error_message == "overloaded"
    await agent.prompt("b")
    assert agent.state.error_message is None
    # The failed reply stays in the transcript but is never replayed to the model.
    assert [m.role for m in stream.contexts[1].messages] == ["user", "user"]


async def test_steer_accepts_plain_text() -> None:
    agent = Agent(stream_fn=unused_stream)
    agent.steer("text")
    (message,) = agent.steering_queue
    assert isinstance(message, UserMessage) and message.content == [TextContent(text="text")]


async def test_abort_leaves_queued_messages_for_the_next_prompt() -> None:
    started = anyio.Event()

    async def slow(params: Empty, ctx: ToolCallContext) -> ToolResult:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")  # pragma: no cover

    stream = Stream(tool_use(ToolCall(id="t1", name="slow")), default=reply("later"))
    agent = Agent(stream_fn=stream, tools=[tool("slow", slow)])
    async with anyio.create_task_group() as group:
        group.start_soon(agent.prompt, "go")
        await started.wait()
        agent.steer("steer after abort")
        agent.follow_up("follow up after abort")
        agent.abort()
    assert [m.role for m in agent.state.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert text_of(agent.state.messages[2]) == "Operation aborted"
    assert agent.state.messages[-1].stop_reason == "aborted"  # type: ignore[union-attr]
    assert [text_of(m) for m in agent.steering_queue] == ["steer after abort"]
    assert [text_of(m) for m in agent.follow_up_queue] == ["follow up after abort"]
    assert stream.calls == 1


async def test_abort_during_prepare_next_turn_stops_before_the_next_request() -> None:
    asked: list[str] = []
    agent: Agent

    async def prepare(turn: TurnContext, signal: AbortSignal) -> TurnUpdate | None:
        agent.steer("queued meanwhile")
        agent.abort()
        await anyio.sleep_forever()
        return None  # pragma: no cover

    async def should_stop(turn: TurnContext, signal: AbortSignal) -> bool:
        asked.append("should_stop")
        return True

    async def noop(params: Empty, ctx: ToolCallContext) -> ToolResult:
        return ToolResult.text("ok")

    stream = Stream(tool_use(ToolCall(id="t1", name="noop")), default=reply("must not be requested"))
    agent = Agent(
        stream_fn=stream,
        tools=[tool("noop", noop)],
        prepare_next_turn=prepare,
        should_stop_after_turn=should_stop,
    )
    await agent.prompt("go")
    assert stream.calls == 1 and asked == []
    assert agent.state.messages[-1].stop_reason == "aborted"  # type: ignore[union-attr]
    assert [text_of(m) for m in agent.steering_queue] == ["queued meanwhile"]


# -- message_end replacement (pi's listeners replace the message in place) -----------------------


def shout(message: AgentMessage) -> AgentMessage:
    """``message`` with its text upper-cased (string content or text blocks)."""
    content = message.content  # type: ignore[union-attr]
    if isinstance(content, str):
        return message.model_copy(update={"content": content.upper()})
    blocks = [TextContent(text=b.text.upper()) if isinstance(b, TextContent) else b for b in content]
    return message.model_copy(update={"content": blocks})


async def test_a_message_end_replacement_is_what_the_rest_of_the_run_uses() -> None:
    stream = Stream(
        reply(content=[TextContent(text="calling"), ToolCall(id="t1", name="work")], stop_reason="toolUse"),
        reply("r2"),
        reply("r3"),
    )

    async def work(params: Empty, ctx: ToolCallContext) -> ToolResult:
        return ToolResult.text("worked")

    agent = Agent(stream_fn=stream, tools=[tool("work", work)])

    async def replace(event: AgentEvent, signal: AbortSignal) -> AgentMessage | None:
        return shout(event.message) if event.type == "message_end" else None

    agent.subscribe(replace)
    later = Events(agent)
    agent.follow_up("follow")
    await agent.prompt("go")
    expected = ["GO", "CALLING", "WORKED", "R2", "FOLLOW", "R3"]
    assert [text_of(m) for m in agent.state.messages] == expected
    # The prompt, the reply, the tool result and the follow-up: each request sees them replaced.
    assert [text_of(m) for m in stream.contexts[1].messages] == expected[:3]
    assert [text_of(m) for m in stream.contexts[2].messages] == expected[:5]
    ends = [e for e in later.events if e.type == "message_end"]
    assert [text_of(e.message) for e in ends] == expected
    turn_ends = [e for e in later.events if e.type == "turn_end"]
    assert [text_of(e.message) for e in turn_ends] == ["CALLING", "R2", "R3"]
    assert [text_of(m) for m in turn_ends[0].tool_results] == ["WORKED"]
    (agent_end,) = [e for e in later.events if e.type == "agent_end"]
    assert [text_of(m) for m in agent_end.messages] == expected


async def test_each_message_end_listener_sees_the_previous_replacement() -> None:
    agent = Agent(stream_fn=Stream(reply("hello")))
    seen: list[str] = []

    async def first(event: AgentEvent, signal: AbortSignal) -> AgentMessage | None:
        if event.type == "message_end" and event.message.role == "assistant":
            return event.message.model_copy(update={"content": [TextContent(text="first")]})
        return None

    async def second(event: AgentEvent, signal: AbortSignal) -> AgentMessage | None:
        if event.type == "message_end" and event.message.role == "assistant":
            seen.append(text_of(event.message))
            assert agent.state.messages[-1] is event.message
        return None

    agent.subscribe(first)
    agent.subscribe(second)
    await agent.prompt("hi")
    assert seen == ["first"]
    assert [text_of(m) for m in agent.state.messages] == ["hi", "first"]


async def test_a_replacement_with_another_role_fails_the_run_naming_the_listener() -> None:
    agent = Agent(stream_fn=Stream(reply("hello")))

    async def wrong(event: AgentEvent, signal: AbortSignal) -> AgentMessage | None:
        if event.type == "message_end" and text_of(event.message) == "hello":
            return UserMessage(content="not a reply")
        return None

    agent.subscribe(wrong)
    await agent.prompt("hi")
    failure = agent.state.messages[-1]
    assert isinstance(failure, AssistantMessage) and failure.stop_reason == "error"
    assert failure.error_message is not None
    assert "returned UserMessage in place of the assistant message" in failure.error_message
    assert "wrong" in failure.error_message
    assert [text_of(m) for m in agent.state.messages[:-1]] == ["hi", "hello"]
