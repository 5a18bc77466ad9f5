"""The compaction plugin's hooks: preparation, the default summary, triggers and ``/compact``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pi_host import AssistantMessage, Command, ContinueRun, StashKey, hookimpl
from pi_host.hookspecs import CompactionPreparation, CompactionResult, CompactionSettings
from pi_host.messages import Message

# Not yet re-exported by pi_host.providers (requested); the one private import of this plugin.
from pi_host.providers._errors import is_context_overflow
from pi_host.runtime import CompactionEndEvent, SessionPluginContext

from ._prepare import context_tokens, estimate_context_tokens, prepare_compaction, should_compact
from ._summarize import Summarize, summarize_compaction

__all__ = [
    "OVERFLOW_RECOVERY_FAILED",
    "SUMMARIZER",
    "compaction_settings",
    "pi_after_agent_run",
    "pi_compaction_prepare",
    "pi_register_commands",
    "pi_session_before_compact",
]

SUMMARIZER: StashKey[Summarize] = StashKey()
"""Overrides the model call that writes summaries (tests, or a cheaper summarisation model)."""

OVERFLOW_RECOVERY_FAILED = (
    "Context overflow recovery failed after one compact-and-retry attempt. "
    "Try reducing context or switching to a larger-context model."
)

# The user message whose overflow was already compacted and retried once.
_OVERFLOW_RETRIED: StashKey[int] = StashKey()


def compaction_settings(ctx: Any) -> CompactionSettings:
    """The session's ``compaction`` settings as the hook payload model."""
    section = getattr(getattr(ctx, "settings", None), "compaction", None)
    if section is None:
        return CompactionSettings()
    return CompactionSettings(
        enabled=section.enabled,
        reserve_tokens=section.reserve_tokens,
        keep_recent_tokens=section.keep_recent_tokens,
    )


def _summarizer(ctx: SessionPluginContext) -> Summarize:
    custom = ctx.stash.get(SUMMARIZER, None)
    if custom is not None:
        return custom
    complete: Callable[..., Any] | None = getattr(ctx, "complete", None)
    if complete is None:
        raise RuntimeError(
            "Compaction needs a model call: this pi-host session offers no ctx.complete(); "
            "upgrade pi-host or set pi_compaction.SUMMARIZER in ctx.stash."
        )

    async def call(system_prompt: str, messages: list[Message], max_tokens: int) -> AssistantMessage:
        reply: AssistantMessage = await complete(system_prompt, messages, max_tokens)
        return reply

    return call


@hookimpl(trylast=True)
def pi_compaction_prepare(
    branch_entries: Sequence[Any], ctx: SessionPluginContext
) -> CompactionPreparation | None:
    """pi's cut: keep ``keepRecentTokens`` of recent history, summarise the rest."""
    return prepare_compaction(branch_entries, compaction_settings(ctx))


@hookimpl(trylast=True)
async def pi_session_before_compact(
    preparation: CompactionPreparation, custom_instructions: str | None, ctx: SessionPluginContext
) -> CompactionResult:
    """Write the summary with the session's model (the default every other plugin precedes)."""
    model = ctx.model
    result = await summarize_compaction(
        preparation,
        _summarizer(ctx),
        custom_instructions=custom_instructions,
        model_max_tokens=model.max_tokens if model is not None else None,
    )
    # The runtime records compactions without this marker as plugin-supplied (fromHook).
    return result.model_copy(update={"details": {**result.details, "_pi_compaction": True}})


def _current_user_message(ctx: SessionPluginContext) -> int:
    """The timestamp of the user message being answered: it survives compaction (it is kept)."""
    for message in reversed(ctx.messages):
        if getattr(message, "role", None) == "user":
            return int(getattr(message, "timestamp", 0))
    return 0


@hookimpl(trylast=True)
async def pi_after_agent_run(message: AssistantMessage, ctx: SessionPluginContext) -> ContinueRun | None:
    """After a run: compact-and-retry a context overflow (once per user message), or compact
    when the context crossed ``contextWindow - reserveTokens``."""
    settings = compaction_settings(ctx)
    model = ctx.model
    if not settings.enabled or model is None or message.stop_reason == "aborted":
        return None
    window = model.context_window or 0
    same_model = message.provider == model.provider and message.model == model.id
    if same_model and is_context_overflow(message, window):
        if message.stop_reason != "error":
            await ctx.run_compaction("overflow", will_retry=False)
            return None
        turn = _current_user_message(ctx)
        if ctx.stash.get(_OVERFLOW_RETRIED, None) == turn:
            ctx.emit(CompactionEndEvent(reason="overflow", error_message=OVERFLOW_RECOVERY_FAILED))
            return None
        ctx.stash[_OVERFLOW_RETRIED] = turn
        # The failed reply leaves the context (the session file keeps it) before the rebuild.
        result = await ctx.run_compaction("overflow", will_retry=True)
        if result is None:
            return None
        messages = [m for m in ctx.messages if m is not message]
        if messages and isinstance(messages[-1], AssistantMessage) and messages[-1].stop_reason == "error":
            messages = messages[:-1]
        return ContinueRun(messages=tuple(messages))
    if message.stop_reason == "error":
        tokens = _estimate_after_error(ctx)
        if tokens is None:
            return None
    else:
        tokens = context_tokens(message)
    if window and should_compact(tokens, window, settings):
        await ctx.run_compaction("threshold")
        if ctx.has_pending_messages():
            return ContinueRun()
    return None


def _estimate_after_error(ctx: SessionPluginContext) -> int | None:
    """Context size from the last successful usage, when a run ended on an error."""
    messages = ctx.messages
    if not any(
        isinstance(m, AssistantMessage) and m.stop_reason not in ("error", "aborted") and context_tokens(m)
        for m in messages
    ):
        return None
    return estimate_context_tokens(messages)


@hookimpl
def pi_register_commands(register: Callable[[Command], None]) -> None:
    """``/compact [instructions]``: summarise now, with an optional focus."""

    async def handler(args: str, ctx: Any) -> None:
        await ctx.run_compaction("manual", custom_instructions=args or None)

    register(Command(name="compact", description="Manually compact the session context", handler=handler))
