"""How each hook's results combine: pure reducers, one per strategy or special hook.

A hookspec names its rule (:class:`~pi_host.hookspecs.Strategy`) and, for a rule of its own,
its reducer class (``@hookspec(..., reducer=ToolCallReducer)``); third-party hookspecs
added through ``pi_addhooks`` do the same, so there is no table of special hooks by name.

A reducer never awaits and never does I/O, so every combination rule is testable without an
event loop. The dispatcher drives it::

    state = reducer.start(args)
    for each implementation, in call order:
        result = implementation(**reducer.arguments(state, args))   # what it sees
        if result is not None:
            step = reducer.step(state, result, plugin)   # may raise ResultRejected
            state = step.state
            if step.stop: break
    return reducer.finish(state)

``None`` always means "no opinion" and never reaches :meth:`Reducer.step`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar

from pydantic import BaseModel

from pi_host._frozen import FrozenList
from pi_host.errors import HookError

from ._results import (
    BeforeAgentStartOutcome,
    BeforeAgentStartResult,
    DiscoveredResources,
    InputHandled,
    InputTransform,
    NextTurnUpdate,
    ResourcePaths,
    SourcedPath,
    ToolCallBlock,
    ToolCallRewrite,
    ToolResultPatch,
)
from ._strategy import HookContract, Strategy

__all__ = [
    "BeforeAgentStartReducer",
    "CollectReducer",
    "ContextReducer",
    "FirstReducer",
    "InputReducer",
    "MessageEndReducer",
    "NextTurnReducer",
    "NotifyReducer",
    "PipelineReducer",
    "PipelineUntilReducer",
    "Reducer",
    "ResourcesReducer",
    "ResultRejected",
    "Step",
    "ToolCallReducer",
    "ToolResultReducer",
    "VetoFailure",
    "VetoReducer",
    "describe_types",
    "reducer_for",
]

S = TypeVar("S")
O = TypeVar("O")  # noqa: E741 - the output type, next to S for state


class ResultRejected(Exception):
    """A result the hook's contract does not accept; the dispatcher reports it like a raise."""


@dataclass(frozen=True, slots=True)
class Step(Generic[S]):
    """The outcome of folding one result: the new state, and whether the chain stops."""

    state: S
    stop: bool = False


def describe_types(types: tuple[type, ...]) -> str:
    """``"ToolCallBlock, ToolCallRewrite or None"``: the accepted results, for error messages."""
    names = [t.__name__ for t in types] + ["None"]
    return ", ".join(names[:-1]) + " or " + names[-1]


class Reducer(Generic[S, O]):
    """How one hook's results combine. Subclasses override the methods they need.

    :cvar threads: results change the arguments later implementations receive.
    :cvar fail_closed: an implementation that raises or returns a wrong type decides the
        outcome through :meth:`fail` instead of being skipped.
    """

    threads: bool = False
    fail_closed: bool = False

    def __init__(self, hook: str, returns: tuple[type, ...] = ()) -> None:
        self.hook = hook
        self.returns = returns

    def start(self, args: Mapping[str, Any]) -> S:
        """The state before any implementation ran."""
        raise NotImplementedError

    def arguments(self, state: S, args: Mapping[str, Any]) -> Mapping[str, Any]:
        """The arguments the next implementation receives (only called when :attr:`threads`)."""
        return args

    def step(self, state: S, result: object, plugin: str) -> Step[S]:
        """Fold one non-``None`` result into the state.

        :raises ResultRejected: when the result breaks the hook's contract.
        """
        raise NotImplementedError

    def fail(self, state: S, plugin: str, reason: str) -> Step[S]:
        """The state after an implementation failed (only called when :attr:`fail_closed`)."""
        return Step(state)

    def finish(self, state: S) -> O:
        """The dispatch's return value."""
        raise NotImplementedError

    def check(self, result: object) -> None:
        """:raises ResultRejected: unless ``result`` is one of :attr:`returns`."""
        if not isinstance(result, self.returns):
            raise ResultRejected(
                f"{self.hook} returned {type(result).__name__}; expected {describe_types(self.returns)}"
            )


