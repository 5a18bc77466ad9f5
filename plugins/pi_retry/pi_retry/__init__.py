"""pi-retry: retry transient provider errors with exponential backoff, as pi does.

Installed, it registers through the ``pi_host.plugins`` entry point ``retry``; uninstalled
or disabled (``--no-plugin retry``), failed runs simply end. It owns the ``retry`` settings section
(``retry.enabled``, ``retry.maxRetries``, ``retry.baseDelayMs``,
``retry.provider.maxRetryDelayMs``) and the ``retry`` abort scope (RPC ``abort_retry``).
It uses only pi-host's public API, as any third-party retry plugin can.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._retry import (
    RETRY_CANCELLED,
    RETRY_SCOPE,
    abort_retry,
    is_retrying,
    pi_after_agent_run,
    pi_message_end,
    pi_register_abort_scopes,
    pi_register_settings,
    pi_will_continue_run,
    retry_delay_ms,
)

if TYPE_CHECKING:
    from ._settings import ProviderRetrySettings, RetrySettings

__all__ = [
    "RETRY_CANCELLED",
    "RETRY_SCOPE",
    "ProviderRetrySettings",
    "RetrySettings",
    "abort_retry",
    "is_retrying",
    "pi_after_agent_run",
    "pi_message_end",
    "pi_register_abort_scopes",
    "pi_register_settings",
    "pi_will_continue_run",
    "retry_delay_ms",
]


def __getattr__(name: str) -> Any:
    # The settings models import pydantic: loaded when first asked for (PEP 562).
    if name in ("ProviderRetrySettings", "RetrySettings"):
        from . import _settings

        return getattr(_settings, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
