"""The plugin context (``ctx``) a session hands to every hook: a thin view over the session."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
from pydantic import BaseModel

from pi_host.hookspecs import (
    Command,
    CompactionResult,
    ContextUsage,
    DeliverAs,
    ExecResult,
    Flag,
    HookImplementation,
    Mode,
    NotifyLevel,
    Stash,
)
from pi_host.messages import CustomMessage, ImageContent, TextContent
from pi_host.providers import AbortSignal, Model, ThinkingLevel

if TYPE_CHECKING:
    from pi_host.agent import Tool
    from pi_host.hookspecs import EntryView
    from pi_host.plugin import ExtensionError
    from pi_host.resources import Settings

    from ._factory import SessionOptions
    from ._session import AgentSession

__all__ = ["NullUI", "SessionPluginContext"]

_M = TypeVar("_M", bound=BaseModel)


class _UserWaits:
    """The mode's UI, its dialogs marked as waiting for the user: a hook that asks (a policy,
    a plugin offering to restore files) is not stopped by the hook timeout while the user
    reads; everything else passes through."""

    def __init__(self, inner: Any, dispatcher: Any) -> None:
        self.inner = inner
        self._dispatcher = dispatcher

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def select(self, title: str, options: Sequence[str], **kwargs: Any) -> Any:
        with self._dispatcher.waiting_for_user():
            return await self.inner.select(title, options, **kwargs)

    async def confirm(self, title: str, message: str, **kwargs: Any) -> Any:
        with self._dispatcher.waiting_for_user():
            return await self.inner.confirm(title, message, **kwargs)

    async def input(self, title: str, *args: Any, **kwargs: Any) -> Any:
        with self._dispatcher.waiting_for_user():
            return await self.inner.input(title, *args, **kwargs)

    async def editor(self, title: str, *args: Any, **kwargs: Any) -> Any:
        with self._dispatcher.waiting_for_user():
            return await self.inner.editor(title, *args, **kwargs)


class NullUI:
    """The UI of modes without a user to ask (print, JSON): dialogs return their defaults."""

    async def select(self, title: str, options: Sequence[str], *, timeout: float | None = None) -> str | None:
        return None

    async def confirm(self, title: str, message: str, *, timeout: float | None = None) -> bool:
        return False

    async def input(
        self, title: str, placeholder: str | None = None, *, timeout: float | None = None
    ) -> str | None:
        return None

    async def editor(self, title: str, prefill: str | None = None) -> str | None:
        return None

    def notify(self, message: str, level: NotifyLevel = "info") -> None:
        pass

    def set_status(self, key: str, text: str | None) -> None:
        pass

    def set_widget(self, key: str, lines: Sequence[str] | None, *, placement: str = "aboveEditor") -> None:
        pass

    def set_working_message(self, message: str | None = None) -> None:
        pass

    def set_title(self, title: str) -> None:
        pass

    def set_editor_text(self, text: str) -> None:
        pass

    def get_editor_text(self) -> str:
        return ""


class SessionPluginContext:
    """Implements :class:`pi_host.hookspecs.CommandContext` over an :class:`AgentSession`.

    Actions that start work (``send_user_message``, ``compact``) are scheduled on the
    session's task group and return at once, so a hook never waits on its own effects.
    """

    def __init__(self, session: AgentSession) -> None:
        self._session = session
        self._ui: _UserWaits | None = None

    # -- where and how pi-host runs ---------------------------------------------------------

    @property
    def cwd(self) -> str:
        return self._session.cwd

    @property
    def mode(self) -> Mode:
        return self._session.mode

    @property
    def has_ui(self) -> bool:
        return self._session.mode in ("tui", "rpc")

    @property
    def ui(self) -> Any:
        ui = self._session.ui
        if self._ui is None or self._ui.inner is not ui:
            self._ui = _UserWaits(ui, self._session.host.dispatcher)
        return self._ui

    @property
    def stash(self) -> Stash:
        return self._session.stash

    @property
    def parent_stash(self) -> Stash | None:
        return self._session.parent_stash

    @property
    def session_manager(self) -> Any:
        return self._session.session_manager

    def is_project_trusted(self) -> bool:
        return self._session.project_trusted

    def hook_implementations(self, hook: str) -> list[HookImplementation]:
        from pi_host.errors import HookError

        pm = self._session.host.plugin_manager
        caller = getattr(pm.hook, hook, None)
        if caller is None or caller.spec is None:
            raise HookError(f"unknown hook {hook!r}: no hookspec declares it", hook=hook)
        # The dispatcher's own order (call_order), so what a plugin reads is what will run.
        return [
            HookImplementation(
                plugin=impl.plugin_name,
                function=f"{impl.function.__module__}.{impl.function.__qualname__}",
                tryfirst=impl.tryfirst,
                trylast=impl.trylast,
            )
            for impl in pm.call_order(caller)
        ]

    # -- the agent's state ------------------------------------------------------------------

    @property
    def model(self) -> Model | None:
        return self._session.model

    @property
    def thinking_level(self) -> ThinkingLevel:
        return self._session.thinking_level

    @property
    def system_prompt(self) -> str:
        return self._session.system_prompt

    @property
    def signal(self) -> AbortSignal | None:
        return self._session.agent.signal

    @property
    def messages(self) -> list[Any]:
        """The agent's transcript as the next request will see it (read-only use)."""
        return list(self._session.agent.state.messages)

    @property
    def settings(self) -> Settings:
        """The merged settings, typed and read-only (defaults for a session built without files)."""
        settings = self._session.settings
        if settings is None:
            from pi_host.resources import Settings

            return Settings.model_construct()
        return settings

    def is_idle(self) -> bool:
        return not self._session.is_streaming

    def has_pending_messages(self) -> bool:
        return self._session.agent.has_queued_messages()

    def context_usage(self) -> ContextUsage | None:
        return self._session.context_usage()

    # -- controlling the agent --------------------------------------------------------------

    def abort(self) -> None:
        self._session.agent.abort()

    def compact(
        self,
        custom_instructions: str | None = None,
        *,
        on_complete: Callable[[CompactionResult], None] | None = None,
        on_error: Callable[[BaseException], None] | None = None,
    ) -> None:
        async def run() -> None:
            try:
                result = await self._session.compact(custom_instructions)
            except Exception as exc:
                if on_error is not None:
                    on_error(exc)
                return
            if result is not None and on_complete is not None:
                on_complete(result)

        self._session.spawn(run)

    async def call_hook(self, hook: str, /, **kwargs: Any) -> Any:
        return await self._session.host.dispatcher.call(hook, **kwargs)

    @contextmanager
    def collect_hook_errors(self, hook: str) -> Iterator[list[ExtensionError]]:
        errors: list[ExtensionError] = []

        def collect(error: ExtensionError) -> None:
            if error.hook == hook:
                errors.append(error)

        stop = self._session.host.dispatcher.add_error_listener(collect)
        try:
            yield errors
        finally:
            stop()

    def hold_prompts(self) -> AbstractContextManager[None]:
        return self._session.prompt_gate.hold()

    def append_compaction_entry(self, result: CompactionResult) -> EntryView:
        return self._session.append_compaction_entry(result)

    def abort_scope(self, name: str, *, fresh: bool = False) -> AbstractContextManager[AbortSignal]:
        """``with ctx.abort_scope(name) as signal:`` — see :class:`~pi_host.hookspecs.PluginContext`."""
        return self._session.abort_scopes.open(name, fresh=fresh)

    def abort_named(self, name: str) -> bool:
        return self._session.abort_scope(name)

    def plugin_settings(self, model: type[_M]) -> _M:
        return self._session.plugin_settings(model)

    async def complete(
        self,
        system_prompt: str,
        messages: Sequence[Any],
        *,
        max_tokens: int | None = None,
        model: Model | None = None,
        reasoning: ThinkingLevel | None = None,
        signal: AbortSignal | None = None,
    ) -> Any:
        """One model request outside the conversation, on the session's model and credentials;
        returns the final :class:`~pi_host.messages.AssistantMessage` (never raises for provider
        failures)."""
        return await self._session.complete(
            system_prompt, messages, max_tokens=max_tokens, model=model, reasoning=reasoning, signal=signal
        )

    def emit(self, event: BaseModel) -> None:
        """Send a plugin's event to subscribers as pi's event line (see :func:`wire_event`)."""
        from ._events import ExtensionErrorEvent
        from ._plugin_events import wire_event

        line = wire_event(event)
        if isinstance(line, str):
            self._session.emit_plugin_event(
                ExtensionErrorEvent(extension_path="<plugin>", event="ctx.emit", error=line)
            )
            return
        self._session.emit_plugin_event(line)

    async def create_child_session(self, options: SessionOptions) -> AgentSession:
        from ._children import create_child_session

        return await create_child_session(self._session, options)

    def shutdown(self) -> None:
        self._session.request_shutdown()

    async def set_model(self, model: Model) -> bool:
        return await self._session.set_model(model)

    def set_thinking_level(self, level: ThinkingLevel) -> None:
        self._session.set_thinking_level(level)

    def get_active_tools(self) -> list[str]:
        return self._session.active_tool_names

    def get_all_tools(self) -> list[Tool[Any]]:
        return list(self._session.host.tools.values())

    def set_active_tools(self, names: Sequence[str]) -> None:
        self._session.set_active_tools(names)

    # -- registering at runtime -------------------------------------------------------------

    def register_tool(self, tool: Tool[Any]) -> None:
        self._session.register_tool(tool)

    def unregister_tool(self, name: str, *, reason: str | None = None) -> bool:
        return self._session.unregister_tool(name, reason=reason)

    def register_command(self, command: Command) -> None:
        self._session.host.add_command(command)

    def register_flag(self, flag: Flag) -> None:
        self._session.host.add_flag(flag)

    def get_flag(self, name: str) -> bool | str | None:
        return self._session.get_flag(name)

    # -- messages and the session -----------------------------------------------------------

    def send_message(
        self, message: CustomMessage, *, trigger_turn: bool = False, deliver_as: DeliverAs | None = None
    ) -> None:
        if self._session.queue_plugin_message(message, deliver_as=deliver_as):
            return
        self._session.spawn(
            lambda: self._session.send_custom_message(
                message, trigger_turn=trigger_turn, deliver_as=deliver_as
            )
        )

    def send_user_message(
        self,
        content: str | Sequence[TextContent | ImageContent],
        *,
        deliver_as: Literal["steer", "followUp"] | None = None,
    ) -> None:
        if self._session.queue_plugin_message(content, deliver_as=deliver_as):
            return
        self._session.spawn(lambda: self._session.send_user_message(content, deliver_as=deliver_as))

    def append_entry(self, custom_type: str, data: Any = None) -> None:
        self._session.session_manager.append_custom_entry(custom_type, data)

    def set_session_name(self, name: str) -> None:
        self._session.set_session_name(name)

    def set_label(self, entry_id: str, label: str | None) -> None:
        self._session.session_manager.append_label_change(entry_id, label)

    async def exec(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        cwd: str | None = None,
        timeout: float | None = None,
        signal: AbortSignal | None = None,
    ) -> ExecResult:
        killed = False
        argv = [command, *args]
        process = await anyio.open_process(argv, cwd=cwd or self.cwd, env=dict(os.environ))
        stdout = bytearray()
        stderr = bytearray()

        async def drain(stream: Any, sink: bytearray) -> None:
            if stream is not None:
                async for chunk in stream:
                    sink.extend(chunk)

        try:
            with (
                anyio.fail_after(timeout) if timeout else anyio.CancelScope(),
                (signal or AbortSignal()).scope(),
            ):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(drain, process.stdout, stdout)
                    tg.start_soon(drain, process.stderr, stderr)
                await process.wait()
        except TimeoutError:
            killed = True
        finally:
            if process.returncode is None:
                killed = True
                process.kill()
                with anyio.CancelScope(shield=True):
                    await process.wait()
        return ExecResult(
            stdout=stdout.decode("utf-8", "replace"),
            stderr=stderr.decode("utf-8", "replace"),
            code=process.returncode if process.returncode is not None else -1,
            killed=killed,
        )

    # -- command context: session control ---------------------------------------------------

    async def wait_for_idle(self) -> None:
        await self._session.agent.wait_for_idle()

    async def new_session(self, *, parent_session: str | None = None) -> bool:
        return await self._session.new_session(parent_session=parent_session)

    async def fork(self, entry_id: str, *, position: Literal["before", "at"] = "before") -> bool:
        return await self._session.fork(entry_id, position=position)

    async def navigate_tree(
        self,
        target_id: str,
        *,
        summarize: bool = False,
        custom_instructions: str | None = None,
        replace_instructions: bool = False,
        label: str | None = None,
    ) -> bool:
        outcome = await self._session.navigate_tree(
            target_id,
            summarize=summarize,
            custom_instructions=custom_instructions,
            replace_instructions=replace_instructions,
            label=label,
        )
        return outcome.cancelled

    async def switch_session(self, path: str) -> bool:
        return await self._session.switch_session(path)

    async def reload(self) -> None:
        await self._session.reload()
