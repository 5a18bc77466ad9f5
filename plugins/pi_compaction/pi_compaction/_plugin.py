"""The compaction plugin's hooks: preparation, the default summaries, triggers and ``/compact``.

Triggers, as pi's ``_checkCompaction`` (plus one beyond pi):

- after a run (``pi_after_agent_run``): a context overflow is compacted and the run retried,
  once per user message; otherwise the context is compacted when it holds more than
  ``contextWindow - reserveTokens``;
- before a prompt (``pi_before_prompt``): the same threshold check, aborted replies included;
- between the turns of a run (``pi_prepare_next_turn``): when tool results push the context
  over the threshold mid-run, compact and hand the rebuilt context to the next turn.

A reply older than the latest compaction never triggers one: its usage measured the context
before that compaction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pi_host import Command, SettingsSection, StashKey, hookimpl

from ._run import run_compaction
from ._trigger import entry_ms, should_compact

if TYPE_CHECKING:
    from pi_host import AbortSignal, AgentMessage, AssistantMessage, Message, PluginManager, ToolResultMessage
    from pi_host.hookspecs import (
        BranchSummary,
        CommandContext,
        CompactionPreparation,
        CompactionResult,
        ContinueRun,
        EntryView,
        NextTurnUpdate,
        PluginContext,
    )

    from ._settings import CompactionSettings
    from ._summarize import Summarize

# Loading the plugin (as --help does, for flags) imports neither the runtime, nor pydantic and
# the message models, nor the preparation and summary modules: the hooks import what they
# use when they first run.

__all__ = [
    "OVERFLOW_RECOVERY_FAILED",
    "compact_command",
    "compaction_settings",
    "pi_addhooks",
    "pi_after_agent_run",
    "pi_before_prompt",
    "pi_compaction_prepare",
    "pi_message_end",
    "pi_message_start",
    "pi_prepare_next_turn",
    "pi_register_commands",
    "pi_register_settings",
    "pi_session_before_compact",
    "pi_summarize_branch",
]

OVERFLOW_RECOVERY_FAILED = (
    "Context overflow recovery failed after one compact-and-retry attempt. "
    "Try reducing context or switching to a larger-context model."
)

# Set once an overflow was compacted and retried; a user message or a reply that did not
# fail clears it (pi's _overflowRecoveryAttempted).
_OVERFLOW_ATTEMPTED: StashKey[bool] = StashKey()


def compaction_settings(ctx: PluginContext) -> CompactionSettings:
    """The session's ``compaction`` settings section."""
    from ._settings import CompactionSettings

    return ctx.plugin_settings(CompactionSettings)


@hookimpl
def pi_register_settings(register: Callable[[SettingsSection], None]) -> None:
    """pi's ``compaction`` and ``branchSummary`` sections are this plugin's."""
    from ._settings import BranchSummarySettings, CompactionSettings

    register(
        SettingsSection("compaction", CompactionSettings, "Summarise old history when the context fills up")
    )
    register(SettingsSection("branchSummary", BranchSummarySettings, "Summaries of branches left in /tree"))


def _summarizer(ctx: PluginContext, signal: AbortSignal) -> Summarize:
    """Summary requests on the session's model, at its thinking level when it reasons."""
    model = ctx.model
    if model is None:
        raise RuntimeError(
            "No model selected: compaction summarises with the session's model. "
            "Select one with /model or --model."
        )
    reasoning = ctx.thinking_level if model.reasoning and ctx.thinking_level != "off" else None

    async def call(system_prompt: str, messages: list[Message], max_tokens: int) -> AssistantMessage:
        return await ctx.complete(
            system_prompt, messages, max_tokens=max_tokens, reasoning=reasoning, signal=signal
        )

    return call


# -- preparing and summarising --------------------------------------------------------------


@hookimpl
def pi_addhooks(pluginmanager: PluginManager) -> None:
    """Publish ``pi_compaction_prepare`` (:mod:`pi_compaction.hookspecs`)."""
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@hookimpl(trylast=True)
def pi_compaction_prepare(
    branch_entries: Sequence[EntryView], reason: str, ctx: PluginContext
) -> CompactionPreparation | None:
    """pi's cut: keep ``keepRecentTokens`` of recent history, summarise the rest (a provider's
    overflow on a small session still compacts: see :func:`prepare_compaction`)."""
    from ._prepare import prepare_compaction

    return prepare_compaction(branch_entries, compaction_settings(ctx), reason=reason)


