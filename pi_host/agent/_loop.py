"""The agent loop: prompt → assistant reply → tool calls → … until the model stops.

A re-implementation of pi's ``runAgentLoop`` / ``runAgentLoopContinue`` (pi-agent-core 0.73)
with the same event sequence, tool-execution rules and queue semantics. The loop is stateless
between runs: it works on a copy of an :class:`AgentContext` and reports everything it does
through an ``emit`` sink that it awaits (back-pressure: a slow listener slows the loop, it never
drops events); it may replace a message at its ``message_end`` (see :data:`Emit`).
:class:`~pi_host.agent.Agent` is the stateful wrapper most code wants.

Shape of a run::

    agent_start, turn_start, message_start/end (each prompt)
    repeat (one turn per assistant reply):
        message_start (assistant), message_update…, message_end
        tool_execution_start, [tool_execution_update…], tool_execution_end   (per tool call)
        message_start/end (each tool result, in the order the model asked)
        turn_end
        [turn_start, message_start/end (steering or follow-up messages)]
    agent_end

Every callback is an ``async def``. Callbacks must not raise (pi's contract): an exception from
one ends the loop without the normal closing events, and :class:`~pi_host.agent.Agent` turns it
into a failed assistant reply. The stream function and tools may raise: their exceptions become
an error reply and an error tool result respectively.

Abort is anyio cancellation driven by the run's :class:`~pi_host.providers.AbortSignal`: the
provider stream, the hooks and the tools run inside ``signal.scope()``. Emitting an event is
never cancelled by an abort, so listeners always see whole events.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeAlias, TypeVar, cast

import anyio
from pydantic import BaseModel

from pi_host._frozen import FrozenList
from pi_host.messages import (
    MESSAGE_KINDS,
    AgentEndEvent,
    AgentEvent,
    AgentMessage,
    AgentStartEvent,
    AssistantMessage,
    Message,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    TextContent,
    ToolCall,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    ToolResult,
    ToolResultMessage,
    TurnEndEvent,
    TurnStartEvent,
    Usage,
    UserMessage,
    convert_to_llm,
    now_ms,
    repair_tool_history,
)
from pi_host.providers import AbortSignal, LlmContext, Model, StreamFn, StreamOptions, ThinkingLevel, ToolSpec

from ._tools import Tool, ToolCallContext, ToolError, ToolExecutionMode

if TYPE_CHECKING:
    from ._tool_hooks import AfterToolCall, AfterToolCallResult, BeforeToolCall, BeforeToolCallResult

__all__ = [
    "ABORTED_MESSAGE",
    "AgentContext",
    "AgentLoopConfig",
    "ConvertToLlm",
    "Emit",
    "GetApiKey",
    "MessageSource",
    "PrepareNextTurn",
    "ShouldStopAfterTurn",
    "TransformContext",
    "TurnContext",
    "TurnUpdate",
    "default_convert_to_llm",
    "run_agent_loop",
    "run_agent_loop_continue",
]

ABORTED_MESSAGE = "Request was aborted"
"""``error_message`` of an assistant reply cut short by an abort (pi's wording)."""

_OPERATION_ABORTED = "Operation aborted"
_BLOCKED = "Tool execution was blocked"


# -- public data ----------------------------------------------------------------------------


@dataclass
class AgentContext:
    """What one provider request is built from: system prompt, transcript and tools.

    The loop works on its own copy; it appends to ``messages`` as the run goes.
    """

    system_prompt: str = ""
    messages: list[AgentMessage] = field(default_factory=list)
    tools: list[Tool[Any]] = field(default_factory=list)


@dataclass(frozen=True)
class TurnContext:
    """What ``prepare_next_turn`` and ``should_stop_after_turn`` see after a turn.

    :ivar message: the turn's assistant reply.
    :ivar tool_results: the results passed to ``turn_end`` (source order).
    :ivar context: the loop's context, with the reply and results appended.
    :ivar new_messages: what the run would return if it stopped now.
    """

    message: AssistantMessage
    tool_results: list[ToolResultMessage]
    context: AgentContext
    new_messages: list[AgentMessage]


@dataclass(frozen=True)
class TurnUpdate:
    """``prepare_next_turn``'s answer: what to use from the next turn on (``None`` keeps).

    ``thinking_level="off"`` turns reasoning off.
    """

    context: AgentContext | None = None
    model: Model | None = None
    thinking_level: ThinkingLevel | None = None


Emit: TypeAlias = Callable[[AgentEvent], Awaitable[AgentMessage | None]]
"""The loop's event sink, awaited per event. For ``message_end`` it may return a replacement
message (same role), which the run then uses in the message's place: in the context of the
next request, in ``turn_end`` and ``agent_end``, and (for a reply) for its tool calls.
``None`` keeps the message; for other events the result is ignored."""
ConvertToLlm: TypeAlias = Callable[[list[AgentMessage]], Awaitable[list[Message]]]
TransformContext: TypeAlias = Callable[[list[AgentMessage], AbortSignal], Awaitable[list[AgentMessage]]]
GetApiKey: TypeAlias = Callable[[str], Awaitable[str | None]]
MessageSource: TypeAlias = Callable[[], Awaitable[list[AgentMessage]]]
ShouldStopAfterTurn: TypeAlias = Callable[[TurnContext, AbortSignal], Awaitable[bool]]
PrepareNextTurn: TypeAlias = Callable[[TurnContext, AbortSignal], Awaitable[TurnUpdate | None]]
_PayloadHook: TypeAlias = Callable[[Any, Model], Awaitable[Any]]
_ResponseHook: TypeAlias = Callable[[int, dict[str, str], Model], Awaitable[None]]


async def default_convert_to_llm(messages: list[AgentMessage]) -> list[Message]:
    """:func:`pi_host.messages.convert_to_llm` as an async callback: the coding-agent roles
    become user messages, ``!!cmd`` runs are dropped."""
    return convert_to_llm(messages)


@dataclass(frozen=True)
class AgentLoopConfig:
    """Everything a run needs besides its context (pi's ``AgentLoopConfig``).

    :ivar model: the model of the first turn (``prepare_next_turn`` may switch it).
    :ivar stream_fn: the provider stream function.
    :ivar convert_to_llm: transcript → provider messages, before every request. The loop then
        repairs the tool history (a call without a result gets a synthetic error result, a
        result without a call is dropped, failed replies are skipped).
    :ivar transform_context: transcript → transcript before ``convert_to_llm`` (pruning,
        injection). Receives the loop's live list: return a new list, don't mutate it.
    :ivar get_api_key: resolves the key per request, for expiring tokens; falls back to
        ``api_key``.
    :ivar reasoning: thinking level of the first turn (``None`` = off).
    :ivar stream_options: base request options (max tokens, temperature, headers, cache
        retention, thinking budgets …). Its ``signal``, ``api_key``, ``reasoning``,
        ``session_id``, ``on_payload`` and ``on_response`` are replaced by the loop's.
    :ivar tool_execution: ``"parallel"`` (prepare in order, run concurrently) or
        ``"sequential"``. A tool with ``execution_mode="sequential"`` makes its whole batch
        sequential.
    :ivar before_tool_call: may block a call or replace its arguments.
    :ivar after_tool_call: may override a result field by field.
    :ivar should_stop_after_turn: ``True`` ends the run after the current turn.
    :ivar prepare_next_turn: may swap context, model or thinking level for the next turn.
    :ivar get_steering_messages: polled at the start and after every turn.
    :ivar get_follow_up_messages: polled when the run would otherwise end.
    :ivar cwd: working directory handed to tools (default: the process's when the run starts).
    :ivar session: the host object handed to tools as ``ctx.session``.
    :ivar missing_tool: why the model's call of a tool not in the context fails, if known
        (a tool unregistered during the session), else ``None`` for pi's "not found".
    """

    model: Model
    stream_fn: StreamFn
    convert_to_llm: ConvertToLlm = default_convert_to_llm
    transform_context: TransformContext | None = None
    get_api_key: GetApiKey | None = None
    api_key: str | None = None
    reasoning: ThinkingLevel | None = None
    session_id: str | None = None
    on_payload: _PayloadHook | None = None
    on_response: _ResponseHook | None = None
    stream_options: StreamOptions = field(default_factory=StreamOptions)
    tool_execution: ToolExecutionMode = "parallel"
    before_tool_call: BeforeToolCall | None = None
    after_tool_call: AfterToolCall | None = None
    should_stop_after_turn: ShouldStopAfterTurn | None = None
    prepare_next_turn: PrepareNextTurn | None = None
    get_steering_messages: MessageSource | None = None
    get_follow_up_messages: MessageSource | None = None
    cwd: str | None = None
    session: Any = None
    missing_tool: Callable[[str], str | None] | None = None


# -- entry points ---------------------------------------------------------------------------


async def run_agent_loop(
    prompts: Sequence[AgentMessage],
    context: AgentContext,
    config: AgentLoopConfig,
    emit: Emit,
    signal: AbortSignal | None = None,
) -> list[AgentMessage]:
    """Run the loop for new prompt messages; return every message the run produced.

    Emits ``agent_start``, ``turn_start`` and ``message_start``/``message_end`` for each
    prompt, then runs turns until the model stops, ``should_stop_after_turn`` says so, a reply
    fails or the run is aborted. The returned list starts with ``prompts`` (as replaced at
    their ``message_end``).
    """
    await emit(AgentStartEvent())
    await emit(TurnStartEvent())
    new_messages: list[AgentMessage] = []
    for prompt in prompts:
        await emit(MessageStartEvent(message=prompt))
        new_messages.append(await _end_message(emit, prompt))
    current = AgentContext(
        system_prompt=context.system_prompt,
        messages=[*context.messages, *new_messages],
        tools=list(context.tools),
    )
    await _Run(current, new_messages, config, emit, signal or AbortSignal()).run()
    return new_messages


async def run_agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    emit: Emit,
    signal: AbortSignal | None = None,
) -> list[AgentMessage]:
    """Run the loop from the context as it is (after a failed reply, or after tool results were added).

    The last message must become a user or tool-result message for the provider (the caller's
    responsibility when it is a custom role). No events are emitted for existing messages;
    the returned list holds only new ones.

    :raises ValueError: ``Cannot continue: no messages in context``, or ``Cannot continue
        from message role: assistant``.
    """
    if not context.messages:
        raise ValueError("Cannot continue: no messages in context")
    if context.messages[-1].role == "assistant":
        raise ValueError("Cannot continue from message role: assistant")
    new_messages: list[AgentMessage] = []
    current = AgentContext(
        system_prompt=context.system_prompt, messages=list(context.messages), tools=list(context.tools)
    )
    await emit(AgentStartEvent())
    await emit(TurnStartEvent())
    await _Run(current, new_messages, config, emit, signal or AbortSignal()).run()
    return new_messages