# -- generic strategies ---------------------------------------------------------------------


class NotifyReducer(Reducer[None, None]):
    """NOTIFY: every implementation runs; returning a value is a mistake worth reporting."""

    def start(self, args: Mapping[str, Any]) -> None:
        return None

    def step(self, state: None, result: object, plugin: str) -> Step[None]:
        raise ResultRejected(
            f"{self.hook} is a notification and ignores results; "
            f"return None instead of {type(result).__name__}"
        )

    def finish(self, state: None) -> None:
        return None


class FirstReducer(Reducer[Any, Any]):
    """FIRST: the first non-``None`` result wins and ends the chain."""

    def start(self, args: Mapping[str, Any]) -> Any:
        return None

    def step(self, state: Any, result: object, plugin: str) -> Step[Any]:
        self.check(result)
        return Step(result, stop=True)

    def finish(self, state: Any) -> Any:
        return state


class CollectReducer(Reducer[tuple[Any, ...], list[Any]]):
    """COLLECT: every result is kept, in call order."""

    def start(self, args: Mapping[str, Any]) -> tuple[Any, ...]:
        return ()

    def step(self, state: tuple[Any, ...], result: object, plugin: str) -> Step[tuple[Any, ...]]:
        self.check(result)
        return Step((*state, result))

    def finish(self, state: tuple[Any, ...]) -> list[Any]:
        return list(state)


class PipelineReducer(Reducer[Any, Any]):
    """PIPELINE: each result replaces the ``pipe`` argument for the next implementation.

    The dispatch returns the final value of that argument (the input when nobody changed it).
    """

    threads = True

    def __init__(self, hook: str, returns: tuple[type, ...] = (), *, pipe: str) -> None:
        super().__init__(hook, returns)
        self.pipe = pipe

    def start(self, args: Mapping[str, Any]) -> Any:
        return args[self.pipe]

    def arguments(self, state: Any, args: Mapping[str, Any]) -> Mapping[str, Any]:
        return {**args, self.pipe: state}

    def step(self, state: Any, result: object, plugin: str) -> Step[Any]:
        self.check(result)
        return Step(result)

    def finish(self, state: Any) -> Any:
        return state


class PipelineUntilReducer(PipelineReducer):
    """PIPELINE_UNTIL: like PIPELINE, but a result of a ``stop_on`` type ends the chain.

    The dispatch returns that result, or the final value of ``pipe`` when none came.
    """

    def __init__(
        self, hook: str, returns: tuple[type, ...] = (), *, pipe: str, stop_on: tuple[type, ...]
    ) -> None:
        super().__init__(hook, returns, pipe=pipe)
        self.stop_on = stop_on

    def step(self, state: Any, result: object, plugin: str) -> Step[Any]:
        self.check(result)
        if isinstance(result, self.stop_on):
            return Step(_Stopped(result), stop=True)
        return Step(result)

    def finish(self, state: Any) -> Any:
        return state.result if isinstance(state, _Stopped) else state


class _Stopped(NamedTuple):
    result: Any


@dataclass(frozen=True, slots=True)
class VetoFailure:
    """What a fail-closed (VETO) hook returns when an implementation raised or broke the contract.

    :ivar plugin: the plugin that failed.
    :ivar reason: what went wrong (``"ValueError: boom"``).
    """

    plugin: str
    reason: str


