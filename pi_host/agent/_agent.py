"""The stateful agent: a transcript, a tool set, queues and listeners around the agent loop.

A re-implementation of pi's ``Agent`` class (pi-agent-core 0.73). The transcript is built from
the loop's own events (every ``message_end`` appends to ``state.messages``), and listeners are
awaited one by one, so a listener that is slow on ``message_end`` holds the loop before the
next step: the assistant reply is in the transcript before any tool runs. A ``message_end``
listener may replace the message (see :data:`Listener`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias, cast

import anyio

from pi_host.messages import (
    MESSAGE_KINDS,
    AgentEndEvent,
    AgentEvent,
    AgentMessage,
    AssistantMessage,
    ImageContent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    TextContent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    TurnEndEvent,
    Usage,
    UserMessage,
    now_ms,
)
from pi_host.providers import AbortSignal, Model, StreamFn, StreamOptions, ThinkingLevel

from ._loop import (
    AgentContext,
    AgentLoopConfig,
    ConvertToLlm,
    GetApiKey,
    PrepareNextTurn,
    ShouldStopAfterTurn,
    TransformContext,
    default_convert_to_llm,
    run_agent_loop,
    run_agent_loop_continue,
)
from ._queue import MessageQueue, QueueMode
from ._tools import Tool, ToolExecutionMode

if TYPE_CHECKING:
    from ._tool_hooks import AfterToolCall, BeforeToolCall

__all__ = [
    "UNKNOWN_MODEL",
    "Agent",
    "AgentBusyError",
    "AgentError",
    "AgentState",
    "Listener",
    "PromptInput",
]

Listener: TypeAlias = Callable[[AgentEvent, AbortSignal], Awaitable[AgentMessage | None]]
"""``async def listener(event, signal)``: sees every event of every run, after the state
update, with the run's abort signal.

