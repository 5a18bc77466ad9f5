"""AgentSession: pi's coding-agent runtime over the Agent, with every lifecycle stage as a hook.

The prompt pipeline runs in pi's order (plugin command → ``pi_input`` → skill and template
expansion → queueing while streaming → model and auth check → ``pi_before_prompt`` →
``pi_before_agent_start`` → run → ``pi_after_agent_run`` loop). Agent events reach plugins
first, then session subscribers, then the session file (persistence at ``message_end``, after
plugins, so a replaced message is what is stored).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from anyio.abc import TaskGroup

from pi_host.agent import (
    Agent,
    AgentContext,
    Tool,
    TurnContext,
    TurnUpdate,
)
from pi_host.hookspecs import (
    BranchSummary,
    Cancel,
    CompactionResult,
    ContextUsage,
    EntryView,
    InputHandled,
    InputTransform,
    Mode,
    Stash,
    ToolCallBlock,
    ToolCallRewrite,
    TreeSummaryResult,
)
from pi_host.messages import (
    AgentEndEvent,
    AgentEvent,
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    CustomMessage,
    DoneEvent,
    ErrorEvent,
    ImageContent,
    MessageEndEvent,
    MessageStartEvent,
    TextContent,
    UserMessage,
    estimate_context_tokens,
    now_ms,
)
from pi_host.providers import AbortSignal, Model, ThinkingLevel
from pi_host.providers import clamp_thinking_level as _clamp_for_model

from ._abort_scopes import AbortScopes
from ._agent_end import SessionAgentEndEvent
from ._context import NullUI, SessionPluginContext
from ._event_hooks import EventHooks
from ._host import Host
from ._plugin_settings import PluginSettingsReader
from ._prompt_gate import PromptGate

if TYPE_CHECKING:
    from pathlib import Path

    from pydantic import BaseModel

    from pi_host.agent import (
        AfterToolCallContext,
        AfterToolCallResult,
        BeforeToolCallContext,
        BeforeToolCallResult,
    )
    from pi_host.plugin import ExtensionError
    from pi_host.resources import PromptTemplate, Settings, SettingsManager, Skill
    from pi_host.session import SessionManager

    from ._project import ProjectResources

__all__ = ["AgentSession", "SessionError", "SessionImport", "SessionListener", "TreeNavigation"]

_M = TypeVar("_M", bound="BaseModel")

logger = logging.getLogger("pi_host.runtime")

SessionListener = Callable[[Any], Awaitable[None] | None]
"""``listener(event)``: every agent event and session event, in order."""

StreamingBehavior = Literal["steer", "followUp"]

_QUEUE_WITHOUT_BEHAVIOR = (
    "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."
)


class SessionError(RuntimeError):
    """The session cannot do what was asked (no model, no credentials, bad entry id …)."""


@dataclass(frozen=True)
class SessionImport:
    """How ``/import`` went.

    :ivar cancelled: the user or a plugin (``pi_session_before_switch``) stopped it.
    :ivar file: the imported copy, now the session file.
    :ivar recorded_cwd: the working directory the session was recorded in, when it differs
        from the one this session works in.
    :ivar warnings: what was skipped while reading the file (malformed lines …).
    """

    cancelled: bool
    file: str | None = None
    recorded_cwd: str | None = None
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class TreeNavigation:
    """The outcome of :meth:`AgentSession.navigate_tree`.

    :ivar cancelled: a plugin cancelled the navigation, or the user aborted the summary.
    :ivar aborted: the user aborted the branch summary (pi: "Branch summarization cancelled").
    :ivar editor_text: the text of the user message navigated to, for re-editing.
    """

    cancelled: bool
    aborted: bool = False
    editor_text: str | None = None


def _split_content(content: str | Sequence[TextContent | ImageContent]) -> tuple[str, list[ImageContent]]:
    if isinstance(content, str):
        return content, []
    text = "\n".join(block.text for block in content if isinstance(block, TextContent))
    return text, [block for block in content if isinstance(block, ImageContent)]


def _user_text(message: UserMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return "".join(block.text for block in message.content if isinstance(block, TextContent))


class AgentSession:
    """One conversation: an Agent, its session file, its plugins, and pi's prompt pipeline.

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
        self.stash = Stash()
        self.ctx = SessionPluginContext(self)
        self._flags = dict(flags or {})
        self._system_prompt_builder = system_prompt_builder
        self._listeners: list[SessionListener] = []
        self._steering_texts: list[str] = []
        self._follow_up_texts: list[str] = []
        self._next_turn_messages: list[AgentMessage] = []
        self._pending_bash: list[BashExecutionMessage] = []
        self._turn_index = 0
        self._last_assistant: AssistantMessage | None = None
        self.prompt_gate = PromptGate()
        self._compacting = False
        self._bash_signal: AbortSignal | None = None
        self.abort_scopes = AbortScopes()
        self._plugin_settings = PluginSettingsReader(
            lambda: self.host.settings_sections, lambda: self.settings, lambda: self.settings_manager
        )
        self._task_group: TaskGroup | None = None
        self._shutdown_requested = False
        self._active_tool_names: list[str] = []
        self.base_system_prompt = ""
        host.dispatcher.add_error_listener(self._on_extension_error)
        host.dispatcher.add_argument_listener(self._on_hook_arguments)
        self._chained_system_prompt: str | None = None
        # Agent events reach their hooks by name; what the hooks take beyond the events'
        # fields comes from here.
        self._event_hooks = EventHooks(
            host.dispatcher,
            {"ctx": lambda: self.ctx, "turn_index": lambda: self._turn_index, "timestamp": now_ms},
        )
        # Events plugins emit while an agent event is dispatched reach subscribers after it.
        self._deferred_events: list[Any] | None = None
        agent.subscribe(self._on_agent_event)
        self._install_agent_callbacks()
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

    # -- wiring the agent to plugins ----------------------------------------------------------

    def _install_agent_callbacks(self) -> None:
        agent, dispatcher, ctx = self.agent, self.host.dispatcher, self.ctx

        async def transform_context(messages: list[AgentMessage], signal: AbortSignal) -> list[AgentMessage]:
            return await dispatcher.context(messages=messages, ctx=ctx)

        async def on_payload(payload: Any, model: Model) -> Any:
            return await dispatcher.before_provider_request(payload=payload, model=model, ctx=ctx)

        async def on_response(status: int, headers: dict[str, str], model: Model) -> None:
            await dispatcher.after_provider_response(status=status, headers=headers, ctx=ctx)

        async def before_tool_call(
            call: BeforeToolCallContext, signal: AbortSignal
        ) -> BeforeToolCallResult | None:
            if not dispatcher.has_implementations("pi_tool_call"):
                return None
            from pi_host.agent import BeforeToolCallResult

            raw = call.args.model_dump(mode="json", by_alias=True, exclude_unset=False)
            verdict = await dispatcher.tool_call(
                tool_call_id=call.tool_call.id, tool_name=call.tool_call.name, input=raw, ctx=ctx
            )
            if isinstance(verdict, ToolCallBlock):
                return BeforeToolCallResult(block=True, reason=verdict.reason)
            if isinstance(verdict, ToolCallRewrite):
                tool = self.host.tools.get(call.tool_call.name)
                if tool is None:
                    return None
                try:
                    return BeforeToolCallResult(args=tool.validate_arguments(verdict.input))
                except ValueError as exc:
                    return BeforeToolCallResult(block=True, reason=str(exc))
            return None

        async def after_tool_call(
            call: AfterToolCallContext, signal: AbortSignal
        ) -> AfterToolCallResult | None:
            if not dispatcher.has_implementations("pi_tool_result"):
                return None
            patch = await dispatcher.tool_result(
                tool_call_id=call.tool_call.id,
                tool_name=call.tool_call.name,
                input=call.args.model_dump(mode="json", by_alias=True),
                content=call.result.content,
                details=call.result.details,
                is_error=call.is_error,
                ctx=ctx,
            )
            if patch is None:
                return None
            from pi_host.agent import AfterToolCallResult

            fields = patch.model_fields_set
            return AfterToolCallResult(
                content=list(patch.content) if "content" in fields and patch.content is not None else None,
                details=patch.details if "details" in fields else call.result.details,
                is_error=patch.is_error if "is_error" in fields else None,
            )

        async def prepare_next_turn(turn: TurnContext, signal: AbortSignal) -> TurnUpdate | None:
            if not dispatcher.has_implementations("pi_prepare_next_turn"):
                return None
            update = await dispatcher.prepare_next_turn(
                message=turn.message, tool_results=turn.tool_results, messages=turn.context.messages, ctx=ctx
            )
            if update is None:
                return None
            context = None
            if update.messages is not None:
                context = AgentContext(
                    system_prompt=self.agent.state.system_prompt,
                    messages=list(update.messages),
                    tools=turn.context.tools,
                )
            return TurnUpdate(context=context, model=update.model, thinking_level=update.thinking_level)

        async def get_api_key(provider: str) -> str | None:
            if self.model_resolver is None:
                return None
            key: str | None = await self.model_resolver.api_key_for(provider)
            return key

        agent.transform_context = transform_context
        agent.on_payload = on_payload
        agent.on_response = on_response
        agent.before_tool_call = before_tool_call
        agent.after_tool_call = after_tool_call
        agent.prepare_next_turn = prepare_next_turn
        agent.get_api_key = get_api_key
        agent.cwd = self.cwd
        agent.session = self.ctx

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

    def _emit_queue_update(self) -> None:
        from ._events import QueueUpdateEvent

        self.emit_event(
            QueueUpdateEvent(steering=list(self._steering_texts), follow_up=list(self._follow_up_texts))
        )

    def emit_plugin_event(self, event: Any) -> None:
        """Deliver an event a plugin emitted: at once, or after the agent event being dispatched
        (subscribers see the cause before the reaction, as with pi's own ``auto_retry_end``)."""
        if self._deferred_events is not None:
            self._deferred_events.append(event)
        else:
            self.emit_event(event)

    async def _on_agent_event(self, event: AgentEvent, signal: AbortSignal) -> AgentMessage | None:
        outer, self._deferred_events = self._deferred_events, []
        try:
            return await self._handle_agent_event(event, signal)
        finally:
            deferred, self._deferred_events = self._deferred_events, outer
            for plugin_event in deferred:
                self.emit_plugin_event(plugin_event)

    async def _handle_agent_event(self, event: AgentEvent, signal: AbortSignal) -> AgentMessage | None:
        kind = event.type
        if kind == "agent_start":
            self._turn_index = 0
        elif kind == "message_start":
            message = cast("MessageStartEvent", event).message
            if isinstance(message, UserMessage):
                self._dequeue_display(_user_text(message))
        # Plugins see every event before session subscribers (pi's order).
        call = self._event_hooks.dispatch(event)
        outcome = None if call is None else await call
        if kind == "message_end":
            return await self._end_message(cast("MessageEndEvent", event), outcome)
        if kind == "turn_end":
            self._turn_index += 1
        elif kind == "agent_end":
            messages = cast("AgentEndEvent", event).messages
            will_retry = False
            if self._last_assistant is not None and self._last_assistant.stop_reason == "error":
                dispatcher = self.host.dispatcher
                will_retry = await dispatcher.will_continue_run(message=self._last_assistant, ctx=self.ctx)
            await self._emit(SessionAgentEndEvent(messages=messages, will_retry=will_retry))
            return None
        await self._emit(event)
        return None

    async def _end_message(self, event: MessageEndEvent, replacement: AgentMessage | None) -> AgentMessage:
        """Tell subscribers and the session file about the message as ``pi_message_end`` left
        it; the agent takes the same message back (``Agent`` listeners may replace one), so the
        rest of the run sees the replacement too."""
        message = event.message
        if replacement is not None and replacement is not message:
            message = replacement
            event = MessageEndEvent(message=message)
        await self._emit(event)
        self._persist(message)
        return message

    def _persist(self, message: AgentMessage) -> None:
        manager = self.session_manager
        if isinstance(message, CustomMessage):
            manager.append_custom_message_entry(
                message.custom_type, message.content, message.display, message.details
            )
        elif isinstance(message, UserMessage):
            manager.append_message(message)
        elif isinstance(message, AssistantMessage):
            manager.append_message(message)
            self._last_assistant = message
        elif message.role == "toolResult":
            manager.append_message(message)

    def _dequeue_display(self, text: str) -> None:
        for queue in (self._steering_texts, self._follow_up_texts):
            if text in queue:
                queue.remove(text)
                self._emit_queue_update()
                return

    # -- state --------------------------------------------------------------------------------

    @property
    def model(self) -> Model | None:
        model = self.agent.state.model
        return None if model.api == "unknown" else model

    @property
    def thinking_level(self) -> ThinkingLevel:
        return self.agent.state.thinking_level

    @property
    def system_prompt(self) -> str:
        """The effective system prompt; during ``pi_before_agent_start``, as chained so far."""
        if self._chained_system_prompt is not None:
            return self._chained_system_prompt
        return self.agent.state.system_prompt

    def _on_hook_arguments(self, hook: str, arguments: Mapping[str, Any]) -> None:
        if hook == "pi_before_agent_start":
            prompt = arguments.get("system_prompt")
            if isinstance(prompt, str):
                self._chained_system_prompt = prompt

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
        return list(self._steering_texts)

    @property
    def follow_up_messages(self) -> list[str]:
        return list(self._follow_up_texts)

    @property
    def pending_message_count(self) -> int:
        return len(self._steering_texts) + len(self._follow_up_texts)

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
        """Activate the named tools (unknown names are ignored) and rebuild the system prompt."""
        self._active_tool_names = [name for name in dict.fromkeys(names) if name in self.host.tools]
        tools = [self.host.tools[name] for name in self._active_tool_names]
        self.agent.state.tools = tools
        if self._system_prompt_builder is not None:
            self.base_system_prompt = self._system_prompt_builder(tools)
            self.agent.state.system_prompt = self.base_system_prompt

    def register_tool(self, tool: Tool[Any]) -> None:
        """Register a tool at runtime; it is active from the next provider call (pi's rule)."""
        self.host.add_tool(tool, "runtime")
        if tool.name not in self._active_tool_names:
            self.set_active_tools([*self._active_tool_names, tool.name])

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
        try:
            messages = await self._prepare_prompt(text, images, streaming_behavior, source, expand)
        except BaseException:
            if preflight is not None:
                preflight(False)
            raise
        if preflight is not None:
            preflight(True)
        if messages is not None:
            await self._run(lambda: self.agent.prompt(messages))

    async def _prepare_prompt(
        self,
        text: str,
        images: Sequence[ImageContent],
        streaming_behavior: StreamingBehavior | None,
        source: Literal["interactive", "rpc", "extension"],
        expand: bool,
    ) -> list[AgentMessage] | None:
        dispatcher, ctx = self.host.dispatcher, self.ctx
        if expand and text.startswith("/") and await self._try_command(text):
            return None
        current_text, current_images = text, list(images)
        if dispatcher.has_implementations("pi_input"):
            result = await dispatcher.input(
                text=current_text,
                images=current_images,
                source=source,
                streaming_behavior=streaming_behavior if self.is_streaming else None,
                ctx=ctx,
            )
            if isinstance(result, InputHandled):
                return None
            if isinstance(result, InputTransform):
                current_text = result.text
                if result.images is not None:
                    current_images = list(result.images)
        expanded = self._expand(current_text) if expand else current_text
        # A prompt that arrives while a plugin rewrites the history (a compaction) waits for
        # it (the TUI shows it queued), rather than racing it for the transcript.
        if not self.is_streaming:
            await self.prompt_gate.wait()
        if self.is_streaming:
            if streaming_behavior is None:
                raise SessionError(_QUEUE_WITHOUT_BEHAVIOR)
            self._queue(expanded, current_images, streaming_behavior)
            return None
        self._flush_pending_bash()
        self._check_model_and_auth()
        if self._last_assistant_in_state() is not None or dispatcher.has_implementations("pi_before_prompt"):
            decision = await dispatcher.before_prompt(message=self._last_assistant_in_state(), ctx=ctx)
            if decision is not None:
                if decision.messages is not None:
                    self.agent.state.messages = list(decision.messages)
                await self._run(self.agent.continue_)
        content: list[TextContent | ImageContent] = [TextContent(text=expanded), *current_images]
        messages: list[AgentMessage] = [UserMessage(content=content, timestamp=now_ms())]
        messages.extend(self._next_turn_messages)
        self._next_turn_messages = []
        self._chained_system_prompt = self.base_system_prompt
        try:
            outcome = await dispatcher.before_agent_start(
                prompt=expanded,
                images=current_images,
                system_prompt=self.base_system_prompt,
                system_prompt_options={"cwd": self.cwd, "tools": self.active_tool_names},
                ctx=ctx,
            )
        finally:
            self._chained_system_prompt = None
        for injected in outcome.messages:
            messages.append(injected.model_copy(update={"timestamp": now_ms()}))
        self.agent.state.system_prompt = outcome.system_prompt or self.base_system_prompt
        return messages

    async def _run(self, start: Callable[[], Awaitable[None]]) -> None:
        """Run the agent, then let plugins continue it (``pi_after_agent_run``) while they ask to."""
        with self.abort_scopes.run():
            await start()
            dispatcher = self.host.dispatcher
            while True:
                last = self._last_assistant_in_state()
                decision = None
                if last is not None:
                    decision = await dispatcher.after_agent_run(message=last, ctx=self.ctx)
                if decision is not None:
                    if decision.messages is not None:
                        self.agent.state.messages = list(decision.messages)
                elif not self.agent.has_queued_messages():
                    break
                await self.agent.continue_()
        self._flush_pending_bash()

    def _last_assistant_in_state(self) -> AssistantMessage | None:
        for message in reversed(self.agent.state.messages):
            if isinstance(message, AssistantMessage):
                return message
        return None

    def _check_model_and_auth(self) -> None:
        model = self.model
        if model is None:
            resolver = self.model_resolver
            if resolver is not None and not resolver.registry.available():
                from ._setup_help import no_model_message

                # Nothing is selected because nothing has credentials: say what gives one.
                models_json = resolver.registry.models_json
                raise SessionError(no_model_message(None if models_json is None else models_json.parent))
            raise SessionError(
                "No model selected.\n\nUse --model provider/id, set defaultProvider and defaultModel in "
                "settings.json, or configure a provider in models.json."
            )
        if self.model_resolver is not None and not self.model_resolver.has_auth(model):
            raise SessionError(self.model_resolver.missing_auth_message(model))

    async def _try_command(self, text: str) -> bool:
        from ._events import ExtensionErrorEvent

        name, _, args = text[1:].partition(" ")
        command = self.host.commands.get(name)
        if command is None:
            return False
        try:
            await command.handler(args.strip(), self.ctx)
        except Exception as exc:
            await self._emit(
                ExtensionErrorEvent(extension_path=f"command:{name}", event="command", error=str(exc))
            )
        return True

    def _expand(self, text: str) -> str:
        if not text.startswith("/"):
            return text
        from pi_host.resources import expand_prompt_template, expand_skill_command

        if text.startswith("/skill:") and self.skills:
            try:
                text = expand_skill_command(text, self.skills)
            except Exception as exc:  # a skill file vanished or is unreadable
                from ._events import ExtensionErrorEvent

                self.emit_event(
                    ExtensionErrorEvent(extension_path="skill", event="skill_expansion", error=str(exc))
                )
        if self.prompt_templates:
            text = expand_prompt_template(text, self.prompt_templates)
        return text

    def _queue(self, text: str, images: Sequence[ImageContent], behavior: StreamingBehavior) -> None:
        content: list[TextContent | ImageContent] = [TextContent(text=text), *images]
        message = UserMessage(content=content, timestamp=now_ms())
        if behavior == "followUp":
            self._follow_up_texts.append(text)
            self.agent.follow_up(message)
        else:
            self._steering_texts.append(text)
            self.agent.steer(message)
        self._emit_queue_update()

    def _reject_command(self, text: str) -> None:
        if text.startswith("/"):
            name = text[1:].partition(" ")[0]
            if name in self.host.commands:
                raise SessionError(
                    f'Extension command "/{name}" cannot be queued. Use prompt() or execute the command '
                    "when not streaming."
                )

    async def steer(self, text: str, images: Sequence[ImageContent] = ()) -> None:
        """Queue a message delivered after the current turn's tools, before the next model call."""
        self._reject_command(text)
        self._queue(self._expand(text), images, "steer")

    async def follow_up(self, text: str, images: Sequence[ImageContent] = ()) -> None:
        """Queue a message delivered once the agent has nothing else to do."""
        self._reject_command(text)
        self._queue(self._expand(text), images, "followUp")

    def clear_queue(self) -> tuple[list[str], list[str]]:
        """Empty both queues; returns the (steering, follow-up) texts, e.g. to restore an editor."""
        steering, follow_up = self._steering_texts, self._follow_up_texts
        self._steering_texts, self._follow_up_texts = [], []
        self.agent.clear_all_queues()
        self._emit_queue_update()
        return steering, follow_up

    async def send_user_message(
        self,
        content: str | Sequence[TextContent | ImageContent],
        *,
        deliver_as: StreamingBehavior | None = None,
    ) -> None:
        """Prompt as a plugin: no command or template expansion; ``pi_input`` sees source ``extension``."""
        text, images = _split_content(content)
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
            self._next_turn_messages.append(message)
        elif self.is_streaming:
            self._enqueue_custom(message, deliver_as)
        elif trigger_turn:
            await self._run(lambda: self.agent.prompt(message))
        else:
            self.agent.state.messages.append(message)
            self._persist(message)
            await self._emit(MessageStartEvent(message=message))
            await self._emit(MessageEndEvent(message=message))

    def _enqueue_custom(self, message: CustomMessage, deliver_as: str | None) -> None:
        if deliver_as == "followUp":
            self.agent.follow_up(message)
        else:
            self.agent.steer(message)

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
        if isinstance(message, CustomMessage) and deliver_as == "nextTurn":
            self._next_turn_messages.append(message.model_copy(update={"timestamp": now_ms()}))
            return True
        if not self.is_streaming or deliver_as == "nextTurn":
            return False
        if isinstance(message, CustomMessage):
            self._enqueue_custom(message.model_copy(update={"timestamp": now_ms()}), deliver_as)
            return True
        # pi_input must see a user message first, and one without a behaviour is an error.
        if deliver_as is None or self.host.dispatcher.has_implementations("pi_input"):
            return False
        text, images = _split_content(message)
        self._queue(text, images, deliver_as)
        return True

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
        signal = self._bash_signal = AbortSignal()
        try:
            result = await self.host.dispatcher.user_bash(
                command=command,
                exclude_from_context=exclude_from_context,
                cwd=self.cwd,
                signal=signal,
                on_output=on_output,
                ctx=self.ctx,
            )
        finally:
            self._bash_signal = None
        if result is None:
            raise SessionError("No plugin runs user bash commands. Install pi-bash (pip install pi-bash).")
        message = BashExecutionMessage(
            command=command,
            output=result.output,
            exit_code=result.exit_code,
            cancelled=result.cancelled,
            truncated=result.truncated,
            full_output_path=result.full_output_path,
            exclude_from_context=exclude_from_context or None,
            timestamp=now_ms(),
        )
        if self.is_streaming:
            self._pending_bash.append(message)
        else:
            self._record_bash(message)
        return message

    def abort_bash(self) -> None:
        """Cancel the running ``!cmd``, if any."""
        if self._bash_signal is not None:
            self._bash_signal.abort()

    @property
    def is_bash_running(self) -> bool:
        return self._bash_signal is not None

    def _record_bash(self, message: BashExecutionMessage) -> None:
        self.agent.state.messages.append(message)
        self.session_manager.append_message(message)

    def _flush_pending_bash(self) -> None:
        pending, self._pending_bash = self._pending_bash, []
        for message in pending:
            self._record_bash(message)

    # -- model and thinking level -------------------------------------------------------------

    async def set_model(self, model: Model, *, source: Literal["set", "cycle", "restore"] = "set") -> bool:
        """Switch models (recorded in the session); ``False`` when it has no credentials."""
        if self.model_resolver is not None and not self.model_resolver.has_auth(model):
            return False
        previous = self.model
        # pi carries the level over from a reasoning model; from one without reasoning (whose
        # level is forced "off") it takes the default level instead.
        level = self.thinking_level if previous is not None and previous.reasoning else self._default_level()
        self.agent.state.model = model
        self.session_manager.append_model_change(model.provider, model.id)
        previous_level = self._apply_thinking_level(level)
        if previous_level is not None:
            # Awaited here so it fires before pi_model_select, as in pi.
            await self.host.dispatcher.thinking_level_select(
                level=self.thinking_level, previous_level=previous_level, ctx=self.ctx
            )
        if previous is None or previous.ref != model.ref:
            await self.host.dispatcher.model_select(
                model=model, previous_model=previous, source=source, ctx=self.ctx
            )
        return True

    def set_thinking_level(self, level: ThinkingLevel) -> None:
        """Set the thinking level, clamped to the model; recorded when it changes."""
        previous = self._apply_thinking_level(level)
        if previous is None:
            return
        current = self.thinking_level
        self.spawn(
            lambda: self.host.dispatcher.thinking_level_select(
                level=current, previous_level=previous, ctx=self.ctx
            )
        )

    def _apply_thinking_level(self, level: ThinkingLevel) -> ThinkingLevel | None:
        """Clamp, set and record ``level``; returns the previous level if it changed."""
        model = self.model
        level = clamp_thinking_level(model, level) if model is not None else level
        previous = self.thinking_level
        if level == previous:
            return None
        self.agent.state.thinking_level = level
        self.session_manager.append_thinking_level_change(level)
        from ._events import ThinkingLevelChangedEvent

        self.emit_event(ThinkingLevelChangedEvent(level=level))
        return previous

    def _default_level(self) -> ThinkingLevel:
        configured = self.settings.default_thinking_level if self.settings is not None else None
        return configured or "medium"

    def set_session_name(self, name: str) -> None:
        from ._events import SessionInfoChangedEvent

        name = " ".join(name.split())
        self.session_manager.append_session_info(name)
        self.emit_event(SessionInfoChangedEvent(name=name))

    # -- compact (pi's AgentSession.compact) ----------------------------------------------------

    async def compact(self, custom_instructions: str | None = None) -> CompactionResult | None:
        """Compact now (pi's ``compact``, RPC ``compact``, ``/compact``): abort any run first,
        then run the ``compact`` command a plugin registered.

        Returns the compaction entry the command wrote, as a result, or ``None`` when it wrote
        none (cancelled or aborted).

        :raises SessionError: no plugin registers ``compact``, or the command failed.
        """
        command = self.host.commands.get("compact")
        if command is None:
            raise SessionError(
                "Compacting is not available: no installed plugin registers the compact command."
            )
        if self.is_streaming:
            await self.abort()
        before = self.session_manager.leaf_id
        try:
            await command.handler(custom_instructions or "", self.ctx)
        except SessionError:
            raise
        except Exception as exc:
            raise SessionError(str(exc) or type(exc).__name__) from exc
        entry: Any = self.session_manager.get_leaf_entry()
        if entry is None or entry.type != "compaction" or entry.id == before:
            return None
        return CompactionResult(
            summary=entry.summary,
            first_kept_entry_id=entry.first_kept_entry_id,
            tokens_before=entry.tokens_before,
            details=entry.details,
            from_hook=bool(entry.from_hook),
        )

    def append_compaction_entry(self, result: CompactionResult) -> EntryView:
        """Write pi's ``compaction`` entry for ``result`` and rebuild the agent's messages from
        the session (the summary, then the entries kept)."""
        self.session_manager.append_compaction(
            result.summary,
            result.first_kept_entry_id,
            result.tokens_before,
            details=result.details,
            from_hook=result.from_hook or None,
        )
        self.agent.state.messages = self.session_manager.build_session_context().messages
        entry = self.session_manager.get_leaf_entry()
        assert entry is not None
        return cast("EntryView", entry)

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
        from pi_host.messages import convert_to_llm
        from pi_host.providers import LlmContext, StreamOptions

        target = model or self.model
        if target is None or self.model_resolver is None:
            raise SessionError("No model selected: cannot send a request")
        context = LlmContext(system_prompt=system_prompt, messages=convert_to_llm(messages))
        options = StreamOptions(
            signal=signal,
            max_tokens=max_tokens,
            reasoning=None if reasoning in (None, "off") else reasoning,
            session_id=self.session_manager.session_id,
        )
        final: AssistantMessage | None = None
        async for event in self.model_resolver.stream(target, context, options):
            if isinstance(event, DoneEvent):
                final = event.message
            elif isinstance(event, ErrorEvent):
                final = event.error
        if final is None:
            final = AssistantMessage(
                api=target.api,
                provider=target.provider,
                model=target.id,
                stop_reason="error",
                error_message="The provider ended the stream without a final message",
            )
        return final

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
        await self.host.dispatcher.session_start(
            reason=reason, previous_session_file=previous_session_file, ctx=self.ctx
        )
        await self._discover_resources("reload" if reason == "reload" else "startup")

    async def _discover_resources(self, reason: Literal["startup", "reload"]) -> None:
        """Add the skills and prompt templates plugins point to, then rebuild the system prompt."""
        dispatcher = self.host.dispatcher
        if not dispatcher.has_implementations("pi_resources_discover"):
            return
        found = await dispatcher.resources_discover(cwd=self.cwd, reason=reason, ctx=self.ctx)
        if not found.skill_paths and not found.prompt_paths:
            return
        from pi_host.resources import load_prompt_templates, load_skills

        from ._events import ExtensionErrorEvent

        skills = load_skills([entry.path for entry in found.skill_paths], cwd=self.cwd)
        templates = load_prompt_templates([entry.path for entry in found.prompt_paths], cwd=self.cwd)
        for diagnostic in (*skills.diagnostics, *templates.diagnostics):
            await self._emit(
                ExtensionErrorEvent(
                    extension_path=diagnostic.path or "resources",
                    event="resources_discover",
                    error=diagnostic.message,
                )
            )
        # Plugin resources come after the session's own; the first of a name wins (pi's merge).
        known_skills = {skill.name for skill in self.skills}
        self.skills.extend(skill for skill in skills.skills if skill.name not in known_skills)
        known_templates = {template.name for template in self.prompt_templates}
        self.prompt_templates.extend(t for t in templates.templates if t.name not in known_templates)
        self.set_active_tools(self._active_tool_names)

    async def shutdown(
        self,
        reason: Literal["quit", "reload", "new", "resume", "fork"] = "quit",
        target_session_file: str | None = None,
    ) -> None:
        """Fire ``pi_session_shutdown``."""
        await self.host.dispatcher.session_shutdown(
            reason=reason, target_session_file=target_session_file, ctx=self.ctx
        )

    def _restore_from_session(self) -> Model | None:
        """Load the (new) session file's context; returns the model it replaced, if any."""
        context = self.session_manager.build_session_context()
        self.agent.state.messages = context.messages
        # pi rebuilds the runtime for the destination session: its model (when it still has
        # credentials; otherwise the current one stays) and its thinking level.
        replaced = None
        if context.model is not None and self.model_resolver is not None:
            restored = self.model_resolver.find(context.model.provider, context.model.model_id)
            if restored is not None and self.model_resolver.has_auth(restored):
                current = self.model
                if current is not None and current.ref != restored.ref:
                    replaced = current
                self.agent.state.model = restored
        if context.has_thinking_entry:
            level = cast(ThinkingLevel, context.thinking_level)
            self.agent.state.thinking_level = clamp_thinking_level(self.model, level)
        self._steering_texts.clear()
        self._follow_up_texts.clear()
        self.agent.clear_all_queues()
        self._last_assistant = None
        return replaced

    async def _announce_restored_model(self, replaced: Model | None) -> None:
        model = self.model
        if replaced is not None and model is not None:
            await self.host.dispatcher.model_select(
                model=model, previous_model=replaced, source="restore", ctx=self.ctx
            )

    async def new_session(self, *, parent_session: str | None = None) -> bool:
        """Start a fresh session file; returns ``True`` when a plugin cancelled."""
        dispatcher = self.host.dispatcher
        if (
            await dispatcher.session_before_switch(reason="new", target_session_file=None, ctx=self.ctx)
        ) is not None:
            return True
        previous = self._session_file_text()
        # The next session is chosen first so that shutdown hooks can name its file, as pi's do.
        planned = self.session_manager.next_session()
        await self.shutdown("new", _file_text(planned.file))
        self.session_manager.new_session(parent_session=parent_session, planned=planned)
        self._restore_from_session()
        model = self.model
        if model is not None:
            self.session_manager.append_model_change(model.provider, model.id)
        self.session_manager.append_thinking_level_change(self.thinking_level)
        await self.start("new", previous)
        return False

    async def switch_session(self, path: str) -> bool:
        """Resume another session file; returns ``True`` when a plugin cancelled."""
        dispatcher = self.host.dispatcher
        if (
            await dispatcher.session_before_switch(reason="resume", target_session_file=path, ctx=self.ctx)
        ) is not None:
            return True
        await self._enter_session(path)
        return False

    async def _enter_session(self, path: str) -> None:
        from pi_host.session import SessionFileError, check_session_file

        try:
            check_session_file(path)  # refused before this session is shut down
        except SessionFileError as exc:
            raise SessionError(str(exc)) from exc
        previous = self._session_file_text()
        await self.shutdown("resume", path)
        self.session_manager.set_session_file(path)
        replaced = self._restore_from_session()
        await self.start("resume", previous)
        await self._announce_restored_model(replaced)

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
        from ._import import check_session_file, copy_into_session_dir, import_destination, same_directory

        checked = check_session_file(path)
        directory = self.session_manager.session_dir
        if directory is None or not self.session_manager.is_persisted:
            raise SessionError(
                "This session is not saved (--no-session), so there is no session directory to "
                "import into; start pi-host without --no-session"
            )
        if checked.cwd_missing:
            if confirm_missing_cwd is None:
                # pi's refusal, as at start-up with --session.
                raise SessionError(
                    "Stored session working directory does not exist: "
                    f"{checked.cwd}\nSession file: {checked.source}\nCurrent working directory: {self.cwd}"
                )
            if not await confirm_missing_cwd(checked.cwd, self.cwd):
                return SessionImport(cancelled=True)
        try:
            copy = import_destination(checked.source, directory)
        except OSError as exc:
            raise SessionError(f"Cannot look into the session directory {directory}: {exc}") from exc
        if (
            await self.host.dispatcher.session_before_switch(
                reason="resume", target_session_file=str(copy), ctx=self.ctx
            )
        ) is not None:
            return SessionImport(cancelled=True)
        try:
            copy_into_session_dir(checked.source, copy)
        except OSError as exc:
            raise SessionError(f"Cannot copy {checked.source} into {directory}: {exc}") from exc
        await self._enter_session(str(copy))
        recorded = checked.cwd if checked.cwd and not same_directory(checked.cwd, self.cwd) else None
        warnings = tuple(str(warning) for warning in self.session_manager.warnings)
        return SessionImport(cancelled=False, file=str(copy), recorded_cwd=recorded, warnings=warnings)

    async def fork(self, entry_id: str, *, position: Literal["before", "at"] = "before") -> bool:
        """Fork the conversation into a new session file (``/fork``: before a user message;
        ``/clone``: at the entry). Returns ``True`` when a plugin cancelled."""
        manager = self.session_manager
        entry = manager.get_entry(entry_id)
        if entry is None:
            raise SessionError(f"Entry {entry_id} not found")
        message = getattr(entry, "message", None)
        if position == "before" and not isinstance(message, UserMessage):
            raise SessionError("Can only fork from a user message")
        decision = await self.host.dispatcher.session_before_fork(
            entry_id=entry_id, position=position, ctx=self.ctx
        )
        if isinstance(decision, Cancel):
            return True
        previous = self._session_file_text()
        planned = manager.next_session()
        await self.shutdown("fork", _file_text(planned.file))
        leaf = entry.parent_id if position == "before" else entry.id
        if leaf is None:
            manager.new_session(parent_session=previous, planned=planned)
        else:
            manager.create_branched_session(leaf, planned=planned)
        replaced = self._restore_from_session()
        await self.start("fork", previous)
        await self._announce_restored_model(replaced)
        return False

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
        from pi_host.hookspecs import TreePreparation

        manager = self.session_manager
        old_leaf = manager.leaf_id
        if target_id == old_leaf:
            return TreeNavigation(cancelled=False)
        target = manager.get_entry(target_id)
        if target is None:
            raise SessionError(f"Entry {target_id} not found")
        old_path = {entry.id for entry in manager.get_branch()} if old_leaf else set()
        target_path = [entry.id for entry in manager.get_branch(target_id)]
        common = next((entry_id for entry_id in reversed(target_path) if entry_id in old_path), None)
        to_summarize = (
            [entry for entry in manager.get_branch() if common is None or entry.id not in set(target_path)]
            if old_leaf
            else []
        )
        preparation = TreePreparation(
            target_id=target_id,
            old_leaf_id=old_leaf,
            common_ancestor_id=common,
            entries_to_summarize=tuple(to_summarize),
            user_wants_summary=summarize,
            custom_instructions=custom_instructions,
            replace_instructions=replace_instructions,
            label=label,
        )
        signal = AbortSignal()
        decision = await self.host.dispatcher.session_before_tree(
            preparation=preparation, signal=signal, ctx=self.ctx
        )
        if isinstance(decision, Cancel):
            return TreeNavigation(cancelled=True)
        summary: BranchSummary | None = None
        from_hook = False
        if isinstance(decision, TreeSummaryResult):
            summary = decision.summary
            from_hook = summary is not None
            custom_instructions = decision.custom_instructions or custom_instructions
            if decision.replace_instructions is not None:
                replace_instructions = decision.replace_instructions
            label = decision.label or label
        if summary is None and summarize and to_summarize:
            with self.abort_scopes.open("branch_summary", fresh=True) as summary_signal:
                summary = await self.host.dispatcher.summarize_branch(
                    entries=cast("list[EntryView]", to_summarize),
                    custom_instructions=custom_instructions,
                    replace_instructions=replace_instructions,
                    signal=summary_signal,
                    ctx=self.ctx,
                )
                if summary_signal.aborted:
                    return TreeNavigation(cancelled=True, aborted=True)
        message = getattr(target, "message", None)
        editor_text = None
        if isinstance(message, UserMessage):
            new_leaf = target.parent_id
            editor_text = _user_text(message)
        elif target.type == "custom_message":
            new_leaf = target.parent_id
            content = getattr(target, "content", "")
            editor_text = content if isinstance(content, str) else None
        else:
            new_leaf = target.id
        summary_entry = None
        if summary is not None and summary.summary:
            manager.branch_with_summary(
                new_leaf, summary.summary, summary.details, from_hook=from_hook or None
            )
            summary_entry = manager.get_leaf_entry()
            if label and summary_entry is not None:
                manager.append_label_change(summary_entry.id, label)
        elif new_leaf is None:
            manager.reset_leaf()
        else:
            manager.branch(new_leaf)
        if label and summary_entry is None:
            # Without a summary entry to carry it, pi labels the entry navigated to.
            manager.append_label_change(target_id, label)
        self.agent.state.messages = manager.build_session_context().messages
        await self.host.dispatcher.session_tree(
            new_leaf_id=manager.leaf_id,
            old_leaf_id=old_leaf,
            summary_entry=cast("EntryView | None", summary_entry),
            from_extension=from_hook,
            ctx=self.ctx,
        )
        return TreeNavigation(cancelled=False, editor_text=editor_text)

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

    def _session_file_text(self) -> str | None:
        return _file_text(self.session_manager.session_file)


def _file_text(file: Path | None) -> str | None:
    return None if file is None else str(file)


def _awaiting(awaitable: Awaitable[Any]) -> Callable[[], Awaitable[Any]]:
    async def wait() -> Any:
        return await awaitable

    return wait


def clamp_thinking_level(model: Model | None, level: ThinkingLevel) -> ThinkingLevel:
    """The nearest level ``model`` supports (pi's rule; see :func:`pi_host.providers.clamp_thinking_level`);
    ``level`` unchanged when no model is selected."""
    return level if model is None else _clamp_for_model(model, level)
