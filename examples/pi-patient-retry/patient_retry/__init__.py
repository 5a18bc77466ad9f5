"""pi-patient-retry: retry transient provider errors a fixed number of times, patiently.

A third-party replacement for pi-retry, built on pi-host's public API only: its own settings
section (``patientRetry``), its own run state (a :class:`~pi_host.StashKey`), pi's retry
events, and the ``retry`` abort scope that RPC ``abort_retry`` and Escape reach.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from pi_host import (
    AbortScope,
    AgentMessage,
    AssistantMessage,
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    ContinueRun,
    PluginContext,
    SettingsSection,
    StashKey,
    hookimpl,
)

__all__ = ["CANCELLED", "PatientRetrySettings", "delay_for"]

CANCELLED = "Retry cancelled"


class PatientRetrySettings(BaseModel):
    """``patientRetry`` in settings.json."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    enabled: bool = True
    attempts: int = 2
    delay_seconds: float = 1.0
    max_delay_seconds: float = 30.0


_ATTEMPT: StashKey[int] = StashKey()


def delay_for(message: AssistantMessage, settings: PatientRetrySettings) -> float:
    """The fixed delay, or the server's ``retry-after`` when longer, never past the cap."""
    wish = message.retry_after or 0.0
    return min(max(settings.delay_seconds, wish), settings.max_delay_seconds)


def _wants_retry(message: AssistantMessage, ctx: PluginContext) -> bool:
    return ctx.plugin_settings(PatientRetrySettings).enabled and message.error_class == "transient"


@hookimpl
def pi_register_settings(register: Callable[[SettingsSection], None]) -> None:
    register(SettingsSection("patientRetry", PatientRetrySettings, "Patient retries of transient errors"))


@hookimpl
def pi_register_abort_scopes(register: Callable[[AbortScope], None]) -> None:
    register(AbortScope("retry", "The wait before a retry (RPC abort_retry)"))


@hookimpl
def pi_will_continue_run(message: AssistantMessage, ctx: PluginContext) -> bool | None:
    if not _wants_retry(message, ctx):
        return None
    return ctx.stash.get(_ATTEMPT, 0) < ctx.plugin_settings(PatientRetrySettings).attempts


@hookimpl(tryfirst=True)
async def pi_after_agent_run(message: AssistantMessage, ctx: PluginContext) -> ContinueRun | None:
    if not _wants_retry(message, ctx):
        return None
    settings = ctx.plugin_settings(PatientRetrySettings)
    attempt = ctx.stash.get(_ATTEMPT, 0) + 1
    if attempt > settings.attempts:
        ctx.stash[_ATTEMPT] = 0
        ctx.emit(AutoRetryEndEvent(success=False, attempt=attempt - 1, final_error=message.error_message))
        return None
    ctx.stash[_ATTEMPT] = attempt
    delay = delay_for(message, settings)
    ctx.emit(
        AutoRetryStartEvent(
            attempt=attempt,
            max_attempts=settings.attempts,
            delay_ms=round(delay * 1000),
            error_message=message.error_message or "Unknown error",
        )
    )
    with ctx.abort_scope("retry") as signal:
        with anyio.move_on_after(delay):
            await signal.wait()
    if signal.aborted:
        ctx.stash[_ATTEMPT] = 0
        ctx.emit(AutoRetryEndEvent(success=False, attempt=attempt, final_error=CANCELLED))
        return None
    # Retry without the failed reply (the session file keeps it).
    messages = ctx.messages
    if messages and isinstance(messages[-1], AssistantMessage) and messages[-1].stop_reason == "error":
        messages = messages[:-1]
    return ContinueRun(messages=tuple(messages))


@hookimpl
def pi_message_end(message: AgentMessage, ctx: PluginContext) -> None:
    if isinstance(message, AssistantMessage) and message.stop_reason != "error":
        attempt = ctx.stash.get(_ATTEMPT, 0)
        if attempt:
            ctx.stash[_ATTEMPT] = 0
            ctx.emit(AutoRetryEndEvent(success=True, attempt=attempt))
