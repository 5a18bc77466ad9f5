"""The prompt pipeline: from what the user typed to the start of an agent run.

Order for one prompt (pi's ``AgentSession.prompt``): slash commands registered with
``pi_register_commands`` run first and consume the input; otherwise ``pi_input`` →
skill and template expansion → (queued if the agent is busy) → ``pi_before_prompt`` →
``pi_before_agent_start`` → the run (:mod:`pi_host.hookspecs.agent`). A ``!command`` line
takes the ``pi_user_bash`` path instead and never reaches the model as a prompt.
"""

# mypy: disable-error-code="empty-body"

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._reducers import BeforeAgentStartReducer, InputReducer
from ._results import (
    BeforeAgentStartResult,
    ContinueRun,
    InputHandled,
    InputTransform,
    UserBashResult,
)
from ._strategy import Strategy, hookspec

if TYPE_CHECKING:
    from collections.abc import Callable

    from pi_host.messages import AssistantMessage, ImageContent
    from pi_host.providers import AbortSignal

    from ._context import PluginContext
    from ._payloads import InputSource, StreamingBehavior

__all__ = ["pi_before_agent_start", "pi_before_prompt", "pi_input", "pi_user_bash"]


@hookspec(
    strategy=Strategy.PIPELINE_UNTIL,
    returns=(InputTransform, InputHandled),
    stop_on=InputHandled,
    reducer=InputReducer,
)
def pi_input(
    text: str,
    images: Sequence[ImageContent],
    source: InputSource,
    streaming_behavior: StreamingBehavior | None,
    ctx: PluginContext,
) -> InputTransform | InputHandled | None:
    """Inspect, rewrite or consume user input before anything else sees it.

    Fires for every prompt that is not a registered slash command, before skill and
    prompt-template expansion, also while the agent is busy (the input is then queued).

    :param text: the input text (as transformed by earlier implementations).
    :param images: attached images (as transformed by earlier implementations).
    :param source: ``"interactive"``, ``"rpc"`` or ``"extension"`` (``ctx.send_user_message``).
    :param streaming_behavior: ``"steer"`` or ``"followUp"`` when the agent is busy, else ``None``.
    :param ctx: the plugin context.
    :returns: :class:`InputTransform` to replace the text (and images), :class:`InputHandled`
        to consume the input, or ``None`` to pass it on unchanged.

    **Combination:** pipeline until handled — transforms chain (each implementation sees the
    previous one's text); the first :class:`InputHandled` stops the chain and the agent
    does not run.
    **On error:** reported and skipped; the input goes on as it was before that implementation.

    Example::

        from pi_host import hookimpl
        from pi_host.hookspecs import InputHandled, InputTransform


        @hookimpl
        def pi_input(text, ctx):
            if text == "ping":
                ctx.ui.notify("pong")
                return InputHandled()
            if text.startswith("?"):
                return InputTransform(text="Explain briefly: " + text[1:])
            return None
    """


@hookspec(strategy=Strategy.FIRST, returns=ContinueRun, bounded=False)
def pi_before_prompt(message: AssistantMessage | None, ctx: PluginContext) -> ContinueRun | None:
    """Check, before a new prompt starts a run, whether the session must act first.

    Fires after ``pi_input`` and expansion, when the agent is idle, before the prompt's
    messages are built and before ``pi_before_agent_start``. A plugin that must shrink
    the context before the next prompt acts here (aborted replies included).

    :param message: the last assistant message of the session, ``None`` if there is none.
    :param ctx: the plugin context.
    :returns: :class:`ContinueRun` when the plugin changed the session (e.g. compacted) and
        the runtime must ``agent.continue()`` (and run the post-run checks) before the new
        prompt; ``None`` otherwise.

    **Combination:** first — the first :class:`ContinueRun` wins.
    **On error:** reported and skipped; the prompt proceeds.

    Example::

        from pi_host import hookimpl


        @hookimpl
        def pi_before_prompt(message, ctx):
            usage = ctx.context_usage()
            if message is not None and usage and usage.percent and usage.percent > 95:
                ctx.compact()  # runs after the prompt; return ContinueRun() to act before it
            return None
    """


@hookspec(strategy=Strategy.COLLECT, returns=BeforeAgentStartResult, reducer=BeforeAgentStartReducer)
def pi_before_agent_start(
    prompt: str,
    images: Sequence[ImageContent],
    system_prompt: str,
    system_prompt_options: Any,
    ctx: PluginContext,
) -> BeforeAgentStartResult | None:
    """Inject context for the coming run, or replace its system prompt.

    Fires after ``pi_before_prompt``, once the user message is built, right before the run
    starts (``pi_agent_start``).

    :param prompt: the prompt text after expansion.
    :param images: images attached to the prompt.
    :param system_prompt: the system prompt as chained so far (the base prompt for the first
        implementation).
    :param system_prompt_options: the structured inputs the base prompt was built from
        (tools, guidelines, context files, skills), to inspect what was loaded.
    :param ctx: the plugin context.
    :returns: :class:`BeforeAgentStartResult` with a message to inject after the prompt
        and/or a replacement system prompt, or ``None``.

    **Combination:** collect — injected messages are collected in call order; system
    prompts chain (each implementation sees the previous replacement). The replacement
    applies to this run only.
    **On error:** reported and skipped.

    Example::

        from pi_host import CustomMessage, hookimpl
        from pi_host.hookspecs import BeforeAgentStartResult


        @hookimpl
        def pi_before_agent_start(system_prompt):
            return BeforeAgentStartResult(
                system_prompt=system_prompt + "\\nAnswer in British English.",
                message=CustomMessage(custom_type="style", content="Keep answers short.", display=False),
            )
    """


@hookspec(strategy=Strategy.FIRST, returns=UserBashResult, bounded=False)
def pi_user_bash(
    command: str,
    exclude_from_context: bool,
    cwd: str,
    signal: AbortSignal,
    on_output: Callable[[str], None] | None,
    ctx: PluginContext,
) -> UserBashResult | None:
    """The user ran ``!command`` (or ``!!command``); run it yourself, or let the bash plugin.

    Fires instead of ``pi_input`` for input starting with ``!``. The result becomes a
    ``bashExecution`` message (sent to the model with the next prompt unless excluded).

    :param command: the command line, without the ``!`` prefix.
    :param exclude_from_context: ``True`` for ``!!``: the output is shown but never sent
        to the model.
    :param cwd: the directory to run in.
    :param signal: aborted when the user cancels the command (Escape, RPC ``abort_bash``);
        stop at once and return a result with ``cancelled=True`` and the output so far.
    :param on_output: call it with each chunk of output as it arrives, for live display
        (``None`` when nobody watches).
    :param ctx: the plugin context.
    :returns: a :class:`UserBashResult` when this plugin ran the command, else ``None``.

    **Combination:** first — the first result wins. The bash plugin runs the command with
    ``trylast=True`` when no other plugin did.
    **On error:** reported and skipped.

    Example::

        from pi_host import hookimpl
        from pi_host.hookspecs import UserBashResult


        @hookimpl
        def pi_user_bash(command):
            if command.strip() == "whoami":
                return UserBashResult(output="pi-host\\n", exit_code=0)
            return None
    """