@hookimpl(trylast=True)
async def pi_session_before_compact(
    preparation: CompactionPreparation,
    custom_instructions: str | None,
    signal: AbortSignal,
    ctx: PluginContext,
) -> CompactionResult | None:
    """Write the summary with the session's model (the default every other plugin precedes).

    The ``details`` are pi's ``{readFiles, modifiedFiles}`` and the result says
    ``from_hook=False``: the entry is recorded as pi's own summary (``fromHook: false``), whose
    lists the next compaction carries on.
    """
    from ._summarize import SummaryAborted, summarize_compaction

    model = ctx.model
    try:
        return await summarize_compaction(
            preparation,
            _summarizer(ctx, signal),
            custom_instructions=custom_instructions,
            model_max_tokens=model.max_tokens if model is not None else None,
        )
    except SummaryAborted:
        # The runtime sees its signal aborted and reports the compaction as aborted.
        return None


@hookimpl(trylast=True)
async def pi_summarize_branch(
    entries: Sequence[EntryView],
    custom_instructions: str | None,
    replace_instructions: bool,
    signal: AbortSignal,
    ctx: PluginContext,
) -> BranchSummary | None:
    """Summarise the branch left during tree navigation (pi's ``generateBranchSummary``)."""
    from ._settings import BranchSummarySettings
    from ._summarize import SummaryAborted, summarize_branch

    model = ctx.model
    reserve = ctx.plugin_settings(BranchSummarySettings).reserve_tokens
    try:
        return await summarize_branch(
            entries,
            _summarizer(ctx, signal),
            context_window=model.context_window if model is not None else None,
            reserve_tokens=reserve,
            custom_instructions=custom_instructions,
            replace_instructions=replace_instructions,
        )
    except SummaryAborted:
        return None


# -- triggers -------------------------------------------------------------------------------


def _predates_compaction(message: AssistantMessage, ctx: PluginContext) -> bool:
    """Whether ``message`` comes before the branch's latest compaction (its usage then measured
    a context that no longer exists).

    Walks up from the leaf and stops at the message or at the first compaction, so a long
    session is not read back to its root (resume cost follows the branch since the last
    compaction). Entries are appended in time order, so at that compaction the timestamps
    decide, which also covers a message the session file does not hold.
    """
    manager = ctx.session_manager
    leaf = manager.leaf_id
    entry: Any = manager.get_entry(leaf) if leaf else None
    seen: set[str] = set()
    while entry is not None and entry.id not in seen:
        seen.add(entry.id)
        if entry.type == "compaction":
            return message.timestamp <= entry_ms(entry)
        if entry.type == "message" and getattr(entry, "message", None) == message:
            return False
        entry = manager.get_entry(entry.parent_id) if entry.parent_id else None
    return False


async def _check(message: AssistantMessage, ctx: PluginContext, *, before_prompt: bool) -> bool:
    """pi's ``_checkCompaction``; ``True`` when the run should continue (overflow retry or
    queued messages after a threshold compaction)."""
    settings = compaction_settings(ctx)
    model = ctx.model
    if not settings.enabled or model is None:
        return False
    if not before_prompt and message.stop_reason == "aborted":
        return False
    if _predates_compaction(message, ctx):
        return False
    from pi_host import context_tokens, is_context_overflow

    window = model.context_window or 0
    same_model = message.provider == model.provider and message.model == model.id
    if same_model and is_context_overflow(message, window):
        if message.stop_reason != "error":
            await run_compaction(ctx, "overflow", will_retry=False)
            return False
        if ctx.stash.get(_OVERFLOW_ATTEMPTED, False):
            if not before_prompt:
                from pi_host import CompactionEndEvent

                ctx.emit(CompactionEndEvent(reason="overflow", error_message=OVERFLOW_RECOVERY_FAILED))
            return False
        ctx.stash[_OVERFLOW_ATTEMPTED] = True
        # Before a prompt the new prompt is what runs next, so the failed request is not retried.
        result = await run_compaction(ctx, "overflow", will_retry=not before_prompt)
        return result is not None and not before_prompt
    if message.stop_reason == "error":
        tokens = _estimate_after_error(ctx)
        if tokens is None:
            return False
    else:
        tokens = context_tokens(message)
    if window and should_compact(tokens, window, settings):
        result = await run_compaction(ctx, "threshold")
        return result is not None and not before_prompt and ctx.has_pending_messages()
    return False


