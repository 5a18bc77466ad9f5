"""pi's agent-level auto-retry: exponential backoff over transient provider errors.

The session asks ``pi_will_continue_run`` when a run ends on an error (``agent_end.willRetry``), then
``pi_after_agent_run``; this plugin answers both for transient errors (overloads, rate limits,
5xx, network failures: :attr:`AssistantMessage.error_class` ``"transient"``; never context
overflow, which compaction handles). Attempt *n* waits ``baseDelayMs * 2**(n-1)`` — or longer
when the server asked for it with ``Retry-After``, up to ``retry.provider.maxRetryDelayMs`` —
then continues the run without the failed reply, which stays in the session file. The next
successful reply ends the retry (``auto_retry_end{success: true}``) and resets the attempt
counter this plugin keeps in the session's stash.

The wait runs in the ``retry`` abort scope: the session's abort (Escape, RPC ``abort``) and
RPC ``abort_retry`` cancel it, also when they arrive just before it starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pi_host import AbortScope, SettingsSection, StashKey, hookimpl

if TYPE_CHECKING:
    from pi_host import AgentMessage, AssistantMessage, ContinueRun, PluginContext

    from ._settings import RetrySettings

# Loading the plugin (as --help does, for flags) imports neither pydantic nor the settings
# model: the hooks import them when they run, by which time the session has loaded them.

__all__ = [
    "RETRY_CANCELLED",
    "RETRY_SCOPE",
    "abort_retry",
    "is_retrying",
    "pi_after_agent_run",
    "pi_message_end",
    "pi_register_abort_scopes",
    "pi_register_settings",
    "pi_will_continue_run",
    "retry_delay_ms",
]

RETRY_CANCELLED = "Retry cancelled"
"""``auto_retry_end.finalError`` when the wait before a retry was aborted (pi's text)."""

RETRY_SCOPE = "retry"
"""The abort scope of the wait (RPC ``abort_retry``)."""

_ATTEMPT: StashKey[int] = StashKey()
_WAITING: StashKey[bool] = StashKey()


def _settings(ctx: PluginContext) -> RetrySettings:
    from ._settings import RetrySettings

    return ctx.plugin_settings(RetrySettings)


def _context_window(ctx: PluginContext) -> int | None:
    model = ctx.model
    return model.context_window if model is not None and model.context_window else None


def _retryable(message: AssistantMessage, ctx: PluginContext) -> bool:
    from pi_host import classify_error

    return classify_error(message, _context_window(ctx)) == "transient"


def retry_delay_ms(message: AssistantMessage, attempt: int, settings: RetrySettings) -> int:
    """How long to wait before retry ``attempt`` (1-based).

    pi's backoff, ``base_delay_ms * 2**(attempt-1)``; a server-requested delay
    (:attr:`AssistantMessage.retry_after`) is honoured when longer, but never beyond
    ``settings.provider.max_retry_delay_ms``.
    """
    delay = int(settings.base_delay_ms * 2 ** (attempt - 1))
    requested = message.retry_after
    if requested is not None and requested * 1000 > delay:
        delay = min(round(requested * 1000), max(settings.provider.max_retry_delay_ms, delay))
    return delay


def is_retrying(ctx: PluginContext) -> bool:
    """Whether a retry wait is in progress (pi's ``isRetrying``)."""
    return ctx.stash.get(_WAITING, False)


def abort_retry(ctx: PluginContext) -> bool:
    """Cancel the retry wait in progress (pi's ``abortRetry``); ``False`` if there was none.

    The same as RPC ``abort_retry``: it goes through the session's ``retry`` abort scope.
    """
    return ctx.abort_named(RETRY_SCOPE)


@hookimpl
def pi_register_settings(register: Callable[[SettingsSection], None]) -> None:
    from ._settings import RetrySettings

    register(SettingsSection("retry", RetrySettings, "Automatic retry of transient provider errors"))


@hookimpl
def pi_register_abort_scopes(register: Callable[[AbortScope], None]) -> None:
    register(AbortScope(RETRY_SCOPE, "The wait before retrying a failed request (RPC abort_retry)"))


@hookimpl
def pi_will_continue_run(message: AssistantMessage, ctx: PluginContext) -> bool | None:
    """``True`` for a transient error with attempts left, ``False`` once they are used up."""
    settings = _settings(ctx)
    if not settings.enabled or not _retryable(message, ctx):
        return None
    return ctx.stash.get(_ATTEMPT, 0) < settings.max_retries


@hookimpl(tryfirst=True)
async def pi_after_agent_run(message: AssistantMessage, ctx: PluginContext) -> ContinueRun | None:
    """Wait, then continue the run without the failed reply; give up after ``max_retries``."""
    settings = _settings(ctx)
    if not settings.enabled or not _retryable(message, ctx):
        return None
    import anyio

    from pi_host import AssistantMessage, AutoRetryEndEvent, AutoRetryStartEvent, ContinueRun

    attempt = ctx.stash.get(_ATTEMPT, 0) + 1
    if attempt > settings.max_retries:
        ctx.stash[_ATTEMPT] = 0
        ctx.emit(AutoRetryEndEvent(success=False, attempt=attempt - 1, final_error=message.error_message))
        return None
    ctx.stash[_ATTEMPT] = attempt
    delay = retry_delay_ms(message, attempt, settings)
    ctx.emit(
        AutoRetryStartEvent(
            attempt=attempt,
            max_attempts=settings.max_retries,
            delay_ms=delay,
            error_message=message.error_message or "Unknown error",
        )
    )
    # The agent is idle between runs: the abort scope is what Escape and abort_retry reach.
    ctx.stash[_WAITING] = True
    try:
        with ctx.abort_scope(RETRY_SCOPE) as signal:
            with anyio.move_on_after(delay / 1000):
                await signal.wait()
    finally:
        ctx.stash[_WAITING] = False
    if signal.aborted:
        ctx.stash[_ATTEMPT] = 0
        ctx.emit(AutoRetryEndEvent(success=False, attempt=attempt, final_error=RETRY_CANCELLED))
        return None
    messages = ctx.messages
    # The failed reply leaves the model's context; the session file keeps it.
    if messages and isinstance(messages[-1], AssistantMessage) and messages[-1].stop_reason == "error":
        messages = messages[:-1]
    return ContinueRun(messages=tuple(messages))


@hookimpl
def pi_message_end(message: AgentMessage, ctx: PluginContext) -> None:
    """A reply that did not fail ends the retry (pi emits ``auto_retry_end`` right after it)."""
    if getattr(message, "role", None) != "assistant" or getattr(message, "stop_reason", None) == "error":
        return
    attempt = ctx.stash.get(_ATTEMPT, 0)
    if attempt:
        from pi_host import AutoRetryEndEvent

        ctx.stash[_ATTEMPT] = 0
        ctx.emit(AutoRetryEndEvent(success=True, attempt=attempt))
