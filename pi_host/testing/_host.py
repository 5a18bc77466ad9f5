"""An isolated host for one test: chosen plugins, a scripted model, a recorder, temp directories."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from pi_host.errors import PluginLoadError
from pi_host.hookspecs import ToolCallBlock, ToolCallRewrite
from pi_host.messages import (
    AgentMessage,
    AssistantMessage,
    ImageContent,
    TextContent,
    ToolCall,
    ToolResultMessage,
)
from pi_host.modes._distribution import Distribution
from pi_host.plugin import PluginControls, PluginManager, installed_plugins, load_plugins
from pi_host.runtime import (
    ESSENTIALS,
    AgentSession,
    ExtensionErrorEvent,
    Host,
    SessionOptions,
    create_session,
)

from ._recorder import HookCall, HookRecorder, RecordingDispatcher
from ._script import Responder, ScriptedProvider, Step
from ._ui import RecordingUI

__all__ = ["Block", "HostSetupError", "IsolatedHost", "PluginError", "RunOutcome", "build_host"]


class HostSetupError(AssertionError):
    """The host under test could not be built as asked: a plugin failed to load, misspelt a
    hook, or is not installed. An ``AssertionError``, so the test fails rather than errors."""


@dataclass(frozen=True)
class Block:
    """A tool call that ``pi_tool_call`` blocked.

    :ivar plugin: the plugin that blocked it (or failed, which blocks too), if known.
    """

    tool_call_id: str
    tool_name: str
    input: Mapping[str, Any]
    reason: str
    plugin: str | None


@dataclass(frozen=True)
class PluginError:
    """A plugin failure reported during a run (pi's ``extension_error`` event).

    :ivar plugin: the plugin (``command:<name>`` for a failed slash command).
    :ivar hook: the hook, or ``command``.
    :ivar message: ``"ValueError: boom"``, or what was wrong with a returned value.
    """

    plugin: str
    hook: str
    message: str


@dataclass
class RunOutcome:
    """What one :meth:`IsolatedHost.run` did.

    :ivar prompt: the prompt as given.
    :ivar messages: the messages the run added to the session (user, assistant, tool results …).
    :ivar events: every session event, in order.
    :ivar hooks: the hook dispatches during the run.
    :ivar requests: how many provider calls the run made.
    """

    prompt: str
    messages: list[AgentMessage]
    events: list[Any]
    hooks: list[HookCall]
    requests: int = 0

    # -- views ---------------------------------------------------------------------------------

    @property
    def event_types(self) -> list[str]:
        return [str(getattr(event, "type", type(event).__name__)) for event in self.events]

    @property
    def assistant_messages(self) -> list[AssistantMessage]:
        return [message for message in self.messages if isinstance(message, AssistantMessage)]

    @property
    def last_assistant(self) -> AssistantMessage | None:
        replies = self.assistant_messages
        return replies[-1] if replies else None

    @property
    def text(self) -> str:
        """The text of the last assistant reply (``""`` when the agent did not reply)."""
        last = self.last_assistant
        if last is None:
            return ""
        return "".join(block.text for block in last.content if isinstance(block, TextContent))

    @property
    def stop_reason(self) -> str | None:
        last = self.last_assistant
        return None if last is None else last.stop_reason

    @property
    def error_message(self) -> str | None:
        """The provider error that ended the run, if it ended in one."""
        last = self.last_assistant
        return None if last is None else last.error_message

    @property
    def tool_calls(self) -> list[ToolCall]:
        """Every tool call the model made, in order."""
        return [
            block
            for message in self.assistant_messages
            for block in message.content
            if isinstance(block, ToolCall)
        ]

    @property
    def tool_results(self) -> list[ToolResultMessage]:
        return [message for message in self.messages if isinstance(message, ToolResultMessage)]

    @property
    def blocks(self) -> list[Block]:
        """The tool calls ``pi_tool_call`` blocked."""
        blocks = []
        for call in self.hooks:
            if call.hook != "pi_tool_call" or not isinstance(call.result, ToolCallBlock):
                continue
            # The implementation that blocked, raised, or (failing closed) returned a value the
            # hook does not accept: the last one reached that did not allow or rewrite.
            culprit = next(
                (
                    impl.plugin
                    for impl in reversed(call.impls)
                    if impl.error is not None
                    or (impl.result is not None and not isinstance(impl.result, ToolCallRewrite))
                ),
                None,
            )
            blocks.append(Block(call.tool_call_id, call.tool_name, call.input, call.result.reason, culprit))
        return blocks

    @property
    def errors(self) -> list[PluginError]:
        """Plugin failures reported during the run."""
        return [
            PluginError(event.extension_path, event.event, event.error)
            for event in self.events
            if isinstance(event, ExtensionErrorEvent)
        ]

    def result_text(self, tool_call_id: str | None = None) -> str:
        """The text of a tool result (the last one by default)."""
        results = self.tool_results
        if tool_call_id is not None:
            results = [result for result in results if result.tool_call_id == tool_call_id]
        assert results, f"no tool result{'' if tool_call_id is None else f' for {tool_call_id}'} in this run"
        return "".join(block.text for block in results[-1].content if isinstance(block, TextContent))

    # -- assertions ----------------------------------------------------------------------------

    def assert_ok(self) -> RunOutcome:
        """Assert the run ended normally and no plugin failed."""
        self.assert_no_errors()
        assert self.stop_reason not in ("error", "aborted"), (
            f"the run ended with stop reason {self.stop_reason!r}: {self.error_message}"
        )
        return self

    def assert_text(self, expected: str) -> RunOutcome:
        """Assert the last reply's text is exactly ``expected``."""
        assert self.text == expected, f"reply text {self.text!r} != {expected!r}"
        return self

    def assert_text_contains(self, fragment: str) -> RunOutcome:
        assert fragment in self.text, f"{fragment!r} not in reply text {self.text!r}"
        return self

    def assert_tool_called(
        self, name: str, /, *, times: int | None = None, **arguments: Any
    ) -> list[ToolCall]:
        """Assert the model called ``name`` (with these arguments, when given); return the calls.

        ``assert_tool_called("greet", name="Ada")`` checks the ``name`` argument of the call.
        """
        calls = [call for call in self.tool_calls if call.name == name]
        if arguments:
            calls = [call for call in calls if all(call.arguments.get(k) == v for k, v in arguments.items())]
        made = ", ".join(f"{call.name}({call.arguments})" for call in self.tool_calls) or "none"
        if times is None:
            assert calls, f"no call of {name} with {arguments or 'any arguments'}; calls made: {made}"
        else:
            assert len(calls) == times, f"{name} called {len(calls)} time(s), expected {times}; calls: {made}"
        return calls

    def assert_blocked(
        self, tool_name: str, *, reason: str | None = None, plugin: str | None = None
    ) -> Block:
        """Assert a call of ``tool_name`` was blocked (``reason``: a substring of the reason)."""
        for block in self.blocks:
            if block.tool_name != tool_name:
                continue
            if reason is not None and reason not in block.reason:
                continue
            if plugin is not None and block.plugin != plugin:
                continue
            return block
        raise AssertionError(
            f"no blocked call of {tool_name}"
            + (f" with reason containing {reason!r}" if reason else "")
            + (f" by {plugin}" if plugin else "")
            + f"; blocks: {[(b.tool_name, b.reason, b.plugin) for b in self.blocks] or 'none'}"
        )

    def assert_not_blocked(self) -> RunOutcome:
        assert not self.blocks, f"tool calls were blocked: {[(b.tool_name, b.reason) for b in self.blocks]}"
        return self

    def assert_no_errors(self) -> RunOutcome:
        errors = self.errors
        assert not errors, "plugin errors during the run:\n" + "\n".join(
            f"  {error.plugin} in {error.hook}: {error.message}" for error in errors
        )
        return self

    def assert_error(
        self, *, plugin: str | None = None, hook: str | None = None, message: str | None = None
    ) -> PluginError:
        """Assert a plugin failure was reported (``message``: a substring); return it."""
        for error in self.errors:
            if plugin is not None and error.plugin != plugin:
                continue
            if hook is not None and error.hook != hook:
                continue
            if message is not None and message not in error.message:
                continue
            return error
        raise AssertionError(
            f"no plugin error matching plugin={plugin!r} hook={hook!r} message={message!r}; "
            f"errors: {self.errors or 'none'}"
        )

    def assert_events(self, *types: str) -> RunOutcome:
        """Assert these event types occurred in this order (others may come in between)."""
        _assert_in_order("event", types, self.event_types)
        return self

    def assert_hooks(self, *hooks: str) -> RunOutcome:
        """Assert these hooks were dispatched in this order during the run."""
        _assert_in_order("hook", hooks, [call.hook for call in self.hooks])
        return self


def _assert_in_order(what: str, wanted: Sequence[str], seen: list[str]) -> None:
    """Assert *wanted* is a subsequence of *seen* (other items may come in between).

    :raises AssertionError: naming the first *what* (``"event"``, ``"hook"``) that is
        missing or out of order, and all of *seen*.
    """
    position = 0
    for name in wanted:
        try:
            position = seen.index(name, position) + 1
        except ValueError:
            raise AssertionError(f"{what} {name!r} missing or out of order in {seen}") from None


class IsolatedHost:
    """A host built for one test (see the ``make_host`` fixture).

    :ivar host: the loaded :class:`~pi_host.runtime.Host` (plugin manager, dispatcher, tools …).
    :ivar provider: the scripted model.
    :ivar recorder: every hook dispatch so far.
    :ivar cwd: the session's working directory (a fresh temporary directory).
    :ivar agent_dir: the agent directory (settings, sessions, models.json).
    :ivar ui: what plugins showed the user, and the answers their dialogs get.
    """

    def __init__(
        self,
        host: Host,
        provider: ScriptedProvider,
        recorder: HookRecorder,
        *,
        cwd: Path,
        agent_dir: Path,
        options: SessionOptions,
        ui: RecordingUI,
    ) -> None:
        self.host = host
        self.provider = provider
        self.recorder = recorder
        self.ui = ui
        self.cwd = cwd
        self.agent_dir = agent_dir
        self.options = options
        self._session: AgentSession | None = None
        self._events: list[Any] = []

    @property
    def plugin_manager(self) -> PluginManager:
        return self.host.plugin_manager

    @property
    def tools(self) -> dict[str, Any]:
        return self.host.tools

    @property
    def commands(self) -> dict[str, Any]:
        return self.host.commands

    @property
    def events(self) -> list[Any]:
        """Every session event since the session was created."""
        return self._events

    async def session(self) -> AgentSession:
        """The session (created, and ``pi_session_start`` fired, on first use)."""
        if self._session is None:
            session = await create_session(self.options, host=self.host)
            session.subscribe(self._events.append)
            self._session = session
            await self._settled(session, lambda: session.start("startup"))
        return self._session

    async def _settled(self, session: AgentSession, work: Callable[[], Awaitable[object]]) -> None:
        """Run ``work`` with a task group for what plugins start in the background
        (``ctx.send_message``, ``ctx.compact`` …), and wait for all of it to finish."""
        try:
            async with anyio.create_task_group() as tg:
                session.bind_task_group(tg)
                await work()
        finally:
            session.bind_task_group(None)
        await session.agent.wait_for_idle()

    async def run(
        self, prompt: str, *, images: Sequence[ImageContent] = (), replies: Iterable[Step] = ()
    ) -> RunOutcome:
        """Send ``prompt`` through the session's prompt pipeline and wait until the agent is done.

        Runs continue one conversation. Slash commands, ``pi_input`` and templates apply as in
        the terminal. Work plugins start in the background (a message sent with
        ``ctx.send_message(..., trigger_turn=True)``, ``ctx.compact()``) is finished and part of
        the outcome when this returns.

        :param replies: more scripted steps to queue first.
        :raises pi_host.SessionError: as :meth:`AgentSession.prompt` does (no model …).
        """
        session = await self.session()
        self.provider.add(*replies)
        before_messages = len(session.messages)
        before_events = len(self._events)
        before_hooks = len(self.recorder.calls)
        before_requests = len(self.provider.requests)
        await self._settled(session, lambda: session.prompt(prompt, images=images))
        return RunOutcome(
            prompt=prompt,
            messages=list(session.messages[before_messages:]),
            events=self._events[before_events:],
            hooks=self.recorder.calls[before_hooks:],
            requests=len(self.provider.requests) - before_requests,
        )

    async def close(self) -> None:
        """Fire ``pi_session_shutdown`` (when a session was started)."""
        session = self._session
        if session is not None:
            await self._settled(session, lambda: session.shutdown("quit"))
            self._session = None


def build_host(
    plugins: Sequence[object],
    *,
    cwd: Path,
    agent_dir: Path,
    load: Iterable[str] | None = None,
    replies: Iterable[Step] = (),
    respond: Responder | None = None,
    provider: ScriptedProvider | None = None,
    settings: Mapping[str, Any] | None = None,
    files: Mapping[str, str | bytes] | None = None,
    tools: Sequence[str] | None = None,
    system_prompt: str | None = None,
    session_options: Mapping[str, Any] | None = None,
    ui: RecordingUI | None = None,
    distribution: Distribution | None = None,
    strict: bool = True,
    trace: bool = False,
) -> IsolatedHost:
    """Build an :class:`IsolatedHost` (the ``make_host`` fixture calls this; see its docs)."""
    extra_options: dict[str, Any] = {}
    if distribution is not None:
        plugins = [*distribution.load_plugin_modules(), *plugins]
        if load is None:
            allowed = distribution.plugins
            if allowed is None:
                allowed = frozenset(plugin.name for plugin in installed_plugins())
            load = allowed - distribution.disabled_plugins
        tools = tools if tools is not None else distribution.tools
        system_prompt = system_prompt if system_prompt is not None else distribution.system_prompt
        if distribution.append_system_prompt:
            extra_options["append_system_prompt"] = list(distribution.append_system_prompt)
    cwd.mkdir(parents=True, exist_ok=True)
    agent_dir.mkdir(parents=True, exist_ok=True)
    if settings is not None:
        (agent_dir / "settings.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
    for relative, content in (files or {}).items():
        target = cwd / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")

    names = frozenset(load or ())
    if names:
        installed = {plugin.name for plugin in installed_plugins()}
        missing = sorted(names - installed)
        if missing:
            raise HostSetupError(
                f"plugin(s) {', '.join(missing)} not installed in this environment "
                f"(installed: {', '.join(sorted(installed)) or 'none'}); pip-install the distribution first"
            )
    scripted = provider if provider is not None else ScriptedProvider(replies, respond=respond)
    if provider is not None:
        scripted.add(*replies)
        if respond is not None:
            scripted.respond = respond

    def assemble(recorder: HookRecorder) -> tuple[Host, list[PluginLoadError]]:
        pm = PluginManager()
        errors: list[PluginLoadError] = load_plugins(
            pm, controls=PluginControls(allow=names), essentials=ESSENTIALS
        )
        for plugin in plugins:
            pm.register(plugin, name=_plugin_name(pm, plugin))
        pm.register(scripted.plugin(), name="pi-host-testing-provider")
        errors.extend(pm.check_pending_plugins())
        host = Host(pm, RecordingDispatcher(pm, recorder, trace=trace), errors)
        # The scripted model replaces the essential faux provider by design, not by accident.
        host.preference_defaults = {"providers": {scripted.name: "pi-host-testing-provider"}}
        # A child session (ctx.create_child_session) gets the same plugins and the same scripted
        # model, so one script (or responder) answers the parent and its children.
        host.respawn = respawn
        return host, errors

    def respawn() -> Host:
        child = assemble(HookRecorder())[0]
        child.collect_registrations()
        return child

    recorder = HookRecorder()
    host, errors = assemble(recorder)
    if strict and errors:
        raise HostSetupError(
            "the host under test did not load cleanly:\n" + "\n".join(f"  {e}" for e in errors)
        )
    registration_errors = host.collect_registrations()
    if strict and registration_errors:
        raise HostSetupError(
            "the host under test did not load cleanly:\n" + "\n".join(f"  {e}" for e in registration_errors)
        )
    recording_ui = ui if ui is not None else RecordingUI()
    values: dict[str, Any] = {
        "cwd": str(cwd),
        "agent_dir": str(agent_dir),
        "provider": scripted.name,
        "model": scripted.model.id,
        # Every registered tool is active unless the test says otherwise: a test loads a
        # plugin to use its tools, unlike pi's default set (read, bash, edit, write).
        "tools": list(host.tools) if tools is None else list(tools),
        "system_prompt": system_prompt,
        "ui": recording_ui,
        **extra_options,
        **dict(session_options or {}),
    }
    options = SessionOptions(**values)
    return IsolatedHost(
        host, scripted, recorder, cwd=cwd, agent_dir=agent_dir, options=options, ui=recording_ui
    )


def _plugin_name(pm: PluginManager, plugin: object) -> str:
    """A readable name: a module's name, a class's name, or an instance's class name."""
    base = getattr(plugin, "__name__", None)
    if not isinstance(base, str):
        base = type(plugin).__name__
    name, n = base, 1
    while pm.has_plugin(name) or pm.is_blocked(name):
        n += 1
        name = f"{base}-{n}"
    return name