class VetoReducer(Reducer[Any, Any]):
    """VETO: the first result of a ``stop_on`` type (a block) wins and ends the chain.

    Other accepted results replace ``pipe`` for the next implementation when the spec names
    one (a rewrite). Fails closed: an implementation that raises or returns a wrong type ends
    the chain with a :class:`VetoFailure`. Returns the block, the failure, the final ``pipe``
    value when it changed, or ``None``.
    """

    fail_closed = True

    def __init__(
        self,
        hook: str,
        returns: tuple[type, ...] = (),
        *,
        pipe: str | None = None,
        stop_on: tuple[type, ...] = (),
    ) -> None:
        super().__init__(hook, returns)
        self.pipe = pipe
        self.stop_on = stop_on or returns
        self.threads = pipe is not None  # per instance: only with a pipe

    def start(self, args: Mapping[str, Any]) -> Any:
        return _Veto(args[self.pipe] if self.pipe else None)

    def arguments(self, state: Any, args: Mapping[str, Any]) -> Mapping[str, Any]:
        return {**args, self.pipe: state.value} if self.pipe else args

    def step(self, state: Any, result: object, plugin: str) -> Step[Any]:
        self.check(result)
        if isinstance(result, self.stop_on):
            return Step(state._replace(outcome=result), stop=True)
        if self.pipe is None:
            raise ResultRejected(f"{self.hook} returned {type(result).__name__}, which does not block")
        return Step(_Veto(result, changed=True))

    def fail(self, state: Any, plugin: str, reason: str) -> Step[Any]:
        return Step(state._replace(outcome=VetoFailure(plugin, reason)), stop=True)

    def finish(self, state: Any) -> Any:
        if state.outcome is not None:
            return state.outcome
        return state.value if state.changed else None


class _Veto(NamedTuple):
    value: Any
    changed: bool = False
    outcome: Any = None


# -- hooks with their own rules --------------------------------------------------------------

# The fold states below are private immutable records. They are NamedTuples, not frozen
# dataclasses: every process defines them, and a NamedTuple costs a sixth of the time to create.


class _InputState(NamedTuple):
    text: str
    images: tuple[Any, ...]
    original_text: str
    original_images: tuple[Any, ...]
    handled: bool = False


class InputReducer(Reducer[_InputState, InputTransform | InputHandled | None]):
    """``pi_input``: transforms chain; the first :class:`InputHandled` ends the chain.

    Returns :class:`InputHandled`, an :class:`InputTransform` holding the final text and
    images when they differ from the input, or ``None``.
    """

    threads = True

    def start(self, args: Mapping[str, Any]) -> _InputState:
        images = tuple(args.get("images") or ())
        return _InputState(args["text"], images, args["text"], images)

    def arguments(self, state: _InputState, args: Mapping[str, Any]) -> Mapping[str, Any]:
        return {**args, "text": state.text, "images": state.images}

    def step(self, state: _InputState, result: object, plugin: str) -> Step[_InputState]:
        self.check(result)
        if isinstance(result, InputHandled):
            return Step(state._replace(handled=True), stop=True)
        assert isinstance(result, InputTransform)
        images = state.images if result.images is None else result.images
        return Step(state._replace(text=result.text, images=images))

    def finish(self, state: _InputState) -> InputTransform | InputHandled | None:
        if state.handled:
            return InputHandled()
        if state.text != state.original_text or state.images != state.original_images:
            return InputTransform(text=state.text, images=state.images)
        return None


class _AgentStartState(NamedTuple):
    messages: tuple[Any, ...]
    system_prompt: str
    replaced: bool = False


class BeforeAgentStartReducer(Reducer[_AgentStartState, BeforeAgentStartOutcome]):
    """``pi_before_agent_start``: injected messages are collected, system prompts chain."""

    threads = True

    def start(self, args: Mapping[str, Any]) -> _AgentStartState:
        return _AgentStartState((), args["system_prompt"])

    def arguments(self, state: _AgentStartState, args: Mapping[str, Any]) -> Mapping[str, Any]:
        return {**args, "system_prompt": state.system_prompt}

    def step(self, state: _AgentStartState, result: object, plugin: str) -> Step[_AgentStartState]:
        self.check(result)
        assert isinstance(result, BeforeAgentStartResult)
        messages = state.messages if result.message is None else (*state.messages, result.message)
        if result.system_prompt is None:
            return Step(state._replace(messages=messages))
        return Step(_AgentStartState(messages, result.system_prompt, replaced=True))

    def finish(self, state: _AgentStartState) -> BeforeAgentStartOutcome:
        return BeforeAgentStartOutcome(
            messages=state.messages, system_prompt=state.system_prompt if state.replaced else None
        )


