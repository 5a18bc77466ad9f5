"""The agent run: its start and end, the turns in between, and what happens after it.

A *run* is one ``agent.prompt()`` or ``agent.continue()``; a *turn* is one assistant reply
plus the tool calls it asked for. Order (pi's agent loop)::

    pi_agent_start
      pi_turn_start                       per turn
        pi_context, pi_before_provider_request, pi_after_provider_response   (provider)
        pi_message_start / _update / _end                                    (message)
        per tool call: pi_tool_execution_start, pi_tool_call,
                       pi_tool_execution_update, pi_tool_result,
                       pi_tool_execution_end                                 (tool)
      pi_turn_end
      pi_prepare_next_turn                after every turn that did not fail
    pi_agent_end
    pi_will_continue_run
    pi_after_agent_run                    after the run, while the session may still continue it

Notifications here are awaited before the loop goes on, so a slow implementation slows
the agent down: hand long work to a task of your own.
"""

# mypy: disable-error-code="empty-body"

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ._reducers import NextTurnReducer
from ._results import ContinueRun, NextTurnUpdate
from ._strategy import Strategy, hookspec

if TYPE_CHECKING:
    from pi_host.messages import AgentMessage, AssistantMessage, ToolResultMessage

    from ._context import PluginContext

__all__ = [
    "pi_after_agent_run",
    "pi_agent_end",
    "pi_agent_start",
    "pi_prepare_next_turn",
    "pi_turn_end",
    "pi_turn_start",
    "pi_will_continue_run",
]


@hookspec(strategy=Strategy.NOTIFY)
def pi_agent_start(ctx: PluginContext) -> None:
    """A run starts.

    Fires after ``pi_before_agent_start`` (for a prompt) and before the first
    ``pi_turn_start``; also when the session continues a run (``pi_after_agent_run``).

    :param ctx: the plugin context; ``ctx.signal`` is the run's abort signal.

    **Combination:** notify — every implementation runs; return nothing.
    **On error:** reported (an ``extension_error`` event and a log line) and skipped.

    Example::

        import time

        from pi_host import hookimpl
        from pi_host.hookspecs import StashKey

        STARTED = StashKey[float]()


        @hookimpl
        def pi_agent_start(ctx):
            ctx.stash[STARTED] = time.monotonic()
    """


@hookspec(strategy=Strategy.NOTIFY)
def pi_turn_start(turn_index: int, timestamp: int, ctx: PluginContext) -> None:
    """A turn starts: the agent is about to ask the model for a reply.

    Fires after ``pi_agent_start`` (first turn) or the previous turn's
    ``pi_prepare_next_turn``, before ``pi_context``.

    :param turn_index: the turn's number within the run, from 0.
    :param timestamp: when the turn started, in milliseconds since the epoch.
    :param ctx: the plugin context.

    **Combination:** notify — every implementation runs; return nothing.
    **On error:** reported and skipped.

    Example::

        from pi_host import hookimpl


        @hookimpl
        def pi_turn_start(turn_index, ctx):
            ctx.ui.set_working_message(f"turn {turn_index + 1}")
    """


@hookspec(strategy=Strategy.NOTIFY)
def pi_turn_end(
    turn_index: int,
    message: AgentMessage,
    tool_results: Sequence[ToolResultMessage],
    ctx: PluginContext,
) -> None:
    """A turn ended: the reply is final and its tool calls have results.

    Fires after the last ``pi_tool_execution_end`` of the turn (or the reply's
    ``pi_message_end`` when it called no tools), before ``pi_prepare_next_turn``.

    :param turn_index: the turn's number within the run, from 0.
    :param message: the assistant reply of this turn.
    :param tool_results: the results of its tool calls, in call order.
    :param ctx: the plugin context.

    **Combination:** notify — every implementation runs; return nothing.
    **On error:** reported and skipped.

    Example::

        from pi_host import hookimpl


        @hookimpl
        def pi_turn_end(tool_results, ctx):
            failed = [r.tool_name for r in tool_results if r.is_error]
            if failed:
                ctx.ui.notify(f"failed tools: {', '.join(failed)}", "warning")
    """