# -- the run --------------------------------------------------------------------------------


_M = TypeVar("_M", bound=AgentMessage)


async def _end_message(emit: Emit, message: _M) -> _M:
    """Emit ``message``'s ``message_end``; return what the run goes on with (a replacement).

    :raises TypeError: the sink returned something other than a message of the same role.
    """
    final = await emit(MessageEndEvent(message=message))
    if final is None or final is message:
        return message
    kinds = MESSAGE_KINDS
    if kinds[type(final)] is None or kinds[type(final)] is not kinds[type(message)]:
        raise TypeError(
            f"the event sink replaced a {type(message).__name__} with {type(final).__name__} at "
            "message_end; a replacement must be a message of the same role"
        )
    return cast("_M", final)


class _Prepared(NamedTuple):
    call: ToolCall
    tool: Tool[Any]
    args: BaseModel


class _Finalized(NamedTuple):
    call: ToolCall
    result: ToolResult
    is_error: bool


def _describe(exc: BaseException) -> str:
    """The text a model or user reads for an exception: its message, else its type."""
    return str(exc) or type(exc).__name__


def _error_result(text: str, details: Any = None) -> ToolResult:
    return ToolResult(content=[TextContent(text=text)], details={} if details is None else details)


def _collapse(group: BaseExceptionGroup[Any]) -> BaseException:
    """The first exception of a tool task group, as pi's ``Promise.all`` rejects with the
    first rejection; any others are mentioned in a note."""
    leaves: list[BaseException] = []

    def walk(exc: BaseException) -> None:
        if isinstance(exc, BaseExceptionGroup):
            for inner in exc.exceptions:
                walk(inner)
        else:
            leaves.append(exc)

    walk(group)
    first = leaves[0]
    if len(leaves) > 1:
        first.add_note(f"({len(leaves) - 1} more exception(s) from concurrent tool calls not shown)")
    return first


