"""pi-retry: retry transient provider errors with exponential backoff, as pi does.

Installed, it registers through the ``pi_host.plugins`` entry point ``retry``; uninstalled
or disabled (``--no-plugin retry``), failed runs simply end. Settings: ``retry.enabled``,
``retry.maxRetries``, ``retry.baseDelayMs`` and ``retry.provider.maxRetryDelayMs``.
"""

from __future__ import annotations

from ._retry import (
    RETRY_CANCELLED,
    RETRY_SIGNAL,
    abort_retry,
    is_retrying,
    pi_after_agent_run,
    pi_message_start,
    pi_will_retry,
    retry_delay_ms,
)

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
