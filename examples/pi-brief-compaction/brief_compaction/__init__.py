"""pi-brief-compaction: compact by keeping the latest prompt and listing what came before.

A third-party replacement for pi-compaction, built on pi-host's public API only. It runs
pi's compaction sequence itself: ``compaction_start`` → its own cut (:func:`prepare`) →
``pi_session_before_compact`` (other plugins may cancel or supply the summary; this plugin's
own summary answers last) → the ``compaction`` entry → ``pi_session_compact`` →
``compaction_end``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from pi_host import (
    AbortSignal,
    AgentMessage,
    AssistantMessage,
    Cancel,
    Command,
    CommandContext,
    CompactionEndEvent,
    CompactionPreparation,
    CompactionResult,
    CompactionStartEvent,
    ContinueRun,
    EntryView,
    PluginContext,
    SettingsSection,
    StashKey,
    UserMessage,
    entry_to_message,
    estimate_context_tokens,
    hookimpl,
)

__all__ = ["SUMMARY_HEADING", "BriefCompactionSettings", "brief_summary", "compact", "prepare"]

SUMMARY_HEADING = "Brief summary of the earlier conversation:"

Reason = Literal["manual", "threshold", "overflow"]


class BriefCompactionSettings(BaseModel):
    """``briefCompaction`` in settings.json."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    enabled: bool = True
    max_line_chars: int = 80


_RETRIED: StashKey[bool] = StashKey()


def _text(message: AgentMessage) -> str:
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    return " ".join(getattr(block, "text", "") for block in content if getattr(block, "type", "") == "text")


def brief_summary(messages: Sequence[AgentMessage], max_line_chars: int = 80) -> str:
    """One line per user request, shortened, under :data:`SUMMARY_HEADING`."""
    lines = [SUMMARY_HEADING]
    for message in messages:
        if isinstance(message, UserMessage):
            text = " ".join(_text(message).split())
            cut = text if len(text) <= max_line_chars else text[: max_line_chars - 1].rstrip() + "…"
            lines.append(f"- The user asked: {cut}")
    if len(lines) == 1:
        lines.append("- (nothing the user asked)")
    return "\n".join(lines)


# -- the cut and the summary ---------------------------------------------------------------


@hookimpl
def pi_register_settings(register: Callable[[SettingsSection], None]) -> None:
    register(SettingsSection("briefCompaction", BriefCompactionSettings, "Brief compactions"))


def prepare(branch_entries: Sequence[EntryView]) -> CompactionPreparation | None:
    """Keep the latest user message and what follows; summarise what is before it."""
    messages = [(entry, entry_to_message(entry)) for entry in branch_entries]  # type: ignore[arg-type]
    users = [index for index, (_, message) in enumerate(messages) if isinstance(message, UserMessage)]
    if not users:
        return None
    keep_from = users[-1]
    earlier = [message for _, message in messages[:keep_from] if message is not None]
    if not earlier:
        return None
    every = [message for _, message in messages if message is not None]
    return CompactionPreparation(
        first_kept_entry_id=branch_entries[keep_from].id,
        messages_to_summarize=tuple(earlier),
        tokens_before=estimate_context_tokens(every),
    )


@hookimpl(trylast=True)
def pi_session_before_compact(preparation: CompactionPreparation, ctx: PluginContext) -> CompactionResult:
    settings = ctx.plugin_settings(BriefCompactionSettings)
    return CompactionResult(
        summary=brief_summary(preparation.messages_to_summarize, settings.max_line_chars),
        first_kept_entry_id=preparation.first_kept_entry_id,
        tokens_before=preparation.tokens_before,
    )


# -- pi's sequence ---------------------------------------------------------------------------


async def compact(
    ctx: PluginContext, reason: Reason, *, will_retry: bool = False, custom_instructions: str | None = None
) -> CompactionResult | None:
    """Compact now with pi's events and hooks; ``None`` when nothing was compacted.

    :raises RuntimeError: a manual compaction had nothing to compact.
    """
    with ctx.hold_prompts(), ctx.abort_scope("compaction", fresh=reason == "manual") as signal:
        ctx.emit(CompactionStartEvent(reason=reason))
        branch = list(ctx.session_manager.get_branch())
        preparation = prepare(branch)
        if preparation is None:
            error = "Nothing to compact (session too small)" if reason == "manual" else None
            ctx.emit(CompactionEndEvent(reason=reason, error_message=error))
            if error:
                raise RuntimeError(error)
            return None
        decision = await _before_compact(
            ctx, preparation, branch, custom_instructions, reason, will_retry, signal
        )
        if signal.aborted or not isinstance(decision, CompactionResult):
            ctx.emit(CompactionEndEvent(reason=reason, aborted=True))
            return None
        entry = ctx.append_compaction_entry(decision)
        await ctx.call_hook(
            "pi_session_compact",
            compaction_entry=entry,
            from_extension=decision.from_hook,
            reason=reason,
            will_retry=will_retry,
            ctx=ctx,
        )
        result = {
            "summary": decision.summary,
            "firstKeptEntryId": decision.first_kept_entry_id,
            "tokensBefore": decision.tokens_before,
        }
        ctx.emit(CompactionEndEvent(reason=reason, result=result, will_retry=will_retry))
        return decision


async def _before_compact(
    ctx: PluginContext,
    preparation: CompactionPreparation,
    branch: list[Any],
    custom_instructions: str | None,
    reason: Reason,
    will_retry: bool,
    signal: AbortSignal,
) -> Cancel | CompactionResult | None:
    result: Cancel | CompactionResult | None = await ctx.call_hook(
        "pi_session_before_compact",
        preparation=preparation,
        branch_entries=branch,
        custom_instructions=custom_instructions,
        reason=reason,
        will_retry=will_retry,
        signal=signal,
        ctx=ctx,
    )
    return result


# -- triggers --------------------------------------------------------------------------------


@hookimpl
def pi_register_commands(register: Callable[[Command], None]) -> None:
    async def handler(args: str, ctx: CommandContext) -> None:
        await compact(ctx, "manual", custom_instructions=args or None)

    register(Command(name="compact", description="Compact the session briefly", handler=handler))


@hookimpl
def pi_message_start(message: AgentMessage, ctx: PluginContext) -> None:
    if isinstance(message, UserMessage):
        ctx.stash[_RETRIED] = False  # each prompt may be compacted and retried once


@hookimpl(trylast=True)
async def pi_after_agent_run(message: AssistantMessage, ctx: PluginContext) -> ContinueRun | None:
    """The provider said the context does not fit: compact, then retry the request once."""
    if message.error_class != "context_overflow" or not ctx.plugin_settings(BriefCompactionSettings).enabled:
        return None
    if ctx.stash.get(_RETRIED, False):
        return None
    ctx.stash[_RETRIED] = True
    if await compact(ctx, "overflow", will_retry=True) is None:
        return None
    # The rebuilt context ends with the failed reply (the session file keeps it): drop it.
    messages = ctx.messages
    if messages and isinstance(messages[-1], AssistantMessage) and messages[-1].stop_reason == "error":
        messages = messages[:-1]
    return ContinueRun(messages=tuple(messages))
