"""AgentSession: pi's coding-agent runtime over the Agent, with every lifecycle stage as a hook.

The session is the public façade; each job is a private part it is composed of, and the
parts never import this module (each states what it needs of the session as a protocol):

- ``_session_prompt``: the prompt pipeline, in pi's order (plugin command → ``pi_input`` →
  skill and template expansion → queueing while streaming → model and auth check →
  ``pi_before_prompt`` → ``pi_before_agent_start`` → run → ``pi_after_agent_run`` loop);
- ``_session_queues``: steering, follow-up and next-turn messages;
- ``_session_bash``: the user's ``!cmd``;
- ``_session_model``: model and thinking level;
- ``_session_agent_events``: agent events to plugins, then subscribers, then the session
  file (persistence at ``message_end``, after plugins, so a replaced message is stored);
- ``_session_agent_callbacks``: the agent's callbacks bridged to their hooks;
- ``_session_navigation`` and ``_session_tree``: start, shutdown, /new, /resume, /import,
  /fork, and /tree;
- ``_session_services``: compaction and one-off model requests for plugins.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from anyio.abc import TaskGroup

from pi_host.agent import Agent, Tool
from pi_host.hookspecs import CompactionResult, ContextUsage, EntryView, Mode, Stash
from pi_host.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    CustomMessage,
    ImageContent,
    MessageEndEvent,
    MessageStartEvent,
    TextContent,
    estimate_context_tokens,
    now_ms,
)
from pi_host.providers import AbortSignal, Model, ThinkingLevel

from ._abort_scopes import AbortScopes
from ._allowlist import tool_allowed
from ._context import NullUI, SessionPluginContext
from ._host import Host
from ._plugin_settings import PluginSettingsReader
from ._prompt_gate import PromptGate
from ._session_agent_callbacks import install_agent_callbacks
from ._session_agent_events import AgentEventRelay
from ._session_bash import UserBash
from ._session_model import ModelControl, clamp_thinking_level
from ._session_navigation import SessionNavigation
from ._session_prompt import PromptPipeline
from ._session_queues import MessageQueues, split_content
from ._session_types import (
    SessionError,
    SessionImport,
    SessionListener,
    StreamingBehavior,
    TreeNavigation,
)

if TYPE_CHECKING:
    from pydantic import BaseModel

    from pi_host.plugin import ExtensionError
    from pi_host.resources import PromptTemplate, Settings, SettingsManager, Skill
    from pi_host.session import SessionManager

    from ._factory import SessionOptions
    from ._project import ProjectResources

__all__ = [
    "AgentSession",
    "SessionError",
    "SessionImport",
    "SessionListener",
    "TreeNavigation",
    "clamp_thinking_level",
]

_M = TypeVar("_M", bound="BaseModel")

logger = logging.getLogger("pi_host.runtime")


class AgentSession:
    """One conversation: an Agent, its session file, its plugins, and pi's prompt pipeline.

    Provisional public API (the embedding SDK): it may change before pi-host 1.0.

    Build one with :func:`pi_host.runtime.create_session`; drive it with :meth:`prompt`,
    :meth:`steer`, :meth:`follow_up`, :meth:`abort`; watch it with :meth:`subscribe`.
    """

    def __init__(
        self,
        *,
        host: Host,
        agent: Agent,
        session_manager: SessionManager,
        cwd: str,
        mode: Mode = "print",
        ui: Any = None,
        settings: Settings | None = None,
        model_resolver: Any = None,
        system_prompt_builder: Callable[[Sequence[Tool[Any]]], str] | None = None,
        skills: Sequence[Skill] = (),
        prompt_templates: Sequence[PromptTemplate] = (),
        active_tools: Sequence[str] | None = None,
        flags: dict[str, bool | str] | None = None,
        project_trusted: bool = False,
        settings_manager: SettingsManager | None = None,
    ) -> None:
        self.host = host
        self.agent = agent
        self.session_manager = session_manager
        self.cwd = cwd
        self.mode: Mode = mode
        self.ui = ui if ui is not None else NullUI()
        self.settings = settings
        # The files ``settings`` came from, for changes the user makes during the session
        # (/settings); ``None`` for sessions built without files.
        self.settings_manager = settings_manager
        self.model_resolver = model_resolver
        self.skills = list(skills)
        self.prompt_templates = list(prompt_templates)
        self.project_trusted = project_trusted
        #: Builds what /trust changes (set by create_session; None for sessions built by hand).
        self.project_factory: Callable[[], ProjectResources] | None = None
        self._project: ProjectResources | None = None
        #: The agent directory and the options the session was built from (set by
        #: create_session; what a child session inherits).
        self.agent_dir: str | None = None
        self.options: SessionOptions | None = None
        self.stash = Stash()
        #: The stash of the session that created this one as its child (set by
        #: ``create_child_session``): ``PluginContext.parent_stash``.
        self.parent_stash: Stash | None = None
        self.ctx = SessionPluginContext(self)
        self._flags = dict(flags or {})
        self._system_prompt_builder = system_prompt_builder
        self._listeners: list[SessionListener] = []
        self._queues = MessageQueues(self)
        self._bash = UserBash(self)
        self._model_control = ModelControl(self)
        self._prompts = PromptPipeline(self, self._queues, self._bash, self._emit)
        self.prompt_gate = PromptGate()
        self._compacting = False
        self.abort_scopes = AbortScopes()
        self._plugin_settings = PluginSettingsReader(
            lambda: self.host.settings_sections, lambda: self.settings, lambda: self.settings_manager
        )
        self._task_group: TaskGroup | None = None
        self._shutdown_requested = False
        self._active_tool_names: list[str] = []
        #: Tools unregistered during the session -> why a later call of the name fails.
        self._removed_tools: dict[str, str] = {}
        self.base_system_prompt = ""
        host.dispatcher.add_error_listener(self._on_extension_error)
        host.dispatcher.add_argument_listener(self._prompts.on_hook_arguments)
        self._agent_events = AgentEventRelay(self, self._queues, self._emit)
        agent.subscribe(self._agent_events.on_agent_event)
        self._navigation = SessionNavigation(self, self._queues, self._agent_events, self._emit)
        install_agent_callbacks(self)
        self.set_active_tools(active_tools if active_tools is not None else list(host.tools))

    @property
    def project(self) -> ProjectResources | None:
        """The project's trust and the resources it allows (``None`` without a factory)."""
        if self._project is None and self.project_factory is not None:
            self._project = self.project_factory()
        return self._project

    async def set_project_trusted(self, trusted: bool) -> None:
        """Load (or drop) the project's settings, resources and plugins for ``trusted`` and
        rebind the plugins, as ``/reload`` does.

        :raises SessionError: this session was not built by ``create_session``.
        """
        project = self.project
        if project is None:
            raise SessionError("This session was built without project resources; trust cannot change")
        await project.apply(self, trusted)

    # -- subscriptions and events -------------------------------------------------------------

    def subscribe(self, listener: SessionListener) -> Callable[[], None]:
        """Call ``listener(event)`` for every agent and session event; returns an unsubscriber."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def emit_event(self, event: Any) -> None:
        """Deliver a session event to subscribers now (synchronous listeners) or soon (async ones)."""
        kind = getattr(event, "type", None)
        if kind in ("compaction_start", "compaction_end"):
            self._compacting = kind == "compaction_start"
        for listener in tuple(self._listeners):
            result = listener(event)
            if result is not None:
                self.spawn(_awaiting(result))

    async def _emit(self, event: Any) -> None:
        for listener in tuple(self._listeners):
            result = listener(event)
            if result is not None:
                await result

    async def _on_extension_error(self, error: ExtensionError) -> None:
        from ._events import ExtensionErrorEvent

        await self._emit(
            ExtensionErrorEvent(extension_path=error.plugin, event=error.hook, error=error.message)
        )

    def emit_plugin_event(self, event: Any) -> None:
        """Deliver an event a plugin emitted: at once, or after the agent event being dispatched
        (subscribers see the cause before the reaction, as with pi's own ``auto_retry_end``)."""
        self._agent_events.emit_plugin_event(event)

    # -- state --------------------------------------------------------------------------------

    @property
    def model(self) -> Model | None:
        return self._model_control.model

    @property
    def thinking_level(self) -> ThinkingLevel:
        return self.agent.state.thinking_level

    @property
    def system_prompt(self) -> str:
        """The effective system prompt; during ``pi_before_agent_start``, as chained so far."""
        chained = self._prompts.chained_system_prompt
        if chained is not None:
            return chained
        return self.agent.state.system_prompt

    @property
    def is_streaming(self) -> bool:
        return self.agent.state.is_streaming

    @property
    def is_compacting(self) -> bool:
        """Between a ``compaction_start`` and its ``compaction_end`` event (pi's ``isCompacting``)."""
        return self._compacting

    @property
    def messages(self) -> list[AgentMessage]:
        return self.agent.state.messages

    @property
    def steering_messages(self) -> list[str]:
        return list(self._queues.steering)

    @property
    def follow_up_messages(self) -> list[str]:
        return list(self._queues.follow_up)

    @property
    def pending_message_count(self) -> int:
        return len(self._queues.steering) + len(self._queues.follow_up)

    @property
    def active_tool_names(self) -> list[str]:
        return list(self._active_tool_names)

    def get_flag(self, name: str) -> bool | str | None:
        if name in self._flags:
            return self._flags[name]
        flag = self.host.flags.get(name)
        return flag.default if flag is not None else None

    def context_usage(self) -> ContextUsage | None:
        """How full the context window is; unknown (``None`` tokens) after a compaction until
        the next reply reports usage, as pi reports it."""
        model = self.model
        if model is None or model.context_window <= 0:
            return None
        if not self._usage_known_since_compaction():
            return ContextUsage(tokens=None, context_window=model.context_window, percent=None)
        tokens = estimate_context_tokens(self.agent.state.messages)
        percent = None if tokens is None else 100 * tokens / model.context_window
        return ContextUsage(tokens=tokens, context_window=model.context_window, percent=percent)

    def _usage_known_since_compaction(self) -> bool:
        """Whether a reply after the latest compaction reported usage (``True`` without one).

        Walks up from the leaf and stops at the first successful reply or compaction, so it
        stays cheap on long sessions."""
        reply_had_usage: bool | None = None
        for entry in self.session_manager.iter_branch():
            if entry.type == "compaction":
                return bool(reply_had_usage)
            message = getattr(entry, "message", None)
            if (
                reply_had_usage is None
                and isinstance(message, AssistantMessage)
                and message.stop_reason not in ("error", "aborted")
            ):
                usage = message.usage
                reply_had_usage = (
                    usage.total_tokens or usage.input + usage.output + usage.cache_read + usage.cache_write
                ) > 0
                if reply_had_usage:
                    return True
        return True

    # -- tools and the system prompt ----------------------------------------------------------

    def set_system_prompt_builder(self, builder: Callable[[Sequence[Tool[Any]]], str] | None) -> None:
        """Build the system prompt with ``builder(active tools)`` from the next rebuild on."""
        self._system_prompt_builder = builder

    def set_active_tools(self, names: Sequence[str]) -> None:
        """Activate the named tools (unknown names are ignored) and rebuild the system prompt.

        Names outside the session's ``tool_allowlist`` (:class:`SessionOptions`) are ignored too.
        """
        allowlist = self.options.tool_allowlist if self.options is not None else None
        self._active_tool_names = [
            name for name in dict.fromkeys(names) if name in self.host.tools and tool_allowed(name, allowlist)
        ]
        tools = [self.host.tools[name] for name in self._active_tool_names]
        self.agent.state.tools = tools
        if self._system_prompt_builder is not None:
            self.base_system_prompt = self._system_prompt_builder(tools)
            self.agent.state.system_prompt = self.base_system_prompt

    def register_tool(self, tool: Tool[Any]) -> None:
        """Register a tool at runtime; it is active from the next provider call (pi's rule),
        unless the session's ``tool_allowlist`` leaves it out (it is then registered, inactive)."""
        self.host.add_tool(tool, "runtime")
        self._removed_tools.pop(tool.name, None)
        if tool.name not in self._active_tool_names:
            self.set_active_tools([*self._active_tool_names, tool.name])

    def unregister_tool(self, name: str, *, reason: str | None = None) -> bool:
        """Remove a tool registered at runtime; it is gone from the next provider call.

        Only :meth:`register_tool`'s tools go (a startup tool is deactivated with
        :meth:`set_active_tools` instead). A later call of the name, which the model may still
        try from its history, fails with "Tool NAME not found" followed by ``reason``.

        :returns: whether a tool was removed.
        """
        if self.host.tool_sources.get(name) != "runtime":
            return False
        del self.host.tools[name]
        del self.host.tool_sources[name]
        if reason:
            self._removed_tools[name] = reason
        if name in self._active_tool_names:
            self.set_active_tools([n for n in self._active_tool_names if n != name])
        return True

    def removed_tool_reason(self, name: str) -> str | None:
        """Why the tool ``name``, unregistered during the session, is gone (``None``: unknown)."""
        return self._removed_tools.get(name)

    # -- the prompt pipeline ------------------------------------------------------------------

    async def prompt(
        self,
        text: str,
        *,
        images: Sequence[ImageContent] = (),
        streaming_behavior: StreamingBehavior | None = None,
        source: Literal["interactive", "rpc", "extension"] = "interactive",
        expand: bool = True,
        preflight: Callable[[bool], None] | None = None,
    ) -> None:
        """Send a prompt through pi's pipeline and, when idle, run the agent to completion.

        While a run is streaming the message is queued (``streaming_behavior`` required).

        :param preflight: called with ``True`` once the prompt was accepted (run started,
            queued or handled) or ``False`` when it was rejected — RPC answers then.
        :raises SessionError: no model, no credentials, or streaming without a behaviour.
        """
        await self._prompts.prompt(
            text,
            images=images,
            streaming_behavior=streaming_behavior,
            source=source,
            expand=expand,
            preflight=preflight,
        )

    async def steer(self, text: str, images: Sequence[ImageContent] = ()) -> None:
        """Queue a message delivered after the current turn's tools, before the next model call."""
        self._queues.reject_command(text)
        self._queues.queue(self._prompts.expand(text), images, "steer")

    async def follow_up(self, text: str, images: Sequence[ImageContent] = ()) -> None:
        """Queue a message delivered once the agent has nothing else to do."""
        self._queues.reject_command(text)
        self._queues.queue(self._prompts.expand(text), images, "followUp")

    def clear_queue(self) -> tuple[list[str], list[str]]:
        """Empty both queues; returns the (steering, follow-up) texts, e.g. to restore an editor."""
        return self._queues.clear()

    async def send_user_message(
        self,
        content: str | Sequence[TextContent | ImageContent],
        *,
        deliver_as: StreamingBehavior | None = None,
    ) -> None:
        """Prompt as a plugin: no command or template expansion; ``pi_input`` sees source ``extension``."""
        text, images = split_content(content)
        await self.prompt(
            text, images=images, streaming_behavior=deliver_as, source="extension", expand=False
        )

    async def send_custom_message(
        self,
        message: CustomMessage,
        *,
        trigger_turn: bool = False,
        deliver_as: Literal["steer", "followUp", "nextTurn"] | None = None,
    ) -> None:
        """Add a plugin message: queued while streaming, with the next prompt, or now."""
        message = message.model_copy(update={"timestamp": now_ms()})
        if deliver_as == "nextTurn":
            self._queues.add_next_turn(message)
        elif self.is_streaming:
            self._queues.enqueue_custom(message, deliver_as)
        elif trigger_turn:
            await self._prompts.run(lambda: self.agent.prompt(message))
        else:
            self.agent.state.messages.append(message)
            self._agent_events.persist(message)
            await self._emit(MessageStartEvent(message=message))
            await self._emit(MessageEndEvent(message=message))

    def queue_plugin_message(
        self,
        message: CustomMessage | str | Sequence[TextContent | ImageContent],
        *,
        deliver_as: Literal["steer", "followUp", "nextTurn"] | None,
    ) -> bool:
        """Queue a plugin's message now when nothing needs awaiting: a ``nextTurn`` custom
        message, or a delivery while the agent streams. ``False`` when it must take the
        asynchronous path (:meth:`send_custom_message`, :meth:`send_user_message`).

        pi queues such messages synchronously, so one sent from ``pi_agent_end`` still joins
        the run that is ending (the post-run loop sees it queued) instead of starting another,
        and a ``nextTurn`` message sent while a prompt is prepared goes with that prompt.
        """
        return self._queues.queue_plugin_message(message, deliver_as)

    async def abort(self) -> None:
        """Abort the run (and every plugin's open abort scope) and wait until the agent is idle."""
        self.abort_scopes.abort_all()
        self.agent.abort()
        # A hook implementation that hangs (an async one past all reason) ends too, named.
        self.host.dispatcher.abort_hooks()
        await self.agent.wait_for_idle()

    # -- user bash ----------------------------------------------------------------------------

    async def run_user_bash(
        self,
        command: str,
        *,
        exclude_from_context: bool = False,
        on_output: Callable[[str], None] | None = None,
    ) -> BashExecutionMessage:
        """Run ``!cmd`` through ``pi_user_bash`` and record it (deferred while streaming).

        :meth:`abort_bash` cancels it; the partial output is kept, marked ``cancelled``.
        """
        return await self._bash.run(command, exclude_from_context=exclude_from_context, on_output=on_output)

    def abort_bash(self) -> None:
        """Cancel the running ``!cmd``, if any."""
        self._bash.abort()

    @property
    def is_bash_running(self) -> bool:
        return self._bash.is_running

    # -- model and thinking level -------------------------------------------------------------

    async def set_model(self, model: Model, *, source: Literal["set", "cycle", "restore"] = "set") -> bool:
        """Switch models (recorded in the session); ``False`` when it has no credentials."""
        return await self._model_control.set_model(model, source)

    def set_thinking_level(self, level: ThinkingLevel) -> None:
        """Set the thinking level, clamped to the model; recorded when it changes."""
        self._model_control.set_thinking_level(level)

    def set_session_name(self, name: str) -> None:
        from ._events import SessionInfoChangedEvent

        name = " ".join(name.split())
        self.session_manager.append_session_info(name)
        self.emit_event(SessionInfoChangedEvent(name=name))

    # -- compaction and one-off requests, for plugins ------------------------------------------

    async def compact(self, custom_instructions: str | None = None) -> CompactionResult | None:
        """Compact now (pi's ``compact``, RPC ``compact``, ``/compact``): abort any run first,
        then run the ``compact`` command a plugin registered.

        Returns the compaction entry the command wrote, as a result, or ``None`` when it wrote
        none (cancelled or aborted).

        :raises SessionError: no plugin registers ``compact``, or the command failed.
        """
        from ._session_services import compact

        return await compact(self, custom_instructions)

    def append_compaction_entry(self, result: CompactionResult) -> EntryView:
        """Write pi's ``compaction`` entry for ``result`` and rebuild the agent's messages from
        the session (the summary, then the entries kept)."""
        from ._session_services import append_compaction_entry

        return append_compaction_entry(self, result)

    # -- services for plugins -----------------------------------------------------------------

    def abort_scope(self, name: str) -> bool:
        """Abort plugin work of kind ``name`` (RPC ``abort_<name>``); see :class:`AbortScopes`.

        Returns whether such work was in progress; during a run, an abort that finds none
        still cancels the work if it starts before the run ends.
        """
        return self.abort_scopes.abort(name)

    def setting_value(self, key_path: str, default: Any = None) -> Any:
        """A raw value of the session's settings by dotted camelCase key (``"retry.enabled"``)."""
        node: Any = self.settings.model_dump(by_alias=True) if self.settings is not None else {}
        for key in key_path.split("."):
            if not isinstance(node, dict) or key not in node:
                return default
            node = node[key]
        return node

    def set_setting_value(self, key_path: str, value: Any) -> None:
        """Change one value of a plugin's settings section for this session, without saving it."""
        from pi_host.resources import Settings

        from ._plugin_settings import with_section_value

        settings = self.settings if self.settings is not None else Settings.model_construct()
        self.settings = with_section_value(settings, key_path, value)

    def plugin_settings(self, model: type[_M]) -> _M:
        """A plugin's settings section, validated with ``model`` (see ``pi_register_settings``)."""
        return self._plugin_settings.read(model)

    async def complete(
        self,
        system_prompt: str,
        messages: Sequence[AgentMessage],
        *,
        max_tokens: int | None = None,
        model: Model | None = None,
        reasoning: ThinkingLevel | None = None,
        signal: AbortSignal | None = None,
    ) -> AssistantMessage:
        """One model request outside the conversation (summaries, classifiers), no tools.

        Uses the session's model and credentials unless ``model`` is given. Never raises for
        provider failures: the reply's ``stop_reason`` is ``error`` or ``aborted`` then.
        """
        from ._session_services import complete

        return await complete(
            self,
            system_prompt,
            messages,
            max_tokens=max_tokens,
            model=model,
            reasoning=reasoning,
            signal=signal,
        )

    # -- background work ----------------------------------------------------------------------

    def bind_task_group(self, task_group: TaskGroup | None) -> None:
        """Give the session a task group for work plugins start without awaiting it."""
        self._task_group = task_group

    def spawn(self, work: Callable[[], Awaitable[Any]]) -> None:
        """Run ``work()`` in the background (the mode's task group); errors are logged."""

        async def guarded() -> None:
            try:
                await work()
            except Exception:
                logger.exception("background work of the session failed")

        if self._task_group is None:
            raise SessionError("this session has no task group; run it inside a mode or bind_task_group()")
        self._task_group.start_soon(guarded)

    def request_shutdown(self) -> None:
        self._shutdown_requested = True

    @property
    def shutdown_requested(self) -> bool:
        return self._shutdown_requested

    # -- session lifecycle --------------------------------------------------------------------

    async def start(
        self,
        reason: Literal["startup", "reload", "new", "resume", "fork"] = "startup",
        previous_session_file: str | None = None,
    ) -> None:
        """Fire ``pi_session_start``, then ``pi_resources_discover`` (pi does both whenever it
        binds plugins to a session: at startup, after ``/new``, ``/resume``, ``/fork``, ``/reload``)."""
        await self._navigation.start(reason, previous_session_file)

    async def shutdown(
        self,
        reason: Literal["quit", "reload", "new", "resume", "fork"] = "quit",
        target_session_file: str | None = None,
    ) -> None:
        """Fire ``pi_session_shutdown``."""
        await self._navigation.shutdown(reason, target_session_file)

    async def new_session(self, *, parent_session: str | None = None) -> bool:
        """Start a fresh session file; returns ``True`` when a plugin cancelled."""
        return await self._navigation.new_session(parent_session=parent_session)

    async def switch_session(self, path: str) -> bool:
        """Resume another session file; returns ``True`` when a plugin cancelled."""
        return await self._navigation.switch_session(path)

    async def import_session(
        self,
        path: str,
        *,
        confirm_missing_cwd: Callable[[str, str], Awaitable[bool]] | None = None,
    ) -> SessionImport:
        """Copy a session file into this session's directory and continue it (``/import``).

        The file is checked first (see :func:`~pi_host.runtime._import.check_session_file`).
        When the working directory it recorded is gone, ``confirm_missing_cwd(recorded, current)``
        decides whether to continue in this session's directory (no callback: refuse). The
        session keeps working in :attr:`cwd` either way.

        :raises SessionError: the file cannot be imported, or this session is not saved.
        """
        return await self._navigation.import_session(path, confirm_missing_cwd=confirm_missing_cwd)

    async def fork(self, entry_id: str, *, position: Literal["before", "at"] = "before") -> bool:
        """Fork the conversation into a new session file (``/fork``: before a user message;
        ``/clone``: at the entry). Returns ``True`` when a plugin cancelled."""
        return await self._navigation.fork(entry_id, position=position)

    async def navigate_tree(
        self,
        target_id: str,
        *,
        summarize: bool = False,
        custom_instructions: str | None = None,
        replace_instructions: bool = False,
        label: str | None = None,
    ) -> TreeNavigation:
        """Move the session's leaf to another entry (``/tree``), optionally summarising the branch left."""
        from ._session_tree import navigate_tree

        return await navigate_tree(
            self,
            target_id,
            summarize=summarize,
            custom_instructions=custom_instructions,
            replace_instructions=replace_instructions,
            label=label,
        )

    async def reload(self) -> None:
        """``/reload``: read settings, skills, prompt templates and context files again,
        re-collect the plugins' registrations and rebuild the system prompt.

        Plugins see ``pi_session_shutdown`` then ``pi_session_start``, both with reason
        ``reload``. A session not built by ``create_session`` has no resources to re-read: only
        the plugins are re-collected.
        """
        if self.project is not None:
            await self.project.apply(self, self.project_trusted)
            return
        await self.shutdown("reload")
        self.host.collect_registrations()
        self.set_active_tools(self._active_tool_names)
        await self.start("reload")


def _awaiting(awaitable: Awaitable[Any]) -> Callable[[], Awaitable[Any]]:
    async def wait() -> Any:
        return await awaitable

    return wait