class _Run:
    """One loop invocation's mutable state: context, model and thinking level may change
    between turns (``prepare_next_turn``)."""

    def __init__(
        self,
        context: AgentContext,
        new_messages: list[AgentMessage],
        config: AgentLoopConfig,
        emit: Emit,
        signal: AbortSignal,
    ) -> None:
        self.context = context
        self.new_messages = new_messages
        self.config = config
        self.emit = emit
        self.signal = signal
        self.model = config.model
        self.reasoning = config.reasoning
        self.cwd = config.cwd or os.getcwd()
        # Tool.spec() renders a JSON schema; once per tool per run is enough.
        self._specs: dict[int, tuple[Tool[Any], ToolSpec]] = {}

    async def run(self) -> None:
        config, emit = self.config, self.emit
        first_turn = True
        pending = await self._poll(config.get_steering_messages)
        while True:
            has_more_tool_calls = True
            while has_more_tool_calls or pending:
                if first_turn:
                    first_turn = False
                else:
                    await emit(TurnStartEvent())
                for message in pending:
                    await emit(MessageStartEvent(message=message))
                    message = await _end_message(emit, message)
                    self.context.messages.append(message)
                    self.new_messages.append(message)
                pending = []

                reply = await self._stream_assistant_response()
                self.new_messages.append(reply)
                if reply.stop_reason in ("error", "aborted"):
                    await emit(TurnEndEvent(message=reply, tool_results=[]))
                    await emit(AgentEndEvent(messages=self.new_messages))
                    return

                tool_calls = [block for block in reply.content if isinstance(block, ToolCall)]
                tool_results: list[ToolResultMessage] = []
                has_more_tool_calls = False
                if tool_calls:
                    tool_results, terminate = await self._execute_tool_calls(reply, tool_calls)
                    has_more_tool_calls = not terminate
                    self.context.messages.extend(tool_results)
                    self.new_messages.extend(tool_results)
                await emit(TurnEndEvent(message=reply, tool_results=tool_results))

                if self.signal.aborted:
                    # Leave hooks and queues alone: the next turn ends the run with an aborted
                    # reply (if tools ran), and queued messages wait for the next prompt.
                    continue
                if await self._after_turn(reply, tool_results):
                    await emit(AgentEndEvent(messages=self.new_messages))
                    return
                pending = await self._poll(config.get_steering_messages)

            follow_ups = await self._poll(config.get_follow_up_messages)
            if not follow_ups:
                break
            pending = follow_ups
        await emit(AgentEndEvent(messages=self.new_messages))

    async def _poll(self, source: MessageSource | None) -> list[AgentMessage]:
        if source is None or self.signal.aborted:
            return []
        return list(await source())

    async def _after_turn(self, reply: AssistantMessage, tool_results: list[ToolResultMessage]) -> bool:
        """Run ``prepare_next_turn`` then ``should_stop_after_turn``; return whether to stop."""
        config, signal = self.config, self.signal
        if config.prepare_next_turn is not None:
            update: TurnUpdate | None = None
            with signal.scope():
                update = await config.prepare_next_turn(
                    TurnContext(reply, tool_results, self.context, self.new_messages), signal
                )
            if update is not None:
                if update.context is not None:
                    self.context = update.context
                if update.model is not None:
                    self.model = update.model
                if update.thinking_level is not None:
                    self.reasoning = None if update.thinking_level == "off" else update.thinking_level
        if config.should_stop_after_turn is not None and not signal.aborted:
            stop = False
            with signal.scope():
                stop = await config.should_stop_after_turn(
                    TurnContext(reply, tool_results, self.context, self.new_messages), signal
                )
            return bool(stop)
        return False

    # -- the provider request ---------------------------------------------------------------

    def _tool_specs(self) -> list[ToolSpec]:
        specs = []
        for tool in self.context.tools:
            cached = self._specs.get(id(tool))
            if cached is None or cached[0] is not tool:
                cached = (tool, tool.spec())
                self._specs[id(tool)] = cached
            specs.append(cached[1])
        return specs

    async def _build_request(self) -> tuple[LlmContext, str | None] | None:
        """transform_context → convert_to_llm → history repair; ``None`` if aborted meanwhile."""
        config, signal, context = self.config, self.signal, self.context
        request: tuple[LlmContext, str | None] | None = None
        with signal.scope():
            messages = context.messages
            if config.transform_context is not None:
                messages = await config.transform_context(messages, signal)
            converted = await config.convert_to_llm(messages)
            api_key = None
            if config.get_api_key is not None:
                api_key = await config.get_api_key(self.model.provider)
            kinds = MESSAGE_KINDS
            for message in converted:
                kind = kinds[type(message)]
                if kind is not UserMessage and kind is not AssistantMessage and kind is not ToolResultMessage:
                    raise TypeError(
                        "convert_to_llm must return user, assistant and tool-result messages, "
                        f"not {type(message).__name__}"
                    )
            # Already validated messages and specs: skip pydantic's second pass on every turn.
            llm_context = LlmContext.model_construct(
                system_prompt=context.system_prompt,
                messages=FrozenList(repair_tool_history(converted)),
                tools=FrozenList(self._tool_specs()),
            )
            request = (llm_context, api_key or config.api_key)
        return None if signal.aborted else request

    def _stand_in_reply(
        self, partial: AssistantMessage | None, stop_reason: Literal["error", "aborted"], text: str
    ) -> AssistantMessage:
        """The final reply when the provider produced none: the partial so far, or an empty one.

        The partial keeps its timestamp, as pi's providers finish the message they started:
        ``message_start`` and ``message_end`` of one reply carry the same ``timestamp``.
        """
        if partial is not None:
            return partial.model_copy(update={"stop_reason": stop_reason, "error_message": text})
        model = self.model
        return AssistantMessage(
            content=[TextContent(text="")] if stop_reason == "error" else [],
            api=model.api,
            provider=model.provider,
            model=model.id,
            usage=Usage(),
            stop_reason=stop_reason,
            error_message=text,
            timestamp=now_ms(),
        )

    async def _stream_assistant_response(self) -> AssistantMessage:
        config, signal, emit = self.config, self.signal, self.emit
        messages = self.context.messages
        partial: AssistantMessage | None = None
        final: AssistantMessage | None = None
        failure: Exception | None = None

        request = None if signal.aborted else await self._build_request()
        if request is not None:
            llm_context, api_key = request
            options = dataclasses.replace(
                config.stream_options,
                signal=signal,
                api_key=api_key,
                reasoning=self.reasoning,
                session_id=config.session_id,
                on_payload=config.on_payload,
                on_response=config.on_response,
            )
            iterator: Any = None
            with signal.scope():
                try:
                    iterator = aiter(config.stream_fn(self.model, llm_context, options))
                except Exception as exc:
                    failure = exc
                # Abort cancels the outer scope. While an event is being emitted the guard is
                # shielded, so the cancellation waits for the listeners to finish and lands in
                # the provider's next await instead.
                with anyio.CancelScope() as guard:
                    while iterator is not None:
                        try:
                            event = await anext(iterator)
                        except StopAsyncIteration:
                            break
                        except Exception as exc:
                            # Stream functions must not raise; one that does still ends the
                            # turn as a failed reply instead of tearing the run down.
                            failure = exc
                            break
                        kind = event.type
                        if kind == "done":
                            final = event.message
                            break
                        if kind == "error":
                            final = event.error
                            break
                        update: AgentEvent
                        if kind == "start":
                            partial = event.partial
                            messages.append(partial)
                            update = MessageStartEvent(message=partial)
                        elif partial is not None:
                            partial = event.partial
                            messages[-1] = partial
                            update = MessageUpdateEvent.of(partial, event)
                        else:
                            continue
                        guard.shield = True
                        try:
                            await emit(update)
                        finally:
                            guard.shield = False
                        if signal.aborted:
                            break
            aclose = getattr(iterator, "aclose", None)
            if aclose is not None:
                if signal.aborted:
                    # Let the provider's cleanup run even though the run is being aborted.
                    with anyio.CancelScope(shield=True):
                        await aclose()
                else:
                    await aclose()

        if final is None:
            if signal.aborted:
                final = self._stand_in_reply(partial, "aborted", ABORTED_MESSAGE)
            elif failure is not None:
                final = self._stand_in_reply(partial, "error", _describe(failure))
            else:
                final = self._stand_in_reply(
                    partial, "error", "The provider stream ended without a done or error event"
                )
        if partial is not None:
            messages[-1] = final
        else:
            messages.append(final)
            await emit(MessageStartEvent(message=final))
        final = await _end_message(emit, final)
        messages[-1] = final
        return final

    # -- tools ----------------------------------------------------------------------------

    async def _execute_tool_calls(
        self, reply: AssistantMessage, calls: list[ToolCall]
    ) -> tuple[list[ToolResultMessage], bool]:
        """Run one reply's tool calls; return the result messages (source order) and whether
        every result asked to terminate the run."""
        tools: dict[str, Tool[Any]] = {}
        for tool in self.context.tools:
            tools.setdefault(tool.name, tool)
        sequential = self.config.tool_execution == "sequential" or any(
            (found := tools.get(call.name)) is not None and found.execution_mode == "sequential"
            for call in calls
        )
        if sequential:
            finalized, results = await self._execute_sequential(reply, calls, tools)
        else:
            finalized, results = await self._execute_parallel(reply, calls, tools)
        terminate = bool(finalized) and all(item.result.terminate is True for item in finalized)
        return results, terminate

    async def _execute_sequential(
        self, reply: AssistantMessage, calls: list[ToolCall], tools: dict[str, Tool[Any]]
    ) -> tuple[list[_Finalized], list[ToolResultMessage]]:
        finalized: list[_Finalized] = []
        results: list[ToolResultMessage] = []
        for call in calls:
            await self._emit_start(call)
            prepared = await self._prepare(reply, call, tools)
            if isinstance(prepared, _Prepared):
                prepared = await self._execute(reply, prepared)
            await self._emit_end(prepared)
            results.append(await self._emit_result_message(prepared))
            finalized.append(prepared)
        return finalized, results

    async def _execute_parallel(
        self, reply: AssistantMessage, calls: list[ToolCall], tools: dict[str, Tool[Any]]
    ) -> tuple[list[_Finalized], list[ToolResultMessage]]:
        slots: list[_Finalized | None] = [None] * len(calls)
        runnable: list[tuple[int, _Prepared]] = []
        # Preflight in source order; nothing executes until every call is prepared.
        for index, call in enumerate(calls):
            await self._emit_start(call)
            prepared = await self._prepare(reply, call, tools)
            if isinstance(prepared, _Finalized):
                await self._emit_end(prepared)
                slots[index] = prepared
            else:
                runnable.append((index, prepared))

        async def run_one(index: int, prepared: _Prepared) -> None:
            done = await self._execute(reply, prepared)
            await self._emit_end(done)
            slots[index] = done

        if len(runnable) == 1:
            await run_one(*runnable[0])
        elif runnable:
            try:
                async with anyio.create_task_group() as group:
                    for index, prepared in runnable:
                        group.start_soon(run_one, index, prepared)
            except BaseExceptionGroup as exc_group:
                raise _collapse(exc_group) from None

        finalized = [slot for slot in slots if slot is not None]
        results = [await self._emit_result_message(item) for item in finalized]
        return finalized, results

    async def _prepare(
        self, reply: AssistantMessage, call: ToolCall, tools: dict[str, Tool[Any]]
    ) -> _Prepared | _Finalized:
        """Find the tool, prepare and validate the arguments, ask ``before_tool_call``."""
        tool = tools.get(call.name)
        if tool is None:
            why = self.config.missing_tool(call.name) if self.config.missing_tool is not None else None
            text = f"Tool {call.name} not found" + (f": {why}" if why else "")
            return _Finalized(call, _error_result(text), True)
        config, signal = self.config, self.signal
        try:
            raw = call.arguments
            if tool.prepare_arguments is not None:
                raw = tool.prepare_arguments(raw)
            args: BaseModel = tool.validate_arguments(raw)
            if config.before_tool_call is not None:
                from ._tool_hooks import BeforeToolCallContext

                verdict: BeforeToolCallResult | None = None
                with signal.scope():
                    verdict = await config.before_tool_call(
                        BeforeToolCallContext(reply, call, args, self.context), signal
                    )
                if not signal.aborted and verdict is not None:
                    if verdict.block:
                        return _Finalized(call, _error_result(verdict.reason or _BLOCKED), True)
                    if verdict.args is not None:
                        args = verdict.args
        except Exception as exc:
            return _Finalized(call, _error_result(_describe(exc)), True)
        if signal.aborted:
            return _Finalized(call, _error_result(_OPERATION_ABORTED), True)
        return _Prepared(call, tool, args)

    async def _execute(self, reply: AssistantMessage, prepared: _Prepared) -> _Finalized:
        """Execute a prepared call, then apply ``after_tool_call``."""
        config, signal, emit = self.config, self.signal, self.emit
        call = prepared.call
        settled = False

        async def on_update(partial: ToolResult) -> None:
            if settled:
                return
            # An abort must not cut an event in half: the listeners finish, then the tool's
            # own scope delivers the cancellation.
            with anyio.CancelScope(shield=True):
                await emit(
                    ToolExecutionUpdateEvent(
                        tool_call_id=call.id, tool_name=call.name, args=call.arguments, partial_result=partial
                    )
                )

        tool_ctx = ToolCallContext(
            tool_call_id=call.id,
            signal=signal,
            cwd=self.cwd,
            session=config.session,
            model=self.model,
            _on_update=on_update,
        )
        outcome: Any = None
        error: Exception | None = None
        with signal.scope():
            try:
                outcome = await prepared.tool.execute(prepared.args, tool_ctx)
            except Exception as exc:
                error = exc
        settled = True

        if error is not None:
            details = error.details if isinstance(error, ToolError) else None
            result, is_error = _error_result(_describe(error), details), True
        elif outcome is None and signal.aborted:
            result, is_error = _error_result(_OPERATION_ABORTED), True
        elif not isinstance(outcome, ToolResult):
            result = _error_result(
                f"Tool {call.name} returned {type(outcome).__name__}; execute() must return a ToolResult"
            )
            is_error = True
        else:
            result, is_error = outcome, False

        if config.after_tool_call is not None:
            from ._tool_hooks import AfterToolCallContext

            override: AfterToolCallResult | None = None
            completed = False
            try:
                with signal.scope():
                    override = await config.after_tool_call(
                        AfterToolCallContext(reply, call, prepared.args, result, is_error, self.context),
                        signal,
                    )
                    completed = True
            except Exception as exc:
                result, is_error = _error_result(_describe(exc)), True
            else:
                if not completed and not is_error:
                    # Aborted before the hook could see it; a tool's own error (bash: the
                    # output so far, "Command aborted") is what the model is told.
                    result, is_error = _error_result(_OPERATION_ABORTED), True
                elif override is not None:
                    update: dict[str, Any] = {}
                    if override.content is not None:
                        update["content"] = override.content
                    if override.details is not None:
                        update["details"] = override.details
                    if override.terminate is not None:
                        update["terminate"] = override.terminate
                    if update:
                        result = result.model_copy(update=update)
                    if override.is_error is not None:
                        is_error = override.is_error
        return _Finalized(call, result, is_error)

    async def _emit_start(self, call: ToolCall) -> None:
        await self.emit(
            ToolExecutionStartEvent(tool_call_id=call.id, tool_name=call.name, args=call.arguments)
        )

    async def _emit_end(self, item: _Finalized) -> None:
        await self.emit(
            ToolExecutionEndEvent(
                tool_call_id=item.call.id,
                tool_name=item.call.name,
                result=item.result,
                is_error=item.is_error,
            )
        )

    async def _emit_result_message(self, item: _Finalized) -> ToolResultMessage:
        message = ToolResultMessage(
            tool_call_id=item.call.id,
            tool_name=item.call.name,
            content=item.result.content,
            details=item.result.details,
            is_error=item.is_error,
            timestamp=now_ms(),
        )
        await self.emit(MessageStartEvent(message=message))
        return await _end_message(self.emit, message)
