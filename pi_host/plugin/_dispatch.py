"""The async dispatcher: awaits ``pi`` hook implementations one at a time, in call order.

pluggy stays the registry (specs, validation, ordering, blocking); this module only calls.
For each dispatch it walks the hook's implementations in call order
(:meth:`PluginManager.call_order`: a later tier first, then last registered first,
``tryfirst``/``trylast`` honoured), passes each only the arguments it declares, awaits it if
it is ``async def`` (or returned an awaitable) under the hook timeout (:mod:`._timeouts`),
isolates its errors (``BaseException`` too, see :mod:`._containment`), and folds its result
with the reducer the hookspec declares. Implementation lists are cached per hook and dropped
whenever the plugin manager changes. Preparing, calling, containing and folding are the
steps of :mod:`._loop`, whose synchronous driver runs the setup and registration hooks and
their replay (:meth:`PluginManager.call_setup`, where a failure fails the plugin's load).
"""

from __future__ import annotations

import inspect
import logging
import os
import time
import traceback
from asyncio import current_task as _current_task
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TextIO, cast

from pi_host._frozen import FrozenList
from pi_host.errors import HookError
from pi_host.hookspecs import Strategy

from ._loop import Hook, Impl, call_blocking, contain, describe, fail, prepare, settle
from ._manager import PluginManager
from ._timeouts import HookGuard, timeout_from_environ

if TYPE_CHECKING:
    from pi_host.hookspecs import (
        BeforeAgentStartOutcome,
        BranchSummary,
        Cancel,
        CompactionPreparation,
        CompactionReason,
        CompactionResult,
        ContinueRun,
        DiscoveredResources,
        EntryView,
        InputHandled,
        InputSource,
        InputTransform,
        ModelSelectSource,
        NextTurnUpdate,
        PluginContext,
        ProjectTrustDecision,
        SessionBeforeForkResult,
        SessionShutdownReason,
        SessionStartReason,
        StreamingBehavior,
        ToolCallBlock,
        ToolCallRewrite,
        ToolResultPatch,
        TreePreparation,
        TreeSummaryResult,
        UserBashResult,
    )
    from pi_host.messages import (
        AgentMessage,
        AssistantMessage,
        ImageContent,
        TextContent,
        ToolResultMessage,
    )
    from pi_host.providers import AbortSignal, Model, ThinkingLevel

    from ._trace import ImplTrace, Tracer

__all__ = ["Dispatcher", "ErrorListener", "ExtensionError"]

logger = logging.getLogger("pi_host.plugin")


@dataclass(frozen=True, slots=True)
class ExtensionError:
    """A hook implementation failed; the runtime turns it into pi's ``extension_error`` event.

    :ivar plugin: the plugin's registered name.
    :ivar hook: the hook (``pi_tool_call`` …).
    :ivar message: ``"ValueError: boom"``, or what was wrong with the returned value.
    :ivar traceback: the formatted traceback, ``None`` for a rejected result.
    """

    plugin: str
    hook: str
    message: str
    traceback: str | None = None


ErrorListener = Callable[[ExtensionError], "Awaitable[None] | None"]


