"""pi-compaction: summarise old history when the context fills up, as pi does.

Installed, it registers through the ``pi_host.plugins`` entry point ``compaction``: it
prepares compactions (``pi_compaction_prepare``), writes the default summary (a ``trylast``
``pi_session_before_compact``), compacts after runs that overflowed or crossed the threshold,
and adds ``/compact [instructions]``. Settings: ``compaction.enabled``,
``compaction.reserveTokens``, ``compaction.keepRecentTokens``.
"""

from __future__ import annotations

from ._plugin import (
    OVERFLOW_RECOVERY_FAILED,
    SUMMARIZER,
    compaction_settings,
    pi_after_agent_run,
    pi_compaction_prepare,
    pi_register_commands,
    pi_session_before_compact,
)
from ._prepare import (
    CutPoint,
    context_tokens,
    estimate_context_tokens,
    estimate_tokens,
    extract_file_ops,
    file_lists,
    find_cut_point,
    find_turn_start,
    prepare_compaction,
    should_compact,
)
from ._summarize import (
    SUMMARY_SYSTEM_PROMPT,
    Summarize,
    format_file_operations,
    serialize_conversation,
    summarize_compaction,
    summary_request,
)

__all__ = [
    "OVERFLOW_RECOVERY_FAILED",
    "SUMMARIZER",
    "SUMMARY_SYSTEM_PROMPT",
    "CutPoint",
    "Summarize",
    "compaction_settings",
    "context_tokens",
    "estimate_context_tokens",
    "estimate_tokens",
    "extract_file_ops",
    "file_lists",
    "find_cut_point",
    "find_turn_start",
    "format_file_operations",
    "pi_after_agent_run",
    "pi_compaction_prepare",
    "pi_register_commands",
    "pi_session_before_compact",
    "prepare_compaction",
    "serialize_conversation",
    "should_compact",
    "summarize_compaction",
    "summary_request",
]