@hookspec(strategy=Strategy.PIPELINE, returns=NextTurnUpdate, reducer=NextTurnReducer, bounded=False)
def pi_prepare_next_turn(
    message: AssistantMessage,
    tool_results: Sequence[ToolResultMessage],
    messages: Sequence[AgentMessage],
    ctx: PluginContext,
) -> NextTurnUpdate | None:
    """Adjust the next turn of the current run: its messages, model or reasoning level.

    Fires after every ``pi_turn_end`` whose reply did not fail or abort, including the run's
    last turn, before the loop polls for steering messages. This is where a plugin
    rebuilds an overgrown context mid-run.

    :param message: the turn's assistant reply.
    :param tool_results: the turn's tool results.
    :param messages: the run's context messages (as replaced by earlier implementations).
    :param ctx: the plugin context.
    :returns: a :class:`NextTurnUpdate` with the fields to change, or ``None``.

    **Combination:** pipeline — every implementation runs; ``messages`` chain (each
    implementation sees the previous replacement) and a later ``model`` or
    ``thinking_level`` overrides an earlier one. The dispatcher returns the merged update.
    **On error:** reported and skipped.

    Example::

        from pi_host import hookimpl
        from pi_host.hookspecs import NextTurnUpdate


        @hookimpl
        def pi_prepare_next_turn(tool_results):
            if len(tool_results) > 8:
                return NextTurnUpdate(thinking_level="high")
            return None
    """


@hookspec(strategy=Strategy.NOTIFY)
def pi_agent_end(messages: Sequence[AgentMessage], ctx: PluginContext) -> None:
    """The run ended: normally, on an error, or aborted.

    Fires after the last ``pi_turn_end`` (or ``pi_prepare_next_turn``), before
    ``pi_will_continue_run`` and ``pi_after_agent_run``.

    :param messages: every message the run produced, in order.
    :param ctx: the plugin context.

    **Combination:** notify — every implementation runs; return nothing. Messages sent with
    ``ctx.send_message(..., deliver_as="followUp")`` here continue the run.
    **On error:** reported and skipped.

    Example::

        from pi_host import hookimpl


        @hookimpl
        def pi_agent_end(messages, ctx):
            ctx.append_entry("audit", {"messages": len(messages)})
    """


@hookspec(strategy=Strategy.FIRST, returns=bool)
def pi_will_continue_run(message: AssistantMessage, ctx: PluginContext) -> bool | None:
    """Say whether a plugin will continue the run that just ended on ``message``.

    Fires once per run, after ``pi_agent_end``, before the session's ``agent_end`` event goes
    to subscribers (JSON/RPC clients, the user interface): the answer is that event's
    ``will_retry`` (pi's ``agent_end.willRetry``), so a subscriber knows the failed reply it
    sees is about to be replaced. Answer ``True`` only when your ``pi_after_agent_run`` will
    return :class:`ContinueRun` for the same message. pi sets ``willRetry`` for a transient
    provider error with attempts left, not for a context overflow (whose recovery
    ``compaction_end`` announces). pi 0.73 writes no ``willRetry`` in its JSON, so neither do
    JSON and RPC modes; Python subscribers read the attribute.

    :param message: the run's last assistant message.
    :param ctx: the plugin context.
    :returns: ``True`` if the run will be continued, ``False`` if not, ``None`` to leave the
        question to other plugins (no answer means ``False``).

    **Combination:** first — the first ``True`` or ``False`` wins.
    **On error:** reported and skipped.

    Example::

        from pi_host import hookimpl


        @hookimpl
        def pi_will_continue_run(message):
            if message.stop_reason == "error" and "overloaded" in (message.error_message or ""):
                return True
            return None
    """


@hookspec(strategy=Strategy.FIRST, returns=ContinueRun, bounded=False)
def pi_after_agent_run(message: AssistantMessage, ctx: PluginContext) -> ContinueRun | None:
    """Decide, after a run, whether the session continues it (tries again, or goes on).

    Fires after the run's ``pi_agent_end`` and ``pi_will_continue_run``, in a loop: as long as an
    implementation returns :class:`ContinueRun`, the runtime continues the run and asks again
    after it. A policy that should only act when no other does (recovering from an overflow)
    implements it with ``trylast=True``.

    :param message: the run's last assistant message.
    :param ctx: the plugin context.
    :returns: :class:`ContinueRun` (optionally with replacement messages, e.g. without the
        failed reply) to continue the run, or ``None`` to finish.

    **Combination:** first — the first :class:`ContinueRun` wins.
    **On error:** reported and skipped; the run finishes.

    Example::

        import anyio

        from pi_host import hookimpl
        from pi_host.hookspecs import ContinueRun


        @hookimpl
        async def pi_after_agent_run(message, ctx):
            if message.stop_reason == "error" and "overloaded" in (message.error_message or ""):
                await anyio.sleep(2)
                return ContinueRun()
            return None
    """