Listeners return ``None``, except that for ``message_end`` one may return a replacement
message of the same role (pi's listeners replace the message in place): from then on the
replacement is the message, for the transcript, later listeners and the rest of the run
(the next request, ``turn_end``, ``agent_end``). What a listener returns for any other event
is ignored."""

PromptInput: TypeAlias = str | AgentMessage | Sequence[AgentMessage]

UNKNOWN_MODEL = Model(
    id="unknown",
    name="unknown",
    api="unknown",
    provider="unknown",
    input=[],
    context_window=0,
    max_tokens=0,
)
"""The placeholder model of an agent created without one."""

# pi's wording, matched by clients.
_PROMPT_BUSY = (
    "Agent is already processing a prompt. Use steer() or followUp() to queue messages, "
    "or wait for completion."
)
_CONTINUE_BUSY = "Agent is already processing. Wait for completion before continuing."
_RESET_BUSY = "Agent is already processing. Wait for completion before resetting."


class AgentError(RuntimeError):
    """The agent cannot do what was asked in its current state."""


class AgentBusyError(AgentError):
    """A run is in progress; queue the message with ``steer``/``follow_up`` or wait."""


class AgentState:
    """The agent's state. ``system_prompt``, ``model``, ``thinking_level``, ``tools`` and
    ``messages`` may be set between runs (a run works on a snapshot taken when it starts).

    Assigning ``tools`` or ``messages`` stores a copy of the sequence; reading ``messages``
    returns the live list. The run-time fields are read-only.
    """

    def __init__(
        self,
        *,
        system_prompt: str = "",
        model: Model | None = None,
        thinking_level: ThinkingLevel = "off",
        tools: Sequence[Tool[Any]] = (),
        messages: Sequence[AgentMessage] = (),
    ) -> None:
        self.system_prompt = system_prompt
        self.model: Model = model or UNKNOWN_MODEL
        self.thinking_level: ThinkingLevel = thinking_level
        self._tools = list(tools)
        self._messages = list(messages)
        self._is_streaming = False
        self._streaming_message: AgentMessage | None = None
        self._pending_tool_calls: frozenset[str] = frozenset()
        self._error_message: str | None = None

    @property
    def tools(self) -> list[Tool[Any]]:
        return self._tools

    @tools.setter
    def tools(self, tools: Sequence[Tool[Any]]) -> None:
        self._tools = list(tools)

    @property
    def messages(self) -> list[AgentMessage]:
        return self._messages

    @messages.setter
    def messages(self, messages: Sequence[AgentMessage]) -> None:
        self._messages = list(messages)

    @property
    def is_streaming(self) -> bool:
        """A run is in progress (until its ``agent_end`` listeners have returned)."""
        return self._is_streaming

    @property
    def streaming_message(self) -> AgentMessage | None:
        """The message between its ``message_start`` and ``message_end``."""
        return self._streaming_message

    @property
    def pending_tool_calls(self) -> frozenset[str]:
        """Ids of tool calls between ``tool_execution_start`` and ``tool_execution_end``."""
        return self._pending_tool_calls

    @property
    def error_message(self) -> str | None:
        """The ``error_message`` of the last failed or aborted reply of the current run."""
        return self._error_message


@dataclass
class _ActiveRun:
    signal: AbortSignal
    done: anyio.Event
    # Queue drains not yet committed by a message_end, by source queue, restored on failure.
    uncommitted: list[tuple[MessageQueue, AgentMessage]]


class Agent:
    """A stateful agent: prompt it, steer it, listen to it.

    Every callback is an ``async def``; see :class:`~pi_host.agent.AgentLoopConfig` for what
    each one does. Callback attributes may be reassigned between runs.

    :param stream_fn: the provider stream function.
    :param convert_to_llm: transcript → provider messages; default
        :func:`~pi_host.messages.convert_to_llm` (coding-agent roles become user messages).
    :param steering_mode: how :meth:`steer` messages are drained (``"one-at-a-time"``).
    :param follow_up_mode: how :meth:`follow_up` messages are drained (``"one-at-a-time"``).
    :param session_id: forwarded to providers (prompt caching); may be changed between runs.
    :param stream_options: base request options (see ``AgentLoopConfig.stream_options``).
    """

    def __init__(
        self,
        *,
        stream_fn: StreamFn,
        system_prompt: str = "",
        model: Model | None = None,
        thinking_level: ThinkingLevel = "off",
        tools: Sequence[Tool[Any]] = (),
        messages: Sequence[AgentMessage] = (),
        convert_to_llm: ConvertToLlm = default_convert_to_llm,
        transform_context: TransformContext | None = None,
        get_api_key: GetApiKey | None = None,
        on_payload: Callable[[Any, Model], Awaitable[Any]] | None = None,
        on_response: Callable[[int, dict[str, str], Model], Awaitable[None]] | None = None,
        before_tool_call: BeforeToolCall | None = None,
        after_tool_call: AfterToolCall | None = None,
        prepare_next_turn: PrepareNextTurn | None = None,
        should_stop_after_turn: ShouldStopAfterTurn | None = None,
        steering_mode: QueueMode = "one-at-a-time",
        follow_up_mode: QueueMode = "one-at-a-time",
        session_id: str | None = None,
        tool_execution: ToolExecutionMode = "parallel",
        stream_options: StreamOptions | None = None,
        cwd: str | None = None,
        session: Any = None,
    ) -> None:
        self._state = AgentState(
            system_prompt=system_prompt,
            model=model,
            thinking_level=thinking_level,
            tools=tools,
            messages=messages,
        )
        self.stream_fn = stream_fn
        self.convert_to_llm = convert_to_llm
        self.transform_context = transform_context
        self.get_api_key = get_api_key
        self.on_payload = on_payload
        self.on_response = on_response
        self.before_tool_call = before_tool_call
        self.after_tool_call = after_tool_call
        self.prepare_next_turn = prepare_next_turn
        self.should_stop_after_turn = should_stop_after_turn
        self.session_id = session_id
        self.tool_execution: ToolExecutionMode = tool_execution
        self.stream_options = stream_options or StreamOptions()
        self.cwd = cwd
        self.session = session
        #: Why a call of a tool the run does not have fails (``AgentLoopConfig.missing_tool``).
        self.missing_tool: Callable[[str], str | None] | None = None
        self._steering = MessageQueue(steering_mode)
        self._follow_up = MessageQueue(follow_up_mode)
        self._listeners: dict[Listener, None] = {}
        self._active: _ActiveRun | None = None

    # -- state and listeners ----------------------------------------------------------------

    @property
    def state(self) -> AgentState:
        return self._state

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` for every event from now on; return a function that unsubscribes.

        Listeners run in subscription order and are awaited: a run does not go on (and
        :meth:`prompt` does not return) until they have.
        """
        self._listeners[listener] = None

        def unsubscribe() -> None:
            self._listeners.pop(listener, None)

        return unsubscribe

    @property
    def signal(self) -> AbortSignal | None:
        """The current run's abort signal, ``None`` when idle."""
        return self._active.signal if self._active is not None else None

    # -- queues -----------------------------------------------------------------------------

    @property
    def steering_mode(self) -> QueueMode:
        return self._steering.mode

    @steering_mode.setter
    def steering_mode(self, mode: QueueMode) -> None:
        self._steering.mode = mode

    @property
    def follow_up_mode(self) -> QueueMode:
        return self._follow_up.mode

    @follow_up_mode.setter
    def follow_up_mode(self, mode: QueueMode) -> None:
        self._follow_up.mode = mode

    @property
    def steering_queue(self) -> tuple[AgentMessage, ...]:
        """Queued steering messages, oldest first."""
        return self._steering.messages

    @property
    def follow_up_queue(self) -> tuple[AgentMessage, ...]:
        """Queued follow-up messages, oldest first."""
        return self._follow_up.messages

    def steer(self, message: str | AgentMessage) -> None:
        """Queue a message for after the current turn (its tool calls still all run)."""
        self._steering.enqueue(_as_message(message))

    def follow_up(self, message: str | AgentMessage) -> None:
        """Queue a message for when the agent would otherwise stop."""
        self._follow_up.enqueue(_as_message(message))

    def clear_steering_queue(self) -> None:
        self._steering.clear()

    def clear_follow_up_queue(self) -> None:
        self._follow_up.clear()

    def clear_all_queues(self) -> None:
        self._steering.clear()
        self._follow_up.clear()

    def has_queued_messages(self) -> bool:
        return bool(self._steering) or bool(self._follow_up)

    # -- control ----------------------------------------------------------------------------

    def abort(self) -> None:
        """Abort the current run (no-op when idle). The run ends with an aborted reply."""
        if self._active is not None:
            self._active.signal.abort()

    async def wait_for_idle(self) -> None:
        """Return once no run is active, including its ``agent_end`` listeners."""
        run = self._active
        if run is not None:
            await run.done.wait()

    def reset(self) -> None:
        """Clear the transcript, the run-time state and both queues.

        :raises AgentBusyError: while a run is active.
        """
        if self._active is not None:
            raise AgentBusyError(_RESET_BUSY)
        state = self._state
        state._messages = []
        state._is_streaming = False
        state._streaming_message = None
        state._pending_tool_calls = frozenset()
        state._error_message = None
        self.clear_all_queues()

    async def prompt(self, input: PromptInput, images: Sequence[ImageContent] = ()) -> None:
        """Run the agent on a prompt: text (with optional images), a message or messages.

        Returns once the run and every listener are done. A failing provider or callback
        does not raise: the run ends with a reply whose ``stop_reason`` is ``error``.

        :raises AgentBusyError: while a run is active (pi's message: use ``steer()`` or
            ``followUp()``).
        """
        if self._active is not None:
            raise AgentBusyError(_PROMPT_BUSY)
        await self._run_prompt(_normalize_prompt(input, images))

    async def continue_(self) -> None:
        """Run from the transcript as it is (pi's ``continue()``; ``continue`` is a keyword).

        From a user or tool-result tail the model is asked again. From an assistant tail the
        queued steering messages (else follow-ups) are sent as a new prompt.

        :raises AgentBusyError: while a run is active.
        :raises AgentError: ``No messages to continue from``, or ``Cannot continue from message
            role: assistant`` when the tail is an assistant reply and nothing is queued.
        """
        if self._active is not None:
            raise AgentBusyError(_CONTINUE_BUSY)
        messages = self._state.messages
        if not messages:
            raise AgentError("No messages to continue from")
        if messages[-1].role == "assistant":
            steering = self._steering.drain()
            if steering:
                await self._run_prompt(steering, skip_initial_steering_poll=True, drained_from=self._steering)
                return
            follow_ups = self._follow_up.drain()
            if follow_ups:
                await self._run_prompt(follow_ups, drained_from=self._follow_up)
                return
            raise AgentError("Cannot continue from message role: assistant")
        await self._run(self._continue_executor())

    # -- runs -------------------------------------------------------------------------------

    async def _run_prompt(
        self,
        messages: list[AgentMessage],
        *,
        skip_initial_steering_poll: bool = False,
        drained_from: MessageQueue | None = None,
    ) -> None:
        async def execute(signal: AbortSignal) -> None:
            await run_agent_loop(
                messages,
                self._snapshot(),
                self._loop_config(skip_initial_steering_poll),
                self._process_event,
                signal,
            )

        preload = [(drained_from, message) for message in messages] if drained_from is not None else []
        await self._run(execute, preload)

    def _continue_executor(self) -> Callable[[AbortSignal], Awaitable[None]]:
        async def execute(signal: AbortSignal) -> None:
            await run_agent_loop_continue(self._snapshot(), self._loop_config(), self._process_event, signal)

        return execute

    def _snapshot(self) -> AgentContext:
        state = self._state
        return AgentContext(
            system_prompt=state.system_prompt, messages=list(state.messages), tools=list(state.tools)
        )

    def _loop_config(self, skip_initial_steering_poll: bool = False) -> AgentLoopConfig:
        state = self._state
        skip = skip_initial_steering_poll

        async def steering() -> list[AgentMessage]:
            nonlocal skip
            if skip:
                skip = False
                return []
            return self._drain(self._steering)

        async def follow_ups() -> list[AgentMessage]:
            return self._drain(self._follow_up)

        return AgentLoopConfig(
            model=state.model,
            stream_fn=self.stream_fn,
            convert_to_llm=self.convert_to_llm,
            transform_context=self.transform_context,
            get_api_key=self.get_api_key,
            reasoning=None if state.thinking_level == "off" else state.thinking_level,
            session_id=self.session_id,
            on_payload=self.on_payload,
            on_response=self.on_response,
            stream_options=self.stream_options,
            tool_execution=self.tool_execution,
            before_tool_call=self.before_tool_call,
            after_tool_call=self.after_tool_call,
            should_stop_after_turn=self.should_stop_after_turn,
            prepare_next_turn=self.prepare_next_turn,
            get_steering_messages=steering,
            get_follow_up_messages=follow_ups,
            cwd=self.cwd,
            session=self.session,
            missing_tool=self.missing_tool,
        )

    def _drain(self, queue: MessageQueue) -> list[AgentMessage]:
        drained = queue.drain()
        if drained and self._active is not None:
            self._active.uncommitted.extend((queue, message) for message in drained)
        return drained

    async def _run(
        self,
        executor: Callable[[AbortSignal], Awaitable[None]],
        uncommitted: list[tuple[MessageQueue, AgentMessage]] | None = None,
    ) -> None:
        if self._active is not None:
            raise AgentBusyError("Agent is already processing.")
        run = _ActiveRun(AbortSignal(), anyio.Event(), list(uncommitted or ()))
        self._active = run
        state = self._state
        state._is_streaming = True
        state._streaming_message = None
        state._error_message = None
        try:
            await executor(run.signal)
        except Exception as exc:
            await self._handle_run_failure(exc, run.signal.aborted)
        finally:
            self._finish_run(run)

    async def _handle_run_failure(self, error: Exception, aborted: bool) -> None:
        """End a run whose loop raised with a failed reply and the closing events."""
        model = self._state.model
        failure = AssistantMessage(
            content=[TextContent(text="")],
            api=model.api,
            provider=model.provider,
            model=model.id,
            usage=Usage(),
            stop_reason="aborted" if aborted else "error",
            error_message=str(error) or type(error).__name__,
            timestamp=now_ms(),
        )
        await self._process_event(MessageStartEvent(message=failure))
        final = await self._process_event(MessageEndEvent(message=failure)) or failure
        await self._process_event(TurnEndEvent(message=final, tool_results=[]))
        await self._process_event(AgentEndEvent(messages=[final]))

    def _finish_run(self, run: _ActiveRun) -> None:
        # Drained queue messages that never reached the transcript go back to their queue,
        # oldest first, so an abort or failure does not lose what the user typed.
        for queue in (self._steering, self._follow_up):
            lost = [message for source, message in run.uncommitted if source is queue]
            if lost:
                queue.restore(lost)
        state = self._state
        state._is_streaming = False
        state._streaming_message = None
        state._pending_tool_calls = frozenset()
        self._active = None
        run.done.set()

    async def _process_event(self, event: AgentEvent) -> AgentMessage | None:
        """Update the state for ``event``, then await every listener.

        :returns: for ``message_end``, the message as the listeners left it (the loop goes
            on with it); ``None`` for other events.
        """
        state = self._state
        if isinstance(event, MessageUpdateEvent | MessageStartEvent):
            state._streaming_message = event.message
        elif isinstance(event, MessageEndEvent):
            message = event.message
            state._streaming_message = None
            state._messages.append(message)
            run = self._active
            if run is not None and run.uncommitted:
                run.uncommitted = [item for item in run.uncommitted if item[1] is not message]
        elif isinstance(event, ToolExecutionStartEvent):
            state._pending_tool_calls = state._pending_tool_calls | {event.tool_call_id}
        elif isinstance(event, ToolExecutionEndEvent):
            state._pending_tool_calls = state._pending_tool_calls - {event.tool_call_id}
        elif isinstance(event, TurnEndEvent):
            if isinstance(event.message, AssistantMessage) and event.message.error_message:
                state._error_message = event.message.error_message
        elif isinstance(event, AgentEndEvent):
            state._streaming_message = None

        active = self._active
        if active is None:
            raise AgentError("Agent listener invoked outside active run")
        if type(event) is MessageEndEvent:
            return await self._end_message(event, active.signal)
        if self._listeners:
            for listener in tuple(self._listeners):
                await listener(event, active.signal)
        return None

    async def _end_message(self, event: MessageEndEvent, signal: AbortSignal) -> AgentMessage:
        """Await the listeners of ``message_end``, each seeing the previous one's replacement."""
        message = event.message
        for listener in tuple(self._listeners):
            replacement = await listener(event, signal)
            if replacement is None or replacement is message:
                continue
            kinds = MESSAGE_KINDS
            if kinds[type(replacement)] is None or kinds[type(replacement)] is not kinds[type(message)]:
                raise AgentError(
                    f"message_end listener {listener!r} returned {type(replacement).__name__} in place "
                    f"of the {message.role} message; return a message of the same role, or None to keep it"
                )
            messages = self._state._messages
            for index in range(len(messages) - 1, -1, -1):
                if messages[index] is message:
                    messages[index] = replacement
                    break
            message = replacement
            event = MessageEndEvent(message=replacement)
        return message


def _as_message(message: str | AgentMessage) -> AgentMessage:
    if isinstance(message, str):
        return UserMessage(content=[TextContent(text=message)], timestamp=now_ms())
    return message


def _normalize_prompt(input: PromptInput, images: Sequence[ImageContent]) -> list[AgentMessage]:
    if isinstance(input, str):
        content: list[TextContent | ImageContent] = [TextContent(text=input), *images]
        return [UserMessage(content=content, timestamp=now_ms())]
    if isinstance(input, Sequence):
        # mypy keeps ``str`` in the union here although the branch above returned for it.
        return list(cast("Sequence[AgentMessage]", input))
    return [input]
