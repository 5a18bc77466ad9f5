"""pi's prompt pipeline: from the text the user sent to the agent's run and its continuations.

In pi's order: plugin command → ``pi_input`` → skill and template expansion → queueing while
streaming → model and auth check → ``pi_before_prompt`` → ``pi_before_agent_start`` → run →
``pi_after_agent_run`` loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pi_host.hookspecs import InputHandled, InputTransform
from pi_host.messages import AgentMessage, AssistantMessage, ImageContent, TextContent, UserMessage, now_ms

from ._session_types import SessionError, StreamingBehavior

if TYPE_CHECKING:
    from pi_host.agent import Agent
    from pi_host.providers import Model
    from pi_host.resources import PromptTemplate, Skill

    from ._abort_scopes import AbortScopes
    from ._context import SessionPluginContext
    from ._host import Host
    from ._prompt_gate import PromptGate
    from ._session_bash import UserBash
    from ._session_queues import MessageQueues

__all__ = ["PromptPipeline"]

_QUEUE_WITHOUT_BEHAVIOR = (
    "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."
)


class _Session(Protocol):
    """What the prompt pipeline needs of its session."""

    host: Host
    agent: Agent
    ctx: SessionPluginContext
    cwd: str
    model_resolver: Any
    skills: list[Skill]
    prompt_templates: list[PromptTemplate]
    prompt_gate: PromptGate
    abort_scopes: AbortScopes
    base_system_prompt: str

    @property
    def model(self) -> Model | None: ...

    @property
    def is_streaming(self) -> bool: ...

    @property
    def active_tool_names(self) -> list[str]: ...

    def emit_event(self, event: Any) -> None: ...


class PromptPipeline:
    """Turns prompts into agent runs for one session."""

    def __init__(
        self,
        session: _Session,
        queues: MessageQueues,
        bash: UserBash,
        emit: Callable[[Any], Awaitable[None]],
    ) -> None:
        self._session = session
        self._queues = queues
        self._bash = bash
        self._emit = emit
        #: The system prompt as ``pi_before_agent_start`` implementations chained it so far
        #: (``None`` outside that hook).
        self.chained_system_prompt: str | None = None

    def on_hook_arguments(self, hook: str, arguments: Mapping[str, Any]) -> None:
        """Follow the system prompt through the ``pi_before_agent_start`` chain."""
        if hook == "pi_before_agent_start":
            prompt = arguments.get("system_prompt")
            if isinstance(prompt, str):
                self.chained_system_prompt = prompt

    async def prompt(
        self,
        text: str,
        *,
        images: Sequence[ImageContent],
        streaming_behavior: StreamingBehavior | None,
        source: Literal["interactive", "rpc", "extension"],
        expand: bool,
        preflight: Callable[[bool], None] | None,
    ) -> None:
        """Send a prompt through pi's pipeline and, when idle, run the agent to completion.

        While a run is streaming the message is queued (``streaming_behavior`` required).

        :param preflight: called with ``True`` once the prompt was accepted (run started,
            queued or handled) or ``False`` when it was rejected — RPC answers then.
        :raises SessionError: no model, no credentials, or streaming without a behaviour.
        """
        try:
            messages = await self.prepare(text, images, streaming_behavior, source, expand)
        except BaseException:
            if preflight is not None:
                preflight(False)
            raise
        if preflight is not None:
            preflight(True)
        if messages is not None:
            await self.run(lambda: self._session.agent.prompt(messages))

    async def prepare(
        self,
        text: str,
        images: Sequence[ImageContent],
        streaming_behavior: StreamingBehavior | None,
        source: Literal["interactive", "rpc", "extension"],
        expand: bool,
    ) -> list[AgentMessage] | None:
        session = self._session
        dispatcher, ctx = session.host.dispatcher, session.ctx
        if expand and text.startswith("/") and await self._try_command(text):
            return None
        current_text, current_images = text, list(images)
        if dispatcher.has_implementations("pi_input"):
            result = await dispatcher.input(
                text=current_text,
                images=current_images,
                source=source,
                streaming_behavior=streaming_behavior if session.is_streaming else None,
                ctx=ctx,
            )
            if isinstance(result, InputHandled):
                return None
            if isinstance(result, InputTransform):
                current_text = result.text
                if result.images is not None:
                    current_images = list(result.images)
        expanded = self.expand(current_text) if expand else current_text
        # A prompt that arrives while a plugin rewrites the history (a compaction) waits for
        # it (the TUI shows it queued), rather than racing it for the transcript.
        if not session.is_streaming:
            await session.prompt_gate.wait()
        if session.is_streaming:
            if streaming_behavior is None:
                raise SessionError(_QUEUE_WITHOUT_BEHAVIOR)
            self._queues.queue(expanded, current_images, streaming_behavior)
            return None
        self._bash.flush()
        self._check_model_and_auth()
        if self.last_assistant() is not None or dispatcher.has_implementations("pi_before_prompt"):
            decision = await dispatcher.before_prompt(message=self.last_assistant(), ctx=ctx)
            if decision is not None:
                if decision.messages is not None:
                    session.agent.state.messages = list(decision.messages)
                await self.run(session.agent.continue_)
        content: list[TextContent | ImageContent] = [TextContent(text=expanded), *current_images]
        messages: list[AgentMessage] = [UserMessage(content=content, timestamp=now_ms())]
        messages.extend(self._queues.take_next_turn())
        self.chained_system_prompt = session.base_system_prompt
        try:
            outcome = await dispatcher.before_agent_start(
                prompt=expanded,
                images=current_images,
                system_prompt=session.base_system_prompt,
                system_prompt_options={"cwd": session.cwd, "tools": session.active_tool_names},
                ctx=ctx,
            )
        finally:
            self.chained_system_prompt = None
        for injected in outcome.messages:
            messages.append(injected.model_copy(update={"timestamp": now_ms()}))
        session.agent.state.system_prompt = outcome.system_prompt or session.base_system_prompt
        return messages

    async def run(self, start: Callable[[], Awaitable[None]]) -> None:
        """Run the agent, then let plugins continue it (``pi_after_agent_run``) while they ask to."""
        session = self._session
        with session.abort_scopes.run():
            await start()
            dispatcher = session.host.dispatcher
            while True:
                last = self.last_assistant()
                decision = None
                if last is not None:
                    decision = await dispatcher.after_agent_run(message=last, ctx=session.ctx)
                if decision is not None:
                    if decision.messages is not None:
                        session.agent.state.messages = list(decision.messages)
                elif not session.agent.has_queued_messages():
                    break
                await session.agent.continue_()
        self._bash.flush()

    def last_assistant(self) -> AssistantMessage | None:
        session = self._session
        for message in reversed(session.agent.state.messages):
            if isinstance(message, AssistantMessage):
                return message
        return None

    def _check_model_and_auth(self) -> None:
        session = self._session
        model = session.model
        if model is None:
            resolver = session.model_resolver
            if resolver is not None and not resolver.registry.available():
                from ._setup_help import no_model_message

                # Nothing is selected because nothing has credentials: say what gives one.
                models_json = resolver.registry.models_json
                raise SessionError(no_model_message(None if models_json is None else models_json.parent))
            raise SessionError(
                "No model selected.\n\nUse --model provider/id, set defaultProvider and defaultModel in "
                "settings.json, or configure a provider in models.json."
            )
        if session.model_resolver is not None and not session.model_resolver.has_auth(model):
            raise SessionError(session.model_resolver.missing_auth_message(model))

    async def _try_command(self, text: str) -> bool:
        session = self._session
        from ._events import ExtensionErrorEvent

        name, _, args = text[1:].partition(" ")
        command = session.host.commands.get(name)
        if command is None:
            return False
        try:
            await command.handler(args.strip(), session.ctx)
        except Exception as exc:
            await self._emit(
                ExtensionErrorEvent(extension_path=f"command:{name}", event="command", error=str(exc))
            )
        return True

    def expand(self, text: str) -> str:
        session = self._session
        if not text.startswith("/"):
            return text
        from pi_host.resources import expand_prompt_template, expand_skill_command

        if text.startswith("/skill:") and session.skills:
            try:
                text = expand_skill_command(text, session.skills)
            except Exception as exc:  # a skill file vanished or is unreadable
                from ._events import ExtensionErrorEvent

                session.emit_event(
                    ExtensionErrorEvent(extension_path="skill", event="skill_expansion", error=str(exc))
                )
        if session.prompt_templates:
            text = expand_prompt_template(text, session.prompt_templates)
        return text