class ContextReducer(PipelineReducer):
    """``pi_context``: a pipeline of message lists; every element must be a message model."""

    def __init__(self, hook: str, returns: tuple[type, ...] = ()) -> None:
        super().__init__(hook, returns, pipe="messages")

    def step(self, state: Any, result: object, plugin: str) -> Step[Any]:
        self.check(result)
        assert isinstance(result, list | tuple)
        for index, item in enumerate(result):
            if not isinstance(item, BaseModel) or not isinstance(getattr(item, "role", None), str):
                raise ResultRejected(
                    f"{self.hook} returned a list whose item {index} is {type(item).__name__}, not a message"
                )
        # The next implementation gets it read-only, as the first got the session's messages.
        return Step(FrozenList(result))

    def finish(self, state: Any) -> list[Any]:
        return list(state)


class MessageEndReducer(PipelineReducer):
    """``pi_message_end``: a replacement must keep the message's role."""

    def __init__(self, hook: str, returns: tuple[type, ...] = ()) -> None:
        super().__init__(hook, returns, pipe="message")

    def step(self, state: Any, result: object, plugin: str) -> Step[Any]:
        self.check(result)
        role, new_role = getattr(state, "role", None), getattr(result, "role", None)
        if new_role != role:
            raise ResultRejected(
                f"{self.hook} must return a message with the same role ({role!r}), not {new_role!r}"
            )
        return Step(result)


class _ToolCallState(NamedTuple):
    input: Mapping[str, Any]
    block: ToolCallBlock | None = None
    rewritten: bool = False


class ToolCallReducer(Reducer[_ToolCallState, ToolCallBlock | ToolCallRewrite | None]):
    """``pi_tool_call``: the first block wins; rewrites replace ``input``; failures block."""

    threads = True
    fail_closed = True

    def start(self, args: Mapping[str, Any]) -> _ToolCallState:
        return _ToolCallState(args["input"])

    def arguments(self, state: _ToolCallState, args: Mapping[str, Any]) -> Mapping[str, Any]:
        return {**args, "input": state.input}

    def step(self, state: _ToolCallState, result: object, plugin: str) -> Step[_ToolCallState]:
        self.check(result)
        if isinstance(result, ToolCallBlock):
            return Step(state._replace(block=result), stop=True)
        assert isinstance(result, ToolCallRewrite)
        return Step(_ToolCallState(result.input, rewritten=True))

    def fail(self, state: _ToolCallState, plugin: str, reason: str) -> Step[_ToolCallState]:
        block = ToolCallBlock(reason=f'Plugin "{plugin}" failed, blocking execution: {reason}')
        return Step(state._replace(block=block), stop=True)

    def finish(self, state: _ToolCallState) -> ToolCallBlock | ToolCallRewrite | None:
        if state.block is not None:
            return state.block
        if state.rewritten:
            return ToolCallRewrite(input=dict(state.input))
        return None


class _ToolResultState(NamedTuple):
    content: tuple[Any, ...]
    details: Any
    is_error: bool
    patched: bool = False


class ToolResultReducer(Reducer[_ToolResultState, ToolResultPatch | None]):
    """``pi_tool_result``: patches apply on top of each other, field by field.

    Returns a patch holding all three final values once any implementation patched, else ``None``.
    """

    threads = True

    def start(self, args: Mapping[str, Any]) -> _ToolResultState:
        return _ToolResultState(tuple(args["content"]), args["details"], args["is_error"])

    def arguments(self, state: _ToolResultState, args: Mapping[str, Any]) -> Mapping[str, Any]:
        return {**args, "content": state.content, "details": state.details, "is_error": state.is_error}

    def step(self, state: _ToolResultState, result: object, plugin: str) -> Step[_ToolResultState]:
        self.check(result)
        assert isinstance(result, ToolResultPatch)
        given = result.model_fields_set
        return Step(
            _ToolResultState(
                content=result.content
                if "content" in given and result.content is not None
                else state.content,
                details=result.details if "details" in given else state.details,
                is_error=result.is_error
                if "is_error" in given and result.is_error is not None
                else state.is_error,
                patched=state.patched or bool(given),
            )
        )

    def finish(self, state: _ToolResultState) -> ToolResultPatch | None:
        if not state.patched:
            return None
        return ToolResultPatch(content=state.content, details=state.details, is_error=state.is_error)


