"""pi's agent-level auto-retry: exponential backoff over transient provider errors.

The session asks ``pi_will_retry`` when a run ends on an error (``agent_end.willRetry``), then
``pi_after_agent_run``; this plugin answers both for retryable errors (overloads, rate limits,
5xx, network failures; never context overflow, which compaction handles). Attempt *n* waits
``baseDelayMs * 2**(n-1)`` — or longer when the server asked for it with ``Retry-After``, up to
``retry.provider.maxRetryDelayMs`` — then continues the run without the failed reply, which
stays in the session file. The session reports ``auto_retry_end{success: true}`` itself on the
next successful reply and resets the counter kept in ``ctx.stash[RETRY_ATTEMPT]``.

The wait runs under ``ctx.operation_signal()``, so the session's abort (Escape, RPC ``abort``)
cancels it as well as :func:`abort_retry`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pi_host import StashKey, hookimpl

if TYPE_CHECKING:
    from pi_host import AbortSignal
    from pi_host.hookspecs import ContinueRun, PluginContext
    from pi_host.messages import AgentMessage, AssistantMessage
    from pi_host.resources import RetrySettings

# Loading the plugin (as --help does, for flags) must not import the runtime, the settings
# models, the providers or pydantic: the hooks import them when they run, by which time the
# session has loaded them.

__all__ = [
    "RETRY_CANCELLED",
    "RETRY_SIGNAL",
    "abort_retry",
    "is_retrying",
    "pi_after_agent_run",
    "pi_message_start",
    "pi_will_retry",
    "retry_delay_ms",
]

RETRY_CANCELLED = "Retry cancelled"
"""``auto_retry_end.finalError`` when the wait before a retry was aborted (pi's text)."""

RETRY_SIGNAL: StashKey[AbortSignal] = StashKey()
"""The abort signal of the wait in progress (an operation signal of the session):
:func:`abort_retry` or the session's abort ends the wait and cancels the retry."""


def _settings(ctx: PluginContext) -> RetrySettings:
    from pi_host.resources import RetrySettings

    settings: Any = getattr(ctx, "settings", None)
    retry = getattr(settings, "retry", None)
    return retry if isinstance(retry, RetrySettings) else RetrySettings()


def _context_window(ctx: PluginContext) -> int | None:
    model = ctx.model
    return model.context_window if model is not None and model.context_window else None


def _retryable(message: AssistantMessage, ctx: PluginContext) -> bool:
    from pi_host.providers import is_context_overflow, is_retryable_error

    window = _context_window(ctx)
    return not is_context_overflow(message, window) and is_retryable_error(message, window)


def retry_delay_ms(message: AssistantMessage, attempt: int, settings: RetrySettings) -> int:
    """How long to wait before retry ``attempt`` (1-based).

    pi's backoff, ``base_delay_ms * 2**(attempt-1)``; a server-requested delay
    (``Retry-After``, kept on the failed reply) is honoured when longer, but never beyond
    ``settings.provider.max_retry_delay_ms``.
    """
    from pi_host.providers import retry_after_ms

    delay = int(settings.base_delay_ms * 2 ** (attempt - 1))
    requested = retry_after_ms(message)
    if requested is not None and requested > delay:
        delay = min(requested, max(settings.provider.max_retry_delay_ms, delay))
    return delay


def is_retrying(ctx: PluginContext) -> bool:
    """Whether a retry wait is in progress (pi's ``isRetrying``)."""
    return RETRY_SIGNAL in ctx.stash


def abort_retry(ctx: PluginContext) -> bool:
    """Cancel the retry wait in progress (pi's ``abortRetry``); ``False`` if there was none."""
    signal = ctx.stash.get(RETRY_SIGNAL, None)
    if signal is None:
        return False
    signal.abort()
    return True


@hookimpl
def pi_will_retry(message: AssistantMessage, ctx: PluginContext) -> bool | None:
    """``True`` for a retryable error with attempts left, ``False`` once they are used up."""
    from pi_host.runtime import RETRY_ATTEMPT

    settings = _settings(ctx)
    if not settings.enabled or not _retryable(message, ctx):
        return None
    return ctx.stash.get(RETRY_ATTEMPT, 0) < settings.max_retries


@hookimpl(tryfirst=True)
async def pi_after_agent_run(message: AssistantMessage, ctx: PluginContext) -> ContinueRun | None:
    """Wait, then continue the run without the failed reply; give up after ``max_retries``."""
    settings = _settings(ctx)
    if not settings.enabled or not _retryable(message, ctx):
        return None
    import anyio

    from pi_host.hookspecs import ContinueRun
    from pi_host.messages import AssistantMessage
    from pi_host.runtime import ABORT_REQUESTED, RETRY_ATTEMPT, AutoRetryEndEvent, AutoRetryStartEvent

    attempt = ctx.stash.get(RETRY_ATTEMPT, 0) + 1
    if attempt > settings.max_retries:
        ctx.stash[RETRY_ATTEMPT] = 0
        ctx.emit(AutoRetryEndEvent(success=False, attempt=attempt - 1, final_error=message.error_message))
        return None
    ctx.stash[RETRY_ATTEMPT] = attempt
    delay = retry_delay_ms(message, attempt, settings)
    ctx.emit(
        AutoRetryStartEvent(
            attempt=attempt,
            max_attempts=settings.max_retries,
            delay_ms=delay,
            error_message=message.error_message or "Unknown error",
        )
    )
    # The agent is idle between runs: the session's operation signal is what its abort reaches.
    with ctx.operation_signal("retry") as signal:
        ctx.stash[RETRY_SIGNAL] = signal
        try:
            with anyio.move_on_after(delay / 1000):
                await signal.wait()
        finally:
            del ctx.stash[RETRY_SIGNAL]
    # RPC's abort_retry raises ABORT_REQUESTED instead of reaching the signal: it cancels the
    # retry once the wait is over.
    if signal.aborted or ctx.stash.get(ABORT_REQUESTED, False):
        ctx.stash[RETRY_ATTEMPT] = 0
        ctx.emit(AutoRetryEndEvent(success=False, attempt=attempt, final_error=RETRY_CANCELLED))
        return None
    messages = ctx.messages
    # The failed reply leaves the model's context; the session file keeps it.
    if messages and isinstance(messages[-1], AssistantMessage) and messages[-1].stop_reason == "error":
        messages = messages[:-1]
    return ContinueRun(messages=tuple(messages))


@hookimpl
def pi_message_start(message: AgentMessage, ctx: PluginContext) -> None:
    """A new user message clears an abort request left by an earlier run."""
    if getattr(message, "role", None) == "user":
        from pi_host.runtime import ABORT_REQUESTED

        ctx.stash[ABORT_REQUESTED] = False