class Dispatcher:
    """Calls lifecycle hooks: ``await dispatcher.tool_call(...)``, ``await dispatcher.call("pi_x", ...)``.

    Agent events (``pi_agent_start`` … ``pi_tool_execution_end``) have no typed method: the
    session's generic bridge dispatches them with :meth:`call`, named after the event's type.

    :param pm: the host's plugin manager.
    :param on_error: a first error listener (see :meth:`add_error_listener`).
    :param trace: ``True`` or a stream to print every dispatch that reaches an implementation;
        ``None`` (the default) follows ``PI_HOST_TRACE_HOOKS``.
    """

    def __init__(
        self,
        pm: PluginManager,
        *,
        on_error: ErrorListener | None = None,
        trace: bool | TextIO | None = None,
        timeout: float | Literal["environ"] | None = "environ",
    ) -> None:
        """
        :param timeout: seconds one implementation may take (``None``: no limit); by default
            ``PI_HOST_HOOK_TIMEOUT``, else :data:`~._timeouts.DEFAULT_HOOK_TIMEOUT`.
        """
        self._pm = pm
        self._guard = HookGuard(timeout_from_environ() if timeout == "environ" else timeout)
        self._hooks: dict[str, Hook] = {}
        self._listeners: list[ErrorListener] = [] if on_error is None else [on_error]
        self._argument_listeners: list[Callable[[str, Mapping[str, Any]], None]] = []
        self._tracer: Tracer | None
        if trace is None:
            self._tracer = _tracer_from_environ()
        elif trace is False:
            self._tracer = None
        else:
            from ._trace import Tracer

            self._tracer = Tracer(None if trace is True else trace)
        self._detach = pm.add_change_listener(self._hooks.clear)

    @property
    def plugin_manager(self) -> PluginManager:
        return self._pm

    def close(self) -> None:
        """Stop following the plugin manager's changes (the dispatcher is unusable afterwards)."""
        self._detach()
        self._hooks.clear()
        self._guard.close()

    # -- timeouts ----------------------------------------------------------------------------

    @property
    def hook_timeout(self) -> float | None:
        """Seconds one implementation of a bounded hook may take; ``None`` for no limit."""
        return self._guard.timeout

    def set_hook_timeout(self, seconds: float | None) -> None:
        """Change the limit (settings are read after the dispatcher exists)."""
        self._guard.timeout = seconds

    def waiting_for_user(self) -> AbstractContextManager[None]:
        """``with dispatcher.waiting_for_user():`` while a hook waits for the user (a dialog):
        that time does not count towards the hook timeout."""
        return self._guard.waiting_for_user()

    def abort_hooks(self) -> int:
        """End every hook implementation awaiting now, as the user's abort does (RPC ``abort``,
        Escape): each is reported as aborted, naming its plugin and hook.

        :returns: how many were running.
        """
        return self._guard.abort()

    # -- errors ------------------------------------------------------------------------------

    def add_argument_listener(self, listener: Callable[[str, Mapping[str, Any]], None]) -> Callable[[], None]:
        """Call ``listener(hook, arguments)`` whenever a pipeline hands the next implementation
        new arguments (the prompt as transformed so far, the chained system prompt …), so the
        host can keep what ``ctx`` reports in step with the chain.

        :returns: a function that removes the listener.
        """
        self._argument_listeners.append(listener)
        return lambda: self._argument_listeners.remove(listener)

    def add_error_listener(self, listener: ErrorListener) -> Callable[[], None]:
        """Call ``listener(error)`` (sync or async) for every failed implementation.

        Each failure is also logged once on the ``pi_host.plugin`` logger.

        :returns: a function that removes the listener.
        """
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    async def _report(self, error: ExtensionError) -> None:
        logger.warning('plugin "%s" failed in %s: %s', error.plugin, error.hook, error.message)
        if error.traceback:
            logger.debug("%s", error.traceback)
        for listener in list(self._listeners):
            try:
                outcome = listener(error)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:
                logger.exception("error listener %r failed", listener)

    # -- introspection -----------------------------------------------------------------------

    def implementations(self, hook: str) -> list[str]:
        """The plugins implementing ``hook``, in call order."""
        return [impl.plugin for impl in self._get(hook).impls]

    def has_implementations(self, hook: str) -> bool:
        """Whether any plugin implements ``hook`` (skip building costly arguments when not)."""
        return bool(self._get(hook).impls)

    def _get(self, name: str) -> Hook:
        hook = self._hooks.get(name)
        return hook if hook is not None else self._prepare(name)

    def _prepare(self, name: str) -> Hook:
        hook = prepare(self._pm, name)
        if hook.sync:
            how = "call_first()" if hook.strategy is Strategy.SYNC_FIRST else "call_setup()"
            raise HookError(f"{name} is a synchronous hook; call it with PluginManager.{how}", hook=name)
        self._hooks[name] = hook
        return hook

    # -- dispatch ----------------------------------------------------------------------------

    async def call(self, hook: str, /, **kwargs: Any) -> Any:
        """Dispatch ``hook`` with keyword arguments and return the combined result.

        The typed methods (``tool_call``, ``context`` …) do the same with checked argument
        names and result types; this entry point serves hooks added by plugins.

        :raises HookError: for an unknown or synchronous hook, or a missing argument.
        """
        prepared = self._get(hook)
        missing = prepared.argnames - kwargs.keys()
        if missing:
            raise HookError(f"{hook} must be called with {', '.join(sorted(missing))}", hook=hook)
        if not prepared.impls:
            if prepared.strategy is Strategy.NOTIFY:
                return None
            reducer = prepared.reducer
            assert reducer is not None  # only setup hooks go without one (prepare())
            return reducer.finish(reducer.start(kwargs))
        return await self._run(prepared, kwargs)

    async def _run(self, hook: Hook, kwargs: Mapping[str, Any]) -> Any:
        # Callers pass every argument: call() checks, the typed methods take them all.
        # The async driver of the one loop (._loop): calling, containment and folding are
        # the loop's own steps; awaiting under the guard is what only this driver does.
        reducer = hook.reducer
        assert reducer is not None  # only setup hooks go without one (prepare())
        state = reducer.start(kwargs)
        args = kwargs
        traces: list[ImplTrace] | None = None if self._tracer is None else []
        started = time.perf_counter() if traces is not None else 0.0
        impl_started = 0.0
        reached = 0
        guard = self._guard
        for impl in hook.impls:
            reached += 1
            entry = None
            if traces is not None:
                impl_started = time.perf_counter()
            try:
                if impl.is_async or guard.timeout is None or not hook.bounded:
                    # call_blocking's own fast path, inlined: this runs per streamed delta.
                    result = impl.function(*[args[name] for name in impl.argnames])
                else:
                    result = call_blocking(guard, hook, impl, args)
                if impl.is_async or (result is not None and inspect.isawaitable(result)):
                    if hook.bounded:
                        # Noted for the watchdog (the timeout) and for the user's abort;
                        # inline, as this runs for every awaited implementation.
                        if guard.async_ok and guard.watching:
                            guard.calls = serial = guard.calls + 1
                            entry = (impl.label, _current_task(), serial)
                            guard.inflight.add(entry)
                        else:
                            entry = guard.enter(impl.label)
                        try:
                            result = await result
                        finally:
                            if entry is not None:
                                guard.inflight.discard(entry)
                        if guard.claims and entry in guard.claims:
                            guard.release(entry)
                    else:
                        result = await result
            except BaseException as caught:
                exc = contain(caught, guard, entry)
                message = describe(exc)
                await self._report(
                    ExtensionError(impl.plugin, hook.name, message, "".join(traceback.format_exception(exc)))
                )
                settled = fail(reducer, state, impl.plugin, message)
                state = settled.state
                if traces is not None:
                    traces.append(_trace(impl, "error", message, impl_started, settled.stop))
                if settled.stop:
                    break
                continue
            if result is None:
                if traces is not None:
                    traces.append(_trace(impl, "none", "", impl_started, False))
                continue
            settled = settle(reducer, state, impl.plugin, result)
            state = settled.state
            if settled.rejected is not None:
                await self._report(ExtensionError(impl.plugin, hook.name, settled.rejected))
                if traces is not None:
                    traces.append(_trace(impl, "rejected", settled.rejected, impl_started, settled.stop))
                if settled.stop:
                    break
                continue
            if traces is not None:
                traces.append(_trace(impl, "result", result, impl_started, settled.stop))
            if settled.stop:
                break
            if reducer.threads:
                args = reducer.arguments(state, kwargs)
                for argument_listener in self._argument_listeners:
                    argument_listener(hook.name, args)
        outcome = reducer.finish(state)
        if traces is not None and self._tracer is not None:
            from ._trace import DispatchTrace, ImplTrace

            for impl in hook.impls[reached:]:
                traces.append(ImplTrace(impl.plugin, impl.is_async, "not reached"))
            self._tracer.write(
                DispatchTrace(
                    hook.name, hook.strategy.value, tuple(traces), outcome, time.perf_counter() - started
                )
            )
        return outcome

    # -- typed façade: resources -------------------------------------------------------------

    async def project_trust(self, *, cwd: str, ctx: PluginContext) -> ProjectTrustDecision | None:
        """``pi_project_trust``: the first trust decision, or ``None``."""
        return cast("ProjectTrustDecision | None", await self.call("pi_project_trust", cwd=cwd, ctx=ctx))

    async def resources_discover(
        self, *, cwd: str, reason: Literal["startup", "reload"], ctx: PluginContext
    ) -> DiscoveredResources:
        """``pi_resources_discover``: every plugin's resource paths, with their source."""
        return cast(
            "DiscoveredResources",
            await self.call("pi_resources_discover", cwd=cwd, reason=reason, ctx=ctx),
        )

    # -- typed façade: session ---------------------------------------------------------------

    async def session_start(
        self, *, reason: SessionStartReason, previous_session_file: str | None = None, ctx: PluginContext
    ) -> None:
        """``pi_session_start``."""
        await self.call(
            "pi_session_start", reason=reason, previous_session_file=previous_session_file, ctx=ctx
        )

    async def session_before_switch(
        self,
        *,
        reason: Literal["new", "resume"],
        target_session_file: str | None = None,
        ctx: PluginContext,
    ) -> Cancel | None:
        """``pi_session_before_switch``: :class:`Cancel` when a plugin cancels the switch."""
        return cast(
            "Cancel | None",
            await self.call(
                "pi_session_before_switch",
                reason=reason,
                target_session_file=target_session_file,
                ctx=ctx,
            ),
        )

    async def session_before_fork(
        self, *, entry_id: str, position: Literal["before", "at"], ctx: PluginContext
    ) -> Cancel | SessionBeforeForkResult | None:
        """``pi_session_before_fork``: the first plugin's decision, or ``None``."""
        return cast(
            "Cancel | SessionBeforeForkResult | None",
            await self.call("pi_session_before_fork", entry_id=entry_id, position=position, ctx=ctx),
        )

    async def session_before_compact(
        self,
        *,
        preparation: CompactionPreparation,
        branch_entries: Sequence[EntryView],
        custom_instructions: str | None = None,
        reason: CompactionReason,
        will_retry: bool = False,
        signal: AbortSignal,
        ctx: PluginContext,
    ) -> Cancel | CompactionResult | None:
        """``pi_session_before_compact``: a cancel, a plugin's compaction, or ``None``."""
        return cast(
            "Cancel | CompactionResult | None",
            await self.call(
                "pi_session_before_compact",
                preparation=preparation,
                branch_entries=branch_entries,
                custom_instructions=custom_instructions,
                reason=reason,
                will_retry=will_retry,
                signal=signal,
                ctx=ctx,
            ),
        )

    async def session_compact(
        self,
        *,
        compaction_entry: EntryView,
        from_extension: bool,
        reason: CompactionReason,
        will_retry: bool = False,
        ctx: PluginContext,
    ) -> None:
        """``pi_session_compact``."""
        await self.call(
            "pi_session_compact",
            compaction_entry=compaction_entry,
            from_extension=from_extension,
            reason=reason,
            will_retry=will_retry,
            ctx=ctx,
        )

    async def session_before_tree(
        self, *, preparation: TreePreparation, signal: AbortSignal, ctx: PluginContext
    ) -> Cancel | TreeSummaryResult | None:
        """``pi_session_before_tree``: a cancel, the first plugin's adjustments, or ``None``."""
        return cast(
            "Cancel | TreeSummaryResult | None",
            await self.call("pi_session_before_tree", preparation=preparation, signal=signal, ctx=ctx),
        )

    async def summarize_branch(
        self,
        *,
        entries: Sequence[EntryView],
        custom_instructions: str | None = None,
        replace_instructions: bool = False,
        signal: AbortSignal,
        ctx: PluginContext,
    ) -> BranchSummary | None:
        """``pi_summarize_branch``: the first summary, or ``None``."""
        return cast(
            "BranchSummary | None",
            await self.call(
                "pi_summarize_branch",
                entries=entries,
                custom_instructions=custom_instructions,
                replace_instructions=replace_instructions,
                signal=signal,
                ctx=ctx,
            ),
        )

    async def session_tree(
        self,
        *,
        new_leaf_id: str | None,
        old_leaf_id: str | None,
        summary_entry: EntryView | None = None,
        from_extension: bool = False,
        ctx: PluginContext,
    ) -> None:
        """``pi_session_tree``."""
        await self.call(
            "pi_session_tree",
            new_leaf_id=new_leaf_id,
            old_leaf_id=old_leaf_id,
            summary_entry=summary_entry,
            from_extension=from_extension,
            ctx=ctx,
        )

    async def session_shutdown(
        self,
        *,
        reason: SessionShutdownReason,
        target_session_file: str | None = None,
        ctx: PluginContext,
    ) -> None:
        """``pi_session_shutdown``."""
        await self.call(
            "pi_session_shutdown", reason=reason, target_session_file=target_session_file, ctx=ctx
        )

    # -- typed façade: input -----------------------------------------------------------------

    async def input(
        self,
        *,
        text: str,
        images: Sequence[ImageContent] = (),
        source: InputSource = "interactive",
        streaming_behavior: StreamingBehavior | None = None,
        ctx: PluginContext,
    ) -> InputTransform | InputHandled | None:
        """``pi_input``: :class:`InputHandled`, the final :class:`InputTransform`, or ``None`` (unchanged)."""
        return cast(
            "InputTransform | InputHandled | None",
            await self.call(
                "pi_input",
                text=text,
                images=images,
                source=source,
                streaming_behavior=streaming_behavior,
                ctx=ctx,
            ),
        )

    async def before_prompt(
        self, *, message: AssistantMessage | None, ctx: PluginContext
    ) -> ContinueRun | None:
        """``pi_before_prompt``: :class:`ContinueRun` when the runtime must continue first."""
        return cast("ContinueRun | None", await self.call("pi_before_prompt", message=message, ctx=ctx))

    async def before_agent_start(
        self,
        *,
        prompt: str,
        images: Sequence[ImageContent] = (),
        system_prompt: str,
        system_prompt_options: Any = None,
        ctx: PluginContext,
    ) -> BeforeAgentStartOutcome:
        """``pi_before_agent_start``: the injected messages and the chained system prompt."""
        return cast(
            "BeforeAgentStartOutcome",
            await self.call(
                "pi_before_agent_start",
                prompt=prompt,
                images=images,
                system_prompt=system_prompt,
                system_prompt_options=system_prompt_options,
                ctx=ctx,
            ),
        )

    async def user_bash(
        self,
        *,
        command: str,
        exclude_from_context: bool = False,
        cwd: str,
        signal: AbortSignal,
        on_output: Callable[[str], None] | None = None,
        ctx: PluginContext,
    ) -> UserBashResult | None:
        """``pi_user_bash``: the first plugin's result, or ``None`` when no plugin ran the command."""
        return cast(
            "UserBashResult | None",
            await self.call(
                "pi_user_bash",
                command=command,
                exclude_from_context=exclude_from_context,
                cwd=cwd,
                signal=signal,
                on_output=on_output,
                ctx=ctx,
            ),
        )

    # -- typed façade: agent -----------------------------------------------------------------

    async def prepare_next_turn(
        self,
        *,
        message: AssistantMessage,
        tool_results: Sequence[ToolResultMessage],
        messages: Sequence[AgentMessage],
        ctx: PluginContext,
    ) -> NextTurnUpdate | None:
        """``pi_prepare_next_turn``: the merged update, or ``None``."""
        return cast(
            "NextTurnUpdate | None",
            await self.call(
                "pi_prepare_next_turn",
                message=message,
                tool_results=tool_results,
                messages=messages,
                ctx=ctx,
            ),
        )

    async def will_continue_run(self, *, message: AssistantMessage, ctx: PluginContext) -> bool:
        """``pi_will_continue_run``: whether a plugin will continue the run (no answer is ``False``)."""
        return bool(await self.call("pi_will_continue_run", message=message, ctx=ctx))

    async def after_agent_run(self, *, message: AssistantMessage, ctx: PluginContext) -> ContinueRun | None:
        """``pi_after_agent_run``: :class:`ContinueRun` when the session must continue the run."""
        return cast("ContinueRun | None", await self.call("pi_after_agent_run", message=message, ctx=ctx))

    # -- typed façade: provider --------------------------------------------------------------

    async def context(self, *, messages: Sequence[AgentMessage], ctx: PluginContext) -> list[AgentMessage]:
        """``pi_context``: the messages to send (a new list; ``messages`` is never modified)."""
        hook = self._hooks.get("pi_context") or self._prepare("pi_context")
        if not hook.impls:
            return list(messages)
        # Read-only, so no implementation changes what the next one (or the session) sees.
        frozen = FrozenList(messages)
        return cast("list[AgentMessage]", await self._run(hook, {"messages": frozen, "ctx": ctx}))

    async def before_provider_request(self, *, payload: Any, model: Model, ctx: PluginContext) -> Any:
        """``pi_before_provider_request``: the payload to send (``payload`` itself when no plugin
        implements the hook, else a copy, possibly replaced)."""
        hook = self._hooks.get("pi_before_provider_request") or self._prepare("pi_before_provider_request")
        if not hook.impls:
            return payload
        # Plugins get a copy, and the copy is what is sent: a provider may reuse parts of a body
        # in its next request (the Anthropic one keeps each message's wire form), and an
        # implementation that edits the body in place, against the contract, must change only
        # this request.
        import copy

        return await self._run(hook, {"payload": copy.deepcopy(payload), "model": model, "ctx": ctx})

    async def after_provider_response(
        self, *, status: int, headers: Mapping[str, str], ctx: PluginContext
    ) -> None:
        """``pi_after_provider_response``."""
        hook = self._hooks.get("pi_after_provider_response") or self._prepare("pi_after_provider_response")
        if hook.impls:
            await self._run(hook, {"status": status, "headers": headers, "ctx": ctx})

    # -- typed façade: tools -----------------------------------------------------------------

    async def tool_call(
        self, *, tool_call_id: str, tool_name: str, input: Mapping[str, Any], ctx: PluginContext
    ) -> ToolCallBlock | ToolCallRewrite | None:
        """``pi_tool_call``: a block (also when a plugin failed), the final rewrite, or ``None``."""
        return cast(
            "ToolCallBlock | ToolCallRewrite | None",
            await self.call(
                "pi_tool_call", tool_call_id=tool_call_id, tool_name=tool_name, input=input, ctx=ctx
            ),
        )

    async def tool_result(
        self,
        *,
        tool_call_id: str,
        tool_name: str,
        input: Mapping[str, Any],
        content: Sequence[TextContent | ImageContent],
        details: Any,
        is_error: bool,
        ctx: PluginContext,
    ) -> ToolResultPatch | None:
        """``pi_tool_result``: the patched content, details and error flag, or ``None`` if unpatched."""
        return cast(
            "ToolResultPatch | None",
            await self.call(
                "pi_tool_result",
                tool_call_id=tool_call_id,
                tool_name=tool_name,
                input=input,
                content=content,
                details=details,
                is_error=is_error,
                ctx=ctx,
            ),
        )

    # -- typed façade: model -----------------------------------------------------------------

    async def thinking_level_select(
        self, *, level: ThinkingLevel, previous_level: ThinkingLevel, ctx: PluginContext
    ) -> None:
        """``pi_thinking_level_select``."""
        await self.call("pi_thinking_level_select", level=level, previous_level=previous_level, ctx=ctx)

    async def model_select(
        self, *, model: Model, previous_model: Model | None, source: ModelSelectSource, ctx: PluginContext
    ) -> None:
        """``pi_model_select``."""
        await self.call("pi_model_select", model=model, previous_model=previous_model, source=source, ctx=ctx)


#: ``_trace.TRACE_ENV``, repeated here so that an untraced run never imports the tracer's
#: module (tests/test_dispatch.py checks the two agree).
_TRACE_ENV = "PI_HOST_TRACE_HOOKS"


def _tracer_from_environ() -> Tracer | None:
    """``Tracer.from_environ()``, importing the tracer only when the variable is set at all."""
    if not os.environ.get(_TRACE_ENV):
        return None
    from ._trace import Tracer

    return Tracer.from_environ()


def _trace(impl: Impl, outcome: str, detail: object, started: float, stopped: bool) -> ImplTrace:
    """One implementation's trace; *detail* is a message, or the result (summarised here)."""
    from ._trace import ImplTrace, summarize

    text = summarize(detail) if outcome == "result" else str(detail)
    return ImplTrace(impl.plugin, impl.is_async, outcome, text, time.perf_counter() - started, stopped)