class ResourcesReducer(Reducer[DiscoveredResources, DiscoveredResources]):
    """``pi_resources_discover``: paths are aggregated in call order with the offering plugin."""

    def start(self, args: Mapping[str, Any]) -> DiscoveredResources:
        return DiscoveredResources()

    def step(self, state: DiscoveredResources, result: object, plugin: str) -> Step[DiscoveredResources]:
        self.check(result)
        assert isinstance(result, ResourcePaths)

        def add(current: tuple[SourcedPath, ...], paths: tuple[str, ...]) -> tuple[SourcedPath, ...]:
            return (*current, *(SourcedPath(path=path, plugin=plugin) for path in paths))

        return Step(
            DiscoveredResources(
                skill_paths=add(state.skill_paths, result.skill_paths),
                prompt_paths=add(state.prompt_paths, result.prompt_paths),
                theme_paths=add(state.theme_paths, result.theme_paths),
            )
        )

    def finish(self, state: DiscoveredResources) -> DiscoveredResources:
        return state


class _NextTurnState(NamedTuple):
    messages: Any
    update: Mapping[str, Any]


class NextTurnReducer(Reducer[_NextTurnState, NextTurnUpdate | None]):
    """``pi_prepare_next_turn``: messages chain; a later model or thinking level overrides."""

    threads = True

    def start(self, args: Mapping[str, Any]) -> _NextTurnState:
        return _NextTurnState(args["messages"], {})

    def arguments(self, state: _NextTurnState, args: Mapping[str, Any]) -> Mapping[str, Any]:
        return {**args, "messages": state.messages}

    def step(self, state: _NextTurnState, result: object, plugin: str) -> Step[_NextTurnState]:
        self.check(result)
        assert isinstance(result, NextTurnUpdate)
        changes = {key: value for key, value in result if value is not None}
        messages = changes.get("messages", state.messages)
        return Step(_NextTurnState(messages, {**state.update, **changes}))

    def finish(self, state: _NextTurnState) -> NextTurnUpdate | None:
        return NextTurnUpdate(**state.update) if state.update else None


# -- choosing the reducer for a hook --------------------------------------------------------


def reducer_for(hook: str, contract: HookContract) -> Reducer[Any, Any]:
    """The reducer that applies ``contract`` to ``hook``: the one its spec names
    (``reducer=``), else the generic reducer of its strategy.

    :raises HookError: for a strategy that has no reducer for this contract.
    """
    if contract.reducer is not None:
        made: Reducer[Any, Any] = contract.reducer(hook, contract.result_types())
        return made
    strategy = contract.strategy
    returns = contract.result_types()
    if strategy is Strategy.NOTIFY or strategy is Strategy.SYNC:
        return NotifyReducer(hook, returns)
    if strategy is Strategy.FIRST or strategy is Strategy.SYNC_FIRST:
        return FirstReducer(hook, returns)
    if strategy is Strategy.COLLECT:
        return CollectReducer(hook, returns)
    if strategy is Strategy.PIPELINE and contract.pipe is not None:
        return PipelineReducer(hook, returns, pipe=contract.pipe)
    if strategy is Strategy.PIPELINE_UNTIL and contract.pipe is not None and contract.stop_on:
        return PipelineUntilReducer(hook, returns, pipe=contract.pipe, stop_on=contract.stop_on)
    if strategy is Strategy.VETO:
        return VetoReducer(hook, returns, pipe=contract.pipe, stop_on=contract.stop_on)
    raise HookError(
        f"hook {hook!r} has strategy {strategy.value!r} without what it needs: PIPELINE needs pipe=, "
        "PIPELINE_UNTIL needs pipe= and stop_on=",
        hook=hook,
    )