def _estimate_after_error(ctx: PluginContext) -> int | None:
    """Context size from the last successful usage (``None`` without one, or when it predates
    the latest compaction and so measured a context that no longer exists)."""
    from pi_host import AssistantMessage, context_tokens, estimate_context_tokens

    messages = ctx.messages
    for message in reversed(messages):
        if (
            isinstance(message, AssistantMessage)
            and message.stop_reason not in ("error", "aborted")
            and context_tokens(message)
        ):
            if _predates_compaction(message, ctx):
                return None
            return estimate_context_tokens(messages)
    return None


def _without_failed_reply(messages: list[AgentMessage], failed: AssistantMessage) -> tuple[AgentMessage, ...]:
    """The context to retry with: the failed reply leaves it (the session file keeps it)."""
    from pi_host import AssistantMessage

    kept = [m for m in messages if m is not failed]
    if kept and isinstance(kept[-1], AssistantMessage) and kept[-1].stop_reason == "error":
        kept = kept[:-1]
    return tuple(kept)


@hookimpl(trylast=True)
async def pi_after_agent_run(message: AssistantMessage, ctx: PluginContext) -> ContinueRun | None:
    """After a run: compact-and-retry an overflow, or compact past the threshold."""
    if not await _check(message, ctx, before_prompt=False):
        return None
    from pi_host.hookspecs import ContinueRun

    if message.stop_reason == "error":
        return ContinueRun(messages=_without_failed_reply(ctx.messages, message))
    return ContinueRun()


@hookimpl(trylast=True)
async def pi_before_prompt(message: AssistantMessage | None, ctx: PluginContext) -> ContinueRun | None:
    """Before a prompt: compact a context already past the threshold (aborted replies too).

    The compaction rebuilds the agent's messages itself, so the prompt simply proceeds.
    """
    if message is not None:
        await _check(message, ctx, before_prompt=True)
    return None


@hookimpl
async def pi_prepare_next_turn(
    message: AssistantMessage,
    tool_results: Sequence[ToolResultMessage],
    messages: Sequence[AgentMessage],
    ctx: PluginContext,
) -> NextTurnUpdate | None:
    """Mid-run compaction (beyond pi, pi#6879): when a turn's tool results push the context
    past the threshold, compact before the next request instead of overflowing it."""
    settings = compaction_settings(ctx)
    model = ctx.model
    if not settings.enabled or model is None or not model.context_window or not tool_results:
        return None
    from pi_host import estimate_context_tokens
    from pi_host.hookspecs import NextTurnUpdate

    if not should_compact(estimate_context_tokens(messages), model.context_window, settings):
        return None
    from ._prepare import prepare_compaction

    # Checked after every turn: when no cut is possible (one huge tool result is never a cut
    # point) the run goes on without announcing a compaction each time.
    if prepare_compaction(ctx.session_manager.get_branch(), settings) is None:
        return None
    if await run_compaction(ctx, "threshold") is None:
        return None
    return NextTurnUpdate(messages=tuple(ctx.messages))


@hookimpl
def pi_message_start(message: AgentMessage, ctx: PluginContext) -> None:
    """A new user message may be compacted and retried once more."""
    if getattr(message, "role", None) == "user":
        ctx.stash[_OVERFLOW_ATTEMPTED] = False


@hookimpl
def pi_message_end(message: AgentMessage, ctx: PluginContext) -> None:
    """A reply that did not fail ends an overflow recovery."""
    from pi_host import AssistantMessage

    if isinstance(message, AssistantMessage) and message.stop_reason != "error":
        ctx.stash[_OVERFLOW_ATTEMPTED] = False


def compact_command() -> Command:
    """``/compact [instructions]``: summarise now, with an optional focus (also what RPC
    ``compact`` and ``ctx.compact()`` run). Usable by a plugin that prepares or summarises
    compactions its own way but wants pi's sequence of events and hooks."""

    async def handler(args: str, ctx: CommandContext) -> None:
        await run_compaction(ctx, "manual", custom_instructions=args or None)

    return Command(name="compact", description="Manually compact the session context", handler=handler)


@hookimpl
def pi_register_commands(register: Callable[[Command], None]) -> None:
    """``/compact [instructions]`` (see :func:`compact_command`)."""
    register(compact_command())
